package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/storetest"
	"github.com/elicitd/elicitd/webhook"
)

// natsOutbox are the outbox options of these tests: a short AckWait, so that an event a
// stopped deliverer's pull took as it stopped comes back within the test.
var natsOutbox = store.OutboxOptions{AckWait: 3 * time.Second, MaxBytes: 1 << 20}

// smallLimits keep the store's buckets small on the test server.
var smallLimits = store.Limits{MaxBytes: 8 << 20, MaxFilesBytes: 8 << 20}

// opTimeout bounds each call of the tests' stores without a deadline of its own (a Send):
// on a loaded test machine one may take longer than the production 5 s, and would fail a
// test that only needs it done.
const opTimeout = 30 * time.Second

// waitAccepted waits until the receiver has accepted every id of want.
func waitAccepted(t *testing.T, rcv *receiver, want []string) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := rcv.acceptedCounts()
		for _, id := range want {
			if got[id] == 0 {
				return false
			}
		}
		return true
	}, failsafe, 10*time.Millisecond, "every event accepted")
}

// With the NATS store, events outlive the deliverer and the embedded server: events sent
// while the receiver was down (each tried, and waiting for its retry) and events sent
// after the deliverer stopped are all delivered, each accepted once, by a new deliverer on
// a server restarted on the same data directory. The delays are JetStream's, in real time.
func TestEventsSurviveARestartWithTheNATSStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, clock.New())
	rcv.down.Store(true)
	o := webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Workers: 2,
		Backoff: webhook.Backoff{Initial: 100 * time.Millisecond, Max: 200 * time.Millisecond}}
	ctx := context.Background()

	s, err := natsstore.Embedded(ctx, natsstore.ServerOptions{Dir: dir}, natsstore.Options{Limits: smallLimits, OpTimeout: opTimeout})
	require.NoError(t, err)
	o.Outbox, err = s.Outbox(ctx, natsOutbox)
	require.NoError(t, err)
	first, err := webhook.New(o)
	require.NoError(t, err)
	var ids []string
	send := func(d *webhook.Deliverer) {
		qid := storetest.NewID()
		ids = append(ids, webhook.EventID(qid))
		require.NoError(t, d.Send(ctx, ending(qid, time.Now())))
	}
	for range 6 {
		send(first)
	}
	tried := map[string]bool{}
	for len(tried) < len(ids) {
		tr := rcv.next(t)
		require.Equal(t, http.StatusServiceUnavailable, tr.Status)
		tried[tr.ID] = true
	}
	sctx, cancel := context.WithTimeout(ctx, failsafe)
	require.NoError(t, first.Stop(sctx))
	cancel()
	require.Zero(t, first.Stats().Delivered)
	require.Positive(t, first.Stats().Retries)
	for range 4 {
		send(first) // after Stop: the outbox still takes them
	}
	require.NoError(t, s.Close()) // the embedded server stops with the store

	rcv.down.Store(false)
	s, err = natsstore.Embedded(ctx, natsstore.ServerOptions{Dir: dir}, natsstore.Options{Limits: smallLimits, OpTimeout: opTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	o.Outbox, err = s.Outbox(ctx, natsOutbox)
	require.NoError(t, err)
	second := start(t, o)
	waitAccepted(t, rcv, ids)
	require.Eventually(t, func() bool { return second.Stats().Delivered == uint64(len(ids)) }, failsafe, 10*time.Millisecond)
	got := rcv.acceptedCounts()
	require.Len(t, got, len(ids), "only the events sent")
	for _, id := range ids {
		require.Equal(t, 1, got[id], "accepted once: %s", id)
	}
}

// Two deliverers on two nodes (two connections to one server) share one outbox: every
// event is accepted exactly once, with no retry, whichever node sent it.
func TestTwoNodesShareTheOutbox(t *testing.T) {
	t.Parallel()
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, clock.New())
	ctx := context.Background()
	var nodes []*webhook.Deliverer
	for i := range 2 {
		nc, err := nats.Connect("", append(natsstore.ClientOptions(fmt.Sprintf("node-%d", i+1)), nats.InProcessServer(srv))...)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		s, err := natsstore.Open(ctx, nc, natsstore.Options{Limits: smallLimits, OpTimeout: opTimeout})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		ob, err := s.Outbox(ctx, natsOutbox)
		require.NoError(t, err)
		nodes = append(nodes, start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Workers: 3}))
	}
	var ids []string
	for i := range 40 {
		qid := storetest.NewID()
		ids = append(ids, webhook.EventID(qid))
		require.NoError(t, nodes[i%2].Send(ctx, ending(qid, time.Now())))
	}
	waitAccepted(t, rcv, ids)
	require.Eventually(t, func() bool {
		return nodes[0].Stats().Delivered+nodes[1].Stats().Delivered == uint64(len(ids))
	}, failsafe, 10*time.Millisecond)
	for id, n := range rcv.acceptedCounts() {
		assert.Equal(t, 1, n, id)
	}
	assert.Len(t, rcv.allTries(), len(ids), "no event sent twice")
}

// A question's end queued while the node's NATS connection is reconnecting (its server
// gone) is added once the server is back on the same address and data: Queue's first add
// fails at once, the next ones go on in the background on the real clock, and the
// receiver gets the event once, under its one id.
func TestQueueRidesOutANATSOutage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Dir: dir, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	addr := srv.ClientURL()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, clock.New())
	ctx := context.Background()
	nc, err := nats.Connect(addr, natsstore.ClientOptions("node-1")...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	s, err := natsstore.Open(ctx, nc, natsstore.Options{Limits: smallLimits, OpTimeout: opTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ob, err := s.Outbox(ctx, natsOutbox)
	require.NoError(t, err)
	d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, Outbox: ob, Workers: 2})

	srv.Shutdown()
	require.Eventually(t, func() bool { return nc.Status() == nats.RECONNECTING }, failsafe, 10*time.Millisecond)
	qid := storetest.NewID()
	err = d.Queue(ending(qid, time.Now()))
	require.ErrorIs(t, err, webhook.ErrQueuing)
	require.ErrorIs(t, err, store.ErrUnavailable)

	host := strings.TrimPrefix(addr, "nats://")
	srv, err = natsstore.StartServer(natsstore.ServerOptions{Dir: dir, Listen: host})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	want := webhook.EventID(qid)
	waitAccepted(t, rcv, []string{want})
	require.Eventually(t, func() bool { return d.Stats().Delivered == 1 }, failsafe, 10*time.Millisecond)
	assert.Equal(t, map[string]int{want: 1}, rcv.acceptedCounts())
	assert.Zero(t, d.Stats().Lost)
}
