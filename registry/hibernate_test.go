package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
)

// sleeper stands for a hibernating question in these tests: what the registry is told of it.
type sleeper struct {
	snap      elicitation.Snapshot
	cancelled []elicitation.Reason
	extended  []time.Duration
}

func (s *sleeper) ID() string                     { return s.snap.ID }
func (s *sleeper) Snapshot() elicitation.Snapshot { return s.snap }
func (s *sleeper) Cancel(r elicitation.Reason) error {
	s.cancelled = append(s.cancelled, r)
	return nil
}
func (s *sleeper) Extend(d time.Duration) (time.Time, error) {
	s.extended = append(s.extended, d)
	s.snap.Deadline = s.snap.Deadline.Add(d)
	return s.snap.Deadline, nil
}

// hibernate puts e to sleep as the ask package does: its stand-in is registered, then the
// actor is ended.
func hibernate(t *testing.T, reg *registry.Registry, e *elicitation.Elicitation) *sleeper {
	t.Helper()
	s := &sleeper{snap: e.Snapshot()}
	require.True(t, reg.Hibernate(e, s))
	require.NoError(t, e.Cancel(elicitation.Operator))
	<-e.Done()
	return s
}

func TestAHibernatingQuestionIsStillKnown(t *testing.T) {
	var ends []elicitation.Outcome
	f := newFixture(t, registry.Config{MaxAsleep: 1, OnEnd: func(_ string, o elicitation.Outcome) { ends = append(ends, o) }})
	e := f.start(t, "alice")
	s := hibernate(t, f.reg, e)

	assert.Empty(t, ends, "the actor's end is not the question's")
	assert.Equal(t, 1, f.reg.Len())
	list := f.reg.List("alice")
	require.Len(t, list, 1)
	assert.Equal(t, e.ID(), list[0].ID)
	assert.Equal(t, elicitation.Active, list[0].State)
	assert.Empty(t, f.reg.List("bob"), "another owner does not see it")
	st := f.reg.Stats()
	assert.Equal(t, 1, st.Live[elicitation.Active.String()])
	assert.Zero(t, st.Completed+st.TimedOut)
	assert.Empty(t, st.Cancelled)

	_, err := f.reg.Start("bob", f.spec())
	assert.ErrorIs(t, err, registry.ErrTooManyLive, "it counts against the cap of those asleep")

	require.NoError(t, f.reg.Cancel("alice", e.ID(), elicitation.Operator))
	assert.Equal(t, []elicitation.Reason{elicitation.Operator}, s.cancelled)
	assert.ErrorIs(t, f.reg.Cancel("bob", e.ID(), elicitation.Operator), registry.ErrNotFound)
	d, err := f.reg.Extend("alice", e.ID(), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, s.snap.Deadline, d)
	assert.Equal(t, 1, f.reg.CloseOwner("alice"))
	assert.Equal(t, []elicitation.Reason{elicitation.Operator, elicitation.ClientGone}, s.cancelled)
}

func TestADroppedSleeperEndsOnlyWithAnOutcome(t *testing.T) {
	var ends []elicitation.Outcome
	f := newFixture(t, registry.Config{OnEnd: func(_ string, o elicitation.Outcome) { ends = append(ends, o) }})
	woken := hibernate(t, f.reg, f.start(t, "alice"))
	require.True(t, f.reg.Drop(woken, nil))
	assert.False(t, f.reg.Drop(woken, nil), "dropped once")
	assert.Empty(t, ends)
	assert.Zero(t, f.reg.Len())

	timed := hibernate(t, f.reg, f.start(t, "alice"))
	o := elicitation.Outcome{ID: timed.ID(), State: elicitation.TimedOut}
	require.True(t, f.reg.Drop(timed, &o))
	require.Len(t, ends, 1)
	assert.Equal(t, elicitation.TimedOut, ends[0].State)
	assert.Equal(t, uint64(1), f.reg.Stats().TimedOut)
	assert.Equal(t, uint64(2), f.reg.Stats().Started)
}

func TestResumeKeepsTheIDAndUsesNoQuota(t *testing.T) {
	f := newFixture(t, registry.Config{Rate: 1, Burst: 1})
	e := f.start(t, "alice")
	s := hibernate(t, f.reg, e)

	_, err := f.reg.Resume("alice", e.ID(), f.spec())
	assert.ErrorIs(t, err, registry.ErrTaken, "not while its stand-in is held")
	require.True(t, f.reg.Drop(s, nil))

	woken, err := f.reg.Resume("alice", e.ID(), f.spec())
	require.NoError(t, err, "the rate limit (one start, used) does not refuse a question going on")
	f.prompts.Next(t)
	assert.Equal(t, e.ID(), woken.ID())
	assert.Equal(t, uint64(1), f.reg.Stats().Started)
	owner, ok := f.reg.Owner(e.ID())
	require.True(t, ok)
	assert.Equal(t, "alice", owner)

	require.NoError(t, f.reg.Shutdown(context.Background()))
	_, err = f.reg.Resume("alice", "other", f.spec())
	assert.ErrorIs(t, err, registry.ErrClosed)
}

func TestShutdownLeavesASleeperAlone(t *testing.T) {
	f := newFixture(t, registry.Config{})
	s := hibernate(t, f.reg, f.start(t, "alice"))
	require.NoError(t, f.reg.Shutdown(context.Background()))
	assert.Empty(t, s.cancelled, "its question lives on in its record, for another node")
	assert.Zero(t, f.reg.Len())
}

// The awake (an actor, a goroutine each) and the asleep (a stand-in) are capped apart: a
// node may hold far more of the second. A start is refused when either cap is reached;
// hibernating, waking and adopting are never refused, and move a question between the two.
func TestTheAwakeAndTheAsleepAreCappedApart(t *testing.T) {
	f := newFixture(t, registry.Config{MaxLive: 2, MaxAsleep: 3})
	var sleepers []*sleeper
	for range 3 {
		sleepers = append(sleepers, hibernate(t, f.reg, f.start(t, "alice")))
	}
	st := f.reg.Stats()
	assert.Equal(t, 3, st.Asleep)
	_, err := f.reg.Start("alice", f.spec())
	assert.ErrorIs(t, err, registry.ErrTooManyLive, "three asleep: the cap of those asleep")
	assert.ErrorContains(t, err, "3 wait asleep, the limit is 3")
	assert.ErrorIs(t, f.reg.Admits("bob"), registry.ErrTooManyLive)

	require.True(t, f.reg.Drop(sleepers[0], nil)) // woken: its actor resumes
	e, err := f.reg.Resume("alice", sleepers[0].ID(), f.spec())
	require.NoError(t, err)
	f.prompts.Next(t)
	assert.Equal(t, 2, f.reg.Stats().Asleep)
	a := f.start(t, "bob") // two awake, two asleep
	assert.Equal(t, 4, f.reg.Len())
	_, err = f.reg.Start("bob", f.spec())
	assert.ErrorContains(t, err, "2 are awake, the limit is 2", "the awake cap, with one place asleep left")

	adopted := &sleeper{snap: elicitation.Snapshot{ID: "adopted", State: elicitation.Active}}
	require.NoError(t, f.reg.Adopt("carol", adopted), "adopting is not a start")
	assert.Equal(t, 3, f.reg.Stats().Asleep)
	hibernate(t, f.reg, a)
	assert.Equal(t, 4, f.reg.Stats().Asleep, "hibernating is never refused")
	require.NoError(t, e.Cancel(elicitation.Operator))
	<-e.Done()
	st = f.reg.Stats()
	assert.Equal(t, 4, st.Asleep)
	assert.Equal(t, 4, f.reg.Len())
}
