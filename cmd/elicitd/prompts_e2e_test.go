package main

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elicitd answers prompts/list (go-sdk serves it on every server), so it must declare the
// prompts capability: in server/discover (2026-07-28, MUST: the conformance suite's
// server-stateless) and in initialize's result alike.
func TestPromptsCapabilityIsDeclared(t *testing.T) {
	s := startHTTP(t)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			cs, err := connectHTTP(t, s, era.version, "", nil)
			require.NoError(t, err)
			caps := cs.InitializeResult().Capabilities
			require.NotNil(t, caps)
			assert.NotNil(t, caps.Prompts, "prompts/list is served, so the prompts capability is declared")
			res, err := cs.ListPrompts(timeout(t), nil)
			require.NoError(t, err)
			assert.NotNil(t, res.Prompts)
		})
	}
}

// A template is also a prompt (prompts/get): its fields are the prompt's arguments; those
// missing are asked of the person (2026-07-28: an input-required result with elicitd's
// signed requestState; 2025-11-25: elicitation/create during prompts/get), and the prompt
// comes back filled in.
func TestTemplateAsAPrompt(t *testing.T) {
	s := startHTTPWith(t, []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir(),
		"--templates", exampleTemplates(t)})

	t.Run("listed", func(t *testing.T) {
		cs, err := connectHTTP(t, s, "", "", nil)
		require.NoError(t, err)
		res, err := cs.ListPrompts(timeout(t), nil)
		require.NoError(t, err)
		i := slices.IndexFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "contact" })
		require.GreaterOrEqual(t, i, 0, "the template contact is a prompt")
		var args []string
		for _, a := range res.Prompts[i].Arguments {
			args = append(args, a.Name)
			assert.False(t, a.Required, "a missing argument is asked, not refused: %s", a.Name)
		}
		assert.Equal(t, []string{"name", "email", "phone", "reach_by", "phone_ok"}, args)
	})

	answers := map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "reach_by": "email"}
	for _, era := range eras {
		t.Run("asked, "+era.name, func(t *testing.T) {
			var asked []*mcp.ElicitParams
			cs, err := connectHTTP(t, s, era.version, "", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params)
				return &mcp.ElicitResult{Action: "accept", Content: answers}, nil
			})
			require.NoError(t, err)
			res, err := cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact", Arguments: map[string]string{"name": "Ada Lovelace"}})
			require.NoError(t, err)
			require.Len(t, asked, 1, "the missing fields were asked")
			props := properties(t, asked[0].RequestedSchema)
			assert.Equal(t, "Ada Lovelace", props["name"]["default"], "the argument given is pre-filled")
			require.Len(t, res.Messages, 1)
			text := res.Messages[0].Content.(*mcp.TextContent).Text
			assert.Contains(t, text, "Contact details")
			assert.Contains(t, text, "Full name: Ada Lovelace")
			assert.Contains(t, text, "Email: ada@example.com")
			assert.Contains(t, text, "Best way to reach you: email")
		})
	}

	t.Run("every argument given: nothing asked", func(t *testing.T) {
		cs, err := connectHTTP(t, s, "", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("asked, though every field was given")
			return &mcp.ElicitResult{Action: "decline"}, nil
		})
		require.NoError(t, err)
		res, err := cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact",
			Arguments: map[string]string{"name": "Ada Lovelace", "email": "ada@example.com", "reach_by": "email"}})
		require.NoError(t, err)
		assert.Contains(t, res.Messages[0].Content.(*mcp.TextContent).Text, "Email: ada@example.com")
	})

	t.Run("the input-required result on the wire", func(t *testing.T) {
		cs := pullByHand(t, s, nil, nil)
		res, err := cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact"})
		require.NoError(t, err)
		require.Len(t, res.InputRequests, 1)
		require.NotEmpty(t, res.RequestState)
		assert.Empty(t, res.Messages)
		var key string
		for k, ir := range res.InputRequests {
			key = k
			_, ok := ir.(*mcp.ElicitParams)
			require.True(t, ok, "an elicitation: %T", ir)
		}
		// A requestState altered is refused with a JSON-RPC error.
		_, err = cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact", RequestState: res.RequestState + "x",
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: answers}}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "INVALID_REQUEST_STATE")
		done, err := cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact", RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: answers}}})
		require.NoError(t, err)
		require.Len(t, done.Messages, 1)
		assert.Contains(t, done.Messages[0].Content.(*mcp.TextContent).Text, "Full name: Ada Lovelace")
		// Used once: the same state again with another answer is refused.
		_, err = cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact", RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bob Smith", "email": "b@example.com", "reach_by": "email"}}}})
		require.Error(t, err)
	})

	t.Run("declined", func(t *testing.T) {
		cs, err := connectHTTP(t, s, "", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		})
		require.NoError(t, err)
		_, err = cs.GetPrompt(timeout(t), &mcp.GetPromptParams{Name: "contact"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ELICITATION_DECLINED")
	})
}

// A template prompt's argument whose field is a choice completes to its options
// (completion/complete): those whose value or title starts with what was typed. Anything
// else completes to nothing, as it has nothing to offer.
func TestTemplatePromptArgumentsComplete(t *testing.T) {
	s := startHTTPWith(t, []string{"--rate", "0", "--store", "memory", "--templates", exampleTemplates(t)})
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			cs, err := connectHTTP(t, s, era.version, "", nil)
			require.NoError(t, err)
			assert.NotNil(t, cs.InitializeResult().Capabilities.Completions, "the completions capability is declared")
			complete := func(prompt, arg, value string) []string {
				res, err := cs.Complete(timeout(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompt},
					Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
				require.NoError(t, err)
				return res.Completion.Values
			}
			assert.Equal(t, []string{"phone"}, complete("contact", "reach_by", "ph"))
			assert.Equal(t, []string{"phone"}, complete("contact", "reach_by", "PH"), "whatever the case")
			assert.Equal(t, []string{"email", "phone"}, complete("contact", "reach_by", ""))
			assert.Empty(t, complete("contact", "name", "Ad"), "a free text field offers nothing")
			assert.Empty(t, complete("nope", "x", ""))
		})
	}
}
