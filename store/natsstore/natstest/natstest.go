// Package natstest starts real NATS servers for tests: one, or a cluster of them with
// JetStream, routed to each other on loopback. Each is stopped when its test ends.
package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// Server starts a nats-server with o, and stops it when t ends.
func Server(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	ns, err := server.NewServer(o)
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "server %s starts", o.ServerName)
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// Cluster starts n servers named n1, n2... with JetStream (a data directory each, room for
// the store's buckets, which reserve 2 GiB), routed to each other on loopback, and returns
// them once JetStream has a meta leader.
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	// Every server must name its routes before it starts (JetStream sizes its meta group
	// from them), so the cluster ports are chosen first.
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
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var servers []*server.Server
	for i := range n {
		servers = append(servers, Server(t, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1, NoSigs: true,
			JetStream: true, StoreDir: t.TempDir(), JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 4 << 30,
			Cluster: server.ClusterOpts{Name: "elicitd-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}))
	}
	require.Eventually(t, func() bool { return MetaLeader(servers) != nil }, 30*time.Second, 50*time.Millisecond, "a JetStream meta leader")
	return servers
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
