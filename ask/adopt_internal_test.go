package ask

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
)

// A node that cannot hold an adopted question (it is stopping: its registry refuses new
// members) leaves the record as the node that is gone left it, for the next survivor's
// sweep: it does not make the record its own first, which left a question that no timer
// here would end at its deadline.
func TestAStoppingNodeAdoptsNothing(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	el := New(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Options{Store: st, Node: "survivor"})
	now := time.Now()
	rec := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rec.Node, rec.Asleep, rec.Question, rec.Due = "gone", true, "Q1", now.Add(30*time.Minute)
	rec.Claimed, rec.Outcome, rec.Ends = 2, nil, nil
	_, err := st.Create(context.Background(), rec)
	require.NoError(t, err)
	require.NoError(t, el.Close(context.Background(), elicitation.Shutdown))

	el.adoptAsleep(context.Background(), "gone")
	got, err := st.Get(context.Background(), "alice", rec.ID)
	require.NoError(t, err)
	assert.Equal(t, "gone", got.Node, "the record is still the gone node's, for another survivor to adopt")
	assert.Equal(t, rec.Epoch, got.Epoch)
	assert.Zero(t, el.asleep.len())
}

// allFailsOnce is a store whose first read of every record fails, as one under load did in
// a robustness run.
type allFailsOnce struct {
	*memory.Store
	failed atomic.Bool
}

func (s *allFailsOnce) All(ctx context.Context) ([]store.Record, error) {
	if !s.failed.Swap(true) {
		return nil, fmt.Errorf("%w: nats: timeout", store.ErrUnavailable)
	}
	return s.Store.All(ctx)
}

// A survivor whose read of the store fails as it sweeps a dead node's roster tells the
// dead node's push-era ends once, and keeps its roster, without them, so that the next
// sweep adopts the hibernating questions: deleted at once, it left them with no timer.
func TestASweepThatCannotReadTheStoreAdoptsAtTheNext(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	mem := memory.New(memory.Options{Clock: clk}) // on the test's clock: the records' times are its
	t.Cleanup(func() { _ = mem.Close() })
	st := &allFailsOnce{Store: mem}
	var told atomic.Int32
	el := New(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Options{Store: st, Relay: &memory.Relay{},
		Node: "survivor", Clock: clk, OnEnd: func(Ending) { told.Add(1) }})
	t.Cleanup(func() { _ = el.Close(context.Background(), elicitation.Shutdown) })
	now := clk.Now()
	rec := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rec.Node, rec.Asleep, rec.Question, rec.Due = "gone", true, "Q1", now.Add(30*time.Minute)
	rec.Claimed, rec.Outcome, rec.Ends = 2, nil, nil
	_, err := st.Create(context.Background(), rec)
	require.NoError(t, err)
	_, err = st.Create(context.Background(), store.Record{ID: "gone", Owner: rosterOwner, Era: "roster", Node: "gone", Created: now,
		Deadline: now.Add(rosterLife), State: "active", Open: []store.OpenQuestion{{ID: "P1", Tool: "ask_user", Created: now}}})
	require.NoError(t, err)

	el.roster.sweep(context.Background())
	assert.EqualValues(t, 1, told.Load(), "the push question's end is told")
	got, err := st.Get(context.Background(), "alice", rec.ID)
	require.NoError(t, err)
	assert.Equal(t, "gone", got.Node, "not adopted: the store could not be read")
	left, err := st.Get(context.Background(), rosterOwner, "gone")
	require.NoError(t, err, "the dead node's roster stays for the next sweep")
	assert.Empty(t, left.Open, "without the ends told already")

	el.roster.sweep(context.Background())
	assert.EqualValues(t, 1, told.Load(), "told once")
	got, err = st.Get(context.Background(), "alice", rec.ID)
	require.NoError(t, err)
	assert.Equal(t, "survivor", got.Node, "adopted by the next sweep")
	assert.Equal(t, 1, el.asleep.len())
	_, err = st.Get(context.Background(), rosterOwner, "gone")
	assert.ErrorIs(t, err, store.ErrNotFound, "the roster goes once all is adopted")
}

// gettingFails is a store whose reads fail while down is set, as during a quorum loss.
type gettingFails struct {
	*memory.Store
	down atomic.Bool
}

func (s *gettingFails) Get(ctx context.Context, owner, id string) (store.Record, error) {
	if s.down.Load() {
		return store.Record{}, fmt.Errorf("%w: nats: timeout", store.ErrUnavailable)
	}
	return s.Store.Get(ctx, owner, id)
}

// nodeHere is the Elicitor of node "here" on a memory store on a mock clock (the records'
// times are its), seen through wrap when it is set.
func nodeHere(t *testing.T, wrap func(*memory.Store) store.Store) (*clock.Mock, *memory.Store, *Elicitor) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = mem.Close() })
	var st store.Store = mem
	if wrap != nil {
		st = wrap(mem)
	}
	el := New(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Options{Store: st, Node: "here", Clock: clk})
	t.Cleanup(func() { _ = el.Close(context.Background(), elicitation.Shutdown) })
	return clk, mem, el
}

// A call whose first record write was reported failed, and landed all the same, deletes
// that record once the store answers again, not only if it answers within two seconds: a
// record left asleep was adopted by a survivor after its node died, and timed out ten
// minutes later, telling an end for a question no one was ever asked (a 10-minute
// robustness run).
func TestARecordThatLandedAfterAFailedWriteIsDeletedOnceTheStoreIsBack(t *testing.T) {
	var st *gettingFails
	clk, mem, el := nodeHere(t, func(mem *memory.Store) store.Store {
		st = &gettingFails{Store: mem}
		return st
	})
	now := clk.Now()
	rec := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rec.Node, rec.Asleep, rec.Outcome, rec.Ends = "here", true, nil, nil
	_, err := mem.Create(context.Background(), rec)
	require.NoError(t, err)
	c := el.newCall(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "contact"}}, "alice", rec.ID, true)

	st.down.Store(true)
	c.dropLanded()
	_, err = mem.Get(context.Background(), "alice", rec.ID)
	require.NoError(t, err, "the store did not answer: the record is still there")

	st.down.Store(false)
	require.Eventually(t, func() bool {
		clk.Add(time.Second)
		_, err := mem.Get(context.Background(), "alice", rec.ID)
		return errors.Is(err, store.ErrNotFound)
	}, 30*time.Second, 10*time.Millisecond, "deleted once the store answers")
}

// A call whose first record write was reported failed, and had not landed when its node
// looked, keeps it from landing later: an ended record takes its id, and the late write, a
// create, fails (a 10-minute run saw one land after the node had looked, and time out ten
// minutes later with an event for a question no one was asked).
func TestARecordThatHadNotLandedIsKeptFromLanding(t *testing.T) {
	clk, mem, el := nodeHere(t, nil)
	id := storetest.NewID()
	c := el.newCall(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "contact"}}, "alice", id, true)
	c.dropLanded()

	now := clk.Now()
	late := storetest.Sample("alice", id, now, now.Add(time.Hour))
	late.Node, late.Asleep, late.Outcome, late.Ends = "here", true, nil, nil
	_, err := mem.Create(context.Background(), late)
	assert.ErrorIs(t, err, store.ErrExists, "the late write cannot land")
	got, err := mem.Get(context.Background(), "alice", id)
	require.NoError(t, err)
	assert.Equal(t, "ended", got.State, "nothing a survivor would adopt")
}

// A call whose first record write was reported failed deletes that record even when a
// survivor has adopted it meanwhile, taking the node for dead (it was cut off from the
// store): no round of it was ever claimed, and no client holds its requestState, since the
// call was refused. A 10-minute robustness run saw such a record time out ten minutes later
// on the survivor, telling an end for a question no one was asked.
func TestARecordAdoptedBeforeItsFailedWriteWasKnownIsStillDeleted(t *testing.T) {
	clk, mem, el := nodeHere(t, nil)
	now := clk.Now()
	rec := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rec.Node, rec.Epoch, rec.Asleep, rec.Outcome, rec.Ends, rec.Claimed, rec.Handed = "survivor", 2, true, nil, nil, 0, 1
	_, err := mem.Create(context.Background(), rec)
	require.NoError(t, err)
	c := el.newCall(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "contact"}}, "alice", rec.ID, true)

	c.dropLanded()
	_, err = mem.Get(context.Background(), "alice", rec.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "no one can answer it: deleted, whoever holds it")

	// A record another node holds with a round claimed is a call someone answers: left.
	answered := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	answered.Node, answered.Asleep, answered.Outcome, answered.Ends, answered.Claimed, answered.Handed = "survivor", true, nil, nil, 1, 2
	_, err = mem.Create(context.Background(), answered)
	require.NoError(t, err)
	el.newCall(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "contact"}}, "alice", answered.ID, true).dropLanded()
	_, err = mem.Get(context.Background(), "alice", answered.ID)
	assert.NoError(t, err, "a claimed round's record stays")
}
