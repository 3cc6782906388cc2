package timers_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/timers"
)

// Every test in the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingClock is a mock clock that counts the clock timers armed on it.
type countingClock struct {
	*clock.Mock
	armed atomic.Int32
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.armed.Add(1)
	return c.Mock.AfterFunc(d, f)
}

// fixture is a Set of string items on a mock clock, whose fires arrive on fired.
type fixture struct {
	clk   *countingClock
	set   *timers.Set[string]
	fired chan string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{clk: &countingClock{Mock: clock.NewMock()}, fired: make(chan string, 10_000)}
	f.set = timers.New[string](f.clk, func(item string) { f.fired <- item })
	t.Cleanup(f.set.Close)
	return f
}

// next is the next item fired (fired).
func (f *fixture) next(t *testing.T) string {
	t.Helper()
	item, ok := fired(f.clk.Mock, f.fired, 0)
	if !ok {
		t.Fatal("no timer fired")
	}
	return item
}

// fired is the next value a Set's fire sends on ch, and false if none comes within a
// generous bound (a fire runs on a goroutine of its own, after the clock moved).
//
// While it waits it moves the mock clock by step (nothing, for a test that checks what is
// not due yet), now and then. The mock runs each clock timer's function on a goroutine of
// its own while Add is still moving through the timers due, and fires a timer only when
// moved: the clock timer that a fire arms, if it is armed just as Add finishes, for a
// deadline Add has already passed, would wait for the next move for ever (a CI run saw "no
// timer fired"), where the real clock fires one armed in the past at once. Add(0) fires it,
// and no timer whose deadline has not come. And Add moves the mock's time back to each
// timer it runs, then forward again: a fire that reads the time in one of those moments
// and arms the clock timer in another arms it up to the distance between them too late,
// past Add's end, where Add(0) never reaches it ("360 of 1200 timers fired", in CI). Only
// a step forward fires that one, in the real clock's stead, whose time never goes back.
func fired[T any](clk *clock.Mock, ch <-chan T, step time.Duration) (T, bool) {
	give := time.After(30 * time.Second) // a failsafe, for a slow, loaded machine
	for {
		select {
		case v := <-ch:
			return v, true
		case <-give:
			var zero T
			return zero, false
		case <-time.After(20 * time.Millisecond):
			clk.Add(step)
		}
	}
}

func TestTimersFireAtTheirDeadlinesInOrder(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	f.set.Start("c", now.Add(3*time.Second))
	f.set.Start("a", now.Add(time.Second))
	f.set.Start("b", now.Add(2*time.Second))
	require.Equal(t, 3, f.set.Len())

	f.clk.Add(999 * time.Millisecond)
	assert.Equal(t, 3, f.set.Len(), "nothing fires before its deadline")
	f.clk.Add(time.Millisecond)
	assert.Equal(t, "a", f.next(t))
	f.clk.Add(time.Second)
	assert.Equal(t, "b", f.next(t))
	f.clk.Add(time.Second)
	assert.Equal(t, "c", f.next(t))
	assert.Equal(t, 0, f.set.Len())
}

func TestManyTimersShareOneClockTimer(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	for i := range 1000 {
		f.set.Start("later", now.Add(time.Minute+time.Duration(i)*time.Millisecond))
	}
	assert.EqualValues(t, 1, f.clk.armed.Load(), "later deadlines do not arm the clock again")
	f.set.Start("sooner", now.Add(time.Second))
	assert.EqualValues(t, 2, f.clk.armed.Load(), "an earlier one does")
	f.clk.Add(time.Second)
	assert.Equal(t, "sooner", f.next(t))
	f.clk.Add(2 * time.Minute)
	for range 1000 {
		assert.Equal(t, "later", f.next(t))
	}
	assert.Equal(t, 0, f.set.Len())
}

func TestAStoppedTimerDoesNotFire(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	stopped := f.set.Start("stopped", now.Add(time.Second))
	f.set.Start("kept", now.Add(2*time.Second))
	assert.True(t, stopped.Stop(), "it was pending")
	assert.False(t, stopped.Stop(), "twice: it was not")
	assert.Equal(t, 1, f.set.Len())
	f.clk.Add(2 * time.Second)
	assert.Equal(t, "kept", f.next(t), "the stopped one, due first, never came")
	assert.Equal(t, 0, f.set.Len())
}

func TestResetMovesADeadlineEitherWay(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	tm := f.set.Start("x", now.Add(10*time.Second))
	assert.True(t, tm.Reset(now.Add(time.Second)), "pending")
	f.clk.Add(time.Second)
	assert.Equal(t, "x", f.next(t), "at the earlier deadline")

	assert.False(t, tm.Reset(f.clk.Now().Add(5*time.Second)), "it had fired")
	f.clk.Add(4 * time.Second)
	assert.Equal(t, 1, f.set.Len(), "not yet")
	tm.Reset(f.clk.Now().Add(10 * time.Second))
	f.clk.Add(time.Second)
	assert.Equal(t, 1, f.set.Len(), "moved later: not at the deadline it had")
	f.clk.Add(9 * time.Second)
	assert.Equal(t, "x", f.next(t))
}

func TestADeadlineThatHasPassedFiresOnTheClocksNextMove(t *testing.T) {
	f := newFixture(t)
	f.set.Start("late", f.clk.Now().Add(-time.Second))
	f.clk.Add(0)
	assert.Equal(t, "late", f.next(t))
}

func TestCloseStopsEverything(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	a := f.set.Start("a", now.Add(time.Second))
	f.set.Close()
	assert.Equal(t, 0, f.set.Len())
	assert.False(t, a.Stop(), "closed: no longer pending")
	b := f.set.Start("b", now.Add(time.Second))
	a.Reset(now.Add(time.Second))
	f.clk.Add(time.Hour)
	assert.Equal(t, 0, f.set.Len())
	assert.False(t, b.Stop())
	f.set.Start("after", now) // a set that fired would deliver this one too
	assert.Empty(t, f.fired, "nothing fires after Close")
}

// Timers started, reset and stopped from many goroutines at once: each fires once exactly,
// unless a Stop that reported it pending came first.
func TestConcurrentUseFiresEachOnce(t *testing.T) {
	clk := clock.NewMock()
	var mu sync.Mutex
	fires := map[int]int{}
	all := make(chan struct{}, 10_000)
	set := timers.New[int](clk, func(i int) {
		mu.Lock()
		fires[i]++
		mu.Unlock()
		all <- struct{}{}
	})
	t.Cleanup(set.Close)
	now := clk.Now()
	var stopped atomic.Int32
	var wg sync.WaitGroup
	const workers, each = 8, 200
	for w := range workers {
		wg.Go(func() {
			for j := range each {
				i := w*each + j
				tm := set.Start(i, now.Add(time.Duration(1+i%50)*time.Millisecond))
				if i%3 == 0 {
					tm.Reset(now.Add(time.Duration(1+i%7) * time.Millisecond))
				}
				if i%4 == 0 && tm.Stop() {
					stopped.Add(1)
				}
			}
		})
	}
	wg.Wait()
	clk.Add(time.Second)
	want := workers*each - int(stopped.Load())
	for range want {
		// Every deadline has passed: moving on fires nothing early.
		if _, ok := fired(clk, all, time.Second); !ok {
			mu.Lock()
			n := len(fires)
			mu.Unlock()
			t.Fatalf("%d of %d timers fired", n, want)
		}
	}
	assert.Equal(t, 0, set.Len())
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, fires, want)
	for i, n := range fires {
		assert.Equal(t, 1, n, "timer %d fired %d times", i, n)
		assert.NotZero(t, i%4, "timer %d was stopped", i)
	}
}
