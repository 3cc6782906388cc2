package ask_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// Between its rounds a pull-era question with a store keeps no goroutine: neither its
// handler's nor its actor's. It is still listed, and it still answers.
func TestAHibernatingQuestionKeepsNoGoroutine(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	a := newClusterOn(t, clk, 1, memory.New(memory.Options{Clock: clk}), &memory.Relay{})[0]
	a.call(t, "", 0, nil) // the first call's setup (the client's, the store's) is not the question's
	before := goleak.IgnoreCurrent()

	const n = 20
	var states []string
	for range n {
		first := a.call(t, "", 0, nil)
		r, _ := asked(t, first)
		require.Equal(t, 1, r)
		states = append(states, first.RequestState)
	}
	require.NoError(t, goleak.Find(before), "%d questions open, no goroutine of theirs left", n)
	assert.Equal(t, n+1, a.el.Registry().Len(), "every question is known to the registry")
	assert.Len(t, a.manage(t, "list_elicitations", map[string]any{})["elicitations"], n+1)
	assert.EqualValues(t, n+1, a.el.Counts().Hibernated)

	for _, st := range states {
		out := payload(t, a, st, 1, map[string]any{"name": "Ada", "age": 30})
		assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	}
	assert.Equal(t, 1, a.el.Registry().Len(), "the answered ones have left")
}

// A hibernating question keeps its id wherever it wakes, and the node it slept on lets go
// of it: the caller sees one question, under one id, on every node.
func TestAHibernatingQuestionKeepsItsIDOnEveryNode(t *testing.T) {
	nodes := newCluster(t, 2, memory.New(memory.Options{}), &memory.Relay{})
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	require.Len(t, listed, 1)
	id := listed[0].(map[string]any)["id"].(string)

	second := b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12}) // woken on B, re-prompted
	r, _ := asked(t, second)
	require.Equal(t, 2, r)
	require.Eventually(t, func() bool { return a.el.Registry().Len() == 0 }, failsafeBound, time.Millisecond,
		"A drops its sleeper once B has woken the question")
	assert.Equal(t, 1, b.el.Registry().Len(), "B holds it, asleep again")
	for name, n := range map[string]*clusterNode{"A": a, "B": b} {
		listed := n.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
		require.Len(t, listed, 1, "on %s", name)
		q := listed[0].(map[string]any)
		assert.Equal(t, id, q["id"], "on %s: the same question", name)
		assert.EqualValues(t, 2, q["round"], "on %s", name)
	}

	// The identical resend of round 1 gets round 2 again, from the record, on either node.
	for _, n := range nodes {
		again := n.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
		assert.Equal(t, second.RequestState, again.RequestState)
	}
	out := payload(t, a, second.RequestState, 2, map[string]any{"age": 36})
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, out)
	// B drops its sleeper once it learns that A woke the question, a moment after A's
	// answer (as A dropped its own above): waited for, not read at once (a CI run read 1).
	assert.Eventually(t, func() bool { return a.el.Registry().Len()+b.el.Registry().Len() == 0 }, failsafeBound, time.Millisecond,
		"no node holds the question once it has completed")
}

// A hibernating question ends at its deadline, not at the client's next retry: its timer
// records the timeout, and the end is reported once, on time.
func TestAHibernatingQuestionTimesOutOnTime(t *testing.T) {
	clk, mem, heard, nodes := heardCluster(t)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	require.Empty(t, heard.get())

	clk.Add(time.Minute) // the question's one-minute deadline
	require.Eventually(t, func() bool { return len(heard.get()) == 1 }, failsafeBound, time.Millisecond, "the end is reported at the deadline")
	for _, ends := range heard.get() {
		require.Len(t, ends, 1)
		assert.Equal(t, elicitation.TimedOut, ends[0].State)
		assert.Equal(t, "contact", ends[0].Tool)
	}
	recs, err := mem.List(context.Background(), "caller:test")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "closed", recs[0].State, "ended, its result to be made when the client comes back")
	assert.Equal(t, "timeout", recs[0].Reason)
	assert.Equal(t, 0, a.el.Registry().Len())
	assert.Equal(t, uint64(1), a.el.Registry().Stats().TimedOut)

	for _, n := range nodes {
		p := payload(t, n, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
		assert.Equal(t, ask.CodeTimeout, p["code"], "the retry hears it timed out: %v", p)
	}
	assert.Equal(t, "ended", ended(t, mem, "caller:test").State, "the result the retry got is recorded")
	assert.Empty(t, b.manage(t, "list_elicitations", map[string]any{})["elicitations"])
	assert.Len(t, heard.get(), 1, "reported once")
}

// An extend moves a hibernating question's deadline and its timer; a cancel from any node
// ends it, reported once, and the client's retry hears it.
func TestExtendAndCancelReachAHibernatingQuestion(t *testing.T) {
	clk, _, heard, nodes := heardCluster(t)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	id := a.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)[0].(map[string]any)["id"].(string)

	ext := a.manage(t, "extend_elicitation", map[string]any{"id": id, "seconds": 120})
	require.Nil(t, ext["code"], "%v", ext)
	assert.Equal(t, clk.Now().Add(3*time.Minute).UTC().Format(time.RFC3339), ext["deadline"])
	clk.Add(time.Minute + time.Second) // past the first deadline, not the extended one
	assert.Empty(t, heard.get(), "the timer moved with the deadline")
	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	require.Len(t, listed, 1)
	assert.Equal(t, ext["deadline"], listed[0].(map[string]any)["deadline"])

	cancelled := b.manage(t, "cancel_elicitation", map[string]any{"id": id})
	require.Equal(t, "cancelled", cancelled["state"], "%v", cancelled)
	ends := heard.get()
	require.Len(t, ends, 1)
	for _, e := range ends {
		require.Len(t, e, 1)
		assert.Equal(t, elicitation.Cancelled, e[0].State)
		assert.Equal(t, elicitation.Operator, e[0].Reason)
	}
	p := payload(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeCancelled, p["code"], "%v", p)
	assert.Equal(t, 0, a.el.Registry().Len())
	clk.Add(2 * time.Minute) // past the extended deadline
	assert.Len(t, heard.get(), 1, "the cancelled question is not reported again at its old deadline")
	again := a.manage(t, "cancel_elicitation", map[string]any{"id": id})
	assert.Equal(t, ask.CodeNotFound, again["code"])
}

// When the node holding a hibernating question's timer is gone, the survivor that sweeps its
// roster takes the timer over: the question is listed there, and ends at its deadline,
// reported once.
func TestAGoneNodesHibernatingQuestionsEndOnTime(t *testing.T) {
	clk, _, heard, nodes := heardCluster(t)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))

	takesOver(t, clk, b)
	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	require.Len(t, listed, 1)
	assert.Empty(t, heard.get())

	clk.Add(time.Minute) // the question's deadline
	require.Eventually(t, func() bool { return len(heard.get()) == 1 }, failsafeBound, time.Millisecond, "ended at its deadline, by B")
	for _, ends := range heard.get() {
		require.Len(t, ends, 1)
		assert.Equal(t, elicitation.TimedOut, ends[0].State)
	}
	p := payload(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
	assert.Len(t, heard.get(), 1, "reported once")
}

// takesOver moves clk to node n's next look at the rosters, and waits until n has taken over
// the timer of the one question a gone node held asleep.
func takesOver(t *testing.T, clk *clock.Mock, n *clusterNode) {
	t.Helper()
	clk.Add(5 * time.Second)
	// Moved on a little at a time while n's look is not done: its timer may not have been
	// armed again yet when the clock first moved (a loaded machine). At most 40 s more on
	// the clock (eight looks' worth), short of the question's one-minute deadline: on a
	// loaded machine the take-over may take longer than the clock, moved on real ticks,
	// would take to pass the deadline.
	steps := 0
	require.Eventually(t, func() bool {
		if n.el.Registry().Len() == 1 {
			return true
		}
		if steps < 800 {
			clk.Add(50 * time.Millisecond)
			steps++
		}
		return false
	}, failsafeBound, 10*time.Millisecond, "the survivor takes over the timer of the question the gone node held asleep")
}

// A retry that answers the round reaching the node the call hibernated on wakes it from its
// record: one read of the store (the node keeps no copy of it: a waiting question costs the
// node only what its registry lists), one write (ask_user's claim rides with it).
func TestAWakeOnTheSameNodeReadsOnce(t *testing.T) {
	pureTools = true
	t.Cleanup(func() { pureTools = false })
	counted := &countingStore{Store: memory.New(memory.Options{})}
	a := newCluster(t, 1, counted, &memory.Relay{})[0]
	first := a.call(t, "", 0, nil)
	reads, writes := counted.reads.Load(), counted.writes.Load()
	out := payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	assert.EqualValues(t, 1, counted.reads.Load()-reads, "one read")
	assert.EqualValues(t, 1, counted.writes.Load()-writes, "one write: the claim with the result")

	// An identical resend reads the store, and gets what the round returned.
	again := payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, out, again)
}

// heardCluster is two nodes on a memory store and relay, on a mock clock, whose OnEnd ends
// are heard.
func heardCluster(t *testing.T) (*clock.Mock, *memory.Store, *byKey, []*clusterNode) {
	t.Helper()
	var mem *memory.Store
	clk, heard, nodes := heardClusterOn(t, func(m *memory.Store) store.Store { mem = m; return m })
	return clk, mem, heard, nodes
}

// heardClusterOn is heardCluster on the store wrap makes of its memory store.
func heardClusterOn(t *testing.T, wrap func(*memory.Store) store.Store) (*clock.Mock, *byKey, []*clusterNode) {
	t.Helper()
	heard := &byKey{}
	nodeOptions = func(_ int, o *ask.Options) { o.OnEnd = heard.add }
	t.Cleanup(func() { nodeOptions = nil })
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	return clk, heard, newClusterOn(t, clk, 2, wrap(memory.New(memory.Options{Clock: clk})), &memory.Relay{})
}

// Every write a hibernating question makes carries its record's deadline (natsstore turns it
// into the message's TTL: a KV update would write none, store/storetest
// UpdatedRecordStillExpires): an extended record outlives its first deadline, and a closed
// one is reclaimed the retention after its close, without the client coming back.
func TestAHibernatingQuestionsRecordIsReclaimedAtItsDeadline(t *testing.T) {
	clk, mem, heard, nodes := heardCluster(t)
	a := nodes[0]
	a.call(t, "", 0, nil) // due in 1 minute; its record kept 1 minute more (retention)
	records := func() int {
		recs, err := mem.List(context.Background(), "caller:test")
		require.NoError(t, err)
		return len(recs)
	}
	id := a.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)[0].(map[string]any)["id"].(string)
	ext := a.manage(t, "extend_elicitation", map[string]any{"id": id, "seconds": 120}) // due at 3 minutes, kept to 4
	require.Nil(t, ext["code"], "%v", ext)

	clk.Add(2*time.Minute + time.Second)
	assert.Equal(t, 1, records(), "past its first deadline and retention, the extended record is there")
	cancelled := a.manage(t, "cancel_elicitation", map[string]any{"id": id})
	require.Equal(t, "cancelled", cancelled["state"], "%v", cancelled)
	require.Len(t, heard.get(), 1)
	clk.Add(59 * time.Second)
	assert.Equal(t, 1, records(), "closed, and kept the retention for the client's late request")
	clk.Add(time.Second)
	assert.Zero(t, records(), "reclaimed the retention after its close, not at the deadline it had")
}

// A retry for a question that timed out while it hibernated, when the store will not take
// the write that makes its result: the retry hears STORE_UNAVAILABLE (send again), and the
// node goes on; once the store is back, the same retry gets the timeout.
func TestAClosedQuestionsRetryOutlivesAFailedWrite(t *testing.T) {
	s := &refusing{}
	clk, heard, nodes := heardClusterOn(t, func(m *memory.Store) store.Store { s.Store = m; return s })
	first := nodes[0].call(t, "", 0, nil)
	clk.Add(time.Minute)
	require.Eventually(t, func() bool { return len(heard.get()) == 1 }, failsafeBound, time.Millisecond, "the end is reported at the deadline")

	s.refuse(&s.update, fmt.Errorf("%w: the test refuses writes", store.ErrUnavailable))
	for _, n := range nodes {
		p := payload(t, n, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
		assert.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
	}
	s.update.Store(nil)
	p := payload(t, nodes[1], first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
	assert.Len(t, heard.get(), 1, "reported once")
}

// A retry that reaches the node of a sleeper that has just closed its question's record (a
// cancel, say) but is not yet out of the registry gets the question's end at once: its
// replay does not ask the question again under a new id and wait for the old deadline.
func TestARetryRacingAClosingSleeperGetsItsEnd(t *testing.T) {
	_, mem, _, nodes := heardCluster(t)
	a := nodes[0]
	first := a.call(t, "", 0, nil)
	// The test writes what the sleeper's closing write would (closed, the next epoch), and
	// the sleeper itself still holds the question, as in the instant before it drops out.
	recs, err := mem.List(context.Background(), "caller:test")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	rec := recs[0]
	require.True(t, rec.Asleep)
	rec.State, rec.Reason, rec.Node, rec.Epoch, rec.Asleep = "closed", elicitation.Operator.String(), a.el.Node(), rec.Epoch+1, false
	_, err = mem.Update(context.Background(), rec)
	require.NoError(t, err)
	require.Equal(t, 1, a.el.Registry().Len())

	// Bounded: on the old code the retry waited for the question's old deadline.
	ctx, cancel := context.WithTimeout(context.Background(), failsafeBound)
	defer cancel()
	res, err := a.u.Session.CallTool(ctx, &mcp.CallToolParams{Name: a.tool, Arguments: map[string]any{}, RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 30}}}})
	require.NoError(t, err, "the retry gets its answer at once")
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, ask.CodeCancelled, p["code"], "the retry hears the question was cancelled: %v", p)
}

// A question cancelled in the instant its call falls asleep (its sleeper already in the
// registry, its actor not ended yet) is not left asleep: the cancel's reason ends it,
// reported once, and the client's retry hears it.
func TestACancelAsTheCallFallsAsleepEndsTheQuestion(t *testing.T) {
	_, _, heard, nodes := heardCluster(t)
	a := nodes[0]
	var cancelled atomic.Value
	t.Cleanup(ask.SetSleepHook(func(id string) {
		cancelled.Store(fmt.Sprint(a.el.Registry().Cancel("caller:test", id, elicitation.ClientGone)))
	}))
	first := a.call(t, "", 0, nil)
	require.Equal(t, "<nil>", cancelled.Load(), "the cancel was taken")
	require.Eventually(t, func() bool { return len(heard.get()) == 1 }, failsafeBound, time.Millisecond, "the end is reported")
	for _, ends := range heard.get() {
		require.Len(t, ends, 1)
		assert.Equal(t, elicitation.Cancelled, ends[0].State)
		assert.Equal(t, elicitation.ClientGone, ends[0].Reason)
	}
	assert.Equal(t, 0, a.el.Registry().Len(), "nothing is left asleep")
	p := payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeCancelled, p["code"], "%v", p)
}

// A hibernating question is listed as it would be awake: its sleeper keeps no snapshot of
// its own but makes one from its record, and what the record does not hold (the question's
// round and creation, its attempt limit) it keeps beside. The same calls, on a node that
// keeps its calls awake and on one that hibernates them, on clocks at the same time: the
// lists differ only in the ids, through a re-prompt and an extension.
func TestAHibernatingQuestionListsAsItWouldAwake(t *testing.T) {
	listing := func(keep bool) map[string]any {
		if keep {
			awake(t)
		}
		clk := clock.NewMock()
		clk.Set(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
		n := newClusterOn(t, clk, 1, memory.New(memory.Options{Clock: clk}), nil)[0]
		first := n.call(t, "", 0, nil)
		clk.Add(7 * time.Second)
		second := n.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
		r, _ := asked(t, second)
		require.Equal(t, 2, r, "re-prompted")
		listed := n.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
		require.Len(t, listed, 1)
		q := listed[0].(map[string]any)
		id := q["id"]
		require.Eventually(t, func() bool { return keep || n.el.Counts().Hibernated == 2 }, failsafeBound, time.Millisecond)
		clk.Add(3 * time.Second)
		ext := n.manage(t, "extend_elicitation", map[string]any{"id": id, "seconds": 90})
		require.Equal(t, id, ext["id"], "%v", ext)
		listed = n.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
		require.Len(t, listed, 1)
		q = listed[0].(map[string]any)
		delete(q, "id")
		return q
	}
	kept := listing(true)
	keepAwake = false
	asleep := listing(false)
	assert.Equal(t, kept, asleep)
	assert.EqualValues(t, 2, asleep["round"])
	assert.EqualValues(t, 2, asleep["attempt"])
}

// Each node counts open (Counts.Open) exactly the questions it holds, however they moved: a
// hibernating question woken on another node, timed out asleep and then closed out by its
// client's retry, or taken over from a node that is gone. A count of questions that ended
// here without having started here wrapped below zero (a stats read of 1.8e19 after a
// restart on the embedded store).
func TestEveryNodeCountsOpenTheQuestionsItHolds(t *testing.T) {
	clk, _, _, nodes := heardCluster(t)
	a, b := nodes[0], nodes[1]
	holds := func(msg string) {
		t.Helper()
		for name, n := range map[string]*clusterNode{"A": a, "B": b} {
			require.Eventually(t, func() bool {
				return n.el.Counts().Open()[ask.EraPull] == uint64(n.el.Registry().Len())
			}, failsafeBound, time.Millisecond, "%s: on %s, open %v, held %d", msg, name, n.el.Counts().Open(), n.el.Registry().Len())
		}
	}

	// Woken on B, then answered there.
	first := a.call(t, "", 0, nil)
	holds("asked on A")
	second := b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12}) // re-prompted, on B
	r, _ := asked(t, second)
	require.Equal(t, 2, r)
	require.Eventually(t, func() bool { return a.el.Registry().Len() == 0 }, failsafeBound, time.Millisecond)
	holds("woken on B")
	payload(t, b, second.RequestState, 2, map[string]any{"age": 36})
	holds("answered on B")

	// Timed out asleep, then closed out by the retry, on either node.
	timed := a.call(t, "", 0, nil)
	clk.Add(time.Minute)
	require.Eventually(t, func() bool { return a.el.Registry().Len() == 0 }, failsafeBound, time.Millisecond)
	holds("timed out asleep")
	p := payload(t, b, timed.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	require.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
	holds("closed out on B")

	// Taken over from A, gone, by B's sweep, then timed out there.
	a.call(t, "", 0, nil)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	takesOver(t, clk, b)
	holds("taken over by B")
	clk.Add(time.Minute)
	require.Eventually(t, func() bool { return b.el.Registry().Len() == 0 }, failsafeBound, time.Millisecond)
	holds("timed out on B")
	for _, n := range []*clusterNode{a, b} {
		for era, open := range n.el.Counts().Open() {
			assert.Zero(t, open, "era %s", era)
		}
	}
}

// Options.MaxAsleep caps the questions hibernating, apart from MaxLive's awake ones: with a
// store and MaxLive at one, a second question is asked while the first waits asleep (it
// holds no goroutine), a third is refused with two asleep and MaxAsleep at two, and a
// fourth is asked once the first has ended.
func TestTheQuestionsAsleepAreCappedApart(t *testing.T) {
	nodeOptions = func(_ int, o *ask.Options) { o.MaxLive, o.MaxAsleep = 1, 2 }
	t.Cleanup(func() { nodeOptions = nil })
	a := newCluster(t, 1, memory.New(memory.Options{}), nil)[0]
	asleep := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return a.el.Registry().Stats().Asleep == n }, failsafeBound, time.Millisecond,
			"%d questions hibernate", n)
	}
	first := a.call(t, "", 0, nil)
	require.Len(t, first.InputRequests, 1)
	asleep(1)
	second := a.call(t, "", 0, nil)
	require.Len(t, second.InputRequests, 1, "MaxLive counts only the awake: %+v", second.Content)
	asleep(2)

	refused := a.call(t, "", 0, nil)
	assert.True(t, refused.IsError, "the cap of those asleep is reached")
	assert.Empty(t, refused.InputRequests)
	assert.Contains(t, fmt.Sprint(refused.StructuredContent), ask.CodeTooMany)

	payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	asleep(1)
	again := a.call(t, "", 0, nil)
	assert.Len(t, again.InputRequests, 1, "asked once the first has ended")
}

// losingStore applies the next update once lose is set, and reports it lost: an unknown
// outcome, as a store that timed out on a write that landed gives.
type losingStore struct {
	store.Store
	lose atomic.Bool
}

func (l *losingStore) Update(ctx context.Context, r store.Record) (uint64, error) {
	rev, err := l.Store.Update(ctx, r)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		return 0, fmt.Errorf("%w: the test lost this write's answer", store.ErrUnavailable)
	}
	return rev, err
}

// An extend whose write lands but whose answer is lost leaves the question to its first
// deadline, as its caller was told: it times out then, reported once, and the retry hears
// it, rather than its node taking its own write for another node's and leaving the
// question with no timer.
func TestAnExtendWhoseAnswerIsLostStillTimesOut(t *testing.T) {
	l := &losingStore{}
	clk, heard, nodes := heardClusterOn(t, func(m *memory.Store) store.Store { l.Store = m; return l })
	a := nodes[0]
	first := a.call(t, "", 0, nil)
	require.Eventually(t, func() bool { return a.el.Registry().Stats().Asleep == 1 }, failsafeBound, time.Millisecond, "the call hibernates")
	id := a.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)[0].(map[string]any)["id"].(string)
	l.lose.Store(true)
	ext := a.manage(t, "extend_elicitation", map[string]any{"id": id, "seconds": 120})
	require.Equal(t, ask.CodeStoreUnavailable, ext["code"], "%v", ext)

	clk.Add(time.Minute + time.Second) // past the first deadline
	require.Eventually(t, func() bool { return len(heard.get()) == 1 }, failsafeBound, 10*time.Millisecond,
		"the question times out at the deadline its caller knows")
	assert.Equal(t, 0, a.el.Registry().Len())
	p := payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
}
