package natsstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
)

// A link to NATS that goes silent (a blackhole: the TCP connection stays open, nothing
// crosses it) is noticed within seconds: the store says it is unhealthy, and its calls
// fail at once with ErrUnavailable instead of each waiting out its timeout. It is healthy
// again once the link carries traffic. Without pings of its own, the client noticed only
// after the server's ping timeout (minutes), and every call of a node cut off so waited
// 5 s; the robustness suite saw it as requests waiting 7.5 s on such a node.
func TestASilentLinkIsNoticed(t *testing.T) {
	t.Parallel()
	ns := runServer(t, &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	px := toxiproxy.NewProxy(api, "link", "127.0.0.1:0", strings.TrimPrefix(ns.ClientURL(), "nats://"))
	require.NoError(t, px.Start())
	t.Cleanup(px.Stop)
	s, err := natsstore.Connect(context.Background(), natsstore.ConnectOptions{URLs: []string{"nats://" + px.Listen}}, natsstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Healthy())

	for _, stream := range []string{"upstream", "downstream"} {
		_, err := px.Toxics.AddToxicJson(strings.NewReader(`{"name":"hole_` + stream + `","type":"timeout","stream":"` + stream + `","attributes":{"timeout":0}}`))
		require.NoError(t, err)
	}
	// Noticed in 4-6 s (the client's pings); failsafe leaves room for a loaded machine.
	require.Eventually(t, func() bool { return s.Healthy() != nil }, failsafe, 50*time.Millisecond, "the silent link is noticed")
	require.ErrorIs(t, s.Healthy(), store.ErrUnavailable)
	// At once: without asking NATS, long before its context (failsafe) would end it.
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	start := time.Now()
	_, err = s.Get(ctx, "alice", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.ErrorContains(t, err, "not connected", "a call on a link known to be down fails at once")
	require.Less(t, time.Since(start), failsafe/3, "a call on a link known to be down fails at once")

	px.Toxics.ResetToxics(context.Background())
	require.Eventually(t, func() bool { return s.Healthy() == nil }, failsafe, 50*time.Millisecond, "healthy again")
}
