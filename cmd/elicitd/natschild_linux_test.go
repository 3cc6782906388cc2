package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store/natsstore/natstest"
)

// Three natsChild processes form one cluster: a bucket kept on all three takes a write
// through one server and gives it back through another, and goes on taking writes with one
// of them stopped (SIGTERM), which exits cleanly. BenchmarkMachines runs its NATS servers so.
func TestNATSProcessesFormACluster(t *testing.T) {
	t.Parallel()
	urls, cmds := natsProcesses(t, 3, nil)
	// Each step is tried again while the cluster cannot do it yet (peers still being learned,
	// a leader election after the stop), each try bounded on its own: one slow answer on a
	// loaded machine is "not yet", and only a cluster that never gets there fails.
	try := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 5*time.Second)
	}
	first, third := jsContext(t, urls[0]), jsContext(t, urls[2])
	var kv jetstream.KeyValue
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := try()
		defer cancel()
		b, err := first.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "three", Replicas: 3, Storage: jetstream.FileStorage})
		require.NoError(c, err)
		_, err = b.Put(ctx, "k", []byte("v1"))
		require.NoError(c, err)
		kv = b
	}, clusterFailsafe, 100*time.Millisecond, "a bucket on all three takes a write")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := try()
		defer cancel()
		there, err := third.KeyValue(ctx, "three")
		require.NoError(c, err)
		e, err := there.Get(ctx, "k")
		require.NoError(c, err)
		assert.Equal(c, "v1", string(e.Value()))
	}, clusterFailsafe, 20*time.Millisecond, "the write made through the first server, read through the third")

	require.NoError(t, cmds[1].Process.Signal(syscall.SIGTERM))
	assert.NoError(t, cmds[1].Wait(), "a NATS process stops cleanly on SIGTERM")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := try()
		defer cancel()
		_, err := kv.Put(ctx, "k", []byte("v2"))
		assert.NoError(c, err)
	}, clusterFailsafe, 100*time.Millisecond, "two of three servers still take writes")
}

// natsProcesses starts a NATS cluster of n server processes (this test binary as natsChild,
// with JetStream), gives each one's pid to place (if set) as soon as it has started, and
// returns the servers' client URLs and commands once JetStream has a leader. They are
// stopped (SIGTERM, then waited for) when tb ends.
func natsProcesses(tb testing.TB, n int, place func(i, pid int)) (urls []string, cmds []*exec.Cmd) {
	tb.Helper()
	ports := natstest.FreePorts(tb, 2*n) // for clients, then the cluster's
	for i := range n {
		config, err := json.Marshal(natsChildConfig{Index: i, Port: ports[i], ClusterPorts: ports[n:], StoreDir: tb.TempDir()})
		require.NoError(tb, err)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), natsChildEnv+"="+string(config))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // not left behind by a test killed
		require.NoError(tb, cmd.Start())
		tb.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait() // an error if a test waited for it already
		})
		if place != nil {
			place(i, cmd.Process.Pid)
		}
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		cmds = append(cmds, cmd)
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
	require.NoError(tb, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(tb, err)
	require.Eventually(tb, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the NATS processes form a cluster with a JetStream leader")
	return urls, cmds
}
