package webhook_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/webhook"
)

// Every test in the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// try is one request a receiver got.
type try struct {
	ID     string    // its webhook-id
	At     time.Time // on the test's clock
	Status int       // what the receiver answered
}

// receiver is a webhook endpoint on loopback that verifies every webhook with the
// snippet of docs/webhooks.md. While down it answers 503 without looking.
type receiver struct {
	srv  *httptest.Server
	clk  clock.Clock
	down atomic.Bool
	// hold, if set, keeps each request waiting until it is closed.
	hold chan struct{}
	// entered gets each request's webhook-id as it comes, before hold.
	entered chan string

	mu       sync.Mutex
	tries    []try
	accepted map[string]int            // verified and answered 2xx, by webhook-id
	events   map[string]map[string]any // the last verified event of each id
	bodies   [][]byte                  // every body received
	arrived  chan try                  // every request, as it comes
}

func newReceiver(t *testing.T, secret string, clk clock.Clock) *receiver {
	t.Helper()
	r := &receiver{clk: clk, accepted: map[string]int{}, events: map[string]map[string]any{}, arrived: make(chan try, 10_000),
		entered: make(chan string, 10_000)}
	verify, err := webhookHandler(secret, func(id string, event map[string]any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.accepted[id]++
		r.events[id] = event
	})
	require.NoError(t, err)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		tr := try{ID: req.Header.Get("webhook-id"), At: r.clk.Now()}
		select { // never blocks: a test that stopped reading fails, rather than hangs
		case r.entered <- tr.ID:
		default:
		}
		if r.hold != nil {
			<-r.hold
		}
		rec := httptest.NewRecorder()
		if r.down.Load() {
			rec.WriteHeader(http.StatusServiceUnavailable)
		} else {
			verify.ServeHTTP(rec, req)
		}
		tr.Status = rec.Code
		r.mu.Lock()
		r.tries = append(r.tries, tr)
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
		select {
		case r.arrived <- tr:
		default:
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) URL() string { return r.srv.URL + "/hooks/elicitd" }

// acceptedCounts returns how many times each webhook-id was accepted.
func (r *receiver) acceptedCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.accepted))
	for id, n := range r.accepted {
		out[id] = n
	}
	return out
}

func (r *receiver) allTries() []try {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]try(nil), r.tries...)
}

func (r *receiver) event(id string) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[id]
}

func (r *receiver) allBodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// failsafe bounds every wait of these tests for what takes a moment (a request reaching
// the receiver, an event acked, a restarted server): far longer than it takes, even on a
// slow, loaded 2-core machine running the whole suite with the race detector.
const failsafe = 60 * time.Second

// next waits for the receiver's next request.
func (r *receiver) next(t *testing.T) try {
	t.Helper()
	select {
	case tr := <-r.arrived:
		return tr
	case <-time.After(failsafe):
		t.Fatal("no request reached the receiver")
		return try{}
	}
}

// mockNow is a mock clock at the real time, so that the receiver's five-minute window
// accepts the webhook-timestamps it signs; tests move it by seconds.
func mockNow() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Now().Truncate(time.Second))
	return m
}

// memOutbox is a memory outbox on clk.
func memOutbox(t *testing.T, clk clock.Clock, o store.OutboxOptions) *memory.Outbox {
	t.Helper()
	b, err := memory.NewOutbox(memory.OutboxOptions{Clock: clk, OutboxOptions: o})
	require.NoError(t, err)
	return b
}

// start starts a deliverer and stops it when t ends.
func start(t *testing.T, o webhook.Options) *webhook.Deliverer {
	t.Helper()
	d, err := webhook.New(o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		require.NoError(t, d.Stop(ctx))
	})
	return d
}

// waitPending waits until the outbox's queue satisfies ok.
func waitPending(t *testing.T, b *memory.Outbox, ok func([]memory.Pending) bool, what string) []memory.Pending {
	t.Helper()
	var last []memory.Pending
	require.Eventually(t, func() bool {
		last = b.Pending()
		return ok(last)
	}, failsafe, time.Millisecond, "%s; the queue: %+v", what, last)
	return last
}

// acked reports whether the queue is empty. A delivery is counted (Stats.Delivered) when the
// receiver answers 2xx, and its entry acked just after: a test waits for the ack too.
func acked(ps []memory.Pending) bool { return len(ps) == 0 }

// settledAfter reports whether the queue's only entry is waiting (not held) after attempt
// n.
func settledAfter(n int) func([]memory.Pending) bool {
	return func(ps []memory.Pending) bool { return len(ps) == 1 && !ps[0].Held && ps[0].Attempt == n }
}

// noJitter makes the Backoff's waits exact.
func noJitter() float64 { return 0 }

// ending is a completed question's end, with answers.
func ending(qid string, at time.Time) webhook.Ending {
	return webhook.Ending{
		QuestionID: qid, Tool: "create_shipment", Template: "shipment", Owner: "owner-digest-1",
		State: "completed", Attempts: 2, Created: at.Add(-time.Minute), Ended: at,
		Answers: map[string]any{"service": "UPS Ground", "weight": 2.5},
	}
}
