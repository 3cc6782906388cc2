// Package bare is the yardstick for elicitd's round-trip benchmarks: a plain go-sdk server
// whose tools each ask one fixed 3-field question, with Elicit on push-era sessions and with
// InputRequests on pull-era ones, and nothing else. Server serves it on any transport;
// Handler, over Streamable HTTP in both eras.
package bare

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Schema is the question "ask", "ask_args" and "ask_raw" ask.
var Schema = json.RawMessage(`{"type":"object","properties":{
	"name":{"type":"string","title":"Name"},
	"weight":{"type":"number","title":"Weight"},
	"express":{"type":"boolean","title":"Express"}},"required":["name","weight"]}`)

// PersonSchema is the question "ask_person" asks: the {name, age, email} of the peers
// harness, which its raw go-sdk server asks and elicitd's HTTP benchmark gives ask_user.
var PersonSchema = json.RawMessage(`{"type":"object","properties":{
	"name":{"type":"string","minLength":1},
	"age":{"type":"integer","minimum":0},
	"email":{"type":"string","format":"email"}},"required":["name","age","email"]}`)

// Args mirrors elicitd's ask_user input, so "ask_args" receives the same bytes as ask_user.
type Args struct {
	Message string         `json:"message"`
	Form    map[string]any `json:"form,omitempty"`
}

// Server returns the bare server with four tools: "ask" (no arguments) and "ask_args"
// (ask_user's arguments, ignored), typed, their arguments checked by the SDK; and "ask_raw"
// and "ask_person", the shape of the raw go-sdk server the peers harness times elicitd
// against: a raw handler (Server.AddTool), no arguments, nothing checked beyond the SDK's
// own. "ask_person" asks PersonSchema, the others Schema. Each returns the accepted content
// as JSON text.
func Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	noArgs := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "ask_raw", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, _, err := ask(ctx, req, Schema)
		return res, err
	})
	s.AddTool(&mcp.Tool{Name: "ask_person", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, _, err := ask(ctx, req, PersonSchema)
		return res, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req, Schema)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_args"}, func(ctx context.Context, req *mcp.CallToolRequest, _ Args) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req, Schema)
	})
	return s
}

func ask(ctx context.Context, req *mcp.CallToolRequest, schema json.RawMessage) (*mcp.CallToolResult, any, error) {
	var content map[string]any
	if req.ProtocolVersion() >= pullEra {
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "m", RequestedSchema: schema}}, RequestState: "s"}, nil, nil
		}
		res, _ := req.Params.InputResponses["q"].(*mcp.ElicitResult)
		if res != nil {
			content = res.Content
		}
	} else {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "m", RequestedSchema: schema})
		if err != nil {
			return nil, nil, err
		}
		content = res.Content
	}
	b, _ := json.Marshal(content)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}
