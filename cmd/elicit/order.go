package main

import (
	"bytes"
	"context"
	"encoding/json"
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

// recordingTransport is a transport whose incoming messages pass through schemas.record.
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
