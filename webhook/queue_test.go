package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
	"github.com/elicitd/elicitd/webhook"
)

// outageOutbox is a memory outbox whose store can be out: while down, every Add fails as
// a NATS store's does while its connection reconnects. Each Add is kept: its key, and the
// time on the clock.
type outageOutbox struct {
	*memory.Outbox
	clk clock.Clock

	mu    sync.Mutex
	down  func(key string) bool
	err   error // what an add fails with while down; ErrUnavailable if nil
	tried []string
	at    []time.Time
	added map[string][]byte // what each add that went through brought, by key
}

func (o *outageOutbox) Add(ctx context.Context, id string, payload []byte) error {
	o.mu.Lock()
	o.tried = append(o.tried, id)
	o.at = append(o.at, o.clk.Now())
	down := o.down != nil && o.down(id)
	failed := o.err
	o.mu.Unlock()
	if down && failed != nil {
		return failed
	}
	if down {
		return fmt.Errorf("%w: not connected to NATS (reconnecting)", store.ErrUnavailable)
	}
	o.mu.Lock()
	if o.added == nil {
		o.added = map[string][]byte{}
	}
	o.added[id] = payload
	o.mu.Unlock()
	return o.Outbox.Add(ctx, id, payload)
}

func (o *outageOutbox) setDown(f func(string) bool) { o.mu.Lock(); o.down = f; o.mu.Unlock() }

func (o *outageOutbox) adds() ([]string, []time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tried...), append([]time.Time(nil), o.at...)
}

// lockedBuffer is a log sink safe for the deliverer's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// advanceUntil moves the mock clock a step at a time until ok holds.
func advanceUntil(t *testing.T, mock *clock.Mock, step time.Duration, ok func() bool, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		if ok() {
			return true
		}
		mock.Add(step)
		return false
	}, failsafe, 2*time.Millisecond, what)
}

// An event Queue could not add (its store out) is added in the background once the store
// is back, its tool call not waiting: with two URLs, the entry the outbox took at once is
// not added again, and the other is added after pauses that double on the clock; the
// receiver's outbox holds one entry for each URL.
func TestQueueAddsOnceTheOutboxIsBack(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	d := start(t, webhook.Options{URLs: []string{"http://127.0.0.1:1/a", "http://127.0.0.1:1/b"}, Secret: webhook.NewSecret(),
		AllowPrivate: true, Outbox: ob, Clock: mock, Workers: 1})
	// An event sent while the store is up shows each URL's key: entries are added a, then b.
	require.NoError(t, d.Send(context.Background(), ending(storetest.NewID(), mock.Now())))
	keys, _ := ob.adds()
	require.Len(t, keys, 2)
	suffixA, suffixB := keys[0][strings.LastIndex(keys[0], "."):], keys[1][strings.LastIndex(keys[1], "."):]
	ob.setDown(func(key string) bool { return strings.HasSuffix(key, suffixB) })
	qid := storetest.NewID()
	id := webhook.EventID(qid)
	bKey := id + suffixB
	start := mock.Now()

	err := d.Queue(ending(qid, mock.Now()))
	require.ErrorIs(t, err, webhook.ErrQueuing)
	require.ErrorIs(t, err, store.ErrUnavailable)
	// Four failed adds of b's entry (at once, then after 250 ms, 500 ms, 1 s), and a's once.
	advanceUntil(t, mock, 50*time.Millisecond, func() bool { k, _ := ob.adds(); return len(k) >= 2+1+4 }, "b's entry is tried again")
	ob.setDown(func(string) bool { return false })
	advanceUntil(t, mock, 50*time.Millisecond, func() bool {
		for _, p := range ob.Pending() {
			if p.ID == bKey {
				return true
			}
		}
		return false
	}, "b's entry is added once the outbox is back")

	keys, at := ob.adds()
	var triedA, triedB int
	for i, k := range keys[2:] {
		switch k {
		case bKey:
			triedB++
		case id + suffixA:
			triedA++
		default:
			t.Fatalf("an add of another entry: %s", k)
		}
		if i > 0 {
			assert.False(t, at[2+i].Before(at[1+i]), "adds in the clock's order")
		}
	}
	assert.Equal(t, 1, triedA, "a's entry, added at once, is not added again")
	assert.GreaterOrEqual(t, triedB, 5)
	assert.Less(t, at[len(at)-1].Sub(start), time.Minute)
	// Two events, two URLs: four entries, none twice.
	var ids []string
	for _, p := range ob.Pending() {
		ids = append(ids, p.ID)
	}
	assert.Len(t, ids, 4)
	assert.Contains(t, ids, bKey)
	assert.Equal(t, uint64(0), d.Stats().Lost)
}

// inProcessOutbox is an outbox on mock that refuses as in process every add of question
// qid's event (id) under its entries' first keys, as a NATS stream leader that lost its
// quorum while storing them does; keys given another generation go through.
func inProcessOutbox(t *testing.T, mock *clock.Mock) (ob *outageOutbox, qid, id string) {
	ob = &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock,
		err: fmt.Errorf("%w: duplicate message id is in process", store.ErrInProcess)}
	qid = storetest.NewID()
	id = webhook.EventID(qid)
	ob.setDown(func(key string) bool { return strings.HasPrefix(key, id+".") && strings.Count(key, ".") == 1 })
	return ob, qid, id
}

// An entry whose adds the outbox keeps refusing as "in process" (a NATS stream leader that
// lost its quorum kept the id of a publish it never stored, and refuses that id until its
// dedupe window ends, an hour) is added under another key once that has lasted 30 s on the
// clock, with the same event in it: the receiver still gets one webhook-id. Kept as it was,
// the event was lost after QueueWithin (the robustness suite's long run: a push question
// completed as NATS lost its quorum, and its event never came).
func TestAnEntryStuckInProcessIsAddedUnderAnotherKey(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob, qid, id := inProcessOutbox(t, mock)
	var logs lockedBuffer
	d := start(t, webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Outbox: ob, Clock: mock, Workers: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	start := mock.Now()
	require.ErrorIs(t, d.Queue(ending(qid, mock.Now())), webhook.ErrQueuing)
	advanceUntil(t, mock, 250*time.Millisecond, func() bool { return len(ob.Pending()) == 1 }, "the event is added under another key")
	p := ob.Pending()[0]
	assert.True(t, strings.HasPrefix(p.ID, id+"."), "the new key names the event: %s", p.ID)
	var env struct {
		ID string `json:"id"`
	}
	ob.mu.Lock()
	payload := ob.added[p.ID]
	ob.mu.Unlock()
	require.NoError(t, json.Unmarshal(payload, &env))
	assert.Equal(t, id, env.ID, "the same event (webhook-id) in the new entry")
	keys, at := ob.adds()
	assert.GreaterOrEqual(t, at[len(at)-1].Sub(start), 30*time.Second, "not before the refusals have lasted 30 s")
	assert.Less(t, at[len(at)-1].Sub(start), 40*time.Second)
	assert.Equal(t, keys[0], keys[len(keys)-2], "the old key until then")
	assert.Equal(t, uint64(0), d.Stats().Lost)
	assert.Contains(t, logs.String(), "in process")
}

// An outage longer than QueueWithin loses the event: its adds stop at the bound, it is
// logged by its id (never its answers) and counted lost, and its goroutine ends.
func TestQueueGivesUpAtItsBound(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	ob.setDown(func(string) bool { return true })
	var logs lockedBuffer
	d := start(t, webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Answers: true, Outbox: ob, Clock: mock, QueueWithin: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	qid := storetest.NewID()
	start := mock.Now()
	require.ErrorIs(t, d.Queue(ending(qid, mock.Now())), webhook.ErrQueuing)
	advanceUntil(t, mock, 100*time.Millisecond, func() bool { return d.Stats().Lost == 1 }, "the event is lost past the bound")
	_, at := ob.adds()
	assert.GreaterOrEqual(t, len(at), 6) // 0, .25, .75, 1.75, 3.75, 7.75...
	assert.LessOrEqual(t, at[len(at)-1].Sub(start), 20*time.Second+time.Second)
	n := len(at)
	for range 20 {
		mock.Add(10 * time.Second)
	}
	_, at = ob.adds()
	assert.Len(t, at, n, "no add past the bound")
	assert.Contains(t, logs.String(), webhook.EventID(qid))
	assert.Contains(t, logs.String(), "webhook event lost")
	assert.NotContains(t, logs.String(), "UPS Ground")
	assert.Empty(t, ob.Pending())
}

// Stop waits for the adds going on until its context ends, then ends them: their events
// are lost, counted, and nothing is left running. After Stop, Queue adds once, as Send.
func TestStopEndsQueueTries(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	ob.setDown(func(string) bool { return true })
	d, err := webhook.New(webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(),
		AllowPrivate: true, Outbox: ob, Clock: mock})
	require.NoError(t, err)
	require.ErrorIs(t, d.Queue(ending(storetest.NewID(), mock.Now())), webhook.ErrQueuing)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, d.Stop(ctx), context.DeadlineExceeded)
	assert.Equal(t, uint64(1), d.Stats().Lost)

	err = d.Queue(ending(storetest.NewID(), mock.Now()))
	require.ErrorIs(t, err, store.ErrUnavailable)
	assert.False(t, errors.Is(err, webhook.ErrQueuing), "no tries in the background after Stop")
	assert.Equal(t, uint64(2), d.Stats().Lost)
}

// By default an event rides out a store outage of a few minutes: NATS losing its quorum
// twice in a row kept the outbox out for over a minute in the robustness suite's long run,
// and the 1-minute default lost the events of questions that ended then.
func TestQueueRidesOutAnOutageOfMinutesByDefault(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	ob.setDown(func(string) bool { return true })
	d := start(t, webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Outbox: ob, Clock: mock})
	qid := storetest.NewID()
	require.ErrorIs(t, d.Queue(ending(qid, mock.Now())), webhook.ErrQueuing)
	for range 18 { // 90 s out
		mock.Add(5 * time.Second)
	}
	ob.setDown(func(string) bool { return false })
	advanceUntil(t, mock, 100*time.Millisecond, func() bool { return len(ob.Pending()) == 1 || d.Stats().Lost > 0 }, "the event is added, or lost")
	assert.Equal(t, uint64(0), d.Stats().Lost, "not lost")
	assert.Len(t, ob.Pending(), 1, "added once the store is back")
}

// Stop gives an event still being added in the background its last chances at once: an
// outbox that is back by then takes it before Stop returns, though the next try was not due
// on the clock yet (the clock does not move here).
func TestStopAddsAQueuedEventWhileItWaits(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	ob.setDown(func(string) bool { return true })
	d, err := webhook.New(webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Outbox: ob, Clock: mock, Workers: 1})
	require.NoError(t, err)
	qid := storetest.NewID()
	require.ErrorIs(t, d.Queue(ending(qid, mock.Now())), webhook.ErrQueuing)
	ob.setDown(func(string) bool { return false }) // the store is back
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	require.NoError(t, d.Stop(ctx), "Stop returns once the event is added, not at its context's end")
	require.Len(t, ob.Pending(), 1, "the event is in the outbox, for another node to deliver")
	assert.Equal(t, uint64(0), d.Stats().Lost)
}

// An entry refused as in process when Stop begins is given another key at once: waiting
// out stuckInProcess is no longer possible, and a duplicate is only a second delivery of
// one webhook-id, which the receiver drops.
func TestStopAddsAnEntryStuckInProcessUnderAnotherKey(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob, qid, id := inProcessOutbox(t, mock)
	d, err := webhook.New(webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Outbox: ob, Clock: mock, Workers: 1})
	require.NoError(t, err)
	require.ErrorIs(t, d.Queue(ending(qid, mock.Now())), webhook.ErrQueuing)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	require.NoError(t, d.Stop(ctx))
	p := ob.Pending()
	require.Len(t, p, 1, "added under another key before Stop returned")
	assert.True(t, strings.HasPrefix(p[0].ID, id+".") && strings.Count(p[0].ID, ".") == 2, "a new key: %s", p[0].ID)
	assert.Equal(t, uint64(0), d.Stats().Lost)
}

// Events waiting in the background for the outbox to come back are added as soon as an add
// shows it is back, not each at the end of its own pause (up to 5 s on the clock): the
// robustness suite's long run lost three events of a node SIGKILLed 4.5 s after NATS got
// its quorum back, still pausing while its other events had gone in two seconds before.
// Here the clock does not move once the outbox is back.
func TestQueuedEventsAreAddedOnceAnAddShowsTheOutboxBack(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	ob := &outageOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{}), clk: mock}
	ob.setDown(func(string) bool { return true })
	d := start(t, webhook.Options{URLs: []string{"http://127.0.0.1:1/a"}, Secret: webhook.NewSecret(), AllowPrivate: true,
		Outbox: ob, Clock: mock})
	waiting := storetest.NewID()
	require.ErrorIs(t, d.Queue(ending(waiting, mock.Now())), webhook.ErrQueuing)
	// Tried at once, then after 250 ms, 500 ms, 1 s, 2 s, 4 s: the next pause is the longest.
	advanceUntil(t, mock, 250*time.Millisecond, func() bool { k, _ := ob.adds(); return len(k) >= 6 }, "the event is tried six times")

	ob.setDown(func(string) bool { return false })
	require.NoError(t, d.Queue(ending(storetest.NewID(), mock.Now())), "a new event goes in at once")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var ids []string
		for _, p := range ob.Pending() {
			ids = append(ids, p.ID)
		}
		assert.Len(c, ids, 2)
	}, failsafe, 5*time.Millisecond, "the waiting event is added without its pause running out")
	assert.Equal(t, uint64(0), d.Stats().Lost)
}
