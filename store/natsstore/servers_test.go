package natsstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/natsstore/natstest"
	"github.com/elicitd/elicitd/store/storetest"
)

// Bounds for a slow, loaded machine (2 cores running the whole suite, the race detector
// on): a test waits for the state it needs, and only one that never comes fails it.
const (
	// failsafe bounds a wait for something that takes a moment (a reconnect, a leader
	// election, a cluster's first buckets) or should not happen at all.
	failsafe = 60 * time.Second
	// opTimeout bounds each call of a store that is up: the default (5 s) is a production
	// bound, and a cluster on a loaded test machine has taken longer to answer one.
	opTimeout = 30 * time.Second
	// schedSlack is how late a call bounded by its context may return past it on a loaded
	// machine: the timer's goroutine and the caller's waiting to be scheduled.
	schedSlack = 3 * time.Second
)

// swappable is an in-process connection provider whose server can be replaced: the
// client's reconnect loop finds the restarted server through it, as a client over TCP
// would find a server restarted on the same address.
type swappable struct {
	mu  sync.Mutex
	srv *natsstore.Server
}

func (p *swappable) set(s *natsstore.Server) {
	p.mu.Lock()
	p.srv = s
	p.mu.Unlock()
}

func (p *swappable) InProcessConn() (net.Conn, error) {
	p.mu.Lock()
	s := p.srv
	p.mu.Unlock()
	if s == nil {
		return nil, errors.New("no server")
	}
	return s.InProcessConn()
}

// claim is what claiming a round writes: the round answered, logged with the outcome
// answered to the client.
func claim(r store.Record, at time.Time) store.Record {
	r.Claimed++
	r.Handed = max(r.Handed, r.Claimed)
	r.Log = append(append([]store.Round(nil), r.Log...), store.Round{Prompt: fmt.Sprintf("sha256:round-%d", r.Claimed),
		Answers: json.RawMessage(`{"service":"UPS Ground","signature":true}`), Attempts: 1, At: at.Round(0)})
	r.Outcome = json.RawMessage(fmt.Sprintf(`{"round":%d,"content":[{"type":"text","text":"rated"}]}`, r.Claimed))
	return r
}

func sameRecord(t testing.TB, want, got store.Record) {
	t.Helper()
	wj, err := json.Marshal(want)
	require.NoError(t, err)
	gj, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wj), string(gj))
	require.Equal(t, want.Revision, got.Revision)
}

func startServer(t *testing.T, dir string) *natsstore.Server {
	t.Helper()
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Dir: dir})
	require.NoError(t, err)
	return srv
}

// With its server down, every call fails with ErrUnavailable: within its context's bound
// until the client notices, at once after; once the server is back on the same data directory, the same store
// works again, and every record is there as it was: its data, its revision (so that a
// compare-and-set from before the restart still works), its TTL, its files.
func TestServerDownThenRestarted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := &swappable{srv: startServer(t, dir)}
	nc, err := nats.Connect("", append(natsstore.ClientOptions("test"), nats.InProcessServer(p))...)
	require.NoError(t, err)
	defer nc.Close()
	ctx := context.Background()
	s, err := natsstore.Open(ctx, nc, natsstore.Options{MarkerTTL: time.Second, OpTimeout: opTimeout})
	require.NoError(t, err)
	defer s.Close()

	now := time.Now()
	r := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	r.Revision, err = s.Create(ctx, r)
	require.NoError(t, err)
	r = claim(r, now)
	r.Revision, err = s.Update(ctx, r)
	require.NoError(t, err, "a claimed round")
	short := storetest.Sample("alice", storetest.NewID(), now, now.Add(3*time.Second))
	short.Revision, err = s.Create(ctx, short)
	require.NoError(t, err)
	require.NoError(t, s.PutFile(ctx, r.ID, "scan", strings.NewReader("a document")))

	p.srv.Shutdown()
	p.set(nil)
	// Before the client has noticed, a call may wait for its answer: its context bounds it,
	// give or take a loaded machine's scheduling (schedSlack), short of the 5 s JetStream's
	// own requests wait (and of this store's opTimeout).
	const bound = time.Second
	bctx, cancel := context.WithTimeout(context.Background(), bound)
	start := time.Now()
	_, err = s.Get(bctx, "alice", r.ID)
	cancel()
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Less(t, time.Since(start), bound+schedSlack)
	// Once it has, every call fails at once: long before its context (failsafe) would end
	// it, so far that no load makes the one look like the other.
	require.Eventually(t, func() bool { return nc.Status() != nats.CONNECTED }, failsafe, 5*time.Millisecond)
	calls := map[string]func(context.Context) error{
		"create": func(ctx context.Context) error {
			_, err := s.Create(ctx, storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour)))
			return err
		},
		"get":    func(ctx context.Context) error { _, err := s.Get(ctx, "alice", r.ID); return err },
		"update": func(ctx context.Context) error { _, err := s.Update(ctx, claim(r, now)); return err },
		"delete": func(ctx context.Context) error { return s.Delete(ctx, "alice", r.ID, r.Revision) },
		"list":   func(ctx context.Context) error { _, err := s.List(ctx, "alice"); return err },
		"put file": func(ctx context.Context) error {
			return s.PutFile(ctx, r.ID, "other", strings.NewReader("x"))
		},
		"get file":     func(ctx context.Context) error { _, err := s.GetFile(ctx, r.ID, "scan"); return err },
		"delete files": func(ctx context.Context) error { return s.DeleteFiles(ctx, r.ID) },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		require.ErrorIs(t, err, store.ErrUnavailable, name)
		require.ErrorContains(t, err, "not connected", "%s fails at once, without asking NATS", name)
		require.Less(t, took, failsafe/3, "%s fails at once, not at its context's end", name)
		t.Logf("%s with the server down: %v after %v", name, err, took)
	}

	p.set(startServer(t, dir))
	defer p.srv.Shutdown()
	require.Eventually(t, func() bool {
		_, err := s.Get(ctx, "alice", r.ID)
		if err != nil {
			t.Logf("after the restart: %v", err)
		}
		return err == nil
	}, failsafe, 20*time.Millisecond, "the store works again once the server is back")
	got, err := s.Get(ctx, "alice", r.ID)
	require.NoError(t, err)
	sameRecord(t, r, got)
	next := claim(r, now)
	_, err = s.Update(ctx, next)
	require.NoError(t, err, "a compare-and-set on the revision from before the restart")
	_, err = s.Update(ctx, next)
	require.ErrorIs(t, err, store.ErrConflict)
	rc, err := s.GetFile(ctx, r.ID, "scan")
	require.NoError(t, err)
	rc.Close()
	_, err = s.Create(ctx, storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour)))
	require.NoError(t, err)
	// The short record's TTL survived the restart: it is reclaimed at its deadline.
	require.Eventually(t, func() bool {
		_, err := s.Create(ctx, storetest.Sample("alice", short.ID, now, time.Now().Add(time.Hour)))
		return err == nil
	}, time.Until(short.Deadline)+failsafe, 50*time.Millisecond)
}

// A start that cannot work fails with an error that names the problem.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	file := t.TempDir() + "/file"
	require.NoError(t, os.WriteFile(file, []byte("not a directory"), 0o600))
	_, err := natsstore.Embedded(ctx, natsstore.ServerOptions{Dir: file + "/data"}, natsstore.Options{})
	require.ErrorContains(t, err, "cannot create the data directory")
	_, err = natsstore.Embedded(ctx, natsstore.ServerOptions{}, natsstore.Options{})
	require.ErrorContains(t, err, "needs a data directory")

	_, err = natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: []string{"nats://127.0.0.1:1"}}, natsstore.Options{})
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.ErrorContains(t, err, "cannot reach NATS at nats://127.0.0.1:1")

	plain := runServer(t, &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true})
	_, err = natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: []string{plain.ClientURL()}}, natsstore.Options{})
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.ErrorContains(t, err, "has no JetStream")

	locked := runServer(t, &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, JetStream: true, StoreDir: t.TempDir(),
		Username: "elicitd", Password: "s3cret"})
	_, err = natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: []string{locked.ClientURL()}, User: "elicitd", Password: "wrong"}, natsstore.Options{})
	require.ErrorContains(t, err, "refused the credentials")
	_, err = natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: []string{locked.ClientURL()}, CredsFile: t.TempDir() + "/none.creds"}, natsstore.Options{})
	require.ErrorContains(t, err, "credentials file")
	s, err := natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: []string{locked.ClientURL()}, User: "elicitd", Password: "s3cret"}, natsstore.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = natsstore.Open(ctx, nil, natsstore.Options{Bucket: "no.dots"})
	require.ErrorContains(t, err, "bucket name")
}

// runServer starts a nats-server with opts, stopped when t ends.
func runServer(t testing.TB, opts *server.Options) *server.Server { return natstest.Server(t, opts) }

// cluster is n nats-servers on loopback, routed to each other, JetStream on each with a
// data directory of its own.
type cluster struct {
	servers []*server.Server
}

// startCluster starts a cluster of n servers, and waits for its JetStream meta leader.
func startCluster(t testing.TB, n int) *cluster { return &cluster{servers: natstest.Cluster(t, n)} }

func (c *cluster) metaLeader() *server.Server { return natstest.MetaLeader(c.servers) }

// connect opens a store with R3 buckets through server i only; its calls are bounded by
// opTimeout unless o says otherwise.
func (c *cluster) connect(t testing.TB, i int, o natsstore.Options) *natsstore.Store {
	t.Helper()
	o.Replicas = 3
	if o.OpTimeout == 0 {
		o.OpTimeout = opTimeout
	}
	var s *natsstore.Store
	// The first buckets of a new cluster may take a moment: peers are still being learned.
	// A refusal meanwhile is "not yet".
	require.Eventually(t, func() bool {
		var err error
		s, err = natsstore.Connect(context.Background(), natsstore.ConnectOptions{URLs: []string{c.servers[i].ClientURL()}, Name: fmt.Sprintf("via-n%d", i+1)}, o)
		if err != nil {
			t.Logf("connect through n%d: %v", i+1, err)
		}
		return err == nil
	}, failsafe, 200*time.Millisecond)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// streamLeader asks JetStream, through server i, which server leads the records' stream:
// an error while it cannot tell (no leader yet, an election under way, an answer slower
// than the ask's bound), for the caller to ask again.
func (c *cluster) streamLeader(i int) (string, error) {
	nc, err := nats.Connect(c.servers[i].ClientURL())
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+natsstore.DefaultBucket)
	if err != nil {
		return "", err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return "", err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", errors.New("the records' stream has no leader")
	}
	return info.Cluster.Leader, nil
}

// waitStreamLeader asks, through server i, until the records' stream has a leader, and
// returns it: an ask that fails (an election, a slow answer) is asked again, within
// failsafe.
func (c *cluster) waitStreamLeader(t testing.TB, i int) string {
	t.Helper()
	var leader string
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		l, err := c.streamLeader(i)
		require.NoError(collect, err, "the records' stream leader, asked through n%d", i+1)
		leader = l
	}, failsafe, 100*time.Millisecond)
	return leader
}

// moveStreamLeader hands the records' stream leadership to the server named to, asking
// through server i, and returns once that server leads. A step-down request can fail or
// elect another server (an election is under way, the request timed out on a loaded
// machine): it is asked again while another server leads, within failsafe.
func (c *cluster) moveStreamLeader(t testing.TB, i int, to string) {
	t.Helper()
	req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, to)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		leader, err := c.streamLeader(i)
		require.NoError(collect, err, "the records' stream leader, asked through n%d", i+1)
		if leader == to {
			return
		}
		nc, err := nats.Connect(c.servers[i].ClientURL())
		require.NoError(collect, err)
		defer nc.Close()
		msg, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.KV_"+natsstore.DefaultBucket, []byte(req), 5*time.Second)
		require.NoError(collect, err, "step-down request")
		assert.Fail(collect, "stepping down", "%s leads, asked to hand over to %s: %s", leader, to, msg.Data)
	}, failsafe, time.Second, "%s leads the records' stream", to)
}

// getThroughFailover reads owner's record id, asking again while the store is unavailable
// (a leader election, an answer slower than the attempt's bound), within failsafe: any other
// error is the read's answer.
func getThroughFailover(t testing.TB, s store.Store, owner, id string) (store.Record, error) {
	t.Helper()
	var got store.Record
	var err error
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, err = s.Get(ctx, owner, id)
		return !errors.Is(err, store.ErrUnavailable)
	}, failsafe, 50*time.Millisecond, "a read of %s/%s: still unavailable", owner, id)
	return got, err
}

// updateThroughFailover retries a compare-and-set while the store is unavailable (a
// leader election): the outcome of a write that failed so is unknown, so a conflict after
// one is checked against the record, which must then be the write itself.
func updateThroughFailover(t testing.TB, s store.Store, r store.Record, within time.Duration) uint64 {
	t.Helper()
	deadline := time.Now().Add(within)
	unknown := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rev, err := s.Update(ctx, r)
		cancel()
		switch {
		case err == nil:
			return rev
		case errors.Is(err, store.ErrConflict) && unknown:
			got, gerr := getThroughFailover(t, s, r.Owner, r.ID)
			require.NoError(t, gerr)
			require.Equal(t, r.Claimed, got.Claimed, "a conflict after an unknown outcome: the write landed")
			return got.Revision
		case errors.Is(err, store.ErrUnavailable):
			unknown = true
			require.True(t, time.Now().Before(deadline), "still unavailable after %v: %v", within, err)
			time.Sleep(50 * time.Millisecond) // a retry's back-off, not a wait for state
		default:
			require.NoError(t, err)
		}
	}
}

// A 3-node cluster on loopback, buckets R3: compare-and-set works through any node's
// connection; with the node that leads both JetStream's meta group and the records' stream
// shut down, a claimed round written before is still there, and a compare-and-set
// through a surviving node works; with a second node down (no quorum), writes fail closed
// with ErrUnavailable within their bound.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	stores := []*natsstore.Store{c.connect(t, 0, natsstore.Options{}), c.connect(t, 1, natsstore.Options{}), c.connect(t, 2, natsstore.Options{})}
	ctx := context.Background()
	now := time.Now()

	// A chain of compare-and-sets, each through another node, on the revision the last
	// write returned.
	r := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rev1, err := stores[0].Create(ctx, r)
	require.NoError(t, err)
	r.Revision = rev1
	r = claim(r, now)
	rev2, err := stores[1].Update(ctx, r)
	require.NoError(t, err)
	r.Revision = rev2
	r = claim(r, now)
	rev3, err := stores[2].Update(ctx, r)
	require.NoError(t, err)
	r.Revision = rev3
	for i, rev := range []uint64{rev1, rev2} {
		stale := claim(r, now)
		stale.Revision = rev
		_, err := stores[i].Update(ctx, stale)
		require.ErrorIs(t, err, store.ErrConflict, "a stale revision through n%d", i+1)
	}
	for i, s := range stores {
		require.Eventually(t, func() bool {
			got, err := s.Get(ctx, "alice", r.ID)
			return err == nil && got.Revision == rev3
		}, failsafe, 20*time.Millisecond, "n%d reads the last write", i+1)
	}

	// 51 racers on one revision, spread over the three nodes: one wins.
	start := make(chan struct{})
	var wins sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for i := range 51 {
		wins.Add(1)
		go func() {
			defer wins.Done()
			mine := claim(r, now)
			mine.Node = fmt.Sprintf("racer-%d", i)
			<-start
			_, err := stores[i%3].Update(ctx, mine)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				winners++
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racer %d through n%d: %v", i, i%3+1, err)
			}
		}()
	}
	close(start)
	wins.Wait()
	require.Equal(t, 1, winners)
	claimed, err := stores[0].Get(ctx, "alice", r.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(claimed.Node, "racer-"))
	require.Eventually(t, func() bool {
		for _, s := range stores {
			got, err := s.Get(ctx, "alice", r.ID)
			if err != nil || got.Revision != claimed.Revision {
				return false
			}
		}
		return true
	}, failsafe, 20*time.Millisecond, "every node has the claimed round")

	// Put the stream's leadership on the meta leader, and shut that server down.
	meta := c.metaLeader()
	require.NotNil(t, meta)
	c.moveStreamLeader(t, 0, meta.Name())
	victim := -1
	for i, s := range c.servers {
		if s == meta {
			victim = i
		}
	}
	var survivors []int
	for i := range c.servers {
		if i != victim {
			survivors = append(survivors, i)
		}
	}
	t.Logf("shutting down n%d, leader of the meta group and of the records' stream", victim+1)
	down := time.Now()
	meta.Shutdown()
	meta.WaitForShutdown()

	// Reads fail too (ErrUnavailable) until the survivors have a stream leader again.
	for _, i := range survivors {
		got, err := getThroughFailover(t, stores[i], "alice", r.ID)
		require.NoError(t, err, "the claimed round, read through n%d", i+1)
		sameRecord(t, claimed, got)
		t.Logf("first read through n%d after the leader went: %v", i+1, time.Since(down))
	}
	next := claim(claimed, now)
	rev := updateThroughFailover(t, stores[survivors[0]], next, failsafe)
	t.Logf("first compare-and-set through n%d after the leader went: %v", survivors[0]+1, time.Since(down))
	require.Greater(t, rev, claimed.Revision)
	newLeader := c.waitStreamLeader(t, survivors[1])
	require.NotEqual(t, meta.Name(), newLeader)
	t.Logf("new stream leader %s, meta leader %v", newLeader, c.metaLeader() != nil)
	// The stale revision loses through the other survivor.
	_, err = stores[survivors[1]].Update(ctx, next)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = stores[survivors[1]].Create(ctx, storetest.Sample("bob", storetest.NewID(), now, now.Add(time.Hour)))
	require.NoError(t, err)
	list, err := stores[survivors[1]].List(ctx, "alice")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, rev, list[0].Revision)
	// The store whose server went reconnects to a survivor, and works again.
	require.Eventually(t, func() bool {
		got, err := stores[victim].Get(ctx, "alice", r.ID)
		return err == nil && got.Revision == rev
	}, failsafe, 50*time.Millisecond, "the victim's store fails over")

	// Quorum lost: writes fail closed, within their bound.
	second := c.servers[survivors[1]]
	second.Shutdown()
	second.WaitForShutdown()
	last := stores[survivors[0]]
	after := claim(claim(claimed, now), now)
	after.Revision = rev
	const bound = 2 * time.Second
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t0 := time.Now()
	_, err = last.Update(cctx, after)
	require.ErrorIs(t, err, store.ErrUnavailable, "no write without a quorum")
	require.Less(t, time.Since(t0), bound+schedSlack, "the write fails closed within its context's bound")
	t.Logf("compare-and-set without a quorum: %v after %v", err, time.Since(t0))
	_, err = last.Get(ctx, "alice", r.ID)
	t.Logf("read without a quorum: %v", err)
}

// throughEachServer starts a 3-server cluster and returns a store connected through each.
func throughEachServer(t *testing.T) []*natsstore.Store {
	c := startCluster(t, 3)
	return []*natsstore.Store{c.connect(t, 0, natsstore.Options{}), c.connect(t, 1, natsstore.Options{}), c.connect(t, 2, natsstore.Options{})}
}

// GetLatest, through any server, reads a record as the write acknowledged just before it
// (through another server) left it: the records' stream leader answers it, not a replica
// that may not have applied the write (JetStream's direct get, which Get uses, answers from
// any replica). A record deleted, or never written, is not found. The cluster saw reads
// behind a write as retries told "finished" (the record not found) or "stale_round" (the
// round before) on the node next to the one that wrote; ask reads with GetLatest when a
// read contradicts its requestState (ask/stale_test.go).
func TestGetLatestSeesTheLastAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	stores := throughEachServer(t)
	ctx := context.Background()
	now := time.Now()
	for n := range 60 {
		w, rd := stores[n%3], stores[(n+1)%3]
		r := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
		_, err := rd.GetLatest(ctx, "alice", r.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "never written")
		rev, err := w.Create(ctx, r)
		require.NoError(t, err)
		got, err := rd.GetLatest(ctx, "alice", r.ID)
		require.NoError(t, err)
		r.Revision = rev
		sameRecord(t, r, got)
		r = claim(r, now)
		rev, err = w.Update(ctx, r)
		require.NoError(t, err)
		got, err = rd.GetLatest(ctx, "alice", r.ID)
		require.NoError(t, err)
		require.Equal(t, rev, got.Revision)
		require.Equal(t, r.Claimed, got.Claimed)
		_, err = rd.GetLatest(ctx, "bob", r.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "another owner's")
		// A purge at the revision an update just returned was once refused on R3 as a
		// mismatch (a CI run), though the leader said the record was at that revision: not
		// what this test is about, so the delete is tried again until it lands.
		require.Eventually(t, func() bool { return w.Delete(ctx, "alice", r.ID, rev) == nil }, failsafe, 20*time.Millisecond, "deleted")
		_, err = rd.GetLatest(ctx, "alice", r.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "deleted")
	}
}

// List, through any server, lists a record as soon as the write that made it (through
// another server) is acknowledged, and stops listing it once its delete is. A list read
// from a replica that had not applied the write yet left a question out of another node's
// list_elicitations (a CI run of cmd/elicitd's TestThreeNodesServeOneQuestion).
func TestListSeesTheLastAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	stores := throughEachServer(t)
	ctx := context.Background()
	now := time.Now()
	for n := range 150 {
		w, rd := stores[n%3], stores[(n+1)%3]
		owner := fmt.Sprintf("owner-%d", n)
		r := storetest.Sample(owner, storetest.NewID(), now, now.Add(time.Hour))
		rev, err := w.Create(ctx, r)
		require.NoError(t, err)
		got, err := rd.List(ctx, owner)
		require.NoError(t, err)
		require.Len(t, got, 1, "round %d: listed through another server right after the create", n)
		require.Equal(t, rev, got[0].Revision)
		r.Revision = rev
		r = claim(r, now)
		rev, err = w.Update(ctx, r)
		require.NoError(t, err)
		got, err = rd.List(ctx, owner)
		require.NoError(t, err)
		require.Len(t, got, 1, "round %d: listed after the update", n)
		require.Equal(t, rev, got[0].Revision, "round %d: the update's revision", n)
		require.Eventually(t, func() bool { return w.Delete(ctx, owner, r.ID, rev) == nil }, failsafe, 20*time.Millisecond, "deleted")
		got, err = rd.List(ctx, owner)
		require.NoError(t, err)
		require.Empty(t, got, "round %d: not listed once deleted", n)
	}
}

// A compare-and-set refused because an earlier write to the same key is still in process
// on the stream leader (JetStream's 10164: the leader proposed it and has not committed it,
// here because it lost its quorum) is not a conflict: the record is still at the caller's
// revision, and the write it lost to may never land. It is tried again, and once the
// refusals have gone on for about half a second it is ErrUnavailable (try again later), as
// the first write's timeout was. Taken for a conflict, a node waking a question took it for one
// another node had taken over, stood down, and a retry was told the question was
// cancelled (the robustness suite, NATS's quorum lost).
func TestAWriteRefusedForOneInProcessIsNotAConflict(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	first := c.connect(t, 0, natsstore.Options{})
	leader := c.waitStreamLeader(t, 0)
	li := slices.IndexFunc(c.servers, func(s *server.Server) bool { return s.Name() == leader })
	require.GreaterOrEqual(t, li, 0, "the leader %s is one of the servers", leader)
	s := c.connect(t, li, natsstore.Options{OpTimeout: time.Second})
	now := time.Now()
	r := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rev, err := first.Create(context.Background(), r)
	require.NoError(t, err)
	r.Revision = rev
	for i, srv := range c.servers {
		if i != li {
			srv.Shutdown() // the leader keeps leading for a while, committing nothing
		}
	}
	_, err = s.Update(context.Background(), claim(r, now))
	require.ErrorIs(t, err, store.ErrUnavailable, "no quorum: the write times out, in process")
	_, err = s.Update(context.Background(), claim(r, now.Add(time.Second)))
	require.ErrorIs(t, err, store.ErrUnavailable, "refused for the write in process: try again, not a conflict")
	require.ErrorContains(t, err, "in process", "the refusal itself, not a timeout while the leader stepped down")
	require.NotErrorIs(t, err, store.ErrConflict)
	err = s.Delete(context.Background(), r.Owner, r.ID, rev)
	require.ErrorIs(t, err, store.ErrUnavailable, "a delete too")
	require.NotErrorIs(t, err, store.ErrConflict)
	require.ErrorContains(t, err, "in process")
}

// Writes one after the other to one key, each at the revision the last one returned, all
// land on R3: the stream leader acknowledges a write a moment before it stops counting the
// key as written to, and a compare-and-set in that moment was refused as "in process"
// (10164) for a write that had landed already. The refusal is no conflict, and the write is
// tried again.
func TestBackToBackWritesToOneKeyLand(t *testing.T) {
	t.Parallel()
	stores := throughEachServer(t)
	ctx := context.Background()
	now := time.Now()
	for n := range 300 {
		s := stores[n%3]
		r := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
		rev, err := s.Create(ctx, r)
		require.NoError(t, err, "round %d: create", n)
		r.Revision = rev
		for i := range 2 {
			rev, err = s.Update(ctx, claim(r, now.Add(time.Duration(i)*time.Second)))
			require.NoError(t, err, "round %d: update %d at the revision just returned", n, i)
			r.Revision = rev
		}
		require.NoError(t, s.Delete(ctx, "alice", r.ID, rev), "round %d: delete at the revision just returned", n)
	}
}
