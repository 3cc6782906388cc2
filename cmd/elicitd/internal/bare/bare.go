// Package bare is the yardstick for elicitd's round-trip benchmark: a plain go-sdk server
// whose tools ask one fixed 3-field question, with Elicit on push-era sessions and with
// InputRequests on pull-era ones, and nothing else.
package bare

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Schema is the question every tool asks.
var Schema = json.RawMessage(`{"type":"object","properties":{
	"name":{"type":"string","title":"Name"},
	"weight":{"type":"number","title":"Weight"},
	"express":{"type":"boolean","title":"Express"}},"required":["name","weight"]}`)

// Args mirrors elicitd's ask_user input, so "ask_args" receives the same bytes as ask_user.
type Args struct {
	Message string         `json:"message"`
	Form    map[string]any `json:"form,omitempty"`
}

// Server returns the bare server with three tools: "ask" (no arguments) and "ask_args"
// (ask_user's arguments, ignored), typed, their arguments checked by the SDK; and
// "ask_raw", the shape of the raw go-sdk server the peers harness times elicitd against: a
// raw handler (Server.AddTool), no arguments, nothing checked beyond the SDK's own.
func Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask_raw", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, _, err := ask(ctx, req)
		return res, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_args"}, func(ctx context.Context, req *mcp.CallToolRequest, _ Args) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req)
	})
	return s
}

func ask(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, any, error) {
	var content map[string]any
	if req.ProtocolVersion() >= "2026-07-28" {
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "m", RequestedSchema: Schema}}, RequestState: "s"}, nil, nil
		}
		res, _ := req.Params.InputResponses["q"].(*mcp.ElicitResult)
		if res != nil {
			content = res.Content
		}
	} else {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "m", RequestedSchema: Schema})
		if err != nil {
			return nil, nil, err
		}
		content = res.Content
	}
	b, _ := json.Marshal(content)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}
