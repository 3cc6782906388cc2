package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/natsstore/natstest"
)

// Every event an outbox took is handed out, through a quorum lost and got back: three
// nodes keep adding events (each tried again, under its id, until an add goes through, as
// webhook.Deliverer does) and delivering them while two of the three servers are down and
// started again. An add that was answered as a duplicate (an earlier try of it landed
// though its answer was lost) counts as added. The robustness suite's long run had three
// events of a quorum loss never come; this showed the outbox keeps them, and the node that
// held them was killed before it added them (webhook's
// TestQueuedEventsAreAddedOnceAnAddShowsTheOutboxBack).
func TestOutboxKeepsEveryAddedEventThroughAQuorumLoss(t *testing.T) {
	t.Parallel()
	clientPorts, clusterPorts := natstest.FreePorts(t, 3), natstest.FreePorts(t, 3)
	var dirs, urls []string
	for i := range 3 {
		dirs = append(dirs, t.TempDir())
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	servers := make([]*server.Server, 3)
	startServer := func(i int) {
		servers[i] = natstest.Server(t, natstest.Member(i, clientPorts[i], clusterPorts, dirs[i]))
	}
	for i := range 3 {
		startServer(i)
	}
	require.Eventually(t, func() bool { return natstest.MetaLeader(servers) != nil }, natstest.Failsafe, 50*time.Millisecond, "a meta leader")
	natstest.WaitPlaceable(t, urls, 3)

	var outs []store.Outbox
	for i := range 3 {
		var s *natsstore.Store
		require.Eventually(t, func() bool {
			var err error
			s, err = natsstore.Connect(context.Background(), natsstore.ConnectOptions{URLs: []string{urls[i], urls[(i+1)%3], urls[(i+2)%3]},
				Name: fmt.Sprintf("node-%d", i+1)}, natsstore.Options{Replicas: 3, Limits: outboxLimits})
			return err == nil
		}, failsafe, 200*time.Millisecond, "node %d connects", i+1)
		t.Cleanup(func() { _ = s.Close() })
		var b store.Outbox
		require.Eventually(t, func() bool {
			var err error
			b, err = s.Outbox(context.Background(), store.OutboxOptions{Name: "webhooks"})
			return err == nil
		}, failsafe, 200*time.Millisecond, "node %d opens the outbox", i+1)
		outs = append(outs, b)
	}

	var mu sync.Mutex
	added := map[string]time.Time{}
	delivered := map[string]int{}
	adding, stopAdding := context.WithCancel(context.Background())
	delivering, stopDelivering := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, b := range outs {
		wg.Go(func() {
			for n := 0; adding.Err() == nil; n++ {
				id := fmt.Sprintf("evt-%d-%d", i+1, n)
				for pause := 250 * time.Millisecond; ; pause = min(2*pause, 2*time.Second) {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					err := b.Add(ctx, id, []byte(id))
					cancel()
					if err == nil {
						mu.Lock()
						added[id] = time.Now()
						mu.Unlock()
						break
					}
					time.Sleep(pause) // the deliverer's pause between tries
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
		wg.Go(func() {
			for delivering.Err() == nil {
				ctx, cancel := context.WithTimeout(delivering, 2*time.Second)
				d, err := b.Next(ctx)
				cancel()
				if err != nil {
					time.Sleep(100 * time.Millisecond) // the deliverer's pause while the store is out
					continue
				}
				mu.Lock()
				delivered[string(d.Payload())]++
				mu.Unlock()
				ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
				_ = d.Ack(ctx) // one not acked comes again after its AckWait: counted twice, which is allowed
				cancel()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(added) }
	require.Eventually(t, func() bool { return count() >= 30 }, failsafe, 20*time.Millisecond, "events are added before the fault")
	for _, i := range []int{0, 1} {
		servers[i].Shutdown()
		servers[i].WaitForShutdown()
	}
	before := count()
	time.Sleep(10 * time.Second) // the quorum is lost for this long
	startServer(0)
	startServer(1)
	require.Eventually(t, func() bool { return count() >= before+30 }, failsafe, 20*time.Millisecond, "events are added once the quorum is back")
	stopAdding()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		var missing []string
		for id, at := range added {
			if delivered[id] == 0 {
				missing = append(missing, id+" added "+at.Format("15:04:05.000"))
			}
		}
		assert.Empty(c, missing, "added and never handed out")
	}, store.DefaultOutboxAckWait+failsafe, 100*time.Millisecond)
	stopDelivering()
	wg.Wait()
}
