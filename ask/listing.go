package ask

// The input schema go-sdk holds for a tool, and the one tools/list sends.
//
// go-sdk reads a tool's input schema on every 2026-07-28 tools/call over Streamable HTTP,
// for the x-mcp-header annotations whose headers the request must carry: it encodes the
// schema and decodes its properties again, on every request (with ask_user's schema, some
// 60 µs of CPU per call of two requests, 3% of elicitd's). A schema without one such
// annotation has nothing for that check to find, so go-sdk is given {"type":"object"} for
// it, which it reads at once, and the tools/list results it makes are mended on their way
// out to carry the schema in full. A schema that has an annotation is given as it is, and
// its headers are checked as before.

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareObject is the input schema go-sdk holds for a tool whose own has no x-mcp-header.
var bareObject = json.RawMessage(`{"type":"object"}`)

// addTool adds tool t, whose input schema is schema, with handler h to server.
func (el *Elicitor) addTool(server *mcp.Server, t *mcp.Tool, schema *jsonschema.Schema, h mcp.ToolHandler) {
	full := encodedSchema(schema)
	raw, ok := full.(json.RawMessage)
	// The tool this one replaces, if any, is listed no more.
	if old, had := el.listedAs.Swap(listedName{server, t.Name}, t); had {
		el.fullSchemas.Delete(old)
	}
	// A schema that is not an object's is given as it is, for go-sdk to refuse.
	if !ok || schema == nil || schema.Type != "object" || bytes.Contains(raw, []byte("x-mcp-header")) {
		t.InputSchema = full
		server.AddTool(t, h)
		return
	}
	t.InputSchema = bareObject
	// By the *mcp.Tool go-sdk lists: a tool added again later, by this package or not, is
	// another, and is listed as it was added.
	el.fullSchemas.Store(t, raw)
	if _, had := el.listedOn.LoadOrStore(server, true); !had {
		server.AddReceivingMiddleware(el.listWithSchemas)
	}
	server.AddTool(t, h)
}

// listedName is a tool's name on a server: the key of the tool added last by that name.
type listedName struct {
	server *mcp.Server
	name   string
}

// listWithSchemas puts the full input schemas back into tools/list results.
func (el *Elicitor) listWithSchemas(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil {
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok || list == nil {
			return res, err
		}
		// go-sdk's tools themselves are left as they are: a copy of what is mended.
		var tools []*mcp.Tool
		for i, t := range list.Tools {
			full, ok := el.fullSchemas.Load(t)
			if !ok {
				continue
			}
			if tools == nil {
				tools = append([]*mcp.Tool(nil), list.Tools...)
			}
			c := *t
			c.InputSchema = full
			tools[i] = &c
		}
		if tools != nil {
			mended := *list
			mended.Tools = tools
			return &mended, nil
		}
		return res, err
	}
}
