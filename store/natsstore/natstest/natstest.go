// Package natstest starts real NATS servers for tests: one, or a cluster of them with
// JetStream, routed to each other on loopback. Each is stopped when its test ends.
package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Failsafe bounds a wait for a server or a cluster to come up: far longer than it takes,
// even on a slow, loaded 2-core machine running the whole suite, so that only a server
// that never comes up fails a test.
const Failsafe = 60 * time.Second

// Server starts a nats-server with o, and stops it when t ends.
func Server(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	ns, err := start(o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// start starts a nats-server with o and waits until it listens: an error naming what it
// could not listen on if it cannot (the server is then shut down), errPortTaken among them
// when a port was in use.
func start(o *server.Options) (*server.Server, error) {
	ns, err := server.NewServer(o)
	if err != nil {
		return nil, err
	}
	fatal := &fatalLog{}
	ns.SetLoggerV2(fatal, false, false, false)
	ns.Start()
	// A server that cannot listen says so at once (its Fatalf), and never comes up.
	deadline := time.Now().Add(Failsafe)
	for !ns.ReadyForConnections(100 * time.Millisecond) {
		if err := fatal.err(); err != nil || time.Now().After(deadline) {
			ns.Shutdown()
			ns.WaitForShutdown()
			if err == nil {
				err = fmt.Errorf("not listening after %v", Failsafe)
			}
			return nil, fmt.Errorf("server %s: %w", o.ServerName, err)
		}
	}
	return ns, nil
}

// errPortTaken: a port chosen free (FreePorts) was taken by then, by another process or
// test (an outgoing connection's local port, say) in the moment between.
var errPortTaken = errors.New("a chosen port was taken")

// fatalLog keeps a server's fatal errors (such as a port it cannot listen on), and drops
// everything else it logs.
type fatalLog struct {
	mu    sync.Mutex
	fatal []string
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fatal = append(l.fatal, fmt.Sprintf(format, v...))
}

func (l *fatalLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fatal) == 0 {
		return nil
	}
	msg := strings.Join(l.fatal, "; ")
	if strings.Contains(msg, "address already in use") {
		return fmt.Errorf("%w: %s", errPortTaken, msg)
	}
	return errors.New(msg)
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// Cluster starts n servers named n1, n2... with JetStream (Member), routed to each other on
// loopback, and returns them once JetStream has a meta leader that can place an asset on
// every one of them (WaitPlaceable).
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	var servers []*server.Server
	// Every server must name its routes before it starts (JetStream sizes its meta group
	// from them), so the cluster ports are chosen first, and freed for the servers to
	// listen on: one taken meanwhile (a busy machine makes many connections, each on a
	// port of the same range) fails its server's start, and the cluster is started again
	// on ports chosen anew. Only that is tried again.
	for attempt := 1; ; attempt++ {
		clusterPorts := FreePorts(t, n)
		servers = servers[:0]
		var err error
		for i := range n {
			var ns *server.Server
			if ns, err = start(Member(i, -1, clusterPorts, t.TempDir())); err != nil {
				break
			}
			servers = append(servers, ns)
		}
		if err == nil {
			break
		}
		for _, ns := range servers {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			require.NoError(t, err, "attempt %d", attempt)
		}
		t.Logf("natstest: starting the cluster again on other ports: %v", err)
	}
	t.Cleanup(func() {
		for _, ns := range servers {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	})
	require.Eventually(t, func() bool { return MetaLeader(servers) != nil }, Failsafe, 50*time.Millisecond, "a JetStream meta leader")
	WaitPlaceable(t, URLs(servers), n)
	return servers
}

// WaitPlaceable waits until the JetStream cluster at urls can place a stream of this many
// replicas, trying one (in memory, and deleted again) until it is made. A meta leader just
// elected may not have heard from every server yet, and refuses such a stream with "no
// suitable peers for placement": an elicitd started on a cluster in that moment exits, as a
// loaded machine showed (cmd/elicitd's TestAFrozenNodeHoldsNoHibernatingQuestion).
func WaitPlaceable(t testing.TB, urls []string, replicas int) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	const name = "NATSTEST_PLACEABLE"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"natstest.placeable"},
			Replicas: replicas, Storage: jetstream.MemoryStorage, MaxBytes: 1 << 20})
		require.NoError(c, err)
	}, Failsafe, 100*time.Millisecond, "the cluster places a stream of %d replicas", replicas)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := js.DeleteStream(ctx, name)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			require.NoError(c, err)
		}
	}, Failsafe, 100*time.Millisecond, "the placement probe is deleted")
}

// Member is the options of server i (named n1, n2...) of a cluster on loopback whose
// members' cluster ports are clusterPorts: clients on port (-1: any), routes to every
// member, and JetStream in dir, with room for the store's buckets (they reserve 2 GiB).
func Member(i, port int, clusterPorts []int, dir string) *server.Options {
	var routes []string
	for _, p := range clusterPorts {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	return &server.Options{
		ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: port, NoSigs: true,
		JetStream: true, StoreDir: dir, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 4 << 30,
		Cluster: server.ClusterOpts{Name: "elicitd-test", Host: "127.0.0.1", Port: clusterPorts[i]},
		Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
	}
}

// FreePorts returns n loopback ports free a moment ago, all held at once while chosen, so
// that they differ.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	var ls []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// MetaLeader returns the running server that leads JetStream's meta group, if any.
func MetaLeader(servers []*server.Server) *server.Server {
	for _, s := range servers {
		if s.Running() && s.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}

// URLs returns the servers' client URLs.
func URLs(servers []*server.Server) []string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	return urls
}
