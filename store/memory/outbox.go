package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/store"
)

// OutboxOptions configure an Outbox.
type OutboxOptions struct {
	// Clock is what delays, AckWait, MaxAge and the dedupe window run on; the real clock if
	// nil.
	Clock clock.Clock
	// OutboxOptions bound the outbox; zero fields take store's defaults.
	store.OutboxOptions
}

// Outbox is the in-process store.Outbox: a queue in this process's memory, shared by
// every goroutine of the process that holds it (several deliverers in a test), and by
// nothing else. Nothing survives the process.
//
// Events are handed out oldest first among those ready. Time runs on the injected clock:
// a nakked event is ready again exactly when its delay has passed on it, a handed-out
// event exactly AckWait after it was handed out, and an event goes exactly MaxAge after
// it was added. Pending shows the queue, for tests.
type Outbox struct {
	clk clock.Clock
	o   store.OutboxOptions

	mu      sync.Mutex
	queue   []*queued            // oldest first
	seen    map[string]time.Time // ids added within the dedupe window, and when
	order   []string             // ids of seen, oldest first, to forget them in order
	bytes   int64                // ids and payloads of queue
	changed chan struct{}        // closed (and replaced) when an event may have become ready
}

type queued struct {
	id      string
	payload []byte
	added   time.Time
	ready   time.Time // when it may be handed out, when not held
	held    bool      // handed out, not yet settled
	until   time.Time // when held: when AckWait lapses
	attempt int       // times handed out
}

var _ store.Outbox = (*Outbox)(nil)

// NewOutbox returns an empty Outbox, or ErrInvalid for options it cannot have (see
// store.OutboxOptions.Check).
func NewOutbox(o OutboxOptions) (*Outbox, error) {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	so := o.OutboxOptions.WithDefaults()
	if err := so.Check(); err != nil {
		return nil, err
	}
	return &Outbox{clk: o.Clock, o: so, seen: map[string]time.Time{}, changed: make(chan struct{})}, nil
}

// Add queues payload as event id, unless id was added within the dedupe window.
func (b *Outbox) Add(ctx context.Context, id string, payload []byte) error {
	if err := store.CheckOutboxEvent(b.o, id, payload); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	b.sweep(now)
	if _, dup := b.seen[id]; dup {
		return nil
	}
	size := int64(len(id) + len(payload))
	if b.bytes+size > b.o.MaxBytes {
		return fmt.Errorf("%w: outbox %s holds %d bytes of %d; event %s needs %d", store.ErrFull, b.o.Name, b.bytes, b.o.MaxBytes, id, size)
	}
	b.seen[id] = now
	b.order = append(b.order, id)
	b.queue = append(b.queue, &queued{id: id, payload: bytes.Clone(payload), added: now, ready: now})
	b.bytes += size
	b.broadcast()
	return nil
}

// Next waits for the oldest ready event, on the outbox's clock, and hands it out.
func (b *Outbox) Next(ctx context.Context) (store.Delivery, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b.mu.Lock()
		now := b.clk.Now()
		b.sweep(now)
		if q := b.ready(now); q != nil {
			q.held, q.until = true, now.Add(b.o.AckWait)
			q.attempt++
			d := &delivery{b: b, q: q, attempt: q.attempt, payload: bytes.Clone(q.payload)}
			b.mu.Unlock()
			return d, nil
		}
		wake, ok := b.nextWake()
		changed := b.changed
		b.mu.Unlock()

		var fired <-chan struct{}
		stop := func() {}
		if ok {
			fired, stop = wakeAt(b.clk, wake)
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-fired:
		}
		stop()
	}
}

// ready returns the oldest event that may be handed out at now, or nil.
func (b *Outbox) ready(now time.Time) *queued {
	for _, q := range b.queue {
		if q.held && !q.until.After(now) || !q.held && !q.ready.After(now) {
			return q
		}
	}
	return nil
}

// nextWake is the soonest time an event becomes ready, or expires; false if the queue is
// empty.
func (b *Outbox) nextWake() (time.Time, bool) {
	var at time.Time
	for _, q := range b.queue {
		t := q.ready
		if q.held {
			t = q.until
		}
		t = minTime(t, q.added.Add(b.o.MaxAge))
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// wakeAt returns a channel that receives once clk reaches at, and a stop for it. A mock clock
// moved on while the wake is set would make it late, so it is set again until the clock
// held still; a real clock never holds still, but its nanoseconds of drift are no
// lateness, so a few tries suffice.
//
// It is a function timer (AfterFunc) that signals without blocking, not a channel timer:
// a mock clock advanced by another goroutine at the same moment can fire one timer twice,
// and a channel timer's second send then blocks with the mock's lock held, which hangs
// every user of that clock.
func wakeAt(clk clock.Clock, at time.Time) (<-chan struct{}, func()) {
	fired := make(chan struct{}, 1)
	signal := func() {
		select {
		case fired <- struct{}{}:
		default:
		}
	}
	for try := 0; ; try++ {
		before := clk.Now()
		t := clk.AfterFunc(at.Sub(before), signal)
		if try == 2 || clk.Now().Equal(before) {
			return fired, func() { t.Stop() }
		}
		t.Stop()
	}
}

// sweep drops the events older than MaxAge and forgets the ids older than the dedupe
// window.
func (b *Outbox) sweep(now time.Time) {
	b.queue = slices.DeleteFunc(b.queue, func(q *queued) bool {
		if now.Before(q.added.Add(b.o.MaxAge)) {
			return false
		}
		b.bytes -= int64(len(q.id) + len(q.payload))
		return true
	})
	i := 0
	for ; i < len(b.order); i++ {
		id := b.order[i]
		if now.Before(b.seen[id].Add(b.o.DedupeWindow)) {
			break
		}
		delete(b.seen, id)
	}
	b.order = b.order[i:]
	if len(b.order) == 0 {
		b.order = nil
	}
}

// broadcast wakes every waiting Next. b.mu must be held.
func (b *Outbox) broadcast() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// remove drops q from the queue, if it is still there. b.mu must be held.
func (b *Outbox) remove(q *queued) {
	if i := slices.Index(b.queue, q); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
		b.bytes -= int64(len(q.id) + len(q.payload))
	}
}

// Pending is one queued event, as Outbox.Pending shows it.
type Pending struct {
	ID      string
	Attempt int       // times handed out so far
	Held    bool      // handed out and not settled
	Ready   time.Time // when it may be handed out (again): its nak delay's end, or AckWait's when Held
}

// Len returns how many events are queued, those past MaxAge dropped first.
func (b *Outbox) Len(context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(b.clk.Now())
	return len(b.queue), nil
}

// Pending returns the queued events, oldest first, those past MaxAge dropped first.
func (b *Outbox) Pending() []Pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(b.clk.Now())
	out := make([]Pending, 0, len(b.queue))
	for _, q := range b.queue {
		p := Pending{ID: q.id, Attempt: q.attempt, Held: q.held, Ready: q.ready}
		if q.held {
			p.Ready = q.until
		}
		out = append(out, p)
	}
	return out
}

// delivery is one hand-out of q: attempt is the hand-out it is, so that a late settle of
// an event handed out again since changes nothing.
type delivery struct {
	b       *Outbox
	q       *queued
	attempt int
	payload []byte

	mu      sync.Mutex
	settled bool
}

func (d *delivery) ID() string      { return d.q.id }
func (d *delivery) Payload() []byte { return d.payload }
func (d *delivery) Attempt() int    { return d.attempt }

// settle marks d settled, once.
func (d *delivery) settle(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return fmt.Errorf("%w: event %s", store.ErrSettled, d.q.id)
	}
	d.settled = true
	return nil
}

// Ack removes the event from the queue, even when its AckWait has lapsed meanwhile: it
// was delivered.
func (d *delivery) Ack(ctx context.Context) error {
	if err := d.settle(ctx); err != nil {
		return err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	d.b.remove(d.q)
	return nil
}

// Nak makes the event ready again delay from now, unless it was handed out again since
// (its AckWait lapsed): that later hand-out holds it now.
func (d *delivery) Nak(ctx context.Context, delay time.Duration) error {
	if err := d.settle(ctx); err != nil {
		return err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	if d.q.attempt != d.attempt || !d.q.held {
		return nil
	}
	d.q.held = false
	d.q.ready = d.b.clk.Now().Add(max(delay, 0))
	d.b.broadcast()
	return nil
}
