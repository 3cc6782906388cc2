package webhook_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/webhook"
)

// The waits grow by the multiplier from Initial, up to Max; the jitter takes up to its
// share off each.
func TestBackoffDelays(t *testing.T) {
	t.Parallel()
	exact := webhook.Backoff{Initial: time.Second, Max: 10 * time.Second, Rand: noJitter}.WithDefaults()
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		assert.Equal(t, want, exact.Delay(n), "after attempt %d", n)
	}
	most := webhook.Backoff{Initial: time.Second, Max: 10 * time.Second, Jitter: 0.5, Rand: func() float64 { return 0.999999 }}.WithDefaults()
	assert.InDelta(t, float64(2*time.Second)/2, float64(most.Delay(2)), float64(time.Millisecond), "half off at most")
	def := webhook.Backoff{}.WithDefaults()
	for n := 1; n < 30; n++ {
		base := min(webhook.DefaultInitial<<(n-1), webhook.DefaultMax)
		if n > 20 {
			base = webhook.DefaultMax
		}
		got := def.Delay(n)
		assert.LessOrEqual(t, got, base, "attempt %d", n)
		assert.GreaterOrEqual(t, got, time.Duration(float64(base)*(1-webhook.DefaultJitter)), "attempt %d", n)
	}
}

// An event is given up when its next attempt would come past GiveUpAfter since it was
// sent, or once MaxAttempts attempts have failed.
func TestBackoffGivesUp(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	b := webhook.Backoff{Initial: time.Minute, Max: time.Hour, GiveUpAfter: 24 * time.Hour, Rand: noJitter}.WithDefaults()
	wait, ok := b.Next(1, sent, sent)
	assert.True(t, ok)
	assert.Equal(t, time.Minute, wait)
	_, ok = b.Next(30, sent, sent.Add(23*time.Hour))
	assert.True(t, ok, "23 h + 1 h is not past 24 h")
	_, ok = b.Next(30, sent, sent.Add(23*time.Hour+time.Second))
	assert.False(t, ok, "past 24 h")

	b.MaxAttempts = 5
	_, ok = b.Next(4, sent, sent)
	assert.True(t, ok)
	_, ok = b.Next(5, sent, sent)
	assert.False(t, ok)

	def := webhook.Backoff{}.WithDefaults()
	assert.Equal(t, 24*time.Hour, def.GiveUpAfter)
	assert.Zero(t, def.MaxAttempts)
}
