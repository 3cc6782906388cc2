package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK hands a requested schema to the elicitation handler as a decoded map, which has
// lost the order of its properties, and that order is the order the server wants the
// questions asked in. schemas keeps each requested schema exactly as it arrived, found by
// its canonical form.
type schemas struct {
	mu  sync.Mutex
	raw map[string]json.RawMessage // canonical JSON -> the schema as sent
}

// canonical is v's JSON with object keys sorted (encoding/json's map order).
func canonical(v any) (string, bool) {
	var decoded any
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &decoded) != nil {
		return "", false
	}
	b, err = json.Marshal(decoded)
	return string(b), err == nil
}

// original returns the schema as the server sent it, or v's own JSON.
func (s *schemas) original(v any) (json.RawMessage, error) {
	if key, ok := canonical(v); ok {
		s.mu.Lock()
		raw, found := s.raw[key]
		s.mu.Unlock()
		if found {
			return raw, nil
		}
	}
	return json.Marshal(v)
}

// record remembers every "requestedSchema" object inside an incoming message.
func (s *schemas) record(msg json.RawMessage) {
	if !bytes.Contains(msg, []byte(`"requestedSchema"`)) {
		return
	}
	var found []json.RawMessage
	collect(msg, &found, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw == nil {
		s.raw = map[string]json.RawMessage{}
	}
	for _, raw := range found {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if key, ok := canonical(v); ok {
			s.raw[key] = raw
		}
	}
}

// collect walks raw JSON for members named requestedSchema.
func collect(raw json.RawMessage, out *[]json.RawMessage, depth int) {
	if depth > 16 {
		return
	}
	switch first := firstByte(raw); first {
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
		for k, v := range obj {
			if k == "requestedSchema" && firstByte(v) == '{' {
				*out = append(*out, v)
				continue
			}
			collect(v, out, depth+1)
		}
	case '[':
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return
		}
		for _, v := range list {
			collect(v, out, depth+1)
		}
	}
}

func firstByte(raw json.RawMessage) byte {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// recordingTransport is a transport whose incoming messages pass through schemas.record: the
// stdio transport's. It wraps the SDK's connection, and a wrapped connection keeps only the
// methods of mcp.Connection: it hides the unexported hooks the SDK calls on its own
// connections. The stdio client connection has none to lose; the Streamable HTTP one does
// (told of the initialize result, it opens the standalone SSE stream and sends the
// negotiated MCP-Protocol-Version header), so over HTTP elicit records with schemaTap, below
// the connection, instead.
type recordingTransport struct {
	mcp.Transport
	schemas *schemas
}

func (t recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{conn, t.schemas}, nil
}

type recordingConn struct {
	mcp.Connection
	schemas *schemas
}

func (c recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	switch m := msg.(type) {
	case *jsonrpc.Request:
		c.schemas.record(m.Params)
	case *jsonrpc.Response:
		c.schemas.record(m.Result)
	}
	return msg, err
}

// schemaTap is an http.RoundTripper whose responses' bodies pass through schemas.record as
// the SDK reads them: a JSON body once read whole, an event stream event by event (each
// event's data, as the SDK's own reader joins it). A message is recorded before the SDK is
// given its last byte, so before the SDK hands the question to elicit.
type schemaTap struct {
	base    http.RoundTripper
	schemas *schemas
}

func (t schemaTap) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil || res.Body == nil {
		return res, err
	}
	switch mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mediaType {
	case "text/event-stream":
		res.Body = &tappedBody{ReadCloser: res.Body, schemas: t.schemas, limit: maxTapped, events: true}
	case "application/json":
		res.Body = &tappedBody{ReadCloser: res.Body, schemas: t.schemas, limit: maxTapped}
	}
	return res, nil
}

// maxTapped bounds what a tapped body holds at once: a JSON body, or an event. The SDK
// refuses a larger event; a larger message is not recorded (its form is then asked in the
// SDK's order).
const maxTapped = mcp.DefaultMaxEventSize

// tappedBody is a response body read by the SDK and recorded by schemaTap.
type tappedBody struct {
	io.ReadCloser
	schemas *schemas
	limit   int    // maxTapped
	events  bool   // text/event-stream; else application/json
	held    []byte // the JSON body so far; in an event stream, the line so far
	text    bool   // in an event stream: the line so far is not blank (held or not)
	data    []byte // in an event stream: the event's data so far
	hasData bool   // the event has had a data line
	over    bool   // the body (JSON) or the event outgrew the limit: it is not recorded
}

func (b *tappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.events {
		b.scan(p[:n], err == io.EOF)
	} else {
		b.hold(p[:n])
		if err == io.EOF && !b.over {
			b.schemas.record(b.held)
		}
	}
	return n, err
}

// hold appends chunk to what is held, unless that outgrows the limit: then nothing more is
// held until the event (or the body) ends.
func (b *tappedBody) hold(chunk []byte) {
	b.text = b.text || len(bytes.Trim(chunk, "\r")) > 0
	if b.over || len(b.held)+len(b.data)+len(chunk) > b.limit {
		b.over, b.held, b.data = true, nil, nil
		return
	}
	b.held = append(b.held, chunk...)
}

// scan reads chunk of an event stream as the SDK does: lines end in "\n" (the "\r"s before
// it dropped), a blank line ends an event, and the stream's end ends its last line and event.
func (b *tappedBody) scan(chunk []byte, end bool) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			b.hold(chunk)
			break
		}
		b.hold(chunk[:i])
		chunk = chunk[i+1:]
		b.line()
	}
	if end {
		if b.text {
			b.line()
		}
		b.event()
	}
}

// line takes the line held: a blank one ends the event, a data field's value joins the
// event's data, other fields and comments are not the message.
func (b *tappedBody) line() {
	switch field, value, _ := bytes.Cut(bytes.TrimRight(b.held, "\r"), []byte{':'}); {
	case !b.text:
		b.event()
	case b.over:
	case string(field) == "data":
		if b.hasData {
			b.data = append(b.data, '\n')
		}
		b.data, b.hasData = append(b.data, bytes.TrimSpace(value)...), true
	}
	b.held, b.text = b.held[:0], false
}

// event records the event's data, unless it outgrew the limit, and starts the next event.
func (b *tappedBody) event() {
	if b.hasData && !b.over {
		b.schemas.record(b.data)
	}
	b.data, b.hasData, b.over = nil, false, false
}
