package ask

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The resends waiting on a claim learn what it came to even when it is undone (its write
// to the store failed): the slot they wait on is filled with the error, never left open.
func TestAnUndoneClaimReleasesItsWaiters(t *testing.T) {
	c := &call{}
	_, ok := c.claim(1, "sum", nil)
	require.True(t, ok)
	waiting := c.slot
	e := Errorf(CodeStoreUnavailable, "store_unavailable", "lost")
	c.unclaim(1, 0, e)
	select {
	case <-waiting.done:
	default:
		t.Fatal("a resend waiting on the undone claim would wait for ever")
	}
	assert.Equal(t, e, waiting.sent.err)
	assert.Nil(t, c.slot, "the next request claims afresh")
	_, ok = c.claim(1, "sum", nil)
	assert.True(t, ok)
}

// A call that hibernated takes no claim: its handler is gone, so an answer handed to it
// would wait for ever. The retry that raced the hibernation (it found the call awake, a
// moment before its first round's write behind landed and it slept) fails to claim; that it
// then wakes the call from its record is TestAnAnswerRacingTheWriteBehindIsTaken's.
func TestAHibernatedCallTakesNoClaim(t *testing.T) {
	c := &call{sleeping: make(chan struct{})}
	_, ok := c.claim(1, "sum", nil)
	assert.False(t, ok, "a claim on a call whose handler has ended")
	assert.Zero(t, c.claimed)
}
