package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// signalled is a writer that says when it has been written to.
type signalled struct {
	mu     sync.Mutex
	b      strings.Builder
	writes int
	wrote  chan struct{}
}

func (s *signalled) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.b.Write(p)
	s.writes++
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *signalled) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func (s *signalled) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.writes }

func (s *signalled) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.wrote:
	case <-time.After(failsafe):
		t.Fatal("nothing was written")
	}
}

// The first line after a quiet spell is written at once; the lines that follow it within
// the interval go out together when it has passed; Close writes what is left.
func TestLogWriterGathersLines(t *testing.T) {
	out := &signalled{wrote: make(chan struct{}, 1)}
	clk := clock.NewMock()
	w := newLogWriter(out, clk, logInterval)

	_, _ = w.Write([]byte("one\n"))
	out.wait(t)
	assert.Equal(t, "one\n", out.String())

	_, _ = w.Write([]byte("two\n"))
	_, _ = w.Write([]byte("three\n"))
	assert.Equal(t, "one\n", out.String(), "gathered until the interval has passed")
	// The flushing goroutine waits on the mock clock's timer: advance until it has fired.
	require.Eventually(t, func() bool { clk.Add(logInterval); return out.count() == 2 }, failsafe, time.Millisecond)
	assert.Equal(t, "one\ntwo\nthree\n", out.String(), "the two went out in one write, in order")

	_, _ = w.Write([]byte("four\n"))
	require.NoError(t, w.Close())
	assert.Equal(t, "one\ntwo\nthree\nfour\n", out.String(), "Close writes what waits")
	_, _ = w.Write([]byte("five\n"))
	assert.Equal(t, "one\ntwo\nthree\nfour\nfive\n", out.String(), "after Close, lines are written at once")
	require.NoError(t, w.Close(), "Close twice is harmless")
}

// blocked is a writer that does not return until released: stderr nobody reads.
type blocked struct {
	release chan struct{}
	mu      sync.Mutex
	b       strings.Builder
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// With stderr stuck, lines wait up to maxLogBuffer bytes; past it the caller writes (and
// waits, as it would without the buffer): memory stays bounded, and nothing is lost or
// reordered.
func TestLogWriterIsBounded(t *testing.T) {
	out := &blocked{release: make(chan struct{})}
	w := newLogWriter(out, clock.New(), logInterval)
	line := strings.Repeat("x", 1023) + "\n"
	// The flushing goroutine takes at most one buffer's worth and blocks writing it; one more
	// fills the buffer; the rest must wait for stderr.
	n := 2*(maxLogBuffer/len(line)) + 8
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := 0; i < n; i++ {
			_, _ = w.Write([]byte(line))
		}
	}()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.buf) > maxLogBuffer-len(line)
	}, failsafe, time.Millisecond, "the buffer fills")
	w.mu.Lock()
	held := len(w.buf)
	w.mu.Unlock()
	assert.LessOrEqual(t, held, maxLogBuffer, "memory stays bounded")
	select {
	case <-wrote:
		t.Fatal("a caller past the bound writes itself, and waits for stderr")
	default:
	}
	close(out.release)
	<-wrote
	require.NoError(t, w.Close())
	assert.Equal(t, n*len(line), len(out.b.String()), "every line written once")
}
