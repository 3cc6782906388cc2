package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A question of TestAKillMidTrafficLosesNoAnswer, as its client saw it when elicitd died.
type inFlight struct {
	state  string         // the first round's requestState
	answer map[string]any // the answer sent (or to send)
	sent   bool           // the answer went out
	got    map[string]any // the result it got back; nil if none came
}

// Over HTTP on an embedded store, elicitd is killed (SIGKILL) while clients ask and answer
// at once: questions just asked (their first round's write still held back: --linger, here
// longer than the test), answers on their way, results just sent. Started again on the same
// data directory, it loses none of it: a result the client got is the one an identical
// resend gets; an answer sent whose result was lost completes with that answer; a question
// only asked takes its answer now; and each requestState is still good for one use only.
func TestAKillMidTrafficLosesNoAnswer(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--store", "embedded", "--data-dir", dir, "--rate", "0", "--linger", "1m"}
	before := startHTTPWith(t, args)
	cs := pullByHand(t, before, nil, nil)

	var mu sync.Mutex
	var qs []*inFlight
	add := func(q *inFlight) {
		mu.Lock()
		defer mu.Unlock()
		qs = append(qs, q)
	}
	answered := make(chan struct{}, 1000)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				first, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
				if err != nil || !first.NeedsInput() {
					return // killed
				}
				q := &inFlight{state: first.RequestState, answer: map[string]any{"name": fmt.Sprintf("P%d-%d", w, i), "age": 18 + i}}
				add(q)
				q.sent = true
				res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs, RequestState: q.state,
					InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: q.answer}}})
				if err != nil {
					return
				}
				q.got = structuredNoText(res)
				select {
				case answered <- struct{}{}:
				default:
				}
			}
		})
	}
	for range 60 {
		select {
		case <-answered:
		case <-timeout(t).Done():
			t.Fatal("the clients did not get 60 results")
		}
	}
	// Three questions asked and left unanswered, the last moments before the kill: their first
	// rounds' records are held back (or just written).
	for i := range 3 {
		first, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
		require.NoError(t, err)
		require.True(t, first.NeedsInput())
		add(&inFlight{state: first.RequestState, answer: map[string]any{"name": fmt.Sprintf("Late%d", i), "age": 40 + i}})
	}
	before.kill(t)
	wg.Wait()

	after := startHTTPWith(t, args)
	counts := map[string]int{}
	for _, q := range qs {
		kind := map[bool]string{false: "asked", true: "answer sent, no result"}[q.sent]
		if q.got != nil {
			kind = "result got"
		}
		counts[kind]++
		out := structured(t, round(t, after, q.state, 1, q.answer))
		require.Equal(t, "completed", out["status"], "%s: %v", kind, out)
		assert.Equal(t, map[string]any{"name": q.answer["name"], "age": float64(q.answer["age"].(int))}, out["data"], "%s", kind)
		if q.got != nil {
			assert.Equal(t, q.got, out, "the result the client got is the one its resend gets")
		}
		used := structured(t, round(t, after, q.state, 1, map[string]any{"name": "Other", "age": 99}))
		assert.Equal(t, "used", used["reason"], "%s: the state is good for one use: %v", kind, used)
	}
	t.Logf("questions by what their client had when elicitd died: %v", counts)
	// A question only asked had no record (its linger outlasts the test): it was written
	// from its requestState, as one an answer came for whose result was lost may have been.
	notRecorded := strings.Count(after.stderr.String(), `from="(not recorded)"`)
	assert.GreaterOrEqual(t, notRecorded, counts["asked"], "%s", after.stderr.String())
	assert.LessOrEqual(t, notRecorded, counts["asked"]+counts["answer sent, no result"])
}

// structuredNoText is res's structured content as JSON values (nil if it has none).
func structuredNoText(res *mcp.CallToolResult) map[string]any {
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return nil
	}
	return m
}
