package ask_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/store/memory"
)

// frozenRelay is a memory.Relay through which a node can be frozen (SIGSTOP, or cut off
// while its NATS connection stays open): what is sent to it is then neither answered nor
// refused ("no responders"), and the sender waits as long as its context lets it. Thawed,
// the node serves what it got meanwhile: the answer goes to a sender still waiting, else to
// nobody, and is kept in late.
type frozenRelay struct {
	memory.Relay
	mu     sync.Mutex
	frozen map[string]chan struct{} // closed on thaw
	late   [][]byte                 // what a thawed node answered to requests whose sender had gone
	held   atomic.Int32             // requests sent to a frozen node
	pings  atomic.Int32             // pings a running node answered
	wg     sync.WaitGroup
}

var pingMsg = `{"op":"ping"}`

func (r *frozenRelay) freeze(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen == nil {
		r.frozen = map[string]chan struct{}{}
	}
	r.frozen[node] = make(chan struct{})
}

func (r *frozenRelay) thaw(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.frozen[node]; ok {
		close(ch)
		delete(r.frozen, node)
	}
}

// thawAll thaws every node and waits until they have served what they got frozen.
func (r *frozenRelay) thawAll() {
	r.mu.Lock()
	for node, ch := range r.frozen {
		close(ch)
		delete(r.frozen, node)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *frozenRelay) lateAnswers() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.late...)
}

func (r *frozenRelay) Send(ctx context.Context, node string, msg []byte) ([]byte, error) {
	r.mu.Lock()
	thawed, frozen := r.frozen[node]
	r.mu.Unlock()
	if !frozen {
		b, err := r.Relay.Send(ctx, node, msg)
		if err == nil && string(msg) == pingMsg {
			r.pings.Add(1)
		}
		return b, err
	}
	r.held.Add(1)
	type answer struct {
		b   []byte
		err error
	}
	out, gone := make(chan answer), make(chan struct{})
	r.wg.Go(func() {
		<-thawed
		b, err := r.Relay.Send(context.Background(), node, msg)
		select {
		case out <- answer{b, err}:
		case <-gone:
			if err == nil && string(msg) != pingMsg {
				r.mu.Lock()
				r.late = append(r.late, b)
				r.mu.Unlock()
			}
		}
	})
	select {
	case a := <-out:
		return a.b, a.err
	case <-ctx.Done():
		close(gone)
		return nil, ctx.Err()
	}
}

// A retry forwarded to a frozen node (it holds its subscriptions, so there is no "no
// responders") is taken over once a ping to that node goes unanswered for its bound: on
// the mock clock, 1 s to the first ping and 1.5 s for its answer, not the forward's long
// wait. The frozen node, thawed, serves the retry it got meanwhile: its claim fails the
// compare-and-set (it is fenced), it answers that it no longer holds the call, and it
// reports no end of its own.
func TestAFrozenOwnerIsTakenOver(t *testing.T) {
	awake(t) // of a call that keeps its handler between rounds: forwarded, and its writes counted
	for _, pure := range []bool{false, true} {
		t.Run(map[bool]string{false: "claim first", true: "pure"}[pure], func(t *testing.T) {
			pureTools = pure
			var ends [2]atomic.Int32
			nodeOptions = func(i int, o *ask.Options) { o.OnEnd = func(ask.Ending) { ends[i].Add(1) } }
			t.Cleanup(func() { pureTools, nodeOptions = false, nil })
			clk := clock.NewMock()
			relay := &frozenRelay{}
			nodes := newClusterOn(t, clk, 2, memory.New(memory.Options{Clock: clk}), relay)
			t.Cleanup(relay.thawAll) // before the nodes close
			a, b := nodes[0], nodes[1]
			first := a.call(t, "", 0, nil)
			relay.freeze(a.el.Node())

			answer := map[string]any{"name": "Ada", "age": 30}
			done := make(chan map[string]any, 1)
			go func() { done <- payload(t, b, first.RequestState, 1, answer) }()
			require.Eventually(t, func() bool { return relay.held.Load() == 1 }, failsafeBound, time.Millisecond, "the retry is forwarded to A")
			clk.Add(time.Second)
			require.Eventually(t, func() bool { return relay.held.Load() == 2 }, failsafeBound, time.Millisecond,
				"while the forward waits, B pings A")
			clk.Add(1500 * time.Millisecond) // the ping's bound: A is frozen
			var p map[string]any
			select {
			case p = <-done:
			case <-time.After(failsafeBound):
				t.Fatal("the retry still waits for its frozen owner, 2.5 s (mock) after it was sent")
			}
			assert.Equal(t, answer, anyInts(p), "B took the call over and completed it: %v", p)
			assert.Equal(t, []int32{1, 1}, []int32{a.starts.Load(), b.starts.Load()}, "B replayed the handler")
			assert.Equal(t, int32(1), ends[1].Load(), "B reported the end")

			relay.thaw(a.el.Node())
			require.Eventually(t, func() bool { return len(relay.lateAnswers()) == 1 }, failsafeBound, time.Millisecond,
				"thawed, A serves the retry it got while frozen")
			var late struct {
				NotHeld bool            `json:"notHeld"`
				Res     json.RawMessage `json:"res"`
				Err     json.RawMessage `json:"err"`
			}
			require.NoError(t, json.Unmarshal(relay.lateAnswers()[0], &late))
			assert.True(t, late.NotHeld, "A is fenced: it no longer holds the call, and sends no result: %s", relay.lateAnswers()[0])
			assert.Zero(t, ends[0].Load(), "A reports no end of the call it lost")
			assert.Equal(t, int32(1), a.starts.Load(), "A's handler did not start again")

			again := payload(t, a, first.RequestState, 1, answer)
			assert.Equal(t, answer, anyInts(again), "the identical resend, on A, gets B's outcome: %v", again)
		})
	}
}

// anyInts is p with its whole numbers as ints, to compare with what was sent.
func anyInts(p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			v = int(f)
		}
		out[k] = v
	}
	return out
}

// A forwarded retry whose handler works longer than a ping may take (here 4 s on the mock
// clock, against a 1.5 s bound) is not taken over: its node answers every ping while the
// handler works, and the handler runs once.
func TestASlowForwardedRetryIsNotTakenOver(t *testing.T) {
	awake(t) // of a call that keeps its handler between rounds: forwarded, and its writes counted
	clk := clock.NewMock()
	relay := &frozenRelay{}
	working, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	nodes := newClusterWith(t, clk, 2, memory.New(memory.Options{Clock: clk}), relay, "slow",
		func(*ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
			return func(ctx context.Context, _ json.RawMessage) (any, error) {
				v, err := ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
				if err != nil {
					return nil, err
				}
				working <- struct{}{}
				<-release // calls UPS, say
				return v, nil
			}
		})
	t.Cleanup(free) // before the nodes close
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	answer := map[string]any{"name": "Ada", "age": 30}
	done := make(chan map[string]any, 1)
	go func() { done <- payload(t, b, first.RequestState, 1, answer) }()
	select {
	case <-working: // forwarded to A, whose handler has the answer
	case <-time.After(failsafeBound):
		t.Fatal("the retry did not reach A's handler")
	}
	for i := range int32(4) {
		clk.Add(time.Second)
		require.Eventually(t, func() bool { return relay.pings.Load() == i+1 }, failsafeBound, time.Millisecond,
			"the forward pings A every second while A's handler works (ping %d)", i+1)
	}
	free()
	var p map[string]any
	select {
	case p = <-done:
	case <-time.After(failsafeBound):
		t.Fatal("the forwarded retry did not get A's result")
	}
	assert.Equal(t, answer, anyInts(p), "%v", p)
	assert.Equal(t, []int32{1, 0}, []int32{a.starts.Load(), b.starts.Load()}, "the handler ran once, on A")
}

// A cancel of a question a frozen node holds is not left waiting for that node: once a ping
// goes unanswered, the record is changed in its place, and the client's retry hears the
// question was cancelled.
func TestACancelReachesAFrozenNodesQuestion(t *testing.T) {
	clk := clock.NewMock()
	relay := &frozenRelay{}
	nodes := newClusterOn(t, clk, 2, memory.New(memory.Options{Clock: clk}), relay)
	t.Cleanup(relay.thawAll)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	require.Len(t, listed, 1)
	id := listed[0].(map[string]any)["id"].(string)
	relay.freeze(a.el.Node())

	done := make(chan map[string]any, 1)
	go func() { done <- b.manage(t, "cancel_elicitation", map[string]any{"id": id}) }()
	require.Eventually(t, func() bool { return relay.held.Load() == 1 }, failsafeBound, time.Millisecond, "the cancel is forwarded to A")
	clk.Add(time.Second)
	require.Eventually(t, func() bool { return relay.held.Load() == 2 }, failsafeBound, time.Millisecond, "B pings A")
	clk.Add(1500 * time.Millisecond)
	select {
	case p := <-done:
		assert.Equal(t, "cancelled", p["state"], "%v", p)
	case <-time.After(failsafeBound):
		t.Fatal("the cancel still waits for the frozen node")
	}
	p := payload(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeCancelled, p["code"], "%v", p)
}
