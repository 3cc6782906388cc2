package registry_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/registry"
)

// Every test in the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	clk     *clock.Mock
	reg     *registry.Registry
	prompts elicitationtest.Prompts
	form    *elicitationtest.NameForm
}

func newFixture(t *testing.T, cfg registry.Config) *fixture {
	clk := clock.NewMock()
	cfg.Clock = clk
	f := &fixture{clk: clk, reg: registry.New(cfg), prompts: elicitationtest.NewPrompts(1024), form: &elicitationtest.NameForm{}}
	t.Cleanup(func() {
		require.NoError(t, f.reg.Shutdown(context.Background()))
	})
	return f
}

func (f *fixture) spec() elicitation.Spec {
	return elicitation.Spec{Title: "name", Tool: "ask_user", Message: "Your name?", Form: f.form, Prompter: f.prompts}
}

func (f *fixture) start(t *testing.T, owner string) *elicitation.Elicitation {
	t.Helper()
	e, err := f.reg.Start(owner, f.spec())
	require.NoError(t, err)
	f.prompts.Next(t)
	return e
}

func TestStartTracksAndAFinishedOneLeavesAtOnce(t *testing.T) {
	f := newFixture(t, registry.Config{})
	e := f.start(t, "alice")
	assert.Regexp(t, regexp.MustCompile(`^[A-Z2-7]{26}$`), e.ID(), "128 random bits as URL-safe base32")

	owner, ok := f.reg.Owner(e.ID())
	require.True(t, ok)
	assert.Equal(t, "alice", owner)
	assert.Equal(t, 1, f.reg.Len())
	list := f.reg.List("alice")
	require.Len(t, list, 1)
	assert.Equal(t, e.ID(), list[0].ID)
	assert.Equal(t, elicitation.Active, list[0].State)

	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	<-e.Done() // the registry let go of it before Done closed
	assert.Equal(t, 0, f.reg.Len())
	_, ok = f.reg.Owner(e.ID())
	assert.False(t, ok)
	assert.Empty(t, f.reg.List("alice"))
	assert.ErrorIs(t, f.reg.Cancel("alice", e.ID(), elicitation.Operator), registry.ErrNotFound)
	_, err := f.reg.Extend("alice", e.ID(), time.Minute)
	assert.ErrorIs(t, err, registry.ErrNotFound)
}

func TestIDsAreUnique(t *testing.T) {
	f := newFixture(t, registry.Config{})
	seen := map[string]bool{}
	for range 200 {
		e := f.start(t, "alice")
		require.False(t, seen[e.ID()])
		seen[e.ID()] = true
	}
}

func TestBadSpecIsRefusedWithTheField(t *testing.T) {
	f := newFixture(t, registry.Config{})
	spec := f.spec()
	spec.Form = nil
	_, err := f.reg.Start("alice", spec)
	var se *elicitation.SpecError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Form", se.Field)
	assert.Equal(t, 0, f.reg.Len())
	assert.EqualValues(t, 0, f.reg.Stats().Started)
}

func TestListFiltersByOwnerAndStateOldestFirst(t *testing.T) {
	f := newFixture(t, registry.Config{})
	a1 := f.start(t, "alice")
	f.clk.Add(time.Second)
	a2 := f.start(t, "alice")
	f.start(t, "bob")
	list := f.reg.List("alice")
	require.Len(t, list, 2)
	assert.Equal(t, []string{a1.ID(), a2.ID()}, []string{list[0].ID, list[1].ID})
	assert.Len(t, f.reg.List("alice", elicitation.Active), 2)
	assert.Empty(t, f.reg.List("alice", elicitation.Pending))
	assert.Empty(t, f.reg.List("carol"))
}

func TestCancelAndExtendByID(t *testing.T) {
	f := newFixture(t, registry.Config{})
	e := f.start(t, "alice")
	start := f.clk.Now()
	_, err := f.reg.Extend("bob", e.ID(), time.Minute)
	assert.ErrorIs(t, err, registry.ErrNotFound, "another owner's question is not found")
	assert.ErrorIs(t, f.reg.Cancel("bob", e.ID(), elicitation.Operator), registry.ErrNotFound)
	d, err := f.reg.Extend("alice", e.ID(), time.Minute)
	require.NoError(t, err)
	assert.True(t, d.Equal(start.Add(elicitation.DefaultTimeout+time.Minute)))
	require.NoError(t, f.reg.Cancel("alice", e.ID(), elicitation.Operator))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Operator, o.Reason)
	assert.Equal(t, 0, f.reg.Len())
	assert.ErrorIs(t, f.reg.Cancel("alice", "nope", elicitation.Operator), registry.ErrNotFound)
}

func TestTimedOutElicitationLeaves(t *testing.T) {
	f := newFixture(t, registry.Config{})
	e := f.start(t, "alice")
	f.clk.Add(elicitation.DefaultTimeout)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
	assert.Equal(t, 0, f.reg.Len())
	assert.EqualValues(t, 1, f.reg.Stats().TimedOut)
}

func TestGlobalCapOnLiveElicitations(t *testing.T) {
	f := newFixture(t, registry.Config{MaxLive: 2})
	first := f.start(t, "alice")
	f.start(t, "bob")
	_, err := f.reg.Start("carol", f.spec())
	require.ErrorIs(t, err, registry.ErrTooManyLive)
	assert.Contains(t, err.Error(), "limit is 2")
	assert.Equal(t, 2, f.reg.Len())

	require.NoError(t, first.Cancel(elicitation.Operator))
	f.start(t, "carol")
	st := f.reg.Stats()
	assert.EqualValues(t, 1, st.TooManyLive)
	assert.Zero(t, st.RateLimited)
	assert.EqualValues(t, 3, st.Started)
}

func TestRateLimitRefillsOnTheMockClock(t *testing.T) {
	f := newFixture(t, registry.Config{Rate: rate.Every(time.Minute), Burst: 2})
	f.start(t, "alice")
	f.start(t, "alice")
	_, err := f.reg.Start("alice", f.spec())
	require.ErrorIs(t, err, registry.ErrRateLimited)
	var rl *registry.RateLimitError
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, time.Minute, rl.RetryAfter)
	assert.Contains(t, err.Error(), "retry after 1m0s")

	f.start(t, "bob") // another owner has its own bucket

	f.clk.Add(59 * time.Second)
	_, err = f.reg.Start("alice", f.spec())
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, time.Second, rl.RetryAfter)

	f.clk.Add(time.Second) // exactly when it said: the refusals took nothing
	f.start(t, "alice")
	_, err = f.reg.Start("alice", f.spec())
	require.ErrorIs(t, err, registry.ErrRateLimited)
	assert.EqualValues(t, 3, f.reg.Stats().RateLimited)
}

func TestRefusedStartsUseNoQuota(t *testing.T) {
	f := newFixture(t, registry.Config{Rate: rate.Every(time.Hour), Burst: 1, MaxLive: 1})
	blocker := f.start(t, "alice")

	// bob is refused by the global cap, and by bad specs, many times.
	bad := f.spec()
	bad.Message = ""
	for range 5 {
		_, err := f.reg.Start("bob", f.spec())
		require.ErrorIs(t, err, registry.ErrTooManyLive)
		_, err = f.reg.Start("bob", bad)
		var se *elicitation.SpecError
		require.ErrorAs(t, err, &se)
	}
	require.NoError(t, blocker.Cancel(elicitation.Operator))
	// bob's single token is still there: no clock movement needed.
	f.start(t, "bob")
}

func TestCloseOwnerTouchesOnlyThatOwner(t *testing.T) {
	f := newFixture(t, registry.Config{})
	var alice, bob []*elicitation.Elicitation
	for range 3 {
		alice = append(alice, f.start(t, "alice"))
	}
	for range 2 {
		bob = append(bob, f.start(t, "bob"))
	}
	assert.Equal(t, 3, f.reg.CloseOwner("alice"))
	for _, e := range alice {
		o, ok := e.Outcome()
		require.True(t, ok, "CloseOwner returns once they have ended")
		assert.Equal(t, elicitation.Cancelled, o.State)
		assert.Equal(t, elicitation.ClientGone, o.Reason)
	}
	for _, e := range bob {
		assert.Equal(t, elicitation.Active, e.Snapshot().State)
	}
	assert.Empty(t, f.reg.List("alice"))
	assert.Len(t, f.reg.List("bob"), 2)
	assert.Equal(t, 2, f.reg.Len())
	assert.Equal(t, 0, f.reg.CloseOwner("alice"))
	assert.Equal(t, 0, f.reg.CloseOwner("nobody"))
}

func TestShutdownEndsEveryActor(t *testing.T) {
	f := newFixture(t, registry.Config{})
	var all []*elicitation.Elicitation
	for i := range 50 {
		all = append(all, f.start(t, []string{"alice", "bob", "carol"}[i%3]))
	}
	require.NoError(t, f.reg.Shutdown(context.Background()))
	for _, e := range all {
		o, ok := e.Outcome()
		require.True(t, ok)
		assert.Equal(t, elicitation.Shutdown, o.Reason)
	}
	goleak.VerifyNone(t)
	assert.Equal(t, 0, f.reg.Len())
	_, err := f.reg.Start("alice", f.spec())
	assert.ErrorIs(t, err, registry.ErrClosed)
	assert.EqualValues(t, 50, f.reg.Stats().Cancelled["shutdown"])
}

// An actor stuck in a prompter that never returns cannot hold Shutdown past its context,
// and Shutdown starts no goroutine that outlives it.
func TestShutdownHonoursItsContext(t *testing.T) {
	clk := clock.NewMock()
	reg := registry.New(registry.Config{Clock: clk})
	release := make(chan struct{})
	entered := make(chan struct{})
	spec := elicitation.Spec{Message: "m", Form: &elicitationtest.NameForm{}, Prompter: elicitation.PrompterFunc(func(elicitation.Prompt) {
		close(entered)
		<-release
	})}
	e, err := reg.Start("alice", spec)
	require.NoError(t, err)
	<-entered
	before := goleak.IgnoreCurrent() // the actor, stuck in the prompter
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, reg.Shutdown(ctx), context.Canceled)
	goleak.VerifyNone(t, before)

	close(release) // the prompter returns; a second Shutdown ends the question
	require.NoError(t, reg.Shutdown(context.Background()))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Shutdown, o.Reason)
}

func TestStatsCountOutcomesAndLiveStates(t *testing.T) {
	f := newFixture(t, registry.Config{MaxLive: 4})
	done := f.start(t, "a")
	require.NoError(t, done.Answer(elicitationtest.Accept(1, "Ada")))
	<-done.Done()
	declined := f.start(t, "a")
	require.NoError(t, declined.Answer(elicitation.Answer{Round: 1, Action: elicitation.Decline}))
	<-declined.Done()
	f.start(t, "b")
	f.start(t, "b")
	f.start(t, "b")
	f.start(t, "b")
	_, err := f.reg.Start("b", f.spec())
	require.Error(t, err)
	f.reg.CloseOwner("b")
	f.start(t, "c")

	st := f.reg.Stats()
	assert.EqualValues(t, 7, st.Started)
	assert.EqualValues(t, 1, st.Completed)
	assert.Equal(t, map[string]uint64{"declined": 1, "client_gone": 4}, st.Cancelled)
	assert.EqualValues(t, 0, st.TimedOut)
	assert.EqualValues(t, 1, st.TooManyLive)
	assert.Equal(t, map[string]int{"pending": 0, "active": 1}, st.Live)
}

func TestRegistryPanicsOnAnImpossibleRate(t *testing.T) {
	assert.Panics(t, func() { registry.New(registry.Config{Rate: 1, Burst: 0}) })
}

// Owners that come and go without CloseOwner do not pile up.
func TestIdleOwnersAreSwept(t *testing.T) {
	f := newFixture(t, registry.Config{})
	for i := range 3000 {
		e := f.start(t, fmt.Sprintf("owner-%d", i))
		require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
		<-e.Done()
	}
	assert.LessOrEqual(t, f.reg.Stats().Owners, 1024)
}

// A sweep never forgets an owner whose bucket is not full: that would hand it fresh quota.
func TestSweepsKeepAPartlyUsedBucket(t *testing.T) {
	f := newFixture(t, registry.Config{Rate: rate.Every(time.Hour), Burst: 1})
	swept := false
	for i := 0; !swept; i++ {
		require.Less(t, i, 20_000, "no sweep happened")
		if i%100 == 0 {
			f.clk.Add(time.Hour) // every bucket refills: the idle owners become sweepable
			greedy := f.start(t, "greedy")
			require.NoError(t, greedy.Cancel(elicitation.Operator))
		}
		before := f.reg.Stats().Owners
		e := f.start(t, fmt.Sprintf("owner-%d", i))
		require.NoError(t, e.Cancel(elicitation.Operator))
		swept = f.reg.Stats().Owners <= before // this start swept, after greedy used its token
	}
	_, err := f.reg.Start("greedy", f.spec())
	require.ErrorIs(t, err, registry.ErrRateLimited, "greedy's used bucket survived the sweep")
}

func TestOnEndReportsOwnerAndOutcomeBeforeDone(t *testing.T) {
	type ended struct {
		owner string
		o     elicitation.Outcome
		live  bool
	}
	got := make(chan ended, 1)
	var reg *registry.Registry
	reg = registry.New(registry.Config{Clock: clock.NewMock(), OnEnd: func(owner string, o elicitation.Outcome) {
		_, live := reg.Owner(o.ID)
		got <- ended{owner, o, live}
	}})
	prompts := elicitationtest.NewPrompts(1)
	e, err := reg.Start("alice", elicitation.Spec{Tool: "ask_user", Title: "t", Message: "m", Form: &elicitationtest.NameForm{}, Prompter: prompts})
	require.NoError(t, err)
	prompts.Next(t)
	require.NoError(t, e.Cancel(elicitation.Operator))
	select {
	case end := <-got:
		assert.Equal(t, "alice", end.owner)
		assert.Equal(t, e.ID(), end.o.ID)
		assert.Equal(t, "ask_user", end.o.Tool)
		assert.Equal(t, elicitation.Operator, end.o.Reason)
		assert.False(t, end.live, "it has left the registry")
	default:
		t.Fatal("OnEnd had not run when Cancel returned")
	}
	require.NoError(t, reg.Shutdown(context.Background()))
}

func TestAdmitsSaysWhatStartWouldWithoutUsingQuota(t *testing.T) {
	f := newFixture(t, registry.Config{Rate: rate.Every(time.Minute), Burst: 2, MaxLive: 3})
	for range 5 {
		require.NoError(t, f.reg.Admits("alice"), "asking uses nothing")
	}
	f.start(t, "alice")
	f.start(t, "alice")
	var rl *registry.RateLimitError
	require.ErrorAs(t, f.reg.Admits("alice"), &rl)
	assert.Equal(t, time.Minute, rl.RetryAfter)
	require.NoError(t, f.reg.Admits("bob"), "another owner has its own bucket")
	f.start(t, "bob")
	assert.ErrorIs(t, f.reg.Admits("carol"), registry.ErrTooManyLive)
	st := f.reg.Stats()
	assert.EqualValues(t, 1, st.RateLimited)
	assert.EqualValues(t, 1, st.TooManyLive)
	require.NoError(t, f.reg.Shutdown(context.Background()))
	assert.ErrorIs(t, f.reg.Admits("bob"), registry.ErrClosed)
}
