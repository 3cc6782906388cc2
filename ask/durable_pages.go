package ask

// Pages across nodes. Nodes behind one address (one --page-url) each serve elicitd's page
// for the links they opened; a link's token starts with the name of its node, and a page
// request that reaches another node is carried to that node over the relay, one message
// each way, and answered there: the binding cookie, the CSRF token and the answers stay
// the opening node's, and the question waiting on it completes there. A small body travels
// in the message; a larger one (uploads) is streamed into the store's files, read from
// there by the opening node, and deleted once answered: files live in the store for the
// request's life only, and no node holds a whole upload in memory to pass it on.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/elicitd/elicitd/store"
)

// inlinePageBody bounds a page request's body carried in the relay message itself (base64,
// under NATS's default 1 MiB message limit); a larger one goes through the store's files.
const inlinePageBody = 64 << 10

// pageRequest is a page request as the relay carries it.
type pageRequest struct {
	Method string      `json:"method"`
	URI    string      `json:"uri"`
	Host   string      `json:"host"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body,omitempty"`
	// BodyFile names the store file the body is in instead (its question id; the file is
	// "body"), of BodyLen bytes.
	BodyFile string `json:"bodyFile,omitempty"`
	BodyLen  int64  `json:"bodyLen,omitempty"`
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
	preq := &pageRequest{Method: r.Method, URI: r.URL.RequestURI(), Host: r.Host, Header: r.Header}
	body, err := io.ReadAll(io.LimitReader(r.Body, inlinePageBody+1))
	if err != nil {
		http.Error(w, "The page could not be read.", http.StatusBadRequest)
		return
	}
	if len(body) <= inlinePageBody {
		preq.Body = body
	} else {
		// Larger: streamed into the store, for the opening node to read.
		preq.BodyFile = "page-" + rand.Text()
		n := &counted{r: io.MultiReader(bytes.NewReader(body), r.Body)}
		err := el.store.PutFile(r.Context(), preq.BodyFile, "body", n)
		defer el.store.DeleteFiles(context.WithoutCancel(r.Context()), preq.BodyFile)
		switch {
		case errors.Is(err, store.ErrTooLarge), errors.Is(err, store.ErrFull):
			w.Header().Set("Connection", "close")
			http.Error(w, "What this page sends is larger than this server can pass on; send smaller files.", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "The page could not be passed on just now; try again in a moment.", http.StatusBadGateway)
			return
		}
		preq.BodyLen = n.n
	}
	msg, err := json.Marshal(forwarded{Op: "page", Page: preq})
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
	var body io.Reader = bytes.NewReader(p.Body)
	length := int64(len(p.Body))
	if p.BodyFile != "" && el.store != nil {
		rc, err := el.store.GetFile(ctx, p.BodyFile, "body")
		if err != nil {
			resp.Status = http.StatusBadGateway
			b, _ := json.Marshal(resp)
			return b
		}
		defer el.store.DeleteFiles(context.WithoutCancel(ctx), p.BodyFile)
		defer rc.Close()
		body, length = rc, p.BodyLen
	}
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URI, body)
	if err == nil && el.pages != nil {
		req.Host, req.Header, req.ContentLength = p.Host, p.Header, length
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

// counted counts what is read through it.
type counted struct {
	r io.Reader
	n int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
