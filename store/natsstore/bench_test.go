package natsstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/store/storetest"
)

// BenchmarkRound measures what one pull-era round writes: a Create and two
// compare-and-set Updates of a ~1.5 KB record (storetest.Sample), on each store. It reports
// the p50 and p99 latency of each operation and of the whole round, in ns.
//
//	go test -run '^$' -bench BenchmarkRound -benchtime 5000x ./store/natsstore/
func BenchmarkRound(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.Cleanup(func() { _ = s.Close() })
		benchRound(b, s)
	})
	b.Run("embedded", func(b *testing.B) { benchRound(b, embedded(b, store.Limits{})) })
	b.Run("cluster-r3", func(b *testing.B) {
		c := startCluster(b, 3)
		benchRound(b, c.connect(b, 0, natsstore.Options{}))
	})
}

func benchRound(b *testing.B, s store.Store) {
	ctx := context.Background()
	now := time.Now()
	enc, err := json.Marshal(storetest.Sample("owner-0", storetest.NewID(), now, now.Add(time.Hour)))
	require.NoError(b, err)
	var create, cas, round []time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		r := storetest.Sample(fmt.Sprintf("owner-%d", i%100), storetest.NewID(), now, now.Add(time.Hour))
		i++
		t0 := time.Now()
		rev, err := s.Create(ctx, r)
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		create = append(create, t1.Sub(t0))
		r.Revision = rev
		last := t1
		for range 2 {
			r.Claimed++
			r.State = fmt.Sprintf("round-%d", r.Claimed)
			rev, err := s.Update(ctx, r)
			t := time.Now()
			if err != nil {
				b.Fatal(err)
			}
			cas = append(cas, t.Sub(last))
			last = t
			r.Revision = rev
		}
		round = append(round, last.Sub(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(len(enc)), "record-bytes")
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"create", create}, {"cas", cas}, {"round", round}} {
		slices.Sort(m.ds)
		b.ReportMetric(float64(m.ds[len(m.ds)/2].Nanoseconds()), m.name+"-p50-ns")
		b.ReportMetric(float64(m.ds[len(m.ds)*99/100].Nanoseconds()), m.name+"-p99-ns")
	}
}
