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

// The 2026-07-28 input-required-result scenarios (SEP-2322) call these tools, which ask
// through ask as elicitd's own tools do: each question goes out as an input request with
// elicitd's signed, single-use requestState, and its answer is checked against the form on
// the retry that brings it. They ask the schemas the scenarios give, sent as given.
const (
	nameSchema    = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	confirmSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	colorSchema   = `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`
)

// exactQuestion asks schema, sent exactly as given.
func exactQuestion(title, message, schema string) ask.Question {
	raw := json.RawMessage(schema)
	compiled, err := validator.CompileMCPSchema(raw)
	if err != nil {
		panic(fmt.Sprintf("conformance schema %s: %v", title, err)) // fixed data, checked by tests
	}
	return ask.Question{Title: title, Message: message, Form: compiled, Wire: rawSchemaForm{compiled, raw}}
}

// AskName asks the person's name as the input-required-result scenarios' elicitation does.
func AskName(ctx context.Context, tool string) (string, error) {
	data, err := ask.Ask(ctx, exactQuestion(tool, "What is your name?", nameSchema))
	if err != nil {
		return "", err
	}
	name, _ := data["name"].(string)
	return name, nil
}

// AskPromptContext asks what input-required-result-non-tool-request's prompt asks: the
// context the prompt is to use.
func AskPromptContext(ctx context.Context, prompt string) (string, error) {
	data, err := ask.Ask(ctx, exactQuestion(prompt, "What context should the prompt use?",
		`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`))
	if err != nil {
		return "", err
	}
	c, _ := data["context"].(string)
	return c, nil
}

type noInput struct{}

// InputRequiredFixtures returns the tools of the input-required-result scenarios that need
// nothing but ask, and the diagnostic tool of server-stateless that asks.
func InputRequiredFixtures() []ask.Tool {
	confirm := func(tool, word string) ask.Tool {
		return ask.NewTool(tool, "", "MCP conformance fixture: asks for a confirmation (SEP-2322)",
			func(ctx context.Context, _ noInput) (ask.Text, error) {
				data, err := ask.Ask(ctx, exactQuestion(tool, "Please confirm", confirmSchema))
				if err != nil {
					return "", err
				}
				return ask.Text(fmt.Sprintf("%s: confirmed=%v", word, data["ok"])), nil
			})
	}
	out := []ask.Tool{
		// Reaching the second round at all is the requestState checked: ask refuses one
		// it did not sign, or signed for another call, round or client.
		confirm("test_input_required_result_request_state", "state-ok"),
		confirm("test_input_required_result_tampered_state", "state-ok"),
		ask.NewTool("test_input_required_result_multi_round", "", "MCP conformance fixture: asks in two rounds (SEP-2322)",
			func(ctx context.Context, _ noInput) (ask.Text, error) {
				name, err := ask.Ask(ctx, exactQuestion("test_input_required_result_multi_round", "Step 1: What is your name?", nameSchema))
				if err != nil {
					return "", err
				}
				color, err := ask.Ask(ctx, exactQuestion("test_input_required_result_multi_round", "Step 2: What is your favorite color?", colorSchema))
				if err != nil {
					return "", err
				}
				return ask.Text(fmt.Sprintf("%v likes %v", name["name"], color["color"])), nil
			}),
		// server-stateless calls it to see that a response stream carries no request of
		// the server's own: in the pull era the question goes out in the result.
		ask.NewTool("test_streaming_elicitation", "", "MCP conformance fixture: asks a question (SEP-2575)",
			func(ctx context.Context, _ noInput) (ask.Text, error) {
				name, err := AskName(ctx, "test_streaming_elicitation")
				if err != nil {
					return "", err
				}
				return ask.Text("Hello, " + name + "!"), nil
			}),
	}
	for i := range out {
		out[i].Replayable, out[i].Pure = true, true // they ask, and act on nothing
	}
	return out
}

// TaskFixtures returns the tool of the MCP Tasks scenarios (io.modelcontextprotocol/tasks)
// that asks the person: confirm_delete, a task while it waits for the confirmation.
func TaskFixtures() []ask.Tool {
	type deleteInput struct {
		Filename string `json:"filename" jsonschema:"the file to delete"`
	}
	t := ask.NewTool("confirm_delete", "", "MCP conformance fixture: asks to confirm a deletion, as a task (SEP-2663)",
		func(ctx context.Context, in deleteInput) (ask.Text, error) {
			data, err := ask.Ask(ctx, exactQuestion("confirm_delete", fmt.Sprintf("Delete %s?", in.Filename),
				`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`))
			if err != nil {
				return "", err
			}
			if data["confirm"] != true {
				return ask.Text(in.Filename + " kept"), nil
			}
			return ask.Text(in.Filename + " deleted (not really: a fixture)"), nil
		})
	t.Replayable, t.Pure, t.Tasks = true, true, "optional"
	return []ask.Tool{t}
}
