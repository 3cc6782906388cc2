package ask_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
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
)

// withRecordBehind has the clusters a test makes set Options.RecordBehind.
func withRecordBehind(t *testing.T) {
	recordBehind = true
	t.Cleanup(func() { recordBehind = false })
}

// heldCreate is a store whose next Create, once armed, waits for the test: it hands the
// test a channel on held, and lands (true) or is lost (false) as the test sends on it, as
// the write of a node killed before it landed is. What it returned goes to done.
type heldCreate struct {
	store.Store
	armed atomic.Bool
	held  chan chan bool
	done  chan error
}

func newHeldCreate(clk clock.Clock) *heldCreate {
	return &heldCreate{Store: memory.New(memory.Options{Clock: clk}), held: make(chan chan bool), done: make(chan error, 1)}
}

func (h *heldCreate) Create(ctx context.Context, r store.Record) (uint64, error) {
	if !h.armed.CompareAndSwap(true, false) {
		return h.Store.Create(ctx, r)
	}
	release := make(chan bool)
	h.held <- release
	var rev uint64
	err := fmt.Errorf("%w: the test lost this write", store.ErrUnavailable)
	if <-release {
		rev, err = h.Store.Create(ctx, r)
	}
	h.done <- err
	return rev, err
}

// ended returns the one ended record of owner in s.
func ended(t *testing.T, s store.Store, owner string) store.Record {
	t.Helper()
	recs, err := s.List(context.Background(), owner)
	require.NoError(t, err)
	var out []store.Record
	for _, r := range recs {
		if r.State == "ended" {
			out = append(out, r)
		}
	}
	require.Len(t, out, 1, "%+v", recs)
	return out[0]
}

// callAsync calls n's tool from a goroutine of its own (no test assertion there).
func (n *clusterNode) callAsync(state string, round int, content map[string]any) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: n.tool, Arguments: map[string]any{}, RequestState: state,
			InputResponses: mcp.InputResponseMap{"elicit-" + itoa(round): &mcp.ElicitResult{Action: "accept", Content: content}}}
		res, err := n.u.Session.CallTool(context.Background(), p)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		out <- res
	}()
	return out
}

const caller = "caller:test"

var ada = map[string]any{"name": "Ada", "age": 30}

// With RecordBehind, a call's first round goes out before its record is written; the
// retry's claim waits for that write, and is written on the revision it made. An
// Elicitor's first call (nothing written yet) is recorded before its prompt goes out.
func TestAFirstRoundGoesOutBeforeItsRecord(t *testing.T) {
	awake(t) // of a call that keeps its handler between rounds: forwarded, and its writes counted
	withRecordBehind(t)
	for _, pure := range []bool{false, true} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			h := newHeldCreate(nil)
			counted := &countingStore{Store: h}
			a := newCluster(t, 1, counted, nil)[0]
			h.armed.Store(true)
			warm := a.callAsync("", 0, nil)
			(<-h.held) <- true
			require.NoError(t, <-h.done)
			r, _ := asked(t, <-warm)
			require.Equal(t, 1, r, "the first call is answered once its record is written")

			h.armed.Store(true)
			counted.reset()
			first := a.call(t, "", 0, nil) // returns while its record's write is held
			r, _ = asked(t, first)
			require.Equal(t, 1, r)
			release := <-h.held

			done := a.callAsync(first.RequestState, 1, ada)
			release <- true
			require.NoError(t, <-h.done)
			out, err := elicittest.Payload(<-done)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
			rec := ended(t, h.Store, caller)
			assert.Equal(t, 1, rec.Claimed)
			assert.Len(t, rec.Log, 1)
			assert.Equal(t, a.el.Node(), rec.Node)
			assert.EqualValues(t, 1, rec.Epoch)
			w, _ := counted.per(1)
			want := map[bool]float64{false: 3, true: 2}[pure]
			assert.Equal(t, want, w, "the round's record, its claim (with the outcome, for a pure tool), the end: none again")
		})
	}
}

// A first round whose record never landed (its node killed first) is not lost: a node the
// retry reaches writes the record from the requestState, takes the call over and answers
// it; the requestState stays good for one use, for its own call only, and only while a
// record written for it would still be there.
func TestARecordThatNeverLandedIsWrittenFromTheState(t *testing.T) {
	withRecordBehind(t)
	lost := func(t *testing.T, clk clock.Clock) (a, b *clusterNode, h *heldCreate, first *mcp.CallToolResult) {
		h = newHeldCreate(clk)
		nodes := newClusterOn(t, clk, 2, h, nil)
		a, b = nodes[0], nodes[1]
		r, _ := asked(t, a.call(t, "", 0, nil)) // recorded before its prompt: the next one goes behind
		require.Equal(t, 1, r)
		h.armed.Store(true)
		first = a.call(t, "", 0, nil)
		(<-h.held) <- false
		require.Error(t, <-h.done)
		require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
		recs, err := h.Store.List(context.Background(), caller)
		require.NoError(t, err)
		require.Len(t, recs, 1, "only the first call's record is in the store")
		return a, b, h, first
	}

	t.Run("answered on another node", func(t *testing.T) {
		_, b, h, first := lost(t, clock.New())
		other := &mcp.CallToolParams{Name: b.tool, Arguments: map[string]any{"other": true}, RequestState: first.RequestState,
			InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: ada}}}
		res, err := b.u.Session.CallTool(context.Background(), other)
		require.NoError(t, err)
		foreign, err := elicittest.Payload(res)
		require.NoError(t, err)
		assert.Equal(t, "foreign", foreign["reason"], "other arguments: %v", foreign)

		out, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
		assert.Equal(t, int32(1), b.starts.Load(), "B replayed the handler")
		rec := ended(t, h.Store, caller)
		assert.Equal(t, b.el.Node(), rec.Node)
		assert.EqualValues(t, 2, rec.Epoch)

		again, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
		require.NoError(t, err)
		assert.Equal(t, out, again, "an identical resend gets the outcome again")
		used, err := elicittest.Payload(b.call(t, first.RequestState, 1, map[string]any{"name": "Bob", "age": 40}))
		require.NoError(t, err)
		assert.Equal(t, "used", used["reason"], "%v", used)
		assert.Equal(t, int32(1), b.starts.Load())
	})

	t.Run("too late to write it", func(t *testing.T) {
		clk := clock.NewMock()
		clk.Set(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
		_, b, _, first := lost(t, clk)
		clk.Add(time.Minute + time.Second) // past the question's deadline, and the time a record is kept
		p, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
		require.NoError(t, err)
		assert.Equal(t, "finished", p["reason"], "%v", p)
		assert.Equal(t, int32(0), b.starts.Load(), "nothing replayed")
	})
}

// The node that asked is alive, its write still on its way, when the retry reaches another
// node: that node writes the record from the requestState and answers; the first node's
// write then finds the record there, and that node stands down, writing nothing.
func TestARetryThatOvertakesItsFirstRoundsWrite(t *testing.T) {
	withRecordBehind(t)
	h := newHeldCreate(nil)
	nodes := newCluster(t, 2, h, &memory.Relay{})
	a, b := nodes[0], nodes[1]
	a.call(t, "", 0, nil)
	h.armed.Store(true)
	first := a.call(t, "", 0, nil)
	release := <-h.held

	out, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	assert.Equal(t, int32(1), b.starts.Load())

	release <- true
	assert.True(t, errors.Is(<-h.done, store.ErrExists), "A's write finds B's record")
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown)) // waits for A's call to stand down
	rec := ended(t, h.Store, caller)
	assert.Equal(t, b.el.Node(), rec.Node, "B's record, untouched by A")
	assert.EqualValues(t, 2, rec.Epoch)
	assert.Len(t, rec.Log, 1)
	again, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, out, again)
}

// A store that fails while a first round's record is written behind its prompt: that one
// question is out, and its retry hears STORE_UNAVAILABLE until the store is back, then goes
// on with its answer; new questions are refused again at once, as without RecordBehind.
func TestAFirstRoundWrittenBehindOnAFailingStore(t *testing.T) {
	withRecordBehind(t)
	for _, pure := range []bool{false, true} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			f := &flaky{Store: memory.New(memory.Options{})}
			a := newCluster(t, 1, f, nil)[0]
			a.call(t, "", 0, nil)
			first := oneOut(t, a, func() { f.down.Store(true) }, ask.CodeStoreUnavailable)
			f.down.Store(false)
			out := payload(t, a, first.RequestState, 1, ada)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out, "the answer was not lost")
			rec := ended(t, f.Store, caller)
			assert.Equal(t, 1, rec.Handed)
			assert.Len(t, rec.Log, 1)
		})
	}
}

// Identical retries that reach one node at once, for a call whose node is gone (or whose
// record never landed): the node takes the call over once, its handler runs once, and every
// retry gets the one outcome.
func TestIdenticalRetriesTakeACallOverOnce(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("record lost %v", lost), func(t *testing.T) {
			withRecordBehind(t)
			for range 20 {
				h := newHeldCreate(nil)
				nodes := newCluster(t, 2, h, nil)
				a, b := nodes[0], nodes[1]
				a.call(t, "", 0, nil)
				h.armed.Store(true)
				first := a.call(t, "", 0, nil)
				(<-h.held) <- !lost
				<-h.done
				require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
				const n = 4
				var outs []<-chan *mcp.CallToolResult
				for range n {
					outs = append(outs, b.callAsync(first.RequestState, 1, ada))
				}
				for _, o := range outs {
					out, err := elicittest.Payload(<-o)
					require.NoError(t, err)
					assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
				}
				require.Equal(t, int32(1), b.starts.Load(), "B ran the handler once")
			}
		})
	}
}

// A record written for a first round that went out before it is kept as long as that
// round's requestState could write it again, whichever node ends the question: here one
// that keeps ended questions a few seconds only (a restart with a shorter --pull-idle). A
// second answer with the state, past those seconds, is still a second use.
func TestARecordIsKeptAsLongAsItsStateCouldWriteIt(t *testing.T) {
	withRecordBehind(t)
	nodeOptions = func(i int, o *ask.Options) {
		if i == 1 {
			o.PullIdle = 5 * time.Second
		}
	}
	t.Cleanup(func() { nodeOptions = nil })
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	h := newHeldCreate(clk)
	nodes := newClusterOn(t, clk, 2, h, nil)
	a, b := nodes[0], nodes[1]
	a.call(t, "", 0, nil)
	h.armed.Store(true)
	first := a.call(t, "", 0, nil)
	(<-h.held) <- true
	require.NoError(t, <-h.done)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))

	out, err := elicittest.Payload(b.call(t, first.RequestState, 1, ada))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
	rec := ended(t, h.Store, caller)
	assert.False(t, rec.Deadline.Before(clk.Now().Add(time.Minute)), "kept a minute (A's), not B's 5 s: %s", rec.Deadline)

	clk.Add(10 * time.Second)
	used, err := elicittest.Payload(b.call(t, first.RequestState, 1, map[string]any{"name": "Bob", "age": 40}))
	require.NoError(t, err)
	assert.Equal(t, "used", used["reason"], "%v", used)
	assert.Equal(t, int32(1), b.starts.Load(), "the handler ran once")
}

// Once a first round's write behind its prompt has failed, new questions are refused before
// they are asked until a new record is written again: another question's next round,
// written to a store that refuses only new records, does not count.
func TestAFullStoreRefusesNewQuestionsAfterOneWentOut(t *testing.T) {
	withRecordBehind(t)
	f := &refusing{Store: memory.New(memory.Options{})} // full: no new records, changes taken
	a := newCluster(t, 1, f, nil)[0]
	w := a.call(t, "", 0, nil)
	y := oneOut(t, a, func() { f.refuse(&f.create, fmt.Errorf("%w: the test filled it", store.ErrFull)) }, ask.CodeStoreFull)
	r, _ := asked(t, a.call(t, w.RequestState, 1, map[string]any{"name": "Ada", "age": 12}))
	require.Equal(t, 2, r, "the first question's re-prompt is written")
	p := payload(t, a, "", 0, nil)
	assert.Equal(t, ask.CodeStoreFull, p["code"], "still refused: %v", p)
	f.create.Store(nil)
	out := payload(t, a, y.RequestState, 1, ada)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, out)
}

// oneOut has a's store fail (fail), after a's first question was recorded, and asks a
// question: it goes out, its write behind failing; its answer, and a new question, are
// refused with code. It returns the question that went out.
func oneOut(t *testing.T, a *clusterNode, fail func(), code string) *mcp.CallToolResult {
	t.Helper()
	fail()
	out := a.call(t, "", 0, nil)
	r, _ := asked(t, out)
	require.Equal(t, 1, r, "out before its write failed")
	p := payload(t, a, out.RequestState, 1, ada)
	assert.Equal(t, code, p["code"], "its answer waits for the store: %v", p)
	p = payload(t, a, "", 0, nil)
	assert.Equal(t, code, p["code"], "a new question is refused: %v", p)
	return out
}

// yieldingCreate is a store whose Creates yield the processor a while before they land: a
// write behind its prompt is still in flight when the client's answer comes.
type yieldingCreate struct{ store.Store }

func (y yieldingCreate) Create(ctx context.Context, r store.Record) (uint64, error) {
	for range 50 {
		runtime.Gosched()
	}
	return y.Store.Create(ctx, r)
}

// With RecordBehind and hibernation, a call whose answer comes at once races its first
// round's write, and the hibernation that follows it: the retry finds the call awake, or
// falling asleep, or asleep. Whichever, it gets the call's result, within the failsafe
// bound of each call (a retry that claimed the call as it fell asleep used to wait for
// ever; one that came as the sleeper was being put in place could find it in neither
// place, and was told to send again). The races are timing's: the test catches them in
// some runs, not every one.
func TestAnAnswerRacingTheWriteBehindIsTaken(t *testing.T) {
	withRecordBehind(t)
	for _, pure := range []bool{false, true} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			a := newCluster(t, 1, yieldingCreate{memory.New(memory.Options{})}, nil)[0]
			for i := range 300 {
				first := a.call(t, "", 0, nil)
				r, _ := asked(t, first)
				require.Equal(t, 1, r)
				res := a.call(t, first.RequestState, 1, ada)
				require.False(t, res.IsError, "call %d: %s", i, resultText(res))
				require.Empty(t, res.InputRequests, "call %d", i)
			}
		})
	}
}

// resultText is the text of res's content.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
