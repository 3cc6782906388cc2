package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/validator"
)

// lingering starts n nodes sharing a store s, on the mock clock clk, with RecordBehind and
// Options.Linger d, and has node 0 ask a first question: recorded before its prompt (an
// Elicitor's first), so that the next ones go behind.
func lingering(t *testing.T, d time.Duration, n int, relay store.Relay) (clk *clock.Mock, s *createSignal, nodes []*clusterNode) {
	t.Helper()
	clk, s = lingerOn(t, d, nil)
	nodes = newClusterOn(t, clk, n, s, relay)
	askFirst(t, nodes[0], s)
	return clk, s, nodes
}

// lingerOn makes the nodes a test starts next record behind, with Options.Linger d (and the
// options more sets), and returns the mock clock and store for them.
func lingerOn(t *testing.T, d time.Duration, more func(o *ask.Options)) (*clock.Mock, *createSignal) {
	t.Helper()
	withRecordBehind(t)
	nodeOptions = func(_ int, o *ask.Options) {
		o.Linger = d
		if more != nil {
			more(o)
		}
	}
	t.Cleanup(func() { nodeOptions = nil })
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	return clk, newCreateSignal(clk)
}

// askFirst has node n ask its Elicitor's first question, recorded (in s) before its prompt,
// so that the next ones go behind.
func askFirst(t *testing.T, n *clusterNode, s *createSignal) *mcp.CallToolResult {
	t.Helper()
	res := n.call(t, "", 0, nil)
	r, _ := asked(t, res)
	require.Equal(t, 1, r)
	<-s.created
	return res
}

// createSignal is a store that tells created of each record it creates, once it is in; its
// Creates fail while refuse is set (counted in refused), as a store's that is down do.
type createSignal struct {
	*countingStore
	created chan store.Record
	refuse  atomic.Bool
	refused atomic.Int32
}

func newCreateSignal(clk clock.Clock) *createSignal {
	return &createSignal{countingStore: &countingStore{Store: memory.New(memory.Options{Clock: clk})}, created: make(chan store.Record, 16)}
}

func (s *createSignal) Create(ctx context.Context, r store.Record) (uint64, error) {
	if s.refuse.Load() {
		s.refused.Add(1)
		return 0, fmt.Errorf("%w: the test refused it", store.ErrUnavailable)
	}
	rev, err := s.countingStore.Create(ctx, r)
	if err == nil {
		s.created <- r
	}
	return rev, err
}

// All reads every record, as the memory store does: a node that takes over a gone node's
// hibernating questions scans the store (store.Scanner).
func (s *createSignal) All(ctx context.Context) ([]store.Record, error) {
	return s.countingStore.Store.(store.Scanner).All(ctx)
}

// open returns owner's records in s that are not ended.
func open(t *testing.T, s store.Store, owner string) []store.Record {
	t.Helper()
	recs, err := s.List(context.Background(), owner)
	require.NoError(t, err)
	var out []store.Record
	for _, r := range recs {
		if r.State != "ended" {
			out = append(out, r)
		}
	}
	return out
}

// A first round answered within Options.Linger is recorded by one write, the one that records
// what it returns (with the claim, for a pure tool), and its call is neither hibernated nor
// replayed: its handler runs once. (With Linger zero the round costs a write of its own,
// and the call hibernates once it lands.)
func TestARoundAnsweredWithinTheLingerIsWrittenOnce(t *testing.T) {
	for _, pure := range []bool{false, true} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			_, s, nodes := lingering(t, time.Second, 1, nil)
			a := nodes[0]
			s.reset()
			slept := a.el.Counts().Hibernated // the first call's
			first := a.call(t, "", 0, nil)
			r, _ := asked(t, first)
			require.Equal(t, 1, r)
			assert.Len(t, open(t, s, caller), 1, "only the first call's record: this one's is held")
			out, err := elicittest.Payload(a.call(t, first.RequestState, 1, ada))
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)

			w, _ := s.per(1)
			want := map[bool]float64{false: 2, true: 1}[pure]
			assert.Equal(t, want, w, "the claim with the round (a pure tool's with the outcome too), then the end")
			rec := ended(t, s, caller)
			assert.Equal(t, 1, rec.Handed)
			assert.Equal(t, 1, rec.Claimed)
			assert.Len(t, rec.Log, 1)
			assert.False(t, rec.Keep.IsZero(), "kept as long as the requestState could write it")
			assert.Equal(t, slept, a.el.Counts().Hibernated, "answered awake")
			assert.Equal(t, int32(2), a.starts.Load(), "the handler ran once for each call: no replay")

			// Recorded: nothing is held any more, and Close does not wait for the linger (the
			// mock clock would never end it).
			ctx, cancel := context.WithTimeout(context.Background(), failsafeBound)
			defer cancel()
			require.NoError(t, a.el.Close(ctx, elicitation.Shutdown))
			w, _ = s.per(1)
			assert.Equal(t, want, w, "Close wrote nothing more")
		})
	}
}

// A first round nobody answers within Options.Linger is written when it is up, asleep, and
// its call hibernates; the answer that comes later wakes it, on this node or another.
func TestAFirstRoundIsWrittenWhenItsLingerIsUp(t *testing.T) {
	clk, s, nodes := lingering(t, time.Second, 2, nil)
	a, b := nodes[0], nodes[1]

	slept := a.el.Counts().Hibernated // the first call's
	first := a.call(t, "", 0, nil)
	clk.Add(999 * time.Millisecond)
	require.Len(t, open(t, s, caller), 1, "held until its linger is up")
	clk.Add(time.Millisecond)
	rec := <-s.created
	assert.Equal(t, 1, rec.Handed)
	assert.True(t, rec.Asleep, "written to sleep on")
	assert.Equal(t, a.el.Node(), rec.Node)
	require.Eventually(t, func() bool { return a.el.Counts().Hibernated == slept+1 }, failsafeBound, time.Millisecond, "A's call hibernates")

	out, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	assert.Equal(t, int32(1), b.starts.Load(), "woken on B")
	assert.Equal(t, b.el.Node(), ended(t, s, caller).Node)
}

// Close writes the first rounds it holds at once (a rolling restart loses no record), and
// waits for those writes; another node then goes on with the question.
func TestCloseWritesTheFirstRoundsItHolds(t *testing.T) {
	_, s, nodes := lingering(t, time.Hour, 2, nil)
	a, b := nodes[0], nodes[1]

	first := a.call(t, "", 0, nil)
	second := a.call(t, "", 0, nil)
	require.Len(t, open(t, s, caller), 1, "both held")
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown)) // the mock clock never fires them
	recs := open(t, s, caller)
	require.Len(t, recs, 3, "written by Close")
	for _, rec := range recs {
		assert.Equal(t, a.el.Node(), rec.Node)
		assert.Equal(t, 1, rec.Handed)
	}

	for _, q := range []string{first.RequestState, second.RequestState} {
		out, err := elicittest.Payload(b.call(t, q, 1, ada))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	}
	assert.Equal(t, int32(2), b.starts.Load(), "B took both over")
}

// The node that asked holds its first round's write when the retry reaches another node (a
// client that moved, a node that froze): that node writes the record from the requestState
// and answers; when the first node's linger is up, its write finds that record, and it
// stands down, writing nothing and answering nothing twice.
func TestARetryElsewhereWithinTheLinger(t *testing.T) {
	clk, s, nodes := lingering(t, time.Second, 2, &memory.Relay{})
	a, b := nodes[0], nodes[1]

	first := a.call(t, "", 0, nil)
	out, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	<-s.created // B's

	clk.Add(time.Second)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown)) // waits for A's call to stand down
	rec := ended(t, s, caller)
	assert.Equal(t, b.el.Node(), rec.Node, "B's record, untouched by A")
	assert.EqualValues(t, 2, rec.Epoch)
	assert.Len(t, rec.Log, 1)
	again, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, out, again, "an identical resend gets the one outcome")
}

// A question that ends within its first round's linger (cancelled here), the write of its
// end failing: when the linger is up, the held write does not record it open and asleep (a
// question over, which a later retry would replay); it stays unrecorded, its end kept for
// the client's next request to record.
func TestAHeldRoundIsNotWrittenOverAFailedEnd(t *testing.T) {
	clk, s, nodes := lingering(t, time.Second, 1, nil)
	a := nodes[0]
	recs := open(t, s, caller)
	require.Len(t, recs, 1)
	warm := recs[0].Question
	asked(t, a.call(t, "", 0, nil))
	var id string
	for _, snap := range a.el.Registry().List(caller) {
		if snap.ID != warm {
			id = snap.ID
		}
	}
	require.NotEmpty(t, id)

	s.refuse.Store(true)
	require.NoError(t, a.el.Registry().Cancel(caller, id, elicitation.Operator))
	require.Eventually(t, func() bool { return s.refused.Load() == 1 }, failsafeBound, time.Millisecond, "the end's write is refused")
	s.refuse.Store(false)
	clk.Add(time.Second) // the linger is up
	// Close waits for the held write's goroutine.
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	for _, r := range open(t, s, caller) {
		assert.NotEqual(t, id, r.Question, "a cancelled question recorded open: %+v", r)
	}
	assert.Equal(t, int32(2), a.starts.Load())
}

// A pure call's first round answered within the linger, still at work when the linger is up:
// its handler after Ask returned, or its Then before a follow-up. The held write stands down
// (the question has ended, or its claim waits for what the round returns), and the one write
// that records what the round returns records the round and the claim. The call is never
// written asleep with its answer missing, nor hibernated while it works; a resend of the
// round with another answer finds it used, and an identical one gets the same.
func TestALingerUpWhileAPureRoundIsAtWorkWritesNothingOfItsOwn(t *testing.T) {
	cityForm := func() *validator.Compiled {
		f, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "city", Type: validator.Text, Label: "City", Required: true}}})
		require.NoError(t, err)
		return f
	}()
	for _, followUp := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler after Ask", true: "Then before a follow-up"}[followUp], func(t *testing.T) {
			pureTools = true
			t.Cleanup(func() { pureTools = false })
			clk, s := lingerOn(t, time.Second, nil)
			var block atomic.Bool
			working, release := make(chan struct{}), make(chan struct{})
			wait := func() {
				if block.Load() {
					working <- struct{}{}
					<-release
				}
			}
			nodes := newClusterWith(t, clk, 1, s, nil, "contact", func(*ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
				return func(ctx context.Context, _ json.RawMessage) (any, error) {
					q := ask.Question{Message: "Who are you?", Form: personForm}
					if followUp {
						q.Then = func(data map[string]any) elicitation.Next {
							if _, asked := data["city"]; asked {
								return elicitation.Next{}
							}
							wait()
							return elicitation.Next{FollowUp: ask.FollowUp("Where?", cityForm)}
						}
					}
					out, err := ask.Ask(ctx, q)
					if err == nil && !followUp {
						wait()
					}
					return out, err
				}
			})
			a := nodes[0]
			askFirst(t, a, s)

			s.reset()
			block.Store(true)
			slept := a.el.Counts().Hibernated
			first := a.call(t, "", 0, nil)
			r, _ := asked(t, first)
			require.Equal(t, 1, r)
			require.Equal(t, 1, a.el.HeldRounds())
			done := make(chan *mcp.CallToolResult, 1)
			go func() { done <- a.call(t, first.RequestState, 1, ada) }()
			<-working // answered

			clk.Add(time.Second) // the linger is up
			require.Eventually(t, func() bool { return a.el.HeldRounds() == 0 }, failsafeBound, time.Millisecond)
			w, _ := s.per(1)
			assert.Zero(t, w, "nothing written while the round is at work")
			assert.Equal(t, slept, a.el.Counts().Hibernated, "not hibernated while at work")

			block.Store(false) // a replay (of a call asleep at round 2) runs Then again
			close(release)
			res := <-done
			w, _ = s.per(1)
			assert.Equal(t, float64(1), w, "one write: the round, its claim and what it returned")
			var rec store.Record
			if followUp {
				r, _ = asked(t, res)
				require.Equal(t, 2, r)
				recs := open(t, s, caller)
				require.Len(t, recs, 2, "the first call's, and this one's")
				for _, x := range recs {
					if x.Handed == 2 {
						rec = x
					}
				}
				assert.Equal(t, 2, rec.Handed, "%+v", recs)
			} else {
				rec = ended(t, s, caller)
				assert.Equal(t, 1, rec.Handed)
				assert.Equal(t, slept, a.el.Counts().Hibernated, "never hibernated")
			}
			assert.Equal(t, 1, rec.Claimed)
			assert.Len(t, rec.Log, 1)
			assert.Equal(t, int32(2), a.starts.Load(), "no replay")

			used, err := elicittest.Payload(a.call(t, first.RequestState, 1, map[string]any{"name": "Bob", "age": 40}))
			require.NoError(t, err)
			assert.Equal(t, "used", used["reason"], "%v", used)
			same := a.call(t, first.RequestState, 1, ada)
			assert.Equal(t, res, same, "an identical resend gets the same")
			if followUp {
				out, err := elicittest.Payload(a.call(t, res.RequestState, 2, map[string]any{"city": "Paris"}))
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30), "city": "Paris"}, out)
			} else {
				out, err := elicittest.Payload(res)
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
			}
		})
	}
}

// A node that closes holding a first round back (Options.Linger) writes it asleep, and so
// leaves a hibernating question: its roster stays for the other nodes, one of which takes
// the question's timer over and ends it at its deadline, reported once. (Had Close decided
// what it leaves before that write landed, it would have left nothing: its roster gone,
// nobody would end the question.)
func TestAClosingNodesHeldRoundEndsOnTimeElsewhere(t *testing.T) {
	heard := &byKey{}
	clk, s := lingerOn(t, time.Hour, func(o *ask.Options) { o.OnEnd = heard.add })
	nodes := newClusterOn(t, clk, 2, s, &memory.Relay{})
	a, b := nodes[0], nodes[1]
	timedOut := func() (n int) {
		for _, ends := range heard.get() {
			for _, e := range ends {
				if e.State == elicitation.TimedOut {
					n++
				}
			}
		}
		return n
	}

	// An Elicitor's first round is recorded before its prompt; answered, it leaves A
	// nothing asleep.
	first := askFirst(t, a, s)
	_, err := elicittest.Payload(a.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	held := a.call(t, "", 0, nil)
	r, _ := asked(t, held)
	require.Equal(t, 1, r)
	require.Equal(t, 1, a.el.HeldRounds())

	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	rec := open(t, s, caller)
	require.Len(t, rec, 1, "written by Close")
	assert.True(t, rec[0].Asleep)

	takesOver(t, clk, b)
	assert.Zero(t, timedOut())
	clk.Add(time.Minute) // the question's deadline
	require.Eventually(t, func() bool { return timedOut() == 1 }, failsafeBound, time.Millisecond, "ended at its deadline, by B")
	p := payload(t, b, held.RequestState, 1, ada)
	assert.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
	assert.Equal(t, 1, timedOut(), "reported once")
}
