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
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareObject is the input schema go-sdk holds for a tool whose own has no x-mcp-header.
var bareObject = json.RawMessage(`{"type":"object"}`)

// addTool adds tool t, whose input schema is schema, with handler h to server.
func (el *Elicitor) addTool(server *mcp.Server, t *mcp.Tool, schema *jsonschema.Schema, h mcp.ToolHandler) {
	full := encodedSchema(schema)
	raw, ok := full.(json.RawMessage)
	// A schema that is not an object's is given as it is, for go-sdk to refuse.
	if !ok || schema == nil || schema.Type != "object" || bytes.Contains(raw, []byte("x-mcp-header")) {
		if names, ok := el.listed.Load(server); ok {
			names.(*sync.Map).Delete(t.Name) // the tool this one replaces is listed no more
		}
		t.InputSchema = full
		server.AddTool(t, h)
		return
	}
	t.InputSchema = bareObject
	names, had := el.listed.LoadOrStore(server, &sync.Map{})
	if !had {
		server.AddReceivingMiddleware(listWithSchemas(names.(*sync.Map)))
	}
	names.(*sync.Map).Store(t.Name, listedTool{t, raw}) // in place of the tool it replaces
	server.AddTool(t, h)
}

// listedTool is the tool go-sdk holds by a name, with the input schema tools/list sends for
// it.
type listedTool struct {
	tool   *mcp.Tool
	schema json.RawMessage
}

// listWithSchemas puts the full input schemas back into a server's tools/list results:
// names holds, by name, the tools added with a bare one (listedTool).
func listWithSchemas(names *sync.Map) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if method != "tools/list" || err != nil || !ok || list == nil {
				return res, err
			}
			// go-sdk's tools themselves are left as they are: a copy of what is mended.
			var tools []*mcp.Tool
			for i, t := range list.Tools {
				v, ok := names.Load(t.Name)
				// By the *mcp.Tool go-sdk lists: one added by that name since, by this
				// package or not, is another, and is listed as it was added.
				if !ok || v.(listedTool).tool != t {
					continue
				}
				if tools == nil {
					tools = slices.Clone(list.Tools)
				}
				c := *t
				c.InputSchema = v.(listedTool).schema
				tools[i] = &c
			}
			if tools == nil {
				return res, err
			}
			mended := *list
			mended.Tools = tools
			return &mended, nil
		}
	}
}
