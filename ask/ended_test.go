package ask

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicittest"
)

// A call that has ended is remembered as bytes: an identical resend of its last request
// gets what the first got, whatever the handler returned (a payload, a typed handler's
// output, an error), and the same requestState with another answer hears that the call has
// ended.
func TestAnIdenticalResendAfterTheEndGetsWhatTheFirstGot(t *testing.T) {
	el, server := cityServer(t)
	el.Add(server,
		RawTool[struct{}]("refuse", "", "asks a city, then refuses it", func(ctx context.Context, _ json.RawMessage) (any, error) {
			data, err := Ask(ctx, Question{Message: "Which city?", Form: cityForm})
			if err != nil {
				return nil, err
			}
			return nil, Errorf(CodeFailed, "no_service", "no service to %v", data["city"])
		}))
	type out struct {
		City string `json:"city"`
		Len  int    `json:"len"`
	}
	AddTool(el, server, &mcp.Tool{Name: "typed"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, out, error) {
		data, err := Ask(ctx, Question{Message: "Which city?", Form: cityForm})
		if err != nil {
			return nil, out{}, err
		}
		city, _ := data["city"].(string)
		return nil, out{City: city, Len: len(city)}, nil
	})
	u := elicittest.Connect(t, server, elicittest.Pull)
	ctx := context.Background()
	answer := func(city string) mcp.InputResponseMap {
		return mcp.InputResponseMap{inputKey(1): &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": city}}}
	}
	encode := func(res *mcp.CallToolResult) string {
		b, err := json.Marshal(res)
		require.NoError(t, err)
		return string(b)
	}
	for _, tool := range []string{"where", "refuse", "typed"} {
		t.Run(tool, func(t *testing.T) {
			first, err := u.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			require.NoError(t, err)
			require.NotEmpty(t, first.RequestState)
			retry := func(city string) *mcp.CallToolResult {
				t.Helper()
				res, err := u.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{},
					RequestState: first.RequestState, InputResponses: answer(city)})
				require.NoError(t, err)
				return res
			}
			got := retry("Oslo")
			p, err := elicittest.Payload(got)
			require.NoError(t, err)
			assert.Contains(t, encode(got), "Oslo", "the first retry's result: %v", p)
			assert.Equal(t, encode(got), encode(retry("Oslo")), "an identical resend gets what the first got")
			p, err = elicittest.Payload(retry("Bergen"))
			require.NoError(t, err)
			assert.Equal(t, CodeInvalidRequestState, p["code"], "another answer with the used requestState: %v", p)
			assert.Equal(t, "finished", p["reason"])
		})
	}
	// What is remembered holds no result, only its bytes.
	kept := 0
	mc := el.calls.(*memCalls)
	mc.mu.Lock()
	for _, e := range mc.ended {
		if e.sent != nil {
			kept++
			var w wireResult
			assert.NoError(t, json.Unmarshal(e.sent, &w))
		}
	}
	mc.mu.Unlock()
	assert.Equal(t, 3, kept)
}
