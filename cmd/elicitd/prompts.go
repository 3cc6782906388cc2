package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/tools"
	"github.com/elicitd/elicitd/validator"
)

// Prompts that ask. ask asks within tools/call; a prompts/get whose prompt asks is run as a
// call of its own through the same Elicitor, named "prompt:NAME" (no tool can be: a tool's
// name has no colon), so that it asks as a tool does in either era: in the push era with
// elicitation/create during the request, in the pull era (2026-07-28, which allows input
// requests on prompts/get) as an input-required result with elicitd's signed, single-use
// requestState, hibernating between rounds with a store, and answered on any node.

// promptCallPrefix names the call a prompts/get runs as.
const promptCallPrefix = "prompt:"

// askingPrompt is the handler of the prompt name, whose text fill returns, asking if it
// must (ask.Ask). fill must ask the same given the same arguments and answers, and act on
// nothing: it may be replayed, on another node too.
func (s *server) askingPrompt(name, description string, fill func(ctx context.Context, args map[string]string) (string, error)) mcp.PromptHandler {
	call := s.el.Handler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]string
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "a prompt's arguments are an object of strings")
			}
		}
		text, err := fill(ctx, args)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}, ask.Replayable, ask.Pure)
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		res, err := call(ctx, &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.CallToolParamsRaw{
			Meta: req.Params.Meta, Name: promptCallPrefix + name, Arguments: args,
			InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState}})
		switch {
		case err != nil:
			return nil, err
		case res.InputRequests != nil || res.RequestState != "":
			return &mcp.GetPromptResult{InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
		case res.IsError:
			return nil, promptError(res)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return &mcp.GetPromptResult{Description: description,
			Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
	}
}

// promptError is the JSON-RPC error for a prompt whose call ended in elicitd's error payload
// (a prompts/get result has no isError): -32602 for what the request got wrong (its
// arguments, its requestState), -32603 for a question that did not complete (declined,
// cancelled, timed out); the message starts with the payload's code, and its data is the
// payload.
func promptError(res *mcp.CallToolResult) error {
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	var p struct{ Code, Message string }
	if err := json.Unmarshal(raw, &p); err != nil || p.Code == "" {
		return errors.New("the prompt's question failed")
	}
	code := int64(jsonrpc.CodeInternalError)
	if p.Code == ask.CodeInvalidArgument || p.Code == ask.CodeInvalidRequestState {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: p.Code + ": " + p.Message, Data: raw}
}

// complete is completion/complete: an argument of a template's prompt whose field is a
// choice completes to its options' values, those whose value or title starts with what was
// typed, whatever the case; anything else to nothing.
func (s *server) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	values := []string{}
	if ref := req.Params.Ref; ref != nil && ref.Type == "ref/prompt" {
		s.templates.mu.Lock()
		options := s.templates.choices[ref.Name][req.Params.Argument.Name]
		s.templates.mu.Unlock()
		typed := strings.ToLower(req.Params.Argument.Value)
		for _, o := range options {
			if strings.HasPrefix(strings.ToLower(o.Value), typed) || strings.HasPrefix(strings.ToLower(o.Title), typed) {
				values = append(values, o.Value)
			}
		}
	}
	total := len(values)
	if len(values) > maxCompletions {
		values = values[:maxCompletions]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: total, HasMore: total > len(values)}}, nil
}

// maxCompletions is the most values a completion may hold (the MCP spec's limit).
const maxCompletions = 100

// templatePrompts adds the prompts of the templates tools.TemplatePrompts serves, and
// removes those of gone, the names served before that are no more: the SDK then tells
// connected clients that the prompt list changed.
// It returns the options of their choice arguments, by prompt and argument, for completion.
func (s *server) templatePrompts(prompts []tools.TemplatePrompt, gone []string) map[string]map[string][]validator.Option {
	choices := map[string]map[string][]validator.Option{}
	for _, p := range prompts {
		mp := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description})
			if len(a.Options) > 0 {
				if choices[p.Name] == nil {
					choices[p.Name] = map[string][]validator.Option{}
				}
				choices[p.Name][a.Name] = a.Options
			}
		}
		s.mcp.AddPrompt(mp, s.askingPrompt(p.Name, p.Description, p.Fill))
	}
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	return choices
}
