package tasks

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Polls answers, in front of next (go-sdk's stateless Streamable HTTP handler), a tasks/get
// that has nothing to do but read the task: the request a client waiting for the person
// sends most, every pollIntervalMs, for as long as the person takes. go-sdk spends most of
// a stateless request on its own decoding (it reads the body several times, each read
// allocating a 32 KiB buffer, and makes a session for it); a poll answered here reads the
// body once and the record once, and costs a fraction of that (docs/tasks.md has the
// figures).
//
// Only a plain poll is answered here, with exactly the response go-sdk would write: one
// JSON-RPC request (not a batch) of method tasks/get, for protocol 2026-07-28 in its
// header and its _meta, with the Mcp-Method header, client capabilities in _meta that
// declare the extension, no Mcp-Name header or one naming the task, from a caller
// owner(r) names (""; none), for a task the caller has whose tasks/get has nothing to do
// but read it (not past its question's deadline, not a working task gone silent; a
// stopping node only reads).
// Anything else, a malformed or refused request included, goes to next with its body
// untouched, so that every error is go-sdk's and the tasks middleware's own.
//
// server is the go-sdk server's implementation, which go-sdk names in the _meta of every
// 2026-07-28 result (SEP-2575); owner must name the same owner for r as Options.Owner does
// for the requests the SDK makes of it.
func (s *Server) Polls(next http.Handler, server *mcp.Implementation, owner func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != "tasks/get" || r.Header.Get("Mcp-Protocol-Version") != PullEra {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxPoll+1))
		if err == nil && len(body) <= maxPoll && s.poll(w, r, body, server, owner) {
			return
		}
		rest := io.Reader(r.Body)
		if err != nil {
			rest = failed{err} // go-sdk hears the error the body's read ended with
		}
		r.Body = restored{io.MultiReader(bytes.NewReader(body), rest), r.Body}
		next.ServeHTTP(w, r)
	})
}

// failed is a reader whose reads fail with err.
type failed struct{ err error }

func (f failed) Read([]byte) (int, error) { return 0, f.err }

// maxPoll bounds the body of a poll Polls answers: a tasks/get is a few hundred bytes.
const maxPoll = 16 << 10

// restored is a request body given back whole: what was read, then the rest.
type restored struct {
	io.Reader
	io.Closer
}

// pollRequest is the JSON-RPC request of a poll.
type pollRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		TaskID string                     `json:"taskId"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// pollResponse is go-sdk's JSON-RPC response, field for field.
type pollResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *detailed       `json:"result"`
}

// poll answers r if it is a plain poll (see Polls), and reports whether it did.
func (s *Server) poll(w http.ResponseWriter, r *http.Request, body []byte, server *mcp.Implementation, owner func(*http.Request) string) bool {
	if !plainTransport(r) {
		return false
	}
	var req pollRequest
	if tooDeep(body) || strictJSON(body, &req, jsonv2.RejectUnknownMembers(true)) != nil || req.JSONRPC != "2.0" || req.Method != "tasks/get" || req.Params == nil {
		return false
	}
	id, ok := rpcID(req.ID)
	if !ok {
		return false
	}
	task := req.Params.TaskID
	if task == "" || !plainMeta(req.Params.Meta) {
		return false
	}
	if name, ok := r.Header[http.CanonicalHeaderKey("Mcp-Name")]; ok && (len(name) != 1 || strings.TrimSpace(name[0]) != task) {
		return false
	}
	o := owner(r)
	if o == "" {
		return false
	}
	rec, tk, err := s.read(r.Context(), o, task)
	if err != nil || !s.plainGet(tk) {
		return false
	}
	d := s.detailed(rec, tk)
	d.Meta = mcp.Meta{mcp.MetaKeyServerInfo: server}
	out, err := unescaped(pollResponse{JSONRPC: "2.0", ID: id, Result: d})
	if err != nil {
		return false
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true
}

// plainTransport reports whether go-sdk's handler would take r's transport as it is: JSON
// in, both JSON and an event stream accepted, no Last-Event-ID, and not a loopback
// listener reached under another host's name (go-sdk's DNS rebinding check).
func plainTransport(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	jsonOK, streamOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	if !jsonOK || !streamOK {
		return false
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && loopback(local.String()) && !loopback(r.Host) {
		return false
	}
	return true
}

// loopback reports whether addr (a host, with or without a port) names this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// rpcID returns a JSON-RPC id as go-sdk writes it back: a string, or an integer.
func rpcID(raw json.RawMessage) (json.RawMessage, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if len(raw) == 0 || d.Decode(&v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		b, err := unescaped(v)
		return b, err == nil
	case json.Number:
		// go-sdk reads a number id as a float64 and writes back its integer part: only
		// integers it holds exactly are written back here.
		n, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return nil, false
		}
		return strconv.AppendInt(nil, n, 10), true
	}
	return nil, false
}

// unescaped is v's JSON as go-sdk writes it: without HTML escapes.
func unescaped(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// strictJSON decodes as go-sdk does where it matters here: member names match exactly
// (go-sdk's decoder does not match them case-insensitively, as encoding/json does). What
// it refuses besides (a name given twice, invalid UTF-8) goes to go-sdk.
func strictJSON(b []byte, v any, o ...jsonv2.Options) error { return jsonv2.Unmarshal(b, v, o...) }

// maxDepth is go-sdk's bound on the nesting of a message's JSON.
const maxDepth = 1000

// tooDeep reports whether b nests objects and arrays deeper than go-sdk reads.
func tooDeep(b []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// plainMeta reports whether a poll's _meta is one go-sdk takes as it is (protocol
// 2026-07-28, client capabilities that decode, client info that decodes if there is one)
// and declares the extension.
func plainMeta(meta map[string]json.RawMessage) bool {
	for _, v := range meta {
		// go-sdk reads the whole _meta, and finds none if a value does not read (a number
		// past a float64, say).
		var x any
		if strictJSON(v, &x) != nil {
			return false
		}
	}
	var version string
	if strictJSON(meta[mcp.MetaKeyProtocolVersion], &version) != nil || version != PullEra {
		return false
	}
	if info, ok := meta[mcp.MetaKeyClientInfo]; ok {
		var impl mcp.Implementation
		if isNull(info) || strictJSON(info, &impl) != nil {
			return false
		}
	}
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok || isNull(raw) {
		return false
	}
	var caps mcp.ClientCapabilities
	if strictJSON(raw, &caps) != nil {
		return false
	}
	return declares(&caps)
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
