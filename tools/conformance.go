package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

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

// ConformanceFixtures returns the tools the MCP conformance suite calls.
func ConformanceFixtures() []ask.Tool {
	var out []ask.Tool
	for name, schema := range conformanceSchemas {
		raw := json.RawMessage(schema)
		compiled, err := validator.CompileMCPSchema(raw)
		if err != nil {
			panic(fmt.Sprintf("conformance schema %s: %v", name, err)) // fixed data, checked by tests
		}
		form := rawSchemaForm{compiled, raw}
		out = append(out, ask.NewTool(name, "", "MCP conformance fixture: requests elicitation with a fixed schema",
			func(ctx context.Context, in conformanceInput) (ask.Text, error) {
				msg := cmp.Or(in.Message, "Please answer the conformance test form")
				o, err := ask.Outcome(ctx, ask.Question{Title: name, Message: msg, Form: compiled, Wire: form})
				if err != nil {
					return "", err
				}
				return conformanceResult(name, o)
			}))
	}
	return out
}

// conformanceResult words an outcome as the suite's reference server does.
func conformanceResult(tool string, o elicitation.Outcome) (ask.Text, error) {
	var action string
	switch status := ask.Status(o); {
	case status == "completed":
		action = "accept"
	case status == "declined":
		action = "decline"
	case o.Reason == elicitation.UserCancelled:
		action = "cancel"
	default:
		return "", ask.OutcomeError(o)
	}
	content, _ := json.Marshal(o.Data) // answers decoded from JSON: they encode
	if o.Data == nil {
		content = []byte("{}")
	}
	if tool == "test_elicitation" {
		return ask.Text(fmt.Sprintf("User response: <action: %s, content: %s>", action, content)), nil
	}
	return ask.Text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", action, content)), nil
}
