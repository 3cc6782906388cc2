package natsstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/storetest"
)

// Every test in the package must leave no goroutine behind.
// toxiproxy v2.5.0 may leave a link's noop stub blocked when a toxic comes off a link whose
// connection has closed (health_test.go): the library's goroutine, not a leak of the store's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"))
}

// embedded is a store on an embedded server of its own, in a temporary directory.
func embedded(t testing.TB, lim store.Limits) *natsstore.Store {
	s, err := natsstore.Embedded(context.Background(), natsstore.ServerOptions{Dir: t.TempDir()}, natsstore.Options{Limits: lim})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The NATS store keeps the store contract, on an embedded server; its expiry runs on
// JetStream's TTLs, in real time.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, lim store.Limits) storetest.Harness {
		return storetest.Harness{Store: embedded(t, lim)}
	})
}

// The NATS store is a relay too, on core NATS request/reply.
func TestRelayContract(t *testing.T) { storetest.RunRelay(t, embedded(t, store.Limits{})) }

// Two embedded servers on one data directory would overwrite each other's files: the
// second is refused while the first runs, and starts once it has stopped.
func TestOneServerPerDataDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := natsstore.StartServer(natsstore.ServerOptions{Dir: dir})
	require.NoError(t, err)
	_, err = natsstore.StartServer(natsstore.ServerOptions{Dir: dir})
	require.ErrorContains(t, err, "in use by another running elicitd")
	first.Shutdown()
	again, err := natsstore.StartServer(natsstore.ServerOptions{Dir: dir})
	require.NoError(t, err)
	again.Shutdown()
}
