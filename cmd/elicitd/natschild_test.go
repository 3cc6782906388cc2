package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// natsChildEnv, set in this test binary's environment, makes it a NATS server instead of
// running tests (natsChild): how a benchmark runs NATS servers as processes of their own,
// which it can place and measure as it does elicitd's.
const natsChildEnv = "ELICITD_TEST_NATS_SERVER"

// natsChildConfig is what a NATS server process is started with: a member of a cluster
// with JetStream, on loopback.
type natsChildConfig struct {
	Name        string   `json:"name"`
	Port        int      `json:"port"`         // for clients
	ClusterPort int      `json:"cluster_port"` // for the routes
	Routes      []string `json:"routes"`       // every member's cluster port, its own too
	StoreDir    string   `json:"store_dir"`
}

// natsChild runs the NATS server config (JSON, a natsChildConfig) describes until SIGTERM or
// SIGINT, and returns the process's exit code.
func natsChild(config string) int {
	var c natsChildConfig
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", natsChildEnv, err)
		return 2
	}
	var routes []string
	for _, p := range c.Routes {
		routes = append(routes, "nats-route://"+p)
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		ServerName: c.Name, Host: "127.0.0.1", Port: c.Port, NoSigs: true,
		JetStream: true, StoreDir: c.StoreDir, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 4 << 30,
		Cluster: natsserver.ClusterOpts{Name: "elicitd-bench", Host: "127.0.0.1", Port: c.ClusterPort},
		Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		return 2
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		fmt.Fprintf(os.Stderr, "%s: not ready for connections\n", c.Name)
		return 1
	}
	<-stop
	ns.Shutdown()
	ns.WaitForShutdown()
	return 0
}
