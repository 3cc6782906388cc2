package ask

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestInflightSignalsWhenNoCallIsLeft(t *testing.T) {
	var c inflight
	assert.True(t, closed(c.none()), "nothing in flight")
	c.begin()
	c.begin()
	idle := c.none()
	assert.False(t, closed(idle))
	c.end()
	assert.False(t, closed(idle), "one call is left")
	c.end()
	assert.True(t, closed(idle))
	c.begin()
	assert.False(t, closed(c.none()), "a call after the last wait is counted afresh")
	c.end()
}

// Calls keep arriving while someone waits: a sync.WaitGroup panics here ("WaitGroup is reused
// before previous Wait has returned"), which is how a SIGTERM with calls still arriving
// crashed elicitd.
func TestInflightMayBeWaitedOnWhileCallsArrive(t *testing.T) {
	var c inflight
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					c.begin()
					c.end()
				}
			}
		})
	}
	for range 10_000 {
		<-c.none() // each wait ends: the count keeps returning to zero
	}
	close(stop)
	wg.Wait()
	require.True(t, closed(c.none()))
}
