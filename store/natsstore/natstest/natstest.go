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

// Cluster starts n servers named n1, n2... with JetStream (Member), routed to each other on
// loopback, and returns them once JetStream has a meta leader.
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	// Every server must name its routes before it starts (JetStream sizes its meta group
	// from them), so the cluster ports are chosen first.
	clusterPorts := FreePorts(t, n)
	var servers []*server.Server
	for i := range n {
		servers = append(servers, Server(t, Member(i, -1, clusterPorts, t.TempDir())))
	}
	require.Eventually(t, func() bool { return MetaLeader(servers) != nil }, 30*time.Second, 50*time.Millisecond, "a JetStream meta leader")
	return servers
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
