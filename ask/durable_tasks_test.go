package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// A first call made under FirstCall asks its question under the id it names, says whether
// its tool may be made again, and DropUnseen removes that question (or keeps an id not
// written yet from being written): what package tasks needs to make a task's first call
// again on another node once the node making it is gone.
func TestAFirstCallNamesItsQuestionAndDropUnseenRemovesIt(t *testing.T) {
	mem := memory.New(memory.Options{})
	t.Cleanup(func() { require.NoError(t, mem.Close()) })
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Timeout: time.Minute, StateKey: []byte(strings.Repeat("k", 32)), Store: mem,
		Owner: func(*mcp.CallToolRequest) string { return "caller:test" }})
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	tl := ask.RawTool[struct{}]("contact", "", "asks", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
	})
	tl.Replayable = true
	el.Add(server, tl)
	// The name each first call is to use, and what it reported, as package tasks sets them.
	next, replayable := "", func() bool { return false }
	server.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" && next != "" {
				ctx, replayable = el.FirstCall(ctx, next)
			}
			return h(ctx, method, req)
		}
	})
	u := elicittest.Connect(t, server, elicittest.Pull)
	call := func(state string) *mcp.CallToolResult {
		p := &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{}, RequestState: state}
		if state != "" {
			p.InputResponses = mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 30}}}
		}
		res, err := u.Session.CallTool(failsafe(t), p)
		require.NoError(t, err)
		return res
	}

	next = "tq1"
	first := call("")
	require.Len(t, first.InputRequests, 1, "asked: %+v", first.Content)
	assert.True(t, replayable(), "a Replayable tool, with a store")
	rec, err := mem.Get(context.Background(), "caller:test", "tq1")
	require.NoError(t, err, "the question is recorded under the id named")
	assert.Equal(t, "active", rec.State)

	el.DropUnseen("caller:test", "tq1")
	_, err = mem.Get(context.Background(), "caller:test", "tq1")
	assert.ErrorIs(t, err, store.ErrNotFound, "dropped")
	next = ""
	res := call(first.RequestState)
	assert.True(t, res.IsError, "no one answers a dropped question: %+v", res.Content)

	// An id not written yet cannot be written once dropped: the call naming it asks nothing.
	el.DropUnseen("caller:test", "tq2")
	next = "tq2"
	late := call("")
	assert.Empty(t, late.InputRequests, "refused")
	assert.True(t, late.IsError)
}
