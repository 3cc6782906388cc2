//lint:file-ignore SA1019 the suite's scenarios ask for sampling, roots and logging, which 2026-07-28 deprecates and still has

package main

// The MCP conformance suite's fixtures that need the MCP SDK's own types (--conformance-
// fixtures only, never in the product's tool list): input requests other than elicitation,
// a name of the suite's for an input request, an error or a notification of the SDK's,
// input schemas written by hand. Everything that asks the person goes through ask
// (tools.AskName, tools.InputRequiredFixtures); sampling and roots, which elicitd never
// asks for, are plain go-sdk results.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/tasks"
	"github.com/elicitd/elicitd/tools"
)

// addConformanceFixtures registers the suite's fixtures on s.
func (s *server) addConformanceFixtures() {
	s.el.Add(s.mcp, tools.ConformanceFixtures()...)
	s.el.Add(s.mcp, tools.InputRequiredFixtures()...)
	noArgs := json.RawMessage(`{"type":"object"}`)
	add := func(name, description string, schema json.RawMessage, h mcp.ToolHandler) {
		s.mcp.AddTool(&mcp.Tool{Name: name, Description: "MCP conformance fixture: " + description, InputSchema: schema}, h)
	}
	asks := func(h mcp.ToolHandler) mcp.ToolHandler { return s.el.Handler(h, ask.Replayable, ask.Pure) }

	// SEP-2322, input-required-result-*.
	names := newWireKeys()
	add("test_input_required_result_elicitation", "asks for a name (SEP-2322)", noArgs,
		names.named("user_name", asks(askName)))
	add("test_input_required_result_multiple_inputs", "asks for a name, a sampling and the roots in one round (SEP-2322)", noArgs,
		withSamplingAndRoots(names.named("user_name", asks(askName))))
	add("test_input_required_result_capabilities", "asks only what the client declares it can answer (SEP-2322)", noArgs,
		asks(askWhatTheClientCan))
	add("test_input_required_result_sampling", "asks for a sampling, which elicitd never does: a plain go-sdk result (SEP-2322)", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if text, ok := samplingText(req.Params.InputResponses, "capital_question"); ok {
				return textResult("Sampling response: " + text), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": sampling("What is the capital of France?", 100)}}, nil
		})
	add("test_input_required_result_list_roots", "asks for the roots, which elicitd never does: a plain go-sdk result (SEP-2322)", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if roots, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok && roots != nil {
				return textResult(fmt.Sprintf("Client exposed %d root(s): %s", len(roots.Roots), rootURIs(roots))), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil
		})

	// input-required-result-non-tool-request: a prompt that asks, as a template's does.
	const prompt = "test_input_required_result_prompt"
	s.mcp.AddPrompt(&mcp.Prompt{Name: prompt, Description: "MCP conformance fixture: asks for the context it is to use (SEP-2322)"},
		s.askingPrompt(prompt, "A prompt with the context the person gave", func(ctx context.Context, _ map[string]string) (string, error) {
			c, err := tools.AskPromptContext(ctx, prompt)
			if err != nil {
				return "", err
			}
			return "Context: " + c, nil
		}))

	// SEP-2575, server-stateless's diagnostic tools (test_streaming_elicitation asks: tools).
	add("test_missing_capability", "needs the client's sampling capability (SEP-2575)", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return textResult("the client declares sampling"), nil
			}
			data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
				RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			if err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
				Message: "this tool needs the sampling capability, which the client does not declare", Data: data}
		})
	add("test_logging_tool", "logs, which go-sdk sends only to a request that set a log level (SEP-2575)", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool was called"})
			return textResult("logged, if the request set a log level"), nil
		})
	add("test_trigger_tool_change", "changes the tool list (SEP-2575)", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mcp.AddTool(&mcp.Tool{Name: "test_transient_tool", Description: "MCP conformance fixture: added by test_trigger_tool_change",
				InputSchema: noArgs}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("transient"), nil
			})
			return textResult("the tool list changed"), nil
		})
	add("test_trigger_prompt_change", "changes the prompt list (SEP-2575)", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mcp.AddPrompt(&mcp.Prompt{Name: "test_transient_prompt", Description: "MCP conformance fixture: added by test_trigger_prompt_change"},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "transient"}}}}, nil
				})
			return textResult("the prompt list changed"), nil
		})

	// SEP-2243, http-custom-header-server-validation: go-sdk checks Mcp-Param-Region
	// against the argument.
	add("test_x_mcp_header", "mirrors an argument into an HTTP header (SEP-2243)", json.RawMessage(`{
		"type": "object",
		"properties": {
			"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
			"level": {"type": "integer", "description": "not mirrored"}
		}}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("called with " + string(req.Params.Arguments)), nil
		})
	// SEP-1613 and SEP-2106, json-schema-2020-12: the schema is listed exactly as written.
	add("json_schema_2020_12_tool", "an input schema with JSON Schema 2020-12 keywords (SEP-1613, SEP-2106)", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"address": {"$anchor": "addressDef", "type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {
			"name": {"type": "string"},
			"address": {"$ref": "#/$defs/address"},
			"contactMethod": {"type": "string", "enum": ["phone", "email"]},
			"phone": {"type": "string"},
			"email": {"type": "string"}
		},
		"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
		"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
		"then": {"required": ["phone"]},
		"else": {"required": ["email"]},
		"additionalProperties": false
	}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("called with " + string(req.Params.Arguments)), nil
		})
}

// askName asks the person's name through ask, and greets them.
func askName(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := tools.AskName(ctx, req.Params.Name)
	if err != nil {
		return nil, err
	}
	return textResult("Hello, " + name + "!"), nil
}

// askWhatTheClientCan asks the person's name through ask, which hands out no elicitation to
// a client that declares none; such a client that declares sampling is asked for one
// instead (input-required-result-capability-check).
func askWhatTheClientCan(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if text, ok := samplingText(req.Params.InputResponses, "greeting"); ok && req.Params.RequestState == "" {
		return textResult("Sampling response: " + text), nil
	}
	res, err := askName(ctx, req)
	if caps := req.ClientCapabilities(); errors.Is(err, ask.ErrUnsupported) && caps != nil && caps.Sampling != nil {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"greeting": sampling("Generate a short greeting", 50)}}, nil
	}
	return res, err
}

// withSamplingAndRoots adds a sampling and a roots/list request, each where the client
// declares it, to every round h hands out (input-required-result-multiple-input-requests).
// Their responses come back beside the elicitation's, which is ask's to check.
func withSamplingAndRoots(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil {
			return res, err
		}
		if res.InputRequests == nil {
			if text, ok := samplingText(req.Params.InputResponses, "greeting"); ok {
				res.Content = append(res.Content, &mcp.TextContent{Text: "Sampling response: " + text})
			}
			return res, nil
		}
		caps := req.ClientCapabilities()
		if caps != nil && caps.Sampling != nil {
			res.InputRequests["greeting"] = sampling("Generate a greeting", 50)
		}
		if caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged) {
			res.InputRequests["client_roots"] = &mcp.ListRootsParams{}
		}
		return res, nil
	}
}

// wireKeys names a tool's input request as a scenario expects (user_name), where ask names
// each round's by its number: it remembers which of ask's names each requestState it handed
// out answers to, and gives a retry's response that name back. A requestState it does not
// know (altered, or from before a restart) is passed on as it is, for ask to refuse.
type wireKeys struct {
	mu    sync.Mutex
	byKey map[string]string // requestState: ask's name of its input request
}

// wireKeysMax bounds what a wireKeys remembers: a fixture's, for the suite's few calls.
const wireKeysMax = 10000

func newWireKeys() *wireKeys { return &wireKeys{byKey: map[string]string{}} }

func (w *wireKeys) named(name string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if st := req.Params.RequestState; st != "" {
			w.mu.Lock()
			key, ok := w.byKey[st]
			w.mu.Unlock()
			if resp, has := req.Params.InputResponses[name]; ok && has {
				renamed := mcp.InputResponseMap{}
				for k, v := range req.Params.InputResponses {
					renamed[k] = v
				}
				delete(renamed, name)
				renamed[key] = resp
				req.Params.InputResponses = renamed
			}
		}
		res, err := h(ctx, req)
		if res == nil || len(res.InputRequests) != 1 {
			return res, err
		}
		for key, ir := range res.InputRequests {
			w.mu.Lock()
			if len(w.byKey) >= wireKeysMax {
				clear(w.byKey)
			}
			w.byKey[res.RequestState] = key
			w.mu.Unlock()
			res.InputRequests = mcp.InputRequestMap{name: ir}
		}
		return res, err
	}
}

func sampling(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{MaxTokens: maxTokens,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
}

// samplingText is the text of the sampling response under key, if there is one.
func samplingText(responses mcp.InputResponseMap, key string) (string, bool) {
	resp, ok := responses[key].(*mcp.CreateMessageWithToolsResult)
	if !ok || resp == nil {
		return "", false
	}
	for _, c := range resp.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text, true
		}
	}
	return "(no text)", true
}

func rootURIs(r *mcp.ListRootsResult) string {
	var uris []string
	for _, root := range r.Roots {
		uris = append(uris, root.URI)
	}
	return strings.Join(uris, ", ")
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// allowConformanceTasks adds the fixtures of the MCP Tasks scenarios (SEP-2663) and
// declares their task support.
func (s *server) allowConformanceTasks() {
	clk := s.opts.Clock
	if clk == nil {
		clk = clock.New()
	}
	// wait waits d on the server's clock, or until the call is stopped (a task's cancel).
	wait := func(ctx context.Context, d time.Duration) error {
		if d <= 0 {
			return nil
		}
		select {
		case <-clk.After(d):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	s.el.Add(s.mcp, tools.TaskFixtures()...)
	add := func(name, description string, support tasks.Support, schema json.RawMessage, h mcp.ToolHandler, opts ...tasks.ToolOption) {
		s.mcp.AddTool(&mcp.Tool{Name: name, Description: "MCP conformance fixture: " + description, InputSchema: schema}, h)
		s.tasks.Allow(name, support, opts...)
	}
	add("greet", "greets, at once: never a task", tasks.Forbidden, json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return textResult("Hello, " + in.Name + "!"), nil
		})
	add("slow_compute", "works for the given seconds, then answers", tasks.Optional,
		json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Seconds float64
				Label   string
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			if err := wait(ctx, time.Duration(min(in.Seconds, 3600)*float64(time.Second))); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("computed %s in %gs", in.Label, in.Seconds)), nil
		})
	add("failing_job", "fails as a tool after a second", tasks.Required, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := wait(ctx, time.Second); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the job failed"}}}, nil
		})
	add("protocol_error_job", "fails with a JSON-RPC error after a second", tasks.Optional, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := wait(ctx, time.Second); err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the job broke"}
		})
	// Two questions in one round, each its own input request: a raw multi round-trip
	// (ask asks one question a round).
	add("multi_input", "asks two questions at once", tasks.Optional, json.RawMessage(`{"type":"object"}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, hasName := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			confirm, hasConfirm := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if hasName && hasConfirm && name != nil && confirm != nil {
				return textResult(fmt.Sprintf("name: %v; confirmed: %v", name.Content["name"], confirm.Content["confirm"])), nil
			}
			form := func(message, field, typ string) *mcp.ElicitParams {
				return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: json.RawMessage(
					`{"type":"object","properties":{"` + field + `":{"type":"` + typ + `"}},"required":["` + field + `"]}`)}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"name":    form("What is your name?", "name", "string"),
				"confirm": form("Go ahead?", "confirm", "boolean"),
			}}, nil
		})
	// Asks over the pull era's own round, then works as a task.
	add("test_tool_with_task", "asks a name, then works on it as a task", tasks.Required, json.RawMessage(`{"type":"object"}`),
		s.el.Handler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := tools.AskName(ctx, req.Params.Name)
			if err != nil {
				return nil, err
			}
			if err := wait(ctx, time.Second); err != nil {
				return nil, err
			}
			return textResult("Hello, " + name + ": done"), nil
		}, ask.Replayable, ask.Pure), tasks.AsksInline)
}
