package webhook

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff says when a failed delivery is tried again, and when it is given up. Zero fields
// take the defaults below.
//
// After the nth failed attempt the event waits Initial·Multiplier^(n-1), at most Max, less
// a random part of up to Jitter of it (so that the retries of many events do not arrive
// together). It is given up (counted in Stats.Failures) when the next attempt would come
// later than GiveUpAfter after the event was sent, or, if MaxAttempts is set, once
// MaxAttempts attempts have failed.
type Backoff struct {
	Initial     time.Duration // the first wait: 5 s by default
	Max         time.Duration // the longest wait: 1 h by default
	Multiplier  float64       // growth per attempt: 2 by default (at least 1)
	Jitter      float64       // the random share taken off each wait, 0-1: 0.2 by default
	GiveUpAfter time.Duration // since the event was sent: 24 h by default
	MaxAttempts int           // attempts at most; 0: bounded by GiveUpAfter alone
	// Rand returns a number in [0, 1) for the jitter; math/rand/v2's if nil.
	Rand func() float64
}

// The default Backoff.
const (
	DefaultInitial     = 5 * time.Second
	DefaultMax         = time.Hour
	DefaultMultiplier  = 2
	DefaultJitter      = 0.2
	DefaultGiveUpAfter = 24 * time.Hour
)

// WithDefaults returns b with its zero fields set to the defaults.
func (b Backoff) WithDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultMax
	}
	b.Max = max(b.Max, b.Initial)
	if b.Multiplier < 1 {
		b.Multiplier = DefaultMultiplier
	}
	if b.Jitter <= 0 || b.Jitter > 1 {
		b.Jitter = DefaultJitter
	}
	if b.GiveUpAfter <= 0 {
		b.GiveUpAfter = DefaultGiveUpAfter
	}
	if b.Rand == nil {
		b.Rand = rand.Float64
	}
	return b
}

// Delay is the wait after failed attempt n (1 for the first), on b with its defaults set.
func (b Backoff) Delay(n int) time.Duration {
	wait := float64(b.Initial) * math.Pow(b.Multiplier, float64(max(n, 1)-1))
	wait = min(wait, float64(b.Max))
	wait -= wait * b.Jitter * b.Rand()
	return time.Duration(wait)
}

// Next says what follows failed attempt n of an event sent at sent, at now: the wait
// before the next attempt, or false to give up.
func (b Backoff) Next(n int, sent, now time.Time) (time.Duration, bool) {
	if b.MaxAttempts > 0 && n >= b.MaxAttempts {
		return 0, false
	}
	wait := b.Delay(n)
	if now.Add(wait).After(sent.Add(b.GiveUpAfter)) {
		return 0, false
	}
	return wait, true
}
