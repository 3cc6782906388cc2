package natsstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/storetest"
)

// outboxLimits keep the store's buckets small, so that many outboxes' reservations fit
// on a test server.
var outboxLimits = store.Limits{MaxBytes: 8 << 20, MaxFilesBytes: 8 << 20}

// outboxFactory gives each test an outbox of its own name on nodes' stores, each handle
// through the next store in turn.
func outboxFactory(nodes []*natsstore.Store) storetest.OutboxFactory {
	var n atomic.Int64
	return func(t *testing.T, o store.OutboxOptions) storetest.OutboxHarness {
		o.Name = fmt.Sprintf("t%d", n.Add(1))
		var next atomic.Int64
		return storetest.OutboxHarness{Open: func() store.Outbox {
			s := nodes[int(next.Add(1)-1)%len(nodes)]
			b, err := s.Outbox(context.Background(), o)
			require.NoError(t, err)
			return b
		}}
	}
}

// The NATS outbox keeps the outbox contract on one embedded server, its handles on two
// connections of their own (two nodes); its delays run on JetStream's real time.
func TestOutboxContract(t *testing.T) {
	srv := startServer(t, t.TempDir())
	t.Cleanup(srv.Shutdown)
	var nodes []*natsstore.Store
	for i := range 2 {
		nc, err := nats.Connect("", append(natsstore.ClientOptions(fmt.Sprintf("node-%d", i+1)), nats.InProcessServer(srv))...)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		s, err := natsstore.Open(context.Background(), nc, natsstore.Options{Limits: outboxLimits})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		nodes = append(nodes, s)
	}
	storetest.RunOutbox(t, outboxFactory(nodes))
}

// On a 3-node cluster, with R3 streams, the outbox keeps the same contract with a handle
// through each server in turn: deliverers on different servers never hold one event at
// the same moment, and a nakked event comes back later, through another server.
func TestOutboxContractOnCluster(t *testing.T) {
	c := startCluster(t, 3)
	var nodes []*natsstore.Store
	for i := range c.servers {
		nodes = append(nodes, c.connect(t, i, natsstore.Options{Limits: outboxLimits}))
	}
	storetest.RunOutbox(t, outboxFactory(nodes))
}

// A pull that no consumer answers ("no responders": on a cluster, a consumer just made or
// moving whose leader is not elected yet) is tried again until ctx ends: Next hands out
// the event once the consumer answers. A CI run's contract test failed at once with "no
// responders" on a cluster's freshly opened outbox.
func TestOutboxNextRidesOutNoResponders(t *testing.T) {
	srv := startServer(t, t.TempDir())
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect("", append(natsstore.ClientOptions("node-1"), nats.InProcessServer(srv))...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	s, err := natsstore.Open(context.Background(), nc, natsstore.Options{Limits: outboxLimits})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	o := store.OutboxOptions{Name: "gone"}
	b, err := s.Outbox(context.Background(), o)
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream := natsstore.OutboxStream("elicitd", "gone")
	require.NoError(t, js.DeleteConsumer(context.Background(), stream, "gone"))

	type next struct {
		d   store.Delivery
		err error
	}
	got := make(chan next, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		d, err := b.Next(ctx)
		got <- next{d, err}
	}()
	// The consumer is made again (a node opening the outbox), and an event added.
	again, err := s.Outbox(context.Background(), o)
	require.NoError(t, err)
	require.NoError(t, again.Add(context.Background(), "evt_1", []byte(`{"event":"evt_1"}`)))
	n := <-got
	require.NoError(t, n.err, "Next waits for the consumer, not fails")
	assert.Equal(t, "evt_1", n.d.ID())
}
