// Package timers keeps the deadlines of many items on one clock timer: a heap of deadlines,
// the earliest of which the clock's timer is armed for. A hibernating question (package
// ask) is a few hundred bytes and a deadline; a runtime timer of its own, behind the
// injected clock's wrapper, cost it about 210 bytes more, a Timer here about 40 (its entry
// and its place in the heap).
//
// When deadlines pass, the Set calls its fire function with each item whose deadline has
// passed, each on a goroutine of its own, as time.AfterFunc would have.
package timers

import (
	"container/heap"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Set holds Timers on one clock. Its zero value is not usable: make one with New.
type Set[T any] struct {
	clk  clock.Clock
	fire func(T)

	mu     sync.Mutex
	h      timerHeap[T]
	timer  *clock.Timer // armed for armed, while the heap has timers
	armed  int64        // unix nanoseconds
	gen    uint64       // counts the clock timers armed: the one that fires knows if it is timer
	closed bool
}

// Timer is one item's deadline in a Set.
type Timer[T any] struct {
	set  *Set[T]
	item T
	at   int64 // unix nanoseconds
	idx  int   // in set.h; -1 when stopped or fired
}

// New returns a Set on clk that calls fire(item) once the deadline of item's Timer passes.
func New[T any](clk clock.Clock, fire func(T)) *Set[T] {
	return &Set[T]{clk: clk, fire: fire}
}

// Start returns a Timer that calls the Set's fire with item at at (at once if at has
// passed). After Close it returns a stopped Timer.
func (s *Set[T]) Start(item T, at time.Time) *Timer[T] {
	t := &Timer[T]{set: s, item: item, at: at.UnixNano(), idx: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		heap.Push(&s.h, t)
		s.rearm()
	}
	return t
}

// Reset moves t's deadline to at, whether it was pending, stopped or fired: it fires (again)
// at at. It reports whether t was pending.
func (t *Timer[T]) Reset(at time.Time) bool {
	s := t.set
	s.mu.Lock()
	defer s.mu.Unlock()
	pending := t.idx >= 0
	t.at = at.UnixNano()
	switch {
	case s.closed:
	case pending:
		heap.Fix(&s.h, t.idx)
	default:
		heap.Push(&s.h, t)
	}
	s.rearm()
	return pending
}

// Stop keeps t from firing. It reports whether t was pending (had neither fired nor been
// stopped).
func (t *Timer[T]) Stop() bool {
	s := t.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.idx < 0 {
		return false
	}
	heap.Remove(&s.h, t.idx)
	s.rearm()
	return true
}

// Len is the number of pending Timers.
func (s *Set[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

// Close stops every Timer and the clock's timer; Timers started or reset after it never
// fire.
func (s *Set[T]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.h {
		t.idx = -1
	}
	s.h = nil
	s.rearm()
}

// rearm has the clock's timer armed for the earliest deadline, or stopped if there is
// none. s.mu is held.
func (s *Set[T]) rearm() {
	if len(s.h) == 0 {
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		return
	}
	next := s.h[0].at
	if s.timer != nil && s.armed == next {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armed = next
	s.gen++
	gen := s.gen
	s.timer = s.clk.AfterFunc(time.Duration(next-s.clk.Now().UnixNano()), func() { s.expire(gen) })
}

// expire fires every Timer whose deadline has passed, and arms the clock's timer for the
// next; gen is the clock timer that fired (one stopped as it fired may come late).
func (s *Set[T]) expire(gen uint64) {
	now := s.clk.Now().UnixNano()
	var due []T
	s.mu.Lock()
	for len(s.h) > 0 && s.h[0].at <= now {
		t := heap.Pop(&s.h).(*Timer[T])
		due = append(due, t.item)
	}
	if gen == s.gen {
		s.timer = nil // it has fired: rearm arms a new one
	}
	s.rearm()
	s.mu.Unlock()
	for _, item := range due {
		go s.fire(item)
	}
}

// timerHeap orders Timers by deadline (container/heap).
type timerHeap[T any] []*Timer[T]

func (h timerHeap[T]) Len() int           { return len(h) }
func (h timerHeap[T]) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *timerHeap[T]) Push(x any) {
	t := x.(*Timer[T])
	t.idx = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap[T]) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.idx = -1
	*h = old[:len(old)-1]
	return t
}
