package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A raw client answers with exactly what a person typed, as the hosts people use do (Claude
// Code, VS Code and Cursor send form text as it was typed). The go-sdk client would check an
// answer against the schema itself first, so this one goes around that check: in the push era
// a client middleware answers elicitation/create before the SDK's handler sees it; in the pull
// era the test plays the rounds itself.

// prompt is one question as the raw client saw it.
type prompt struct {
	Message string
	Schema  map[string]any
}

func (p prompt) keys() []string {
	props, _ := p.Schema["properties"].(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	return out
}

// rawClient is a client whose answers bypass every client-side check.
type rawClient struct {
	h      *harness
	pull   bool
	answer func(n int, p prompt) *mcp.ElicitResult

	mu      sync.Mutex // push prompts are recorded on the client's handler goroutines
	prompts []prompt
}

// record keeps a prompt and returns its number, from 0.
func (rc *rawClient) record(p prompt) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.prompts = append(rc.prompts, p)
	return len(rc.prompts) - 1
}

// seen returns the prompts so far.
func (rc *rawClient) seen() []prompt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.prompts)
}

func toPrompt(t *testing.T, params *mcp.ElicitParams) prompt {
	b, err := json.Marshal(params.RequestedSchema)
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(b, &schema))
	return prompt{Message: params.Message, Schema: schema}
}

// startRaw starts elicitd for a raw client in the era, answering each prompt with answer.
func startRaw(t *testing.T, version string, answer func(n int, p prompt) *mcp.ElicitResult, args ...string) *rawClient {
	rc := &rawClient{pull: version == "", answer: answer}
	setup := clientSetup{version: version, args: args, noMRTR: true,
		// A handler is needed to declare the elicitation capability; the middleware below
		// answers before it is reached.
		elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("the SDK's own elicitation handler was reached")
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}}
	setup.middleware = func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			p := toPrompt(t, req.GetParams().(*mcp.ElicitParams))
			return rc.answer(rc.record(p), p), nil
		}
	}
	rc.h = start(t, setup)
	return rc
}

// call calls a tool to its end, answering every question, and returns its structured result.
func (rc *rawClient) call(t *testing.T, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	ctx := timeout(t)
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	for range 10 {
		res, err := rc.h.cs.CallTool(ctx, params)
		require.NoError(t, err)
		if len(res.InputRequests) == 0 {
			return structured(t, res), res.IsError
		}
		require.True(t, rc.pull, "input requests reach only a pull-era client")
		responses := mcp.InputResponseMap{}
		for key, ir := range res.InputRequests {
			p := toPrompt(t, ir.(*mcp.ElicitParams))
			responses[key] = rc.answer(rc.record(p), p)
		}
		params = &mcp.CallToolParams{Name: tool, Arguments: args, RequestState: res.RequestState, InputResponses: responses}
	}
	t.Fatal("the call never ended")
	return nil, false
}

func acceptRaw(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

var humanForm = map[string]any{"title": "Order", "fields": []any{
	map[string]any{"name": "qty", "type": "integer", "label": "Quantity", "required": true, "minimum": 1},
	map[string]any{"name": "gift", "type": "boolean", "label": "Gift wrap", "required": true},
	map[string]any{"name": "country", "type": "select", "label": "Country", "required": true,
		"options": []any{map[string]any{"value": "US", "title": "United States"}, map[string]any{"value": "CA", "title": "Canada"}}},
	map[string]any{"name": "email", "type": "email", "label": "Email", "required": true},
	map[string]any{"name": "note", "type": "text", "label": "Note", "max_length": 20},
}}

// What people type is normalised the same way in both eras: numbers as text, padded text,
// booleans in capitals, an option by its title in another case.
func TestHumanInputIsNormalisedInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			for _, qty := range []string{"5", " 5 "} {
				rc := startRaw(t, era.version, func(int, prompt) *mcp.ElicitResult {
					return acceptRaw(map[string]any{"qty": qty, "gift": "TRUE", "country": "united states", "email": " ada@example.com "})
				})
				out, isErr := rc.call(t, "ask_user", map[string]any{"message": "Your order?", "form": humanForm})
				require.False(t, isErr, "%v", out)
				assert.Equal(t, "completed", out["status"], "%v", out)
				assert.Equal(t, map[string]any{"qty": 5.0, "gift": true, "country": "US", "email": "ada@example.com"}, out["data"])
				assert.EqualValues(t, 1, out["attempts"])
			}
		})
	}
}

const marker = "MARKER-7f3a"

// Every problem of an answer is reported, in field order, by label, and never with what the
// person typed; the re-prompt asks only the wrong fields, and the valid answers are kept.
func TestEveryErrorInFieldOrderWithoutTypedValues(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rc := startRaw(t, era.version, func(n int, _ prompt) *mcp.ElicitResult {
				switch n {
				case 0:
					return acceptRaw(map[string]any{"qty": marker, "gift": "yes" + marker, "country": "CA",
						"email": marker + "@", "note": strings.Repeat(marker, 5)})
				case 1:
					return acceptRaw(map[string]any{"qty": "0", "gift": true, "email": "bo@example.com", "note": "ok"})
				default:
					return acceptRaw(map[string]any{"qty": "2"})
				}
			})
			out, isErr := rc.call(t, "ask_user", map[string]any{"message": "Your order?", "form": humanForm})
			prompts := rc.seen()
			require.False(t, isErr, "%v", out)
			require.Len(t, prompts, 3)
			first := prompts[1].Message
			wantOrder := []string{"Quantity: must be a whole number", "Gift wrap: must be true or false", "Email: must be an email address", "Note: must be at most 20 characters"}
			last := -1
			for _, want := range wantOrder {
				at := strings.Index(first, want)
				require.GreaterOrEqual(t, at, 0, "%q in %q", want, first)
				assert.Greater(t, at, last, "errors in field order")
				last = at
			}
			assert.NotContains(t, first, "/properties/", "labels, not schema paths")
			assert.ElementsMatch(t, []string{"qty", "gift", "email", "note"}, prompts[1].keys(), "only the wrong fields are asked again")
			assert.Equal(t, []string{"qty"}, prompts[2].keys())
			assert.True(t, strings.HasPrefix(prompts[2].Message, "Quantity: must be at least 1"), prompts[2].Message)

			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"qty": 2.0, "gift": true, "country": "CA", "email": "bo@example.com", "note": "ok"}, out["data"],
				"the country from the first answer and the rest from the second were kept")
			for _, p := range prompts {
				assert.NotContains(t, p.Message, marker)
			}
			assert.NotContains(t, rc.h.stderr.String(), marker, "answers are never logged")
		})
	}
}

// An answer that never becomes valid ends with every error of the last one, by label, and
// nothing typed in the result.
func TestMaxAttemptsResultQuotesNothing(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rc := startRaw(t, era.version, func(int, prompt) *mcp.ElicitResult {
				return acceptRaw(map[string]any{"qty": marker, "gift": marker, "country": marker, "email": marker})
			})
			out, _ := rc.call(t, "ask_user", map[string]any{"message": "Your order?", "form": humanForm, "max_attempts": 2})
			assert.Equal(t, "cancelled", out["status"])
			assert.Equal(t, "max_attempts", out["reason"])
			b, _ := json.Marshal(out)
			assert.NotContains(t, string(b), marker)
			var labels []string
			for _, e := range out["errors"].([]any) {
				labels = append(labels, e.(map[string]any)["label"].(string))
			}
			assert.Equal(t, []string{"Quantity", "Gift wrap", "Country", "Email"}, labels)
		})
	}
}

// The answer-size limit holds in both eras: the re-prompt says so in a line, whatever the
// size of what was sent.
func TestAnswerSizeLimitInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			huge := strings.Repeat("x", 2<<20)
			rc := startRaw(t, era.version, func(n int, _ prompt) *mcp.ElicitResult {
				if n == 0 {
					return acceptRaw(map[string]any{"qty": 1, "gift": false, "country": "US", "email": "a@example.com", "note": huge})
				}
				return acceptRaw(map[string]any{"qty": 1, "gift": false, "country": "US", "email": "a@example.com"})
			})
			out, isErr := rc.call(t, "ask_user", map[string]any{"message": "Your order?", "form": humanForm})
			prompts := rc.seen()
			require.False(t, isErr, "%v", out)
			require.Len(t, prompts, 2)
			assert.True(t, strings.HasPrefix(prompts[1].Message, "Answer: is too large (the limit is 1048576 bytes)"), prompts[1].Message)
			assert.Less(t, len(prompts[1].Message), 200)
			assert.Len(t, prompts[1].keys(), 5, "nothing of an oversized answer is kept")
			assert.Equal(t, "completed", out["status"])
		})
	}
}

// create_shipment keeps the valid answers in both eras when one is too long: with service 14
// the recipient's contact name (35 characters at most) and phone are asked too.
func TestShippingKeepsValidAnswersInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			body := strings.Replace(partialDomestic, `"Service":{"Code":"03"}`, `"Service":{"Code":"14"}`, 1)
			rc := startRaw(t, era.version, func(n int, _ prompt) *mcp.ElicitResult {
				if n == 0 {
					return acceptRaw(map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": " 5 ",
						"ship_to_attention_name": strings.Repeat("C", 80), "ship_to_phone": "5550100"})
				}
				return acceptRaw(map[string]any{"ship_to_attention_name": "Carol"})
			})
			out, isErr := rc.call(t, "create_shipment", map[string]any{"request_body": jsonBody(t, body), "dry_run": true})
			prompts := rc.seen()
			require.False(t, isErr, "%v", out)
			require.Len(t, prompts, 2)
			assert.Len(t, prompts[0].keys(), 5)
			assert.Equal(t, []string{"ship_to_attention_name"}, prompts[1].keys(), "only the over-long name is asked again")
			assert.Contains(t, prompts[1].Message, "Recipient contact name: must be at most 35 characters")
			shipTo := out["request_body"].(map[string]any)["ShipmentRequest"].(map[string]any)["Shipment"].(map[string]any)["ShipTo"].(map[string]any)
			assert.Equal(t, "Carol", shipTo["AttentionName"])
			assert.Equal(t, "Bob", shipTo["Name"])
			assert.Equal(t, "5550100", shipTo["Phone"].(map[string]any)["Number"])
		})
	}
}
