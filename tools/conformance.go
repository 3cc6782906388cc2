package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// The MCP conformance suite's elicitation scenarios call these tools and check the exact
// schema each sends (the legacy enumNames property included, sent as given). They are only
// registered with --conformance-fixtures.

var conformanceSchemas = map[string]string{
	"test_elicitation": `{"type":"object","properties":{
		"username":{"type":"string","description":"User's response"},
		"email":{"type":"string","description":"User's email address"}},
		"required":["username","email"]}`,
	"test_elicitation_sep1034_defaults": `{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"score":{"type":"number","default":95.5},
		"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","default":true}}}`,
	"test_elicitation_sep1330_enums": `{"type":"object","properties":{
		"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`,
}

// rawSchemaForm sends a schema exactly as given and validates answers with its compiled form.
type rawSchemaForm struct {
	*validator.Compiled
	raw json.RawMessage
}

func (f rawSchemaForm) WireSchema() json.RawMessage { return f.raw }

type conformanceInput struct {
	Message string `json:"message,omitempty" jsonschema:"the message to show the user"`
}

// AddConformanceFixtures registers the tools the MCP conformance suite calls.
func (s *Server) AddConformanceFixtures() {
	for name, schema := range conformanceSchemas {
		raw := json.RawMessage(schema)
		compiled, err := validator.CompileMCPSchema(raw)
		if err != nil {
			panic(fmt.Sprintf("conformance schema %s: %v", name, err)) // fixed data, checked by tests
		}
		form := rawSchemaForm{compiled, raw}
		addTool(s.MCP, s.el, &mcp.Tool{Name: name, Description: "MCP conformance fixture: requests elicitation with a fixed schema"},
			func(ctx context.Context, req *mcp.CallToolRequest, in conformanceInput) *mcp.CallToolResult {
				msg := cmp.Or(in.Message, "Please answer the conformance test form")
				o, err := ask.Outcome(ctx, ask.Question{Title: name, Message: msg, Form: compiled, Wire: form})
				if err != nil {
					return errorResult(err)
				}
				return conformanceResult(name, o)
			})
	}
}

// errorResult is the tool result of an error from the ask package (always an *ask.Error).
func errorResult(err error) *mcp.CallToolResult {
	var e *ask.Error
	if !errors.As(err, &e) {
		e = ask.Errorf(ask.CodeFailed, "failed", "%s", err.Error())
	}
	return e.Result()
}

func conformanceResult(tool string, o elicitation.Outcome) *mcp.CallToolResult {
	action := "accept"
	switch {
	case o.State == elicitation.Completed:
	case o.Reason == elicitation.Declined:
		action = "decline"
	case o.Reason == elicitation.UserCancelled:
		action = "cancel"
	default:
		return ask.OutcomeError(o).Result()
	}
	content, _ := json.Marshal(o.Data) // answers decoded from JSON: they encode
	if o.Data == nil {
		content = []byte("{}")
	}
	text := fmt.Sprintf("Elicitation completed: action=%s, content=%s", action, content)
	if tool == "test_elicitation" {
		text = fmt.Sprintf("User response: <action: %s, content: %s>", action, content)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
