package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/elicitd/elicitd/store/natsstore/natstest"
)

// natsChildEnv, set in this test binary's environment, makes it a NATS server instead of
// running tests (natsChild): how a benchmark runs NATS servers as processes of their own,
// which it can place and measure as it does elicitd's.
const natsChildEnv = "ELICITD_TEST_NATS_SERVER"

// natsChildConfig is what a NATS server process is started with: member Index of a cluster
// with JetStream on loopback (natstest.Member).
type natsChildConfig struct {
	Index        int    `json:"index"`
	Port         int    `json:"port"`          // for clients
	ClusterPorts []int  `json:"cluster_ports"` // every member's, its own too
	StoreDir     string `json:"store_dir"`
}

// natsChild runs the NATS server config (JSON, a natsChildConfig) describes until SIGTERM or
// SIGINT, and returns the process's exit code.
func natsChild(config string) int {
	var c natsChildConfig
	if err := json.Unmarshal([]byte(config), &c); err != nil || c.Index < 0 || c.Index >= len(c.ClusterPorts) {
		fmt.Fprintf(os.Stderr, "%s: %s: want a natsChildConfig (%v)\n", natsChildEnv, config, err)
		return 2
	}
	o := natstest.Member(c.Index, c.Port, c.ClusterPorts, c.StoreDir)
	ns, err := natsserver.NewServer(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.ServerName, err)
		return 2
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		fmt.Fprintf(os.Stderr, "%s: not ready for connections\n", o.ServerName)
		return 1
	}
	<-stop
	ns.Shutdown()
	ns.WaitForShutdown()
	return 0
}
