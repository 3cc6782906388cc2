package ask_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// refusing is a store whose creates, or updates, fail with the error set for them (nil:
// they go through); the rest answers.
type refusing struct {
	store.Store
	create, update atomic.Pointer[error]
}

// refuse makes the calls p stands for fail with err.
func (r *refusing) refuse(p *atomic.Pointer[error], err error) { p.Store(&err) }

func (r *refusing) Create(ctx context.Context, rec store.Record) (uint64, error) {
	if err := r.create.Load(); err != nil {
		return 0, *err
	}
	return r.Store.Create(ctx, rec)
}

func (r *refusing) Update(ctx context.Context, rec store.Record) (uint64, error) {
	if err := r.update.Load(); err != nil {
		return 0, *err
	}
	return r.Store.Update(ctx, rec)
}

// flaky is a store that can be made unreachable, as a NATS store is while its server is
// down.
type flaky struct {
	store.Store
	down atomic.Bool
}

func (f *flaky) unavailable() error {
	return fmt.Errorf("%w: the test cut the store off", store.ErrUnavailable)
}

func (f *flaky) Create(ctx context.Context, r store.Record) (uint64, error) {
	if f.down.Load() {
		return 0, f.unavailable()
	}
	return f.Store.Create(ctx, r)
}

func (f *flaky) Update(ctx context.Context, r store.Record) (uint64, error) {
	if f.down.Load() {
		return 0, f.unavailable()
	}
	return f.Store.Update(ctx, r)
}

func (f *flaky) Get(ctx context.Context, owner, id string) (store.Record, error) {
	if f.down.Load() {
		return store.Record{}, f.unavailable()
	}
	return f.Store.Get(ctx, owner, id)
}

func (f *flaky) List(ctx context.Context, owner string) ([]store.Record, error) {
	if f.down.Load() {
		return nil, f.unavailable()
	}
	return f.Store.List(ctx, owner)
}

func payload(t *testing.T, n *clusterNode, state string, round int, content map[string]any) map[string]any {
	t.Helper()
	p, err := elicittest.Payload(n.call(t, state, round, content))
	require.NoError(t, err)
	return p
}

// With the store unreachable, a new question is refused with STORE_UNAVAILABLE; a retry's
// response that cannot be recorded is not taken (the same request, sent again once the
// store is back, goes on); nothing answered is lost.
func TestStoreFaults(t *testing.T) {
	t.Run("new questions are refused", func(t *testing.T) {
		f := &flaky{Store: memory.New(memory.Options{})}
		a := newCluster(t, 1, f, nil)[0]
		f.down.Store(true)
		p := payload(t, a, "", 0, nil)
		assert.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
		f.down.Store(false)
		res := a.call(t, "", 0, nil)
		r, _ := asked(t, res)
		assert.Equal(t, 1, r, "service resumes when the store is back")
	})

	t.Run("a question refused so has no end to report", func(t *testing.T) {
		// The client was never given it: a webhook event for it would tell of a question
		// no one was asked (the robustness suite saw them, ended transport_error).
		f := &flaky{Store: memory.New(memory.Options{})}
		var ends atomic.Int32
		nodeOptions = func(_ int, o *ask.Options) { o.OnEnd = func(ask.Ending) { ends.Add(1) } }
		defer func() { nodeOptions = nil }()
		a := newCluster(t, 1, f, nil)[0]
		f.down.Store(true)
		p := payload(t, a, "", 0, nil)
		require.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
		f.down.Store(false)
		first := a.call(t, "", 0, nil)
		done := payload(t, a, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
		require.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done)
		assert.EqualValues(t, 1, ends.Load(), "one end reported: the question asked and answered")
	})

	t.Run("a claim that cannot be recorded is not taken", func(t *testing.T) {
		f := &flaky{Store: memory.New(memory.Options{})}
		a := newCluster(t, 1, f, nil)[0]
		first := a.call(t, "", 0, nil)
		second := a.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
		f.down.Store(true)
		p := payload(t, a, second.RequestState, 2, map[string]any{"age": 30})
		assert.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
		f.down.Store(false)
		done := payload(t, a, second.RequestState, 2, map[string]any{"age": 30})
		assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done, "the same request, sent again, goes on with the name kept")
	})

	t.Run("a round whose next prompt cannot be recorded is handed out on the resend", func(t *testing.T) {
		for _, landed := range []bool{false, true} {
			t.Run(fmt.Sprintf("write landed %v", landed), func(t *testing.T) {
				// The claim (the first update) lands; writing the re-prompt (the second)
				// does not, or lands with its answer lost, an unknown outcome. A pure
				// tool's claim is written with the re-prompt: that one write fails.
				f := &failNth{Store: memory.New(memory.Options{}), n: map[bool]int{false: 2, true: 1}[pureTools], land: landed}
				a := newCluster(t, 1, f, nil)[0]
				first := a.call(t, "", 0, nil)
				bad := map[string]any{"name": "Ada", "age": 12}
				p := payload(t, a, first.RequestState, 1, bad)
				assert.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
				again := a.call(t, first.RequestState, 1, bad)
				r, params := asked(t, again)
				assert.Equal(t, 2, r, "the resend gets the re-prompt the first one could not record")
				assert.Equal(t, []string{"age"}, properties(t, params))
				done := payload(t, a, again.RequestState, 2, map[string]any{"age": 30})
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done)
			})
		}
	})
}

// failNth fails its nth update (1 for the next), applying it first if land.
type failNth struct {
	store.Store
	n    int
	seen atomic.Int32
	land bool
}

func (f *failNth) Update(ctx context.Context, r store.Record) (uint64, error) {
	if int(f.seen.Add(1)) == f.n {
		if f.land {
			_, _ = f.Store.Update(ctx, r)
		}
		return 0, fmt.Errorf("%w: the test lost this write", store.ErrUnavailable)
	}
	return f.Store.Update(ctx, r)
}

// A result too large for a record still reaches the client; the call is recorded as ended,
// and an identical resend through another node is told its result was not kept (the node
// that answered it still has it).
func TestAResultTooLargeToKeep(t *testing.T) {
	s := memory.New(memory.Options{Limits: store.Limits{MaxRecordBytes: 8 << 10}})
	nodes := newCluster(t, 2, s, nil)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	name := strings.Repeat("a", 3000) // the answer fits in a record; the record with the result too does not
	answer := map[string]any{"name": name, "age": 30}
	p := payload(t, a, first.RequestState, 1, answer)
	assert.Equal(t, name, p["name"], "the client gets its result: %v", p["code"])
	assert.Equal(t, name, payload(t, a, first.RequestState, 1, answer)["name"], "the node that answered it keeps it")
	again := payload(t, b, first.RequestState, 1, answer)
	assert.Equal(t, "result_not_kept", again["reason"], "%v", again["message"])
}

// blockFirstUpdate is a store whose first update waits until release is closed, then fails:
// a claim held up by a slow store, then lost.
type blockFirstUpdate struct {
	store.Store
	entered, release chan struct{}
	n                atomic.Int32
}

func (b *blockFirstUpdate) Update(ctx context.Context, r store.Record) (uint64, error) {
	if b.n.Add(1) == 1 {
		close(b.entered)
		<-b.release
		return 0, fmt.Errorf("%w: the test lost this claim", store.ErrUnavailable)
	}
	return b.Store.Update(ctx, r)
}

// An identical resend that comes while the first request's claim is being written waits
// for it; when that claim cannot be recorded, the resend is not left waiting for ever: it
// hears the store error too, and the next resend goes on.
func TestAResendOfAClaimThatFailsIsNotLeftWaiting(t *testing.T) {
	s := &blockFirstUpdate{Store: memory.New(memory.Options{}), entered: make(chan struct{}), release: make(chan struct{})}
	a := newCluster(t, 1, s, nil)[0]
	first := a.call(t, "", 0, nil)
	answer := map[string]any{"name": "Ada", "age": 30}
	x := make(chan map[string]any, 1)
	go func() { x <- payload(t, a, first.RequestState, 1, answer) }()
	<-s.entered
	y := make(chan map[string]any, 1)
	go func() { y <- payload(t, a, first.RequestState, 1, answer) }()
	close(s.release)
	assert.Equal(t, ask.CodeStoreUnavailable, (<-x)["code"])
	select {
	case p := <-y:
		assert.True(t, p["code"] == ask.CodeStoreUnavailable || p["name"] == "Ada", "the resend hears the store error, or goes on: %v", p)
	case <-time.After(failsafeBound):
		t.Fatal("the resend waits for ever on a claim that was undone")
	}
	done := payload(t, a, first.RequestState, 1, answer)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, done)
}
