package ask_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store/memory"
)

// A node that stops (Close, as on SIGTERM) never answers a 2026-07-28 request with
// reason shutdown, and never ends such a question: a first call in flight when it stops, one
// that reaches it while it stops, a later round in flight, and an identical resend of that
// round to the stopping node all hear SERVER_STOPPING, and the same requests sent to
// another node on the same store go on.
func TestAStoppingNodeAnswersPullCallsServerStopping(t *testing.T) {
	holding := make(chan struct{}) // the first call's handler is working, before it asks
	closing := make(chan struct{}) // and has seen its node stop: Close waits for it
	release := make(chan struct{}) // lets it go on, to its Ask
	var hold atomic.Bool           // the next run to start holds
	clk := clock.NewMock()         // never moved: no deadline passes
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	nodes := newClusterWith(t, clk, 2, memory.New(memory.Options{Clock: clk}), &memory.Relay{}, "contact",
		func(el *ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
			return func(ctx context.Context, _ json.RawMessage) (any, error) {
				if hold.CompareAndSwap(true, false) {
					close(holding)
					<-ctx.Done()
					close(closing)
					<-release
				}
				if err := ask.Admits(ctx); err != nil { // as ask_user does, before it compiles a form
					return nil, err
				}
				return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
			}
		})
	a, b := nodes[0], nodes[1]
	answer := map[string]any{"name": "Ada", "age": 30}

	// Another question, asked on A: its answer reaches A while A stops.
	out := a.call(t, "", 0, nil)
	r, _ := asked(t, out)
	require.Equal(t, 1, r)

	hold.Store(true)
	inFlight := make(chan map[string]any, 1)
	go func() { inFlight <- payload(t, a, "", 0, nil) }()
	<-holding
	stopped := make(chan error, 1)
	go func() { stopped <- a.el.Close(context.Background(), elicitation.Shutdown) }()
	<-closing // A is stopping, and cannot have stopped: that handler still runs

	late := payload(t, a, "", 0, nil)
	assert.Equal(t, ask.CodeStopping, late["code"], "a first call reaching a stopping node: %v", late)
	later := payload(t, a, out.RequestState, 1, answer)
	assert.Equal(t, ask.CodeStopping, later["code"], "a later round reaching a stopping node: %v", later)
	close(release)
	p := <-inFlight
	assert.Equal(t, ask.CodeStopping, p["code"], "a first call in flight when its node stops: %v", p)
	require.NoError(t, <-stopped)
	again := payload(t, a, out.RequestState, 1, answer)
	assert.Equal(t, ask.CodeStopping, again["code"], "the resend, to the stopped node: %v", again)

	// Sent again to B, every one goes on.
	r, _ = asked(t, b.call(t, "", 0, nil))
	assert.Equal(t, 1, r, "the first call, resent to B, asks")
	done, err := elicittest.Payload(b.call(t, out.RequestState, 1, answer))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done, "the later round, resent to B, completes")
}

// A handler that Close cancels between two questions, and that returns its context's error
// (work it could not finish) rather than ask again, does not end its call either: the round
// in flight hears SERVER_STOPPING, and the same request sent to another node goes on with
// the second question, never told the question has finished.
func TestAHandlerCancelledByAStopLeavesTheCallOpen(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	_, b, first, answer := stopBetweenAsks(t, clk, true)
	r, params := asked(t, b.call(t, first.RequestState, 1, answer))
	assert.Equal(t, 2, r, "the resend, on B, goes on with the second question")
	assert.Equal(t, "And again?", params.Message)
}
