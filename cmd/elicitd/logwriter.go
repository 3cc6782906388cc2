package main

import (
	"io"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// logWriter is stderr for the logs: lines are gathered and written together, at most once
// every interval, by a goroutine of its own, instead of one write (a system call) per line
// on the goroutine that logs. A busy server logs a line per question; written one by one,
// those writes were a tenth of the CPU a question costs. The first line after a quiet spell
// is written at once; a line waits at most interval. Close writes what is left.
//
// When more than maxLogBuffer bytes wait (stderr is not being read), a line is written by
// the goroutine that logs it, as without the buffer: memory stays bounded. Order is kept.
type logWriter struct {
	out      io.Writer
	clk      clock.Clock
	interval time.Duration

	writing sync.Mutex // held while writing to out: batches go out in the order they were taken
	mu      sync.Mutex // guards buf and closed
	buf     []byte
	closed  bool

	kick chan struct{} // a line is waiting
	stop chan struct{}
	done chan struct{} // the flushing goroutine has ended
}

// maxLogBuffer is the most the logs may hold before lines are written by their callers.
const maxLogBuffer = 1 << 20

// logInterval is how long a log line may wait to be written.
const logInterval = 10 * time.Millisecond

func newLogWriter(out io.Writer, clk clock.Clock, interval time.Duration) *logWriter {
	w := &logWriter{out: out, clk: clk, interval: interval, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.closed && len(w.buf)+len(p) <= maxLogBuffer {
		w.buf = append(w.buf, p...)
		w.mu.Unlock()
		select {
		case w.kick <- struct{}{}:
		default:
		}
		return len(p), nil
	}
	w.mu.Unlock()
	// Closed, or far behind: written here, after what waits.
	w.writing.Lock()
	defer w.writing.Unlock()
	w.flushLocked()
	return w.out.Write(p)
}

// run writes what waits, then lets lines gather for an interval, until Close.
func (w *logWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.kick:
		case <-w.stop:
			return
		}
		w.flush()
		// A function timer that signals without blocking: a mock clock can fire a timer
		// twice when two goroutines move it, and a channel timer's second send would hang.
		due := make(chan struct{}, 1)
		t := w.clk.AfterFunc(w.interval, func() {
			select {
			case due <- struct{}{}:
			default:
			}
		})
		select {
		case <-due:
		case <-w.stop:
			t.Stop()
			return
		}
	}
}

func (w *logWriter) flush() {
	w.writing.Lock()
	defer w.writing.Unlock()
	w.flushLocked()
}

// flushLocked writes what waits; w.writing is held.
func (w *logWriter) flushLocked() {
	w.mu.Lock()
	b := w.buf
	w.buf = nil
	w.mu.Unlock()
	if len(b) > 0 {
		_, _ = w.out.Write(b) // stderr gone: nothing better to do with a log line
	}
}

// Close writes what waits and ends the flushing goroutine; later lines are written at once.
func (w *logWriter) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.stop)
		<-w.done
	}
	w.flush()
	return nil
}
