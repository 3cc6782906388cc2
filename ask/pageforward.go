package ask

// Pages across nodes. Nodes behind one address (one --page-url) each serve elicitd's page
// for the links they opened; a link's token starts with the name of its node, and a page
// request that reaches another node is carried to that node over the relay, as one
// message each way, and answered there: the binding cookie, the CSRF token and the
// answers stay the opening node's, and the question waiting on it completes there. A
// request body larger than maxRelayedPageBody is refused (413) through another node; the
// node that opened the link takes any size its settings allow.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/elicitd/elicitd/store"
)

// maxRelayedPageBody bounds a page request's body carried to another node: a relay
// message holds it base64-encoded, and NATS's default message limit is 1 MiB.
const maxRelayedPageBody = 640 << 10

// pageRequest is a page request as the relay carries it.
type pageRequest struct {
	Method string      `json:"method"`
	URI    string      `json:"uri"`
	Host   string      `json:"host"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body,omitempty"`
}

// pageResponse is the answer to one.
type pageResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body,omitempty"`
}

// routePages has the page's links name this node, and carries requests for other nodes'
// links to them.
func (el *Elicitor) routePages() {
	if el.pages == nil || el.relay == nil {
		return
	}
	el.pages.Route(el.node, func(node string) http.Handler {
		if !store.ValidID(node) {
			return nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { el.relayPage(w, r, node) })
	})
}

// relayPage serves r, a request for a link node opened, through node.
func (el *Elicitor) relayPage(w http.ResponseWriter, r *http.Request, node string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRelayedPageBody+1))
	if err != nil {
		http.Error(w, "The page could not be read.", http.StatusBadRequest)
		return
	}
	if len(body) > maxRelayedPageBody {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("What this page sends is larger than %d KiB, the most it may send through this server; send less (smaller files), or open the link again later.", maxRelayedPageBody>>10), http.StatusRequestEntityTooLarge)
		return
	}
	msg, err := json.Marshal(forwarded{Op: "page", Page: &pageRequest{Method: r.Method, URI: r.URL.RequestURI(), Host: r.Host, Header: r.Header, Body: body}})
	if err != nil {
		http.Error(w, "The page could not be sent on.", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	b, err := el.relay.Send(ctx, node, msg)
	var resp pageResponse
	switch {
	case errors.Is(err, store.ErrNoNode):
		http.Error(w, "This link is not valid any more: the server that asked its question has stopped. Go back to your assistant and ask again.", http.StatusNotFound)
		return
	case err == nil && json.Unmarshal(b, &resp) == nil && resp.Status != 0:
	default:
		http.Error(w, "The server that asked this question cannot be reached just now; try again in a moment.", http.StatusBadGateway)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// servePage answers a page request another node carried here.
func (el *Elicitor) servePage(ctx context.Context, p *pageRequest) []byte {
	resp := &pageResponse{Status: http.StatusNotFound, Header: http.Header{}}
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URI, bytes.NewReader(p.Body))
	if err == nil && el.pages != nil {
		req.Host, req.Header, req.ContentLength = p.Host, p.Header, int64(len(p.Body))
		if req.Header == nil {
			req.Header = http.Header{}
		}
		rec := &pageRecorder{resp: resp}
		el.pages.ServeHTTP(rec, req)
		if rec.resp.Status == 0 {
			rec.resp.Status = http.StatusOK
		}
	}
	b, _ := json.Marshal(resp)
	return b
}

// pageRecorder keeps the response a page handler writes.
type pageRecorder struct {
	resp  *pageResponse
	wrote bool
	body  bytes.Buffer
}

func (p *pageRecorder) Header() http.Header { return p.resp.Header }

func (p *pageRecorder) WriteHeader(status int) {
	if !p.wrote {
		p.resp.Status, p.wrote = status, true
	}
}

func (p *pageRecorder) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	n, err := p.body.Write(b)
	p.resp.Body = p.body.Bytes()
	return n, err
}
