package ask_test

import (
	"context"
	"sync/atomic"
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

// heldGet is a store whose next Get, once armed, reads the record and then waits for the
// test before it returns it: its reader goes on with a record that has moved meanwhile.
type heldGet struct {
	store.Store
	armed atomic.Bool
	held  chan chan struct{}
}

func (g *heldGet) Get(ctx context.Context, owner, id string) (store.Record, error) {
	rec, err := g.Store.Get(ctx, owner, id)
	if g.armed.CompareAndSwap(true, false) {
		release := make(chan struct{})
		g.held <- release
		<-release
	}
	return rec, err
}

// Two retries of a pure call's asleep round, with different answers, reach one node: the
// one that read the record before the other woke the call, and goes on after that call has
// ended, wakes a second copy (the same node, the same next epoch). That copy's claim finds
// the round claimed with the other answer: it hears "used" and leaves nothing behind, so
// the winner's identical resend on that node gets the winner's outcome. (The copy used to
// stay, holding its own claim, and answer that resend "used": a rare failure of
// TestTheStoreSuitesWithPureTools/one_state_used_once.)
func TestAStaleWakeLeavesTheWinnersResendAlone(t *testing.T) {
	for _, pure := range []bool{true, false} {
		t.Run(map[bool]string{true: "pure", false: "replayable"}[pure], func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			g := &heldGet{Store: memory.New(memory.Options{}), held: make(chan chan struct{})}
			nodes := newCluster(t, 2, g, nil)
			a, b := nodes[0], nodes[1]
			first := a.call(t, "", 0, nil) // recorded asleep, on A
			r, _ := asked(t, first)
			require.Equal(t, 1, r)

			g.armed.Store(true)
			lost := b.callAsync(first.RequestState, 1, map[string]any{"name": "Ada", "age": 40})
			release := <-g.held // the loser has read the record: asleep, unclaimed

			won, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
			require.NoError(t, err)
			require.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, won)

			close(release)
			used, err := elicittest.Payload(<-lost)
			require.NoError(t, err)
			assert.Equal(t, "used", used["reason"], "%v", used)

			for _, n := range nodes {
				again, err := elicittest.Payload(n.call(t, first.RequestState, 1, ada))
				require.NoError(t, err)
				assert.Equal(t, won, again, "the winner's identical resend gets its outcome again")
			}
			rec := ended(t, g.Store, caller)
			assert.Equal(t, 1, rec.Claimed)
			assert.Len(t, rec.Log, 1, "one claim of the round: the winner's")
		})
	}
}
