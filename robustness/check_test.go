package robustness

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/tasks"
)

// The checker's own tests: it passes the histories a correct cluster may give, and fails
// those the issue's table saw.

func op(call, ret int64, round int, resp string, out opOutput) porcupine.Operation {
	return porcupine.Operation{Input: opInput{Round: round, Resp: resp}, Call: call, Output: out, Return: ret}
}

var (
	round2   = opOutput{Kind: outNext, Round: 2, Digest: "age"}
	done     = opOutput{Kind: outFinal, Digest: "completed"}
	unknown  = opOutput{Kind: outUnknown}
	used     = opOutput{Kind: outError, Digest: "INVALID_REQUEST_STATE/used"}
	stale    = opOutput{Kind: outError, Digest: "INVALID_REQUEST_STATE/stale_round"}
	finished = opOutput{Kind: outError, Digest: "INVALID_REQUEST_STATE/finished"}
)

func TestTheCheckerPassesWhatACorrectClusterMayDo(t *testing.T) {
	for name, h := range map[string][]porcupine.Operation{
		"straight": {op(1, 2, 1, "a", round2), op(3, 4, 2, "b", done)},
		"a lost reply, then the identical resend": {
			op(1, never, 1, "a", unknown), op(3, 4, 1, "a", round2), op(5, 6, 2, "b", done)},
		"a lost request that never landed": {
			op(1, never, 1, "a", unknown), op(3, 4, 1, "a", round2), op(5, 6, 2, "b", done)},
		"a resend after the outcome gets it again": {
			op(1, 2, 1, "a", round2), op(3, 4, 2, "b", done), op(5, 6, 2, "b", done), op(7, 8, 1, "a", round2)},
		"another response to a used round": {
			op(1, 2, 1, "a", round2), op(3, 4, 1, "z", used), op(5, 6, 2, "b", done)},
		"two in flight at once, one wins": {
			op(1, 5, 1, "a", round2), op(2, 4, 1, "z", used), op(6, 7, 2, "b", done)},
		"two in flight at once, the later-sent wins": {
			op(1, 5, 1, "a", used), op(2, 4, 1, "z", round2)},
		"a timed-out request overtaken by its resend": {
			op(1, never, 1, "a", unknown), op(2, 3, 1, "a", round2), op(4, never, 2, "b", unknown), op(5, 6, 2, "b", done)},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, checkLinearizable(h))
		})
	}
}

func TestTheCheckerFailsWhatTheIssueSaw(t *testing.T) {
	for name, h := range map[string][]porcupine.Operation{
		"an identical resend told used": {
			op(1, never, 1, "a", unknown), op(3, 4, 1, "a", used)},
		"an identical resend told stale_round": {
			op(1, 2, 1, "a", round2), op(3, 4, 1, "a", stale)},
		"a retry of the open round told finished": {
			op(1, 2, 1, "a", round2), op(3, 4, 2, "b", finished)},
		"a resend with another result": {
			op(1, 2, 1, "a", round2), op(3, 4, 1, "a", opOutput{Kind: outNext, Round: 2, Digest: "age,name"})},
		"two outcomes": {
			op(1, 2, 1, "a", round2), op(3, 4, 2, "b", done), op(5, 6, 2, "b", opOutput{Kind: outFinal, Digest: "cancelled"})},
		"a round claimed twice": {
			op(1, 2, 1, "a", round2), op(3, 4, 1, "z", round2)},
		"a round skipped": {
			op(1, 2, 1, "a", opOutput{Kind: outNext, Round: 3, Digest: "age"})},
	} {
		t.Run(name, func(t *testing.T) {
			assert.NotEmpty(t, checkLinearizable(h))
		})
	}
}

// Two push questions cut by two nodes stopping 6.5 s apart, each ended (shutdown) and its
// event received, the later one's first in the receiver's order: each cut gets its own
// end (a run failed with the first cut given the second's end, the second left unmatched).
func TestTheCutsAreMatchedToTheirOwnEnds(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 2, 5, 23, 981e6, time.UTC)
	cuts := []cut{
		{key: "p1-q7", node: 1, at: t0.Add(415 * time.Millisecond), why: "map[reason:shutdown status:cancelled]", asked: t0.Add(-264 * time.Millisecond)},
		{key: "p2-q39", node: 2, at: t0.Add(6719 * time.Millisecond), why: "map[reason:shutdown status:cancelled]", asked: t0.Add(6363 * time.Millisecond)},
	}
	ended := []event{
		{ID: "evt_ZDPQ_ended", Outcome: "shutdown", Ended: t0.Add(6547 * time.Millisecond)},
		{ID: "evt_T73G_ended", Outcome: "shutdown", Ended: t0},
	}
	unmatched, used, slowest, _, _ := matchCuts(cuts, ended, func(string) bool { return false }, neverFrozen, storeNeverOut)
	assert.Empty(t, unmatched)
	assert.Len(t, used, 2)
	assert.Less(t, slowest, time.Second)
}

// A call cut before its prompt reached the client (its node killed as it asked) may have made
// a question, which a survivor ends (client_gone, with an event), or not. Its end is matched
// once the cuts whose question was seen have theirs: it takes no end from them, and needs
// none (a CI run flagged such an end as a question that should not have ended).
func TestAnUnseenCutMayHaveAnEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 15, 14, 4, 274e6, time.UTC)
	cuts := []cut{
		{key: "p2-q9", node: 2, at: t0.Add(5 * time.Millisecond), why: "EOF", unseen: true},
		{key: "p1-q3", node: 1, at: t0.Add(6 * time.Millisecond), why: "EOF", asked: t0.Add(-2 * time.Second)},
		{key: "p0-q4", node: 0, at: t0.Add(7 * time.Millisecond), why: "EOF", unseen: true},
	}
	ended := []event{{ID: "evt_A_ended", Outcome: "client_gone", Ended: t0.Add(7511 * time.Millisecond)}}
	unmatched, used, _, _, _ := matchCuts(cuts, ended, func(string) bool { return false }, neverFrozen, storeNeverOut)
	assert.Empty(t, unmatched, "the seen cut has the one end; the unseen ones need none")
	assert.True(t, used["evt_A_ended"])

	ended = append(ended, event{ID: "evt_B_ended", Outcome: "client_gone", Ended: t0.Add(7600 * time.Millisecond)})
	unmatched, used, _, _, _ = matchCuts(cuts, ended, func(string) bool { return false }, neverFrozen, storeNeverOut)
	assert.Empty(t, unmatched)
	assert.Len(t, used, 2, "the second end is an unseen cut's")
}

// neverFrozen is a cluster none of whose nodes was frozen.
func neverFrozen(int, time.Time) time.Time { return time.Time{} }

// storeNeverOut is a cluster whose nodes never lost their store.
func storeNeverOut(int, time.Time) bool { return false }

// A push question asked 6 ms before its node was frozen for 30 s, which its client never saw
// (the balancer gave up on the node after 8 s), ends client_gone as the node thaws and finds
// its client gone: 22 s after the cut, its end in the window that starts at the thaw (the
// 10-minute run flagged it as a question that should not have ended).
func TestAFrozenNodesQuestionEndsAfterItThaws(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC)
	cuts := []cut{{key: "p1-q40", node: 1, at: t0.Add(8 * time.Second), why: "context deadline exceeded", unseen: true}}
	ended := []event{{ID: "evt_F_ended", Outcome: "client_gone", Ended: t0.Add(30*time.Second + 40*time.Millisecond)}}
	thawed := func(i int, at time.Time) time.Time {
		if i == 1 {
			return t0.Add(30 * time.Second)
		}
		return time.Time{}
	}
	unmatched, used, slowest, _, _ := matchCuts(cuts, ended, func(string) bool { return false }, thawed, storeNeverOut)
	assert.Empty(t, unmatched)
	assert.True(t, used["evt_F_ended"], "the end is the frozen question's")
	assert.Less(t, slowest, time.Second, "counted from the thaw")
}

// A node whose store was out from a push question's end until the node was SIGKILLed took
// its event with it: the event waited in its memory for the store (a 10-minute run, node 0
// killed 4.6 s after NATS servers were started again, its stream still leaderless: six
// completed questions and one asked, none with an event). The checker lets such a loss
// through only when no later question of the node has its event: one that has shows the
// store took the node's adds before the kill, and then the waiting ones must have gone in
// too (the run before the fix: the node's other events went in 2 s after the quorum came
// back, and three waiting ones never did).
func TestALossWithANodeKilledWhileItsStoreWasOutIsAllowedOnlyThen(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 39, 4, 827e6, time.UTC)
	killed := t0.Add(10521 * time.Millisecond)
	gone := func(node int, at time.Time) (time.Time, bool) {
		if node == 0 && !killed.Before(at) {
			return killed, true
		}
		return time.Time{}, false
	}
	doneAt := map[string]time.Time{}
	for q := range 6 {
		doneAt[fmt.Sprintf("p0-q%d", 9162+q)] = t0.Add(time.Duration(q) * 1770 * time.Millisecond)
	}
	doneAt["p1-q500"] = t0.Add(3 * time.Second) // another node's, with its event
	events := map[string]bool{"p1-q500": true}
	hasEvent := func(k string) bool { return events[k] }

	for k, at := range doneAt {
		if k != "p1-q500" {
			assert.True(t, storeOutUntilGone(0, at, gone, doneAt, hasEvent), "%s: nothing of node 0's went in before the kill", k)
		}
	}
	cuts := []cut{{key: "p0-q9168", node: 0, at: killed.Add(100 * time.Millisecond), why: "EOF", asked: killed.Add(-400 * time.Millisecond)}}
	storeOut := func(node int, at time.Time) bool { return storeOutUntilGone(node, at, gone, doneAt, hasEvent) }
	unmatched, _, _, unrostered, lost := matchCuts(cuts, nil, hasEvent, neverFrozen, storeOut)
	assert.Empty(t, unmatched, "the question asked in the outage is in no roster")
	assert.Equal(t, 0, unrostered)
	assert.Equal(t, 1, lost)

	events["p0-q9165"] = true // a later question of node 0 has its event: the store was back for it
	assert.False(t, storeOutUntilGone(0, doneAt["p0-q9163"], gone, doneAt, hasEvent), "an earlier one waiting must have gone in")
	assert.True(t, storeOutUntilGone(0, doneAt["p0-q9166"], gone, doneAt, hasEvent), "a later one may still have been lost")
	assert.False(t, storeOutUntilGone(1, t0, gone, doneAt, hasEvent), "a node never killed loses nothing")
	unmatched, _, _, _, lost = matchCuts([]cut{{key: "p0-q9160", node: 0, at: killed, why: "EOF", asked: t0.Add(-time.Second)}}, nil, hasEvent, neverFrozen, storeOut)
	assert.Len(t, unmatched, 1, "a cut whose node's store took a later event had a roster to be in")
	assert.Equal(t, 0, lost)
}

// A push question asked 13 ms before its node was killed, whose end a survivor's sweep told
// 11.0 s after the kill on a machine running three suites (CI run 61): the end is its cut's,
// not a question that should not have ended.
func TestALateSweepsEndIsItsCuts(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 11, 24, 7, 169e6, time.UTC)
	cuts := []cut{{key: "p3-q11", node: 1, at: t0.Add(13 * time.Millisecond), why: "EOF", asked: t0}}
	ended := []event{{ID: "evt_LZU6_ended", Outcome: "client_gone", Ended: t0.Add(11033 * time.Millisecond)}}
	unmatched, used, _, _, _ := matchCuts(cuts, ended, func(string) bool { return false }, neverFrozen, storeNeverOut)
	assert.Empty(t, unmatched)
	assert.True(t, used["evt_LZU6_ended"])
	ended[0].Ended = t0.Add(cutEndBound + time.Second)
	_, used, _, _, _ = matchCuts(cuts, ended, func(string) bool { return false }, neverFrozen, storeNeverOut)
	assert.False(t, used["evt_LZU6_ended"], "an end past the bound is not the cut's")
}

// A task client's checker sees a task move back: asking a round again once its answer was
// taken, asking an earlier round, leaving its end; moving forward it says nothing.
func TestATaskMovingBackIsSeen(t *testing.T) {
	d := func(status string, keys ...string) *tasks.Detailed {
		x := &tasks.Detailed{Status: status, InputRequests: map[string]json.RawMessage{}}
		for _, k := range keys {
			x.InputRequests[k] = json.RawMessage(`{}`)
		}
		return x
	}
	var ok taskSeen
	for _, step := range []*tasks.Detailed{d(tasks.Working), d(tasks.InputRequired, "1-elicit-1"), d(tasks.InputRequired, "1-elicit-1")} {
		assert.Empty(t, ok.see(step), "forward, or the same")
	}
	ok.took("1-elicit-1")
	assert.Empty(t, ok.see(d(tasks.Working)))
	assert.Empty(t, ok.see(d(tasks.InputRequired, "2-elicit-2")))
	ok.took("2-elicit-2")
	assert.Empty(t, ok.see(d(tasks.Completed)))
	assert.Empty(t, ok.see(d(tasks.Completed)), "an end seen again")

	var again taskSeen
	again.see(d(tasks.InputRequired, "1-elicit-1"))
	again.took("1-elicit-1")
	assert.Contains(t, again.see(d(tasks.InputRequired, "1-elicit-1")), "asked round 1", "its answer was taken")

	var earlier taskSeen
	earlier.see(d(tasks.InputRequired, "2-elicit-2"))
	assert.NotEmpty(t, earlier.see(d(tasks.InputRequired, "1-elicit-1")))

	var left taskSeen
	left.see(d(tasks.Completed))
	assert.Contains(t, left.see(d(tasks.Working)), "left its end completed")
}

// The report names a long trail of attempts by its ends and how many are between.
func TestALongTrailIsReportedByItsEnds(t *testing.T) {
	var trail []string
	for i := range 10 {
		trail = append(trail, fmt.Sprintf("a%d", i))
	}
	assert.Equal(t, "a0; a1; a2; (4 more); a7; a8; a9", brief(trail))
	assert.Equal(t, "a0; a1; a2; a3; a4; a5; a6", brief(trail[:7]), "seven are listed whole")
}
