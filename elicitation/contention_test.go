package elicitation_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
)

// 100 goroutines race a valid answer, a decline, a cancel, extensions and the deadline on one
// elicitation. Exactly one of them ends it, the outcome matches the one that did, every other
// terminal event is refused with ErrFinished, and the end hook runs once.
func TestExactlyOnceUnderContention(t *testing.T) {
	const racers = 100
	iterations := 200
	if testing.Short() {
		iterations = 20
	}
	outcomes := map[string]int{}
	for range iterations {
		f := newFixture()
		spec := f.spec()
		spec.Timeout = time.Minute
		e := f.start(t, spec)
		f.prompts.Next(t)

		var accepted, declined, cancelled, extended atomic.Int64
		var unexpected atomic.Value
		check := func(err error, ok *atomic.Int64) {
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, elicitation.ErrFinished):
			default:
				unexpected.Store(err)
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				switch i % 5 {
				case 0:
					check(e.Answer(elicitationtest.Accept(1, "Ada")), &accepted)
				case 1:
					check(e.Answer(elicitation.Answer{Round: 1, Action: elicitation.Decline}), &declined)
				case 2:
					check(e.Cancel(elicitation.Operator), &cancelled)
				case 3:
					_, err := e.Extend(time.Second)
					check(err, &extended)
				case 4:
					if i == 4 {
						f.clk.Add(time.Minute) // the deadline, from one goroutine only
					} else {
						_ = e.Snapshot()
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.Nil(t, unexpected.Load())

		o := elicitationtest.WaitDone(t, e)
		enders := accepted.Load() + declined.Load() + cancelled.Load()
		switch {
		case o.State == elicitation.Completed:
			assert.Equal(t, int64(1), accepted.Load())
			assert.Equal(t, map[string]any{"name": "Ada"}, o.Data)
		case o.State == elicitation.Cancelled && o.Reason == elicitation.Declined:
			assert.Equal(t, int64(1), declined.Load())
		case o.State == elicitation.Cancelled && o.Reason == elicitation.Operator:
			assert.Equal(t, int64(1), cancelled.Load())
		case o.State == elicitation.TimedOut:
			assert.Equal(t, int64(0), enders)
			assert.False(t, o.Ended.Before(o.Created.Add(time.Minute)))
		default:
			t.Fatalf("unexpected outcome %+v", o)
		}
		if o.State != elicitation.TimedOut {
			require.Equal(t, int64(1), enders, "exactly one terminal event was acknowledged")
		}
		require.EqualValues(t, 1, f.ends.Load(), "the end hook ran once")
		require.Equal(t, o.State, e.Snapshot().State)
		outcomes[o.State.String()+"/"+o.Reason.String()]++
	}
	t.Logf("outcomes over %d iterations: %v", iterations, outcomes)
}
