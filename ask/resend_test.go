package ask_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// lagging is a store whose next reads are served by a replica a few writes behind (a NATS
// follower that has not caught up): Get returns the record as it was when lag was called,
// or not found if it did not exist then.
type lagging struct {
	store.Store
	mu    sync.Mutex
	stale map[string]*store.Record // by id; nil: not there yet
	left  int                      // stale reads still to serve
}

// lag makes the next n reads of id return the record as it is now.
func (l *lagging) lag(t *testing.T, owner, id string, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale == nil {
		l.stale = map[string]*store.Record{}
	}
	r, err := l.Store.Get(context.Background(), owner, id)
	switch {
	case err == nil:
		l.stale[id] = &r
	case errors.Is(err, store.ErrNotFound):
		l.stale[id] = nil
	default:
		require.NoError(t, err)
	}
	l.left = n
}

func (l *lagging) Get(ctx context.Context, owner, id string) (store.Record, error) {
	l.mu.Lock()
	r, ok := l.stale[id]
	if ok && l.left > 0 {
		l.left--
		l.mu.Unlock()
		if r == nil {
			return store.Record{}, fmt.Errorf("%w: %s (a replica behind)", store.ErrNotFound, id)
		}
		return *r, nil
	}
	l.mu.Unlock()
	return l.Store.Get(ctx, owner, id)
}

// GetLatest reads what the last write left (the leader's copy), whatever lag says.
func (l *lagging) GetLatest(ctx context.Context, owner, id string) (store.Record, error) {
	return l.Store.Get(ctx, owner, id)
}

var _ store.Replicated = (*lagging)(nil)

// The one id the test's only call has.
func onlyID(t *testing.T, s store.Store) string {
	t.Helper()
	recs, err := s.List(context.Background(), "caller:test")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	return recs[0].ID
}

// A read of the record may come from a replica a moment behind the writes (STORE.md;
// JetStream's direct get with R3): a retry whose requestState is newer than the record read
// is not told its round is stale, nor that its question has ended, on the strength of that
// read; the node reads what the last acknowledged write left (store.Replicated).
func TestAStaleReadIsNotTheAnswer(t *testing.T) {
	for _, relay := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay %v", relay), func(t *testing.T) {
			// Two nodes on a store read through a lagging replica, and a question A asked.
			start := func(t *testing.T) (s *lagging, a, b *clusterNode, first *mcp.CallToolResult, id string) {
				s = &lagging{Store: memory.New(memory.Options{})}
				var rl store.Relay
				if relay {
					rl = &memory.Relay{}
				}
				nodes := newCluster(t, 2, s, rl)
				a, b = nodes[0], nodes[1]
				first = a.call(t, "", 0, nil)
				return s, a, b, first, onlyID(t, s)
			}
			t.Run("a round handed out since", func(t *testing.T) {
				s, a, b, first, id := start(t)
				s.lag(t, "caller:test", id, 1) // the replica has round 1 only
				second := a.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
				r, _ := asked(t, second)
				require.Equal(t, 2, r)
				answer := map[string]any{"age": 30}
				p := payload(t, b, second.RequestState, 2, answer)
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, p, "%v", p["reason"])
			})
			t.Run("a question created just now", func(t *testing.T) {
				s, _, b, first, id := start(t)
				s.mu.Lock()
				s.stale, s.left = map[string]*store.Record{id: nil}, 1 // not there yet on the replica
				s.mu.Unlock()
				p := payload(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, p, "%v", p["reason"])
			})
		})
	}
}

// mustPayload is res's payload, for a message.
func mustPayload(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	p, _ := elicittest.Payload(res)
	return p
}

// A round whose result could not be recorded is kept by its node for the identical resend;
// if another node took the call over meanwhile (and recorded the round's result), that
// resend gets the recorded result, not "moved".
func TestAResendOfAnUnrecordedRoundAfterATakeOver(t *testing.T) {
	// No relay: every retry that reaches the other node takes the call over, as when the
	// holder's NATS connection was down for a moment.
	f := &failNth{Store: memory.New(memory.Options{}), n: map[bool]int{false: 2, true: 1}[pureTools]}
	nodes := newCluster(t, 2, f, nil)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	bad := map[string]any{"name": "Ada", "age": 12}
	p := payload(t, a, first.RequestState, 1, bad)
	require.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
	onB := b.call(t, first.RequestState, 1, bad)
	r, _ := asked(t, onB)
	require.Equal(t, 2, r, "B took the call over and asks round 2")
	again := a.call(t, first.RequestState, 1, bad)
	require.Len(t, again.InputRequests, 1, "the resend on A: %v", mustPayload(t, again))
	r, params := asked(t, again)
	assert.Equal(t, 2, r, "the resend on A gets the round B recorded")
	assert.Equal(t, []string{"age"}, properties(t, params))
	done := payload(t, a, again.RequestState, 2, map[string]any{"age": 30})
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done)
}
