package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
)

// Every test in the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t *testing.T, lim store.Limits) storetest.Harness {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	s := memory.New(memory.Options{Clock: mock, Limits: lim})
	t.Cleanup(func() { _ = s.Close() })
	return storetest.Harness{Store: s, Clock: mock}
}

// The memory store keeps the store contract, on its injected clock.
func TestContract(t *testing.T) { storetest.Run(t, newStore) }

// Expired records never accumulate: the store's size comes back to what is live, whether
// or not anyone reads the expired records, and with deadlines in any order.
func TestExpiredRecordsDoNotAccumulate(t *testing.T) {
	h := newStore(t, store.Limits{})
	s := h.Store.(*memory.Store)
	ctx := context.Background()
	start := h.Clock.Now()
	const n = 2_000
	for i := range n {
		// Deadlines 1-100 s away, interleaved; every tenth record an hour away.
		life := time.Duration(1+(i*37)%100) * time.Second
		if i%10 == 0 {
			life = time.Hour
		}
		_, err := s.Create(ctx, storetest.Sample("owner", storetest.NewID(), start, start.Add(life)))
		require.NoError(t, err)
	}
	require.Equal(t, n, s.Len())
	h.Clock.Add(100 * time.Second)
	// One Create sweeps every record whose deadline has come.
	_, err := s.Create(ctx, storetest.Sample("owner", storetest.NewID(), start, start.Add(time.Hour)))
	require.NoError(t, err)
	require.Equal(t, n/10+1, s.Len())
	list, err := s.List(ctx, "owner")
	require.NoError(t, err)
	require.Len(t, list, n/10+1)
	h.Clock.Add(time.Hour)
	require.Zero(t, s.Len())
	records, files := s.Bytes()
	require.Zero(t, records)
	require.Zero(t, files)
}

// Replacing one file over and over keeps the store's bookkeeping bounded.
func TestReplacedFilesDoNotAccumulate(t *testing.T) {
	h := newStore(t, store.Limits{})
	s := h.Store.(*memory.Store)
	ctx := context.Background()
	for range 10_000 {
		require.NoError(t, s.PutFile(ctx, "Q1", "scan", strings.NewReader("same name, new bytes")))
	}
	_, files := s.Bytes()
	require.EqualValues(t, len("same name, new bytes"), files)
	require.Less(t, memory.FileQueueLen(s), 200)
}
