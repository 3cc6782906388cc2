package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
	"github.com/elicitd/elicitd/webhook"
)

// Each event sent is delivered once, verified by the published snippet, with the
// webhook-id its event's id, and the body the event.
func TestEachEventDeliveredOnce(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, mock)
	d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Answers: true,
		Outbox: memOutbox(t, mock, store.OutboxOptions{}), Clock: mock})
	ctx := context.Background()
	const n = 25
	var ids []string
	for range n {
		qid := storetest.NewID()
		ids = append(ids, webhook.EventID(qid))
		require.NoError(t, d.Send(ctx, ending(qid, mock.Now())))
	}
	for range n {
		rcv.next(t)
	}
	got := rcv.acceptedCounts()
	require.Len(t, got, n)
	for _, id := range ids {
		require.Equal(t, 1, got[id], id)
		ev := rcv.event(id)
		assert.Equal(t, id, ev["id"])
		assert.Equal(t, "elicitation.ended", ev["type"])
		assert.Equal(t, "completed", ev["outcome"])
		assert.Equal(t, "create_shipment", ev["tool"])
		assert.Equal(t, map[string]any{"service": "UPS Ground", "weight": 2.5}, ev["answers"])
	}
	require.Eventually(t, func() bool { return d.Stats().Delivered == n }, failsafe, time.Millisecond)
	assert.Equal(t, webhook.Stats{Delivered: n}, d.Stats())
}

// A receiver that is down for a while (503) and then back gets every event exactly once
// by id: each 503 is a retry of the same id, no event is lost, and none is accepted twice.
// The retries come exactly at the Backoff's waits on the mock clock: 1 s, then 2 s, 4 s.
func TestReceiverDownThenBack(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, mock)
	rcv.down.Store(true)
	ob := memOutbox(t, mock, store.OutboxOptions{})
	d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Clock: mock,
		Backoff: webhook.Backoff{Initial: time.Second, Max: time.Minute, Rand: noJitter}, Workers: 3})
	ctx := context.Background()
	const n = 10
	for range n {
		require.NoError(t, d.Send(ctx, ending(storetest.NewID(), mock.Now())))
	}
	// Three attempts each while the receiver is down, at 0, 1 s and 3 s.
	start := mock.Now()
	for attempt, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		for range n {
			tr := rcv.next(t)
			require.Equal(t, http.StatusServiceUnavailable, tr.Status)
		}
		ps := waitPending(t, ob, func(ps []memory.Pending) bool {
			for _, p := range ps {
				if p.Held || p.Attempt != attempt+1 {
					return false
				}
			}
			return len(ps) == n
		}, "every event failed once more")
		for _, p := range ps {
			require.Equal(t, mock.Now().Add(wait), p.Ready, "the wait after attempt %d", attempt+1)
		}
		if attempt < 2 {
			mock.Add(wait)
		}
	}
	require.Equal(t, start.Add(3*time.Second), mock.Now())
	rcv.down.Store(false)
	mock.Add(4 * time.Second)
	for range n {
		require.Equal(t, http.StatusNoContent, rcv.next(t).Status)
	}
	require.Eventually(t, func() bool { return d.Stats().Delivered == n }, failsafe, time.Millisecond)
	waitPending(t, ob, acked, "every delivered event acked")

	accepted := rcv.acceptedCounts()
	require.Len(t, accepted, n, "no event lost")
	perID := map[string]int{}
	for _, tr := range rcv.allTries() {
		perID[tr.ID]++
	}
	for id, k := range accepted {
		require.Equal(t, 1, k, "accepted once: %s", id)
		require.Equal(t, 4, perID[id], "three refused tries and one accepted, all with id %s", id)
	}
	assert.Equal(t, webhook.Stats{Delivered: n, Retries: 3 * n}, d.Stats())
}

// Past the Backoff's bound an event is given up: acked, counted as a failure, and never
// tried again. MaxAttempts bounds the count; GiveUpAfter, the time since Send.
func TestGivenUpPastTheBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		backoff webhook.Backoff
		tries   int // attempts before giving up
	}{
		{"MaxAttempts", webhook.Backoff{Initial: time.Second, MaxAttempts: 3, Rand: noJitter}, 3},
		// Waits 1, 2, 4 s: attempts at 0, 1, 3, 7 s; the next would be at 15 s, past 10 s.
		{"GiveUpAfter", webhook.Backoff{Initial: time.Second, GiveUpAfter: 10 * time.Second, Rand: noJitter}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mock := mockNow()
			secret := webhook.NewSecret()
			rcv := newReceiver(t, secret, mock)
			rcv.down.Store(true)
			ob := memOutbox(t, mock, store.OutboxOptions{})
			d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob,
				Clock: mock, Backoff: tc.backoff})
			require.NoError(t, d.Send(context.Background(), ending(storetest.NewID(), mock.Now())))
			for i := 1; i <= tc.tries; i++ {
				rcv.next(t)
				if i == tc.tries {
					break
				}
				ps := waitPending(t, ob, settledAfter(i), "nakked after the attempt")
				mock.Add(ps[0].Ready.Sub(mock.Now()))
			}
			waitPending(t, ob, func(ps []memory.Pending) bool { return len(ps) == 0 }, "given up: acked")
			require.Eventually(t, func() bool { return d.Stats().Failures == 1 }, failsafe, time.Millisecond)
			assert.Equal(t, webhook.Stats{Retries: uint64(tc.tries - 1), Failures: 1}, d.Stats())
			mock.Add(time.Hour)
			assert.Len(t, rcv.allTries(), tc.tries, "never tried again")
		})
	}
}

// Every attempt of an event carries the same webhook-id; each URL gets the event as an
// entry of its own, so a receiver that is down does not make the other one get it twice.
func TestSameIDOnEveryTryAndOneEntryPerURL(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	up, down := newReceiver(t, secret, mock), newReceiver(t, secret, mock)
	down.down.Store(true)
	ob := memOutbox(t, mock, store.OutboxOptions{})
	d := start(t, webhook.Options{URLs: []string{up.URL(), down.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob,
		Clock: mock, Backoff: webhook.Backoff{Initial: time.Second, Rand: noJitter}})
	qid := storetest.NewID()
	require.NoError(t, d.Send(context.Background(), ending(qid, mock.Now())))
	require.Equal(t, http.StatusNoContent, up.next(t).Status)
	for i := 1; i <= 3; i++ {
		require.Equal(t, http.StatusServiceUnavailable, down.next(t).Status)
		ps := waitPending(t, ob, settledAfter(i), "the down receiver's entry, nakked")
		if i == 3 {
			down.down.Store(false)
		}
		mock.Add(ps[0].Ready.Sub(mock.Now()))
	}
	require.Equal(t, http.StatusNoContent, down.next(t).Status)
	for _, r := range []*receiver{up, down} {
		for _, tr := range r.allTries() {
			require.Equal(t, webhook.EventID(qid), tr.ID)
		}
		require.Equal(t, map[string]int{webhook.EventID(qid): 1}, r.acceptedCounts())
	}
	assert.Len(t, up.allTries(), 1, "the receiver that was up got it once")
	require.Eventually(t, func() bool { return d.Stats().Delivered == 2 }, failsafe, time.Millisecond)
	assert.Equal(t, webhook.Stats{Delivered: 2, Retries: 3}, d.Stats())
}

// Sensitive fields are never in a payload: not in the body any receiver gets, not in the
// outbox, whatever the answers say; without Options.Answers no answer at all is sent.
func TestSensitiveFieldsNeverInPayload(t *testing.T) {
	t.Parallel()
	const password, card = "hunter2-Pa55w0rd", "4111111111111111"
	for _, answers := range []bool{true, false} {
		t.Run(fmt.Sprint("answers=", answers), func(t *testing.T) {
			t.Parallel()
			mock := mockNow()
			secret := webhook.NewSecret()
			rcv := newReceiver(t, secret, mock)
			ob := &spyOutbox{Outbox: memOutbox(t, mock, store.OutboxOptions{})}
			d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Answers: answers,
				Outbox: ob, Clock: mock})
			e := ending(storetest.NewID(), mock.Now())
			e.Answers = map[string]any{"name": "Ada", "password": password, "card": card, "note": "fine"}
			e.Sensitive = []string{"password", "card", "not-asked"}
			require.NoError(t, d.Send(context.Background(), e))
			rcv.next(t)
			bodies := rcv.allBodies()
			require.Len(t, bodies, 1)
			for _, b := range append(bodies, ob.payloads()...) {
				for _, secretValue := range []string{password, card, `"password"`, `"card"`} {
					require.NotContains(t, string(b), secretValue)
				}
			}
			ev := rcv.event(webhook.EventID(e.QuestionID))
			if answers {
				assert.Equal(t, map[string]any{"name": "Ada", "note": "fine"}, ev["answers"])
			} else {
				assert.NotContains(t, ev, "answers")
				assert.NotContains(t, string(bodies[0]), "Ada")
			}
		})
	}
}

// spyOutbox keeps every payload added, as stored.
type spyOutbox struct {
	*memory.Outbox
	mu    sync.Mutex
	added [][]byte
}

func (s *spyOutbox) Add(ctx context.Context, id string, payload []byte) error {
	s.mu.Lock()
	s.added = append(s.added, append([]byte(nil), payload...))
	s.mu.Unlock()
	return s.Outbox.Add(ctx, id, payload)
}

func (s *spyOutbox) payloads() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.added...)
}

// A receiver that hangs never blocks Send: with every worker stuck on it, Send still
// returns for every event, and they all go out once the receiver answers again.
func TestSendNeverWaitsForTheReceiver(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, mock)
	rcv.hold = make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(rcv.hold)
		}
	}
	t.Cleanup(release) // before the server closes (cleanups run last first)
	d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true,
		Outbox: memOutbox(t, mock, store.OutboxOptions{}), Clock: mock, Workers: 2, Timeout: time.Minute})
	const n = 50
	sent := make(chan error, 1)
	go func() {
		for range n {
			if err := d.Send(context.Background(), ending(storetest.NewID(), mock.Now())); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		require.NoError(t, err)
	case <-time.After(failsafe):
		t.Fatal("Send waited for the receiver")
	}
	assert.Zero(t, d.Stats().Delivered, "the receiver has answered nothing yet")
	release()
	for range n {
		rcv.next(t)
	}
	require.Len(t, rcv.acceptedCounts(), n)
}

// Stop waits for the deliveries under way until its context ends, then cuts them short
// and hands their events back at once, not as a failed attempt: the next deliverer on the
// outbox delivers them, with the same id.
func TestStopHandsBackWhatItCutShort(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, mock)
	rcv.hold = make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-rcv.hold:
		default:
			close(rcv.hold)
		}
	})
	ob := memOutbox(t, mock, store.OutboxOptions{})
	o := webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Clock: mock, Workers: 1}
	first, err := webhook.New(o)
	require.NoError(t, err)
	qid := storetest.NewID()
	require.NoError(t, first.Send(context.Background(), ending(qid, mock.Now())))
	<-rcv.entered // the POST is at the receiver, held
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, first.Stop(ctx), context.Canceled, "a delivery was cut short")
	ps := waitPending(t, ob, settledAfter(1), "handed back")
	require.Equal(t, mock.Now(), ps[0].Ready, "at once")
	assert.Equal(t, webhook.Stats{}, first.Stats(), "neither a delivery, a retry nor a failure")

	close(rcv.hold)
	rcv.next(t) // the cut request, answered to nobody
	second := start(t, o)
	tr := rcv.next(t)
	require.Equal(t, webhook.EventID(qid), tr.ID, "the same id")
	require.Equal(t, http.StatusNoContent, tr.Status)
	require.Eventually(t, func() bool { return second.Stats().Delivered == 1 }, failsafe, time.Millisecond)
	waitPending(t, ob, acked, "the delivered event acked")
}

// New refuses what it cannot use, naming it, and never quoting the secret.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	ob := memOutbox(t, mockNow(), store.OutboxOptions{})
	secret := webhook.NewSecret()
	for _, tc := range []struct {
		o    webhook.Options
		says string
	}{
		{webhook.Options{URLs: []string{"https://hooks.example.com/x"}, Secret: secret}, "no outbox"},
		{webhook.Options{Outbox: ob, Secret: secret}, "no URL"},
		{webhook.Options{Outbox: ob, URLs: []string{"http://hooks.example.com/x"}, Secret: secret}, `webhook URL "http://hooks.example.com/x"`},
		{webhook.Options{Outbox: ob, URLs: []string{"https://10.1.2.3/x"}, Secret: secret}, "10.1.2.3 is not a public address"},
		{webhook.Options{Outbox: ob, URLs: []string{"https://hooks.example.com/x"}, Secret: "s3cret-not-whsec"}, `does not start with "whsec_"`},
		{webhook.Options{Outbox: ob, URLs: []string{"https://hooks.example.com/x"}, Secret: "whsec_c2hvcnQ="}, "holds 5 bytes"},
		{webhook.Options{Outbox: ob, URLs: []string{"https://hooks.example.com/x"}, Secret: "whsec_!!notbase64"}, "not base64"},
	} {
		_, err := webhook.New(tc.o)
		require.Error(t, err, tc.says)
		assert.Contains(t, err.Error(), tc.says)
		if tc.o.Secret != secret {
			assert.NotContains(t, err.Error(), strings.TrimPrefix(tc.o.Secret, "whsec_"))
		}
	}
}

// Nodes sharing an outbox may know different URLs for a while (a rolling deploy that adds a
// receiver): an entry for a URL a node does not know is handed back for a node that does,
// not dropped.
func TestAnEntryForAnotherNodesURLIsLeftForIt(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	a, b := newReceiver(t, secret, mock), newReceiver(t, secret, mock)
	ob := memOutbox(t, mock, store.OutboxOptions{})
	// The node that queues the event knows both URLs; it stops before it delivers any.
	sender, err := webhook.New(webhook.Options{URLs: []string{a.URL(), b.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Clock: mock})
	require.NoError(t, err)
	require.NoError(t, sender.Stop(context.Background()))
	require.NoError(t, sender.Send(context.Background(), ending(storetest.NewID(), mock.Now())))

	// A node that knows only A delivers A's entry, and hands B's back.
	old := start(t, webhook.Options{URLs: []string{a.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Clock: mock})
	require.Equal(t, http.StatusNoContent, a.next(t).Status)
	ps := waitPending(t, ob, func(ps []memory.Pending) bool { return len(ps) == 1 && !ps[0].Held && ps[0].Ready.After(mock.Now()) },
		"B's entry waits, not dropped")
	require.NoError(t, old.Stop(context.Background()))
	assert.Zero(t, old.Stats().Failures, "handing an entry back is not a failure")

	// A node that knows B delivers it once it is due.
	start(t, webhook.Options{URLs: []string{a.URL(), b.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Clock: mock})
	mock.Set(ps[0].Ready)
	require.Equal(t, http.StatusNoContent, b.next(t).Status)
	assert.Len(t, a.acceptedCounts(), 1)
	assert.Len(t, b.acceptedCounts(), 1)
}
