package ask_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// A pure tool's round is claimed in the write that records what it returns: a question
// answered at once costs two writes (its round handed out, then claimed with the result),
// one with a re-prompt three; and the record says what the claim-then-write protocol says.
func TestAPureToolClaimsARoundWithWhatItReturns(t *testing.T) {
	for _, c := range []struct{ pure, awake bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		pure := c.pure
		name := map[bool]string{false: "replayable", true: "pure"}[pure] + map[bool]string{false: ", hibernating", true: ", awake"}[c.awake]
		t.Run(name, func(t *testing.T) {
			if c.awake {
				awake(t)
			}
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			counted := &countingStore{Store: memory.New(memory.Options{})}
			n := newCluster(t, 1, counted, nil)[0]
			ctx := context.Background()

			first := n.call(t, "", 0, nil)
			asked(t, first)
			second := n.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12}) // too young: asked again
			r, _ := asked(t, second)
			require.Equal(t, 2, r)
			recs, err := counted.List(ctx, "caller:test")
			require.NoError(t, err)
			require.Len(t, recs, 1)
			rec := recs[0]
			assert.Equal(t, 2, rec.Handed)
			assert.Equal(t, 1, rec.Claimed, "round 1 is claimed by the time round 2 is out")
			require.Len(t, rec.Log, 1)
			assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","age":12}}`, string(rec.Log[0].Answers))
			firstPrompt := rec.Log[0].Prompt

			third := n.call(t, second.RequestState, 2, map[string]any{"age": 36})
			out, err := elicittest.Payload(third)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, out)
			rec, err = counted.Get(ctx, "caller:test", rec.ID)
			require.NoError(t, err)
			assert.Equal(t, "ended", rec.State)
			assert.Equal(t, 2, rec.Claimed)
			require.Len(t, rec.Log, 2)
			assert.Equal(t, firstPrompt, rec.Log[0].Prompt)
			assert.NotEqual(t, rec.Log[0].Prompt, rec.Log[1].Prompt, "each claim names the round it answered")
			// Create, (claim,) hand, (claim,) end: hibernating too, whose wakes write nothing
			// of their own (a pure call's rides with what the round returns; another's is
			// its claim's).
			want := map[bool]int64{false: 5, true: 3}[pure]
			assert.Equal(t, want, counted.writes.Load(), "writes for a question of two rounds")

			// An identical resend of the last request, and a used state, as without Pure.
			again := n.call(t, second.RequestState, 2, map[string]any{"age": 36})
			out, err = elicittest.Payload(again)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, out)
			used, err := elicittest.Payload(n.call(t, second.RequestState, 2, map[string]any{"age": 40}))
			require.NoError(t, err)
			assert.Equal(t, "INVALID_REQUEST_STATE", used["code"])
		})
	}
}

// The suites that run calls on a store, again with pure tools: their claims travel with
// the writes that follow them.
func TestTheStoreSuitesWithPureTools(t *testing.T) {
	pureTools = true
	t.Cleanup(func() { pureTools = false })
	for name, test := range map[string]func(*testing.T){
		"moves across nodes":            TestAQuestionMovesAcrossNodes,
		"one state used once":           TestOneStateIsUsedOnceAcrossNodes,
		"a stopping node hands over":    TestANodeThatStopsHandsItsQuestionsOver,
		"a stopping node leaves open":   TestAStoppingNodeLeavesItsQuestionsOpen,
		"management reaches every node": TestManagementReachesEveryNode,
		"deadline on every node":        TestADeadlinePassesOnEveryNode,
		"a replay that diverges":        TestAReplayThatAsksSomethingElseEndsTheCall,
		"a stop between two asks":       TestAStopBetweenTwoAsksLeavesTheCallOpen,
		"store faults":                  TestStoreFaults,
		"a result too large":            TestAResultTooLargeToKeep,
		"a resend of a failed claim":    TestAResendOfAClaimThatFailsIsNotLeftWaiting,
		"on end heard once":             TestOnEndHearsEachQuestionEndOnce,
		"on end key":                    TestOnEndKeyIsTheSameOnEveryNode,
		"a stale read":                  TestAStaleReadIsNotTheAnswer,
		"a resend after a take-over":    TestAResendOfAnUnrecordedRoundAfterATakeOver,
		"a stop cuts a handler short":   TestAHandlerCancelledByAStopLeavesTheCallOpen,
	} {
		t.Run(name, test)
	}
}

var _ store.Store = (*countingStore)(nil)
