package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
)

// OutboxHarness is one fresh outbox for one test.
type OutboxHarness struct {
	// Open returns a handle on the test's outbox as one node sees it. Every handle shares
	// one queue; a store that has nodes returns each call's handle through another one
	// (another connection, another server of a cluster) where it can.
	Open func() store.Outbox
	// Clock is the outbox's clock when the outbox owns its time; nil when its delays run
	// on real time (JetStream's).
	Clock *clock.Mock
}

// OutboxFactory returns a fresh, empty outbox with these options (zero fields: store's
// defaults, but for Name, which the factory chooses), released when t ends.
type OutboxFactory func(t *testing.T, o store.OutboxOptions) OutboxHarness

// RunOutbox runs the outbox contract (see store.Outbox) against outboxes from newOutbox,
// each test in parallel with an outbox of its own.
func RunOutbox(t *testing.T, newOutbox OutboxFactory) {
	small := store.OutboxOptions{MaxBytes: 1 << 20}
	tests := []struct {
		name string
		o    store.OutboxOptions
		run  func(*outboxEnv)
	}{
		{"AddNextAck", small, testOutboxAddNextAck},
		{"AddIsIdempotentByID", small, testOutboxIdempotent},
		{"NakHandsBackAfterDelay", small, testOutboxNakDelay},
		{"NakWithoutDelay", small, testOutboxNakNow},
		{"AckWaitLapses", store.OutboxOptions{MaxBytes: 1 << 20, AckWait: 2 * time.Second}, testOutboxAckWait},
		{"SettleOnce", small, testOutboxSettleOnce},
		{"OneHolderAcrossNodes", small, testOutboxOneHolder},
		{"Invalid", store.OutboxOptions{MaxBytes: 1 << 20, MaxEventBytes: 1 << 10}, testOutboxInvalid},
		{"FullRefusesNeverEvicts", store.OutboxOptions{MaxBytes: 16 << 10, MaxEventBytes: 2 << 10}, testOutboxFull},
		// The real-time ages and windows leave room for a loaded machine: the steps a test
		// takes within them take a few calls, and a call can take a while.
		{"DroppedAfterMaxAge", store.OutboxOptions{MaxBytes: 1 << 20, MaxAge: 5 * time.Second, DedupeWindow: time.Second}, testOutboxMaxAge},
		{"DedupeWindowEnds", store.OutboxOptions{MaxBytes: 1 << 20, DedupeWindow: 3 * time.Second}, testOutboxDedupeWindow},
		{"NextEndsWithItsContext", small, testOutboxNextContext},
		{"NextCutShortLosesNothing", small, testOutboxNextCutShort},
		{"ManyWaitingRetriesBlockNothing", store.OutboxOptions{MaxBytes: 8 << 20}, testOutboxManyWaiting},
		{"LenCountsUntilAck", small, testOutboxLen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newOutbox(t, tc.o)
			tc.run(&outboxEnv{timed: timed{T: t, clk: h.Clock}, h: h, o: tc.o.WithDefaults()})
		})
	}
}

// outboxEnv is one test's outbox and its time.
type outboxEnv struct {
	timed
	h OutboxHarness
	o store.OutboxOptions
}

// add adds event id with a payload that names it.
func (e *outboxEnv) add(b store.Outbox, id string) {
	e.Helper()
	require.NoError(e, b.Add(e.ctx(), id, payloadOf(id)))
}

func payloadOf(id string) []byte { return []byte(`{"event":"` + id + `"}`) }

// take requires b to hand out an event, at once: within callBound (real time), for a
// loaded machine.
func (e *outboxEnv) take(b store.Outbox) store.Delivery {
	e.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callBound)
	defer cancel()
	d, err := b.Next(ctx)
	require.NoError(e, err, "an event is handed out")
	return d
}

// takeBy requires b to hand out an event once the time is at: with a mock clock, at once
// at at; in real time, by at plus realSlack.
func (e *outboxEnv) takeBy(b store.Outbox, at time.Time) store.Delivery {
	e.Helper()
	e.passTo(at)
	wait := callBound
	if e.h.Clock == nil {
		wait = time.Until(at) + realSlack
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	d, err := b.Next(ctx)
	require.NoError(e, err, "an event is handed out by %s", at.Format(time.RFC3339Nano))
	return d
}

// handedOutFrom requires b to hand out nothing before at (nothingUntil), and an event by
// at (takeBy), which it returns.
func (e *outboxEnv) handedOutFrom(b store.Outbox, at time.Time) store.Delivery {
	e.Helper()
	if d := e.nothingUntil(b, at); d != nil {
		return d
	}
	return e.takeBy(b, at)
}

// nothingUntil requires b to hand out nothing before at: with a mock clock, at the last
// nanosecond before at; in real time, until a tenth of a second before at. In real time a
// Next that returns an event at or after at (its wait ran late on a loaded machine) has
// not seen it handed out early: that event is returned, for the caller to go on with.
func (e *outboxEnv) nothingUntil(b store.Outbox, at time.Time) store.Delivery {
	e.Helper()
	var ctx context.Context
	var cancel context.CancelFunc
	if e.h.Clock != nil {
		e.passTo(at.Add(-time.Nanosecond))
		ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	} else {
		ctx, cancel = context.WithDeadline(context.Background(), at.Add(-100*time.Millisecond))
	}
	defer cancel()
	d, err := b.Next(ctx)
	if err == nil {
		if now := time.Now(); e.h.Clock == nil && !now.Before(at) {
			e.Logf("event %s (attempt %d) handed out at %s, by a Next that was to end before %s", d.ID(), d.Attempt(),
				now.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			return d
		}
		e.Fatalf("event %s (attempt %d) was handed out before %s", d.ID(), d.Attempt(), at.Format(time.RFC3339Nano))
	}
	require.ErrorIs(e, err, context.DeadlineExceeded)
	return nil
}

// none requires b to hand out nothing now.
func (e *outboxEnv) none(b store.Outbox) {
	e.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	d, err := b.Next(ctx)
	if err == nil {
		e.Fatalf("event %s (attempt %d) was handed out; want none", d.ID(), d.Attempt())
	}
	require.ErrorIs(e, err, context.DeadlineExceeded)
}

// Events are handed out oldest first, each once, with its payload and attempt 1; an acked
// event is gone.
func testOutboxAddNextAck(e *outboxEnv) {
	b := e.h.Open()
	ids := []string{"evt_" + NewID() + "_ended", "evt_" + NewID() + "_ended.hook-1", "evt_" + NewID()}
	for _, id := range ids {
		e.add(b, id)
	}
	for _, id := range ids {
		d := e.take(b)
		assert.Equal(e, id, d.ID())
		assert.Equal(e, string(payloadOf(id)), string(d.Payload()))
		assert.Equal(e, 1, d.Attempt())
		require.NoError(e, d.Ack(e.ctx()))
	}
	e.none(b)
	e.none(e.h.Open()) // on another node too
}

// Adding an id twice is one event, the first payload standing, even once it was delivered
// (within the dedupe window), and through another node.
func testOutboxIdempotent(e *outboxEnv) {
	b, other := e.h.Open(), e.h.Open()
	id := "evt_" + NewID()
	require.NoError(e, b.Add(e.ctx(), id, []byte(`first`)))
	require.NoError(e, b.Add(e.ctx(), id, []byte(`second`)))
	require.NoError(e, other.Add(e.ctx(), id, []byte(`third`)))
	d := e.take(b)
	assert.Equal(e, id, d.ID())
	assert.Equal(e, "first", string(d.Payload()))
	e.none(other)
	require.NoError(e, d.Ack(e.ctx()))
	require.NoError(e, other.Add(e.ctx(), id, []byte(`again`)), "a delivered id, added again: not an error")
	e.none(b)
}

// A nakked event is handed out again once its delay has passed, never before, with the
// next attempt number, to any node.
func testOutboxNakDelay(e *outboxEnv) {
	b, other := e.h.Open(), e.h.Open()
	id := "evt_" + NewID()
	e.add(b, id)
	d := e.take(b)
	require.Equal(e, 1, d.Attempt())
	delay := 2 * time.Second
	at := e.now().Add(delay)
	require.NoError(e, d.Nak(e.ctx(), delay))
	again := e.handedOutFrom(other, at)
	assert.Equal(e, id, again.ID())
	assert.Equal(e, string(payloadOf(id)), string(again.Payload()))
	assert.Equal(e, 2, again.Attempt())
	require.NoError(e, again.Ack(e.ctx()))
	e.none(b)
}

// waitingRetries is more entries waiting out a retry's delay than JetStream's default cap on
// a consumer's unacknowledged messages (1000).
const waitingRetries = 1100

// Entries waiting out a long retry delay (a receiver down for hours) hold up no other: an
// event added after many of them is handed out at once.
func testOutboxManyWaiting(e *outboxEnv) {
	b := e.h.Open()
	for i := range waitingRetries {
		id := fmt.Sprintf("evt_wait_%d", i)
		e.add(b, id)
		d := e.take(b)
		require.NoError(e, d.Nak(e.ctx(), time.Hour), "nak %d", i)
	}
	fresh := "evt_" + NewID()
	e.add(b, fresh)
	d := e.take(b)
	assert.Equal(e, fresh, d.ID(), "the new event is handed out while %d wait", waitingRetries)
	require.NoError(e, d.Ack(e.ctx()))
}

// Nak without a delay hands the event out again at once, before events added after it.
func testOutboxNakNow(e *outboxEnv) {
	b := e.h.Open()
	first, second := "evt_"+NewID(), "evt_"+NewID()
	e.add(b, first)
	d := e.take(b)
	require.NoError(e, d.Nak(e.ctx(), 0))
	e.add(b, second)
	var got []string
	for range 2 {
		d := e.take(b)
		got = append(got, fmt.Sprintf("%s#%d", d.ID(), d.Attempt()))
		require.NoError(e, d.Ack(e.ctx()))
	}
	assert.Equal(e, []string{first + "#2", second + "#1"}, got)
}

// An event neither acked nor nakked (its deliverer died) is nobody else's until its
// AckWait lapses, then another node gets it, attempt 2.
func testOutboxAckWait(e *outboxEnv) {
	b, other := e.h.Open(), e.h.Open()
	id := "evt_" + NewID()
	e.add(b, id)
	before := e.now()
	lost := e.take(b)
	require.Equal(e, 1, lost.Attempt())
	at := before.Add(e.o.AckWait)
	d := e.handedOutFrom(other, at)
	assert.Equal(e, id, d.ID())
	assert.Equal(e, 2, d.Attempt())
	require.NoError(e, d.Nak(e.ctx(), 0))
	d = e.take(other)
	assert.Equal(e, 3, d.Attempt())
	require.NoError(e, d.Ack(e.ctx()))
	e.none(b)
}

// A delivery is settled once.
func testOutboxSettleOnce(e *outboxEnv) {
	b := e.h.Open()
	e.add(b, "evt_"+NewID())
	d := e.take(b)
	require.NoError(e, d.Ack(e.ctx()))
	require.ErrorIs(e, d.Ack(e.ctx()), store.ErrSettled)
	require.ErrorIs(e, d.Nak(e.ctx(), 0), store.ErrSettled)
	require.ErrorIs(e, d.Nak(e.ctx(), 0), store.ErrInvalid)

	e.add(b, "evt_"+NewID())
	d = e.take(b)
	require.NoError(e, d.Nak(e.ctx(), 0))
	require.ErrorIs(e, d.Ack(e.ctx()), store.ErrSettled)
	require.NoError(e, e.take(b).Ack(e.ctx()))
}

// Deliverers on several nodes, several each, share the events: every event is acked once,
// and no event is ever held by two of them at the same moment, nakked ones included.
func testOutboxOneHolder(e *outboxEnv) {
	const events, nodes, perNode = 60, 3, 2
	ids := make(map[string]bool, events)
	adder := e.h.Open()
	for range events {
		id := "evt_" + NewID()
		ids[id] = true
		e.add(adder, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		holding  = map[string]string{} // event id → who holds it now
		acked    = map[string]int{}
		attempts = map[string]int{}
		failures []string
		wg       sync.WaitGroup
	)
	done := make(chan struct{})
	for n := range nodes {
		b := e.h.Open()
		for w := range perNode {
			who := fmt.Sprintf("node%d/worker%d", n+1, w+1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					d, err := b.Next(ctx)
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							failures = append(failures, fmt.Sprintf("%s: %v", who, err))
							mu.Unlock()
						}
						return
					}
					id := d.ID()
					mu.Lock()
					if h, ok := holding[id]; ok {
						failures = append(failures, fmt.Sprintf("%s got %s while %s held it", who, id, h))
					}
					holding[id] = who
					attempts[id] = max(attempts[id], d.Attempt())
					mu.Unlock()
					runtime.Gosched() // the work, during which nobody else may hold id
					// About a third of the events are nakked on their first attempt: a retry.
					nak := d.Attempt() == 1 && strings.ContainsAny(id[len(id)-1:], "ABCDEFGHIJ")
					mu.Lock()
					delete(holding, id)
					mu.Unlock()
					if nak {
						if err := d.Nak(ctx, 0); err != nil && ctx.Err() == nil {
							mu.Lock()
							failures = append(failures, fmt.Sprintf("%s: nak %s: %v", who, id, err))
							mu.Unlock()
						}
						continue
					}
					err = d.Ack(ctx)
					mu.Lock()
					if err != nil && ctx.Err() == nil {
						failures = append(failures, fmt.Sprintf("%s: ack %s: %v", who, id, err))
					}
					acked[id]++
					if len(acked) == events {
						select {
						case <-done:
						default:
							close(done)
						}
					}
					mu.Unlock()
				}
			}()
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	require.Empty(e, failures)
	require.Len(e, acked, events, "every event delivered")
	nakked := 0
	for id, n := range acked {
		require.True(e, ids[id], "an event that was added: %s", id)
		require.Equal(e, 1, n, "acked once: %s", id)
		if attempts[id] > 1 {
			nakked++
		}
	}
	require.Positive(e, nakked, "some events were nakked and handed out again")
	e.none(adder)
}

// Ids and payloads an outbox cannot take are refused, and nothing is queued.
func testOutboxInvalid(e *outboxEnv) {
	b := e.h.Open()
	for _, id := range []string{"", "a b", "a*", "a>", "a/b", strings.Repeat("x", 256)} {
		require.ErrorIs(e, b.Add(e.ctx(), id, []byte("x")), store.ErrInvalid, "id %q", id)
	}
	err := b.Add(e.ctx(), "evt_"+NewID(), make([]byte, e.o.MaxEventBytes+1))
	require.ErrorIs(e, err, store.ErrTooLarge)
	require.NoError(e, b.Add(e.ctx(), "evt_"+NewID(), make([]byte, e.o.MaxEventBytes)), "exactly the limit")
	e.take(b)
	e.none(b)
}

// A full outbox refuses new events and keeps every event it holds; an acked event makes
// room again.
func testOutboxFull(e *outboxEnv) {
	b := e.h.Open()
	payload := make([]byte, 1<<10)
	var added []string
	for {
		id := "evt_" + NewID()
		err := b.Add(e.ctx(), id, payload)
		if err != nil {
			require.ErrorIs(e, err, store.ErrFull)
			break
		}
		added = append(added, id)
		require.Less(e, len(added), 100, "the outbox never fills")
	}
	require.NotEmpty(e, added)
	first := e.take(b)
	require.Equal(e, added[0], first.ID(), "nothing was evicted")
	require.NoError(e, first.Ack(e.ctx()))
	// An acked event is deleted; a replicated store may take a moment to.
	room := func() bool { return b.Add(e.ctx(), "evt_"+NewID(), payload) == nil }
	if e.h.Clock != nil {
		require.True(e, room(), "an acked event made room")
	} else {
		require.Eventually(e, room, realSlack, 20*time.Millisecond, "an acked event made room")
	}
	for _, id := range added[1:] {
		d := e.take(b)
		require.Equal(e, id, d.ID())
		require.NoError(e, d.Ack(e.ctx()))
	}
}

// An event is dropped MaxAge after it was added, delivered or not, never before.
func testOutboxMaxAge(e *outboxEnv) {
	b := e.h.Open()
	id := "evt_" + NewID()
	added := e.now()
	e.add(b, id)
	gone := added.Add(e.o.MaxAge)
	d := e.take(b)
	require.NoError(e, d.Nak(e.ctx(), 0))
	// Still there until MaxAge: each look hands it back at once.
	if e.h.Clock != nil {
		e.passTo(gone.Add(-time.Nanosecond))
	}
	d = e.take(b)
	require.Equal(e, id, d.ID())
	require.NoError(e, d.Nak(e.ctx(), 0))
	if e.h.Clock != nil {
		e.passTo(gone)
		e.none(b)
		return
	}
	require.Eventually(e, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		d, err := b.Next(ctx)
		if err != nil {
			return errors.Is(err, context.DeadlineExceeded)
		}
		_ = d.Nak(ctx, 0) // still there: hand it back
		return false
	}, time.Until(gone)+realSlack, 50*time.Millisecond, "the event is dropped after MaxAge")
}

// Once the dedupe window has passed, the same id is a new event.
func testOutboxDedupeWindow(e *outboxEnv) {
	b := e.h.Open()
	id := "evt_" + NewID()
	start := e.now()
	e.add(b, id)
	require.NoError(e, e.take(b).Ack(e.ctx()))
	e.add(b, id)
	e.none(b)
	if e.h.Clock != nil {
		e.passTo(start.Add(e.o.DedupeWindow))
		e.add(b, id)
		d := e.take(b)
		require.Equal(e, id, d.ID())
		require.Equal(e, 1, d.Attempt(), "a new event")
		return
	}
	var again store.Delivery
	require.Eventually(e, func() bool {
		if err := b.Add(e.ctx(), id, payloadOf(id)); err != nil {
			e.unsure(err, "add again")
			return false
		}
		// Within the window the add was a duplicate, and there is nothing to take: a look
		// of a second, long enough for a loaded machine to hand out an event that is there.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		d, err := b.Next(ctx)
		if err != nil {
			return false
		}
		again = d
		return true
	}, e.o.DedupeWindow+realSlack, 100*time.Millisecond, "the id is new again after the dedupe window")
	require.Equal(e, id, again.ID())
	require.Equal(e, 1, again.Attempt(), "a new event")
}

// Next returns its context's error when the context ends while it waits, or has ended.
func testOutboxNextContext(e *outboxEnv) {
	b := e.h.Open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Next(ctx)
	require.ErrorIs(e, err, context.Canceled)
	e.add(b, "evt_"+NewID())
	_, err = b.Next(ctx)
	require.ErrorIs(e, err, context.Canceled, "an ended context, even with an event ready")
	e.take(b) // the event was not handed out to the ended context
	ctx, cancel = context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := b.Next(ctx)
		errs <- err
	}()
	cancel()
	require.ErrorIs(e, <-errs, context.Canceled)
}

// testOutboxLen: an outbox that tells its length (store.OutboxLen, the webhook backlog the
// metrics show) counts an event from its Add until its Ack, held or waiting meanwhile.
func testOutboxLen(e *outboxEnv) {
	b := e.h.Open()
	ol, ok := b.(store.OutboxLen)
	if !ok {
		e.Skip("this outbox does not tell its length")
	}
	length := func(t require.TestingT) int {
		n, err := ol.Len(e.ctx())
		require.NoError(t, err)
		return n
	}
	assert.Equal(e, 0, length(e))
	e.add(b, "len-1")
	e.add(b, "len-2")
	e.add(b, "len-1") // the same event again: one entry
	assert.Equal(e, 2, length(e))
	d := e.take(b)
	assert.Equal(e, 2, length(e), "an event handed out and not acknowledged is still there")
	require.NoError(e, d.Ack(e.ctx()))
	// A replicated stream drops the acknowledged entry once its servers apply the ack,
	// a moment after the Ack returns: the count comes down within realSlack.
	assert.EventuallyWithT(e, func(c *assert.CollectT) {
		assert.Equal(c, 1, length(c))
	}, realSlack, 10*time.Millisecond, "an acknowledged event is gone")
}

// A Next whose context ends just as an event comes (a node stopping its deliverer while
// another question's end is added) either hands the event out or leaves it for the next
// Next at once: never held until the AckWait lapses (a minute), by a pull nobody reads.
func testOutboxNextCutShort(e *outboxEnv) {
	b, other := e.h.Open(), e.h.Open()
	const rounds = 200
	left := map[string]bool{}
	for i := range rounds {
		id := fmt.Sprintf("evt_%s_%d", NewID(), i)
		left[id] = true
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan store.Delivery, 1)
		go func() {
			d, _ := b.Next(ctx)
			got <- d
		}()
		// The Next's pull waits; its context ends from just before the event is added to
		// just after (2 ms), a little later each round: somewhere in there, a pull left
		// behind would take the event with nobody to read it.
		time.Sleep(20 * time.Millisecond)
		go func() {
			time.Sleep(time.Duration(i%20) * 100 * time.Microsecond)
			cancel()
		}()
		e.add(other, id)
		if d := <-got; d != nil {
			require.NoError(e, d.Ack(e.ctx()))
			delete(left, d.ID())
		}
	}
	// Sooner than the AckWait: every event not handed out is there for the taking. An event
	// held by a pull nobody reads comes back only once the AckWait lapses (real time), or
	// never (a mock clock, which stands still here); half the AckWait tells the two apart,
	// however long a loaded machine takes to hand out the others.
	deadline := time.Now().Add(min(e.o.AckWait/2, realSlack))
	for len(left) > 0 && time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		d, err := other.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		require.NoError(e, d.Ack(e.ctx()))
		delete(left, d.ID())
	}
	assert.Empty(e, left, "events held by a Next cut short, until the AckWait (%v)", e.o.AckWait)
}
