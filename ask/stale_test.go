package ask_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// lagging is a node's view of a replicated store through a replica that has not applied
// the latest writes (JetStream's direct get answers from any replica of an R3 bucket):
// Get answers from a snapshot the test takes, GetLatest from the store itself.
type lagging struct {
	store.Store
	mu   sync.Mutex
	view map[string]store.Record
}

func (l *lagging) Get(_ context.Context, owner, id string) (store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.view[owner+"/"+id]; ok {
		return r, nil
	}
	return store.Record{}, fmt.Errorf("%w: %s (not on this replica yet)", store.ErrNotFound, id)
}

func (l *lagging) GetLatest(ctx context.Context, owner, id string) (store.Record, error) {
	return l.Store.Get(ctx, owner, id)
}

// catchUp makes the replica's view the store's as it is now.
func (l *lagging) catchUp(t *testing.T, owner string) {
	rs, err := l.Store.List(context.Background(), owner)
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.view = map[string]store.Record{}
	for _, r := range rs {
		l.view[owner+"/"+r.ID] = r
	}
}

var _ store.Replicated = (*lagging)(nil)

// A retry read through a replica behind the write that handed its round out is not told
// the question is over (its record not found there) nor that its round is stale (the
// replica has the round before): the node reads the record as the last acknowledged
// write left it, and the question goes on. The cluster saw both under load.
func TestARetryReadThroughALaggingReplica(t *testing.T) {
	for _, c := range []struct {
		name string
		// upTo: the rounds node A answers before the replica B reads through catches up
		// (-1: never, B's replica has not even the record).
		upTo int
	}{{"the record not there yet", -1}, {"the round before", 0}} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.New(memory.Options{})
			b := &lagging{Store: mem, view: map[string]store.Record{}}
			nodeOptions = func(i int, o *ask.Options) {
				if i == 1 {
					o.Store = b
				}
			}
			defer func() { nodeOptions = nil }()
			nodes := newClusterOn(t, clock.New(), 2, mem, nil)
			first := nodes[0].call(t, "", 0, nil)
			state, round := first.RequestState, 1
			if c.upTo == 0 {
				b.catchUp(t, "caller:test")
				res := nodes[0].call(t, state, 1, map[string]any{"name": "Ada", "age": 12})
				state, round = res.RequestState, 2
			}
			answer := map[string]any{"name": "Ada", "age": 30}
			if round == 2 {
				answer = map[string]any{"age": 30}
			}
			p := payload(t, nodes[1], state, round, answer)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, p, "the question goes on, and completes")
		})
	}
}
