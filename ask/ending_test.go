package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
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

// endings records what Options.OnEnd heard.
type endings struct {
	mu   sync.Mutex
	seen []ask.Ending
}

func (e *endings) add(x ask.Ending) { e.mu.Lock(); e.seen = append(e.seen, x); e.mu.Unlock() }

func (e *endings) list() []ask.Ending {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ask.Ending(nil), e.seen...)
}

// endingNode is an Elicitor on a shared store (no relay: a retry elsewhere takes the call
// over) whose tool "contact" asks personForm, with what its OnEnd heard.
func endingNode(t *testing.T, s store.Store) (*ask.Elicitor, *elicittest.User, *endings) {
	t.Helper()
	heard := &endings{}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Timeout: time.Minute, StateKey: []byte(strings.Repeat("k", 32)), Store: s,
		Owner: func(*mcp.CallToolRequest) string { return "caller:test" }, OnEnd: heard.add})
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	tl := ask.RawTool[struct{}]("contact", "", "asks", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm, Template: "person"})
	})
	tl.Replayable = true
	el.Add(server, tl)
	return el, elicittest.Connect(t, server, elicittest.Pull), heard
}

func callOn(t *testing.T, u *elicittest.User, state string, round int, content map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{}, RequestState: state}
	if state != "" {
		p.InputResponses = mcp.InputResponseMap{"elicit-" + itoa(round): &mcp.ElicitResult{Action: "accept", Content: content}}
	}
	res, err := u.Session.CallTool(context.Background(), p)
	require.NoError(t, err)
	return res
}

// A question ends once for OnEnd, on the node where it ends: not on a node that stops with
// it open, nor on the node it was taken from; the answers are the form's.
func TestOnEndHearsEachQuestionEndOnce(t *testing.T) {
	s := memory.New(memory.Options{})
	elA, a, heardA := endingNode(t, s)
	elB, b, heardB := endingNode(t, s)
	_, c, heardC := endingNode(t, s)

	first := callOn(t, a, "", 0, nil)
	second := callOn(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12}) // taken over by B: a re-prompt
	r, _ := asked(t, second)
	require.Equal(t, 2, r)
	require.NoError(t, elA.Close(context.Background(), elicitation.Shutdown)) // A stops: its copy was fenced anyway
	last := callOn(t, c, second.RequestState, 2, map[string]any{"age": 36})   // taken over by C, and answered
	require.Empty(t, last.InputRequests)

	assert.Empty(t, heardA.list(), "A's copy of the question moved, then A stopped: not an end")
	got := heardC.list()
	require.Len(t, got, 1)
	end := got[0]
	assert.Equal(t, elicitation.Completed, end.State)
	assert.Equal(t, "contact", end.Tool)
	assert.Equal(t, "person", end.Template)
	assert.Equal(t, 2, end.Attempts, "the bad answer given on B counts")
	assert.Equal(t, map[string]any{"name": "Ada", "age": int64(36)}, end.Answers)
	assert.Equal(t, store.OwnerDigest("caller:test"), end.Owner)
	assert.NotContains(t, end.Owner, "caller", "the owner is opaque")
	assert.True(t, strings.HasSuffix(end.Key, "_q1"), "the call's first question: %q", end.Key)
	assert.False(t, end.Created.After(end.Ended))

	// B's copy was taken over by C: when B stops, nothing more is heard.
	require.NoError(t, elB.Close(context.Background(), elicitation.Shutdown))
	assert.Empty(t, heardB.list())
}

// The same question ending on two nodes (a take-over after its end was heard but before the
// call's end was recorded) keeps one Key: a webhook made of it keeps one id.
func TestOnEndKeyIsTheSameOnEveryNode(t *testing.T) {
	s := memory.New(memory.Options{})
	_, a, heardA := endingNode(t, s)
	_, b, heardB := endingNode(t, s)
	first := callOn(t, a, "", 0, nil)
	_, err := elittestPayload(callOn(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30}))
	require.NoError(t, err)
	// A fresh call on B ends too, with a Key of its own.
	other := callOn(t, b, "", 0, nil)
	_, err = elittestPayload(callOn(t, b, other.RequestState, 1, map[string]any{"name": "Bo", "age": 40}))
	require.NoError(t, err)
	ea, eb := heardA.list(), heardB.list()
	require.Len(t, ea, 1)
	require.Len(t, eb, 1)
	assert.NotEqual(t, ea[0].Key, eb[0].Key)
	assert.NotEqual(t, ea[0].QuestionID, eb[0].QuestionID)
}

func elittestPayload(res *mcp.CallToolResult) (map[string]any, error) { return elicittest.Payload(res) }

// Without a store (one process's memory: elicitd's stdio default) a 2026-07-28 question's
// end is heard as it is with one, though no record marks its round as gone out: once when
// answered, and once when the node stops under it, since nothing is left for another to
// take over (issue 52: no end was heard at all).
func TestOnEndHearsPullEraEndsWithoutAStore(t *testing.T) {
	el, u, heard := endingNode(t, nil)
	first := callOn(t, u, "", 0, nil)
	require.NotEmpty(t, first.InputRequests)
	done := callOn(t, u, first.RequestState, 1, map[string]any{"name": "Ada", "age": 36})
	require.Empty(t, done.InputRequests)
	got := heard.list()
	require.Len(t, got, 1, "the answered question")
	assert.Equal(t, elicitation.Completed, got[0].State)
	assert.Equal(t, map[string]any{"name": "Ada", "age": int64(36)}, got[0].Answers)

	open := callOn(t, u, "", 0, nil)
	require.NotEmpty(t, open.InputRequests)
	require.NoError(t, el.Close(context.Background(), elicitation.Shutdown))
	require.Eventually(t, func() bool { return len(heard.list()) == 2 }, time.Minute, time.Millisecond,
		"the question open as the node stopped is heard: %v", heard.list())
	got = heard.list()
	assert.Equal(t, elicitation.Cancelled, got[1].State)
	assert.Equal(t, elicitation.Shutdown, got[1].Reason)
	assert.NotEqual(t, got[0].Key, got[1].Key)
}
