package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/elicitd/elicitd/store"
)

// What the store's calls cost, for the metrics: each call of the store the questions are
// kept in is timed, and its failures counted, by operation. The answers a store gives in
// the normal course (no such record, a compare-and-set that lost, a record that exists)
// are not failures.

// storeOps are the operations measured, as the op label names them.
var storeOps = []string{"create", "get", "get_latest", "update", "delete", "list", "all", "put_file", "get_file", "delete_files", "shared"}

// storeMetrics are the store operations' histogram and failure counter.
type storeMetrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	// by op, resolved once: the calls' hot path does no label lookup
	observe map[string]prometheus.Observer
	failed  map[string]prometheus.Counter
}

func newStoreMetrics() *storeMetrics {
	m := &storeMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "elicitd_store_operation_duration_seconds",
			Help: "Time taken by the calls of the store questions are kept in (a NATS round trip, mostly), by operation; its _count is the calls made.",
			// From a local JetStream write (about a millisecond) to a cluster that waits
			// for a leader (seconds).
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "elicitd_store_operation_errors_total",
			Help: "Store calls that failed (unavailable, full, too large, invalid...), by operation; not found, conflict and exists are answers, not failures.",
		}, []string{"op"}),
		observe: map[string]prometheus.Observer{},
		failed:  map[string]prometheus.Counter{},
	}
	for _, op := range storeOps {
		m.observe[op], m.failed[op] = m.duration.WithLabelValues(op), m.errors.WithLabelValues(op)
	}
	return m
}

// done records one call of op that began at start and returned err.
func (m *storeMetrics) done(op string, start time.Time, err error) {
	m.observe[op].Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrExists) {
		m.failed[op].Inc()
	}
}

// fullStore is the store elicitd opens (natsstore.Store): a Store that also replicates, tells
// its health, relays between nodes and keeps an outbox.
type fullStore interface {
	store.Store
	store.Replicated
	store.HealthChecker
	store.Scanner
	store.Relay
	outboxer
}

// measuredStore is a fullStore whose Store calls are measured; the relay and the outbox
// pass through.
type measuredStore struct {
	fullStore
	m *storeMetrics
}

// measure returns st with its calls measured into m, when st is a fullStore; else st as it
// is (nil stays nil).
func measure(st store.Store, m *storeMetrics) store.Store {
	if fs, ok := st.(fullStore); ok && m != nil {
		return &measuredStore{fullStore: fs, m: m}
	}
	return st
}

func (s *measuredStore) Create(ctx context.Context, r store.Record) (uint64, error) {
	start := time.Now()
	rev, err := s.fullStore.Create(ctx, r)
	s.m.done("create", start, err)
	return rev, err
}

func (s *measuredStore) Get(ctx context.Context, owner, id string) (store.Record, error) {
	start := time.Now()
	r, err := s.fullStore.Get(ctx, owner, id)
	s.m.done("get", start, err)
	return r, err
}

func (s *measuredStore) GetLatest(ctx context.Context, owner, id string) (store.Record, error) {
	start := time.Now()
	r, err := s.fullStore.GetLatest(ctx, owner, id)
	s.m.done("get_latest", start, err)
	return r, err
}

func (s *measuredStore) Update(ctx context.Context, r store.Record) (uint64, error) {
	start := time.Now()
	rev, err := s.fullStore.Update(ctx, r)
	s.m.done("update", start, err)
	return rev, err
}

func (s *measuredStore) Delete(ctx context.Context, owner, id string, rev uint64) error {
	start := time.Now()
	err := s.fullStore.Delete(ctx, owner, id, rev)
	s.m.done("delete", start, err)
	return err
}

func (s *measuredStore) All(ctx context.Context) ([]store.Record, error) {
	start := time.Now()
	rs, err := s.fullStore.All(ctx)
	s.m.done("all", start, err)
	return rs, err
}

func (s *measuredStore) List(ctx context.Context, owner string) ([]store.Record, error) {
	start := time.Now()
	rs, err := s.fullStore.List(ctx, owner)
	s.m.done("list", start, err)
	return rs, err
}

func (s *measuredStore) PutFile(ctx context.Context, questionID, name string, r io.Reader) error {
	start := time.Now()
	err := s.fullStore.PutFile(ctx, questionID, name, r)
	s.m.done("put_file", start, err)
	return err
}

// GetFile is timed to the file's opening, not to its reading.
func (s *measuredStore) GetFile(ctx context.Context, questionID, name string) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := s.fullStore.GetFile(ctx, questionID, name)
	s.m.done("get_file", start, err)
	return rc, err
}

func (s *measuredStore) DeleteFiles(ctx context.Context, questionID string) error {
	start := time.Now()
	err := s.fullStore.DeleteFiles(ctx, questionID)
	s.m.done("delete_files", start, err)
	return err
}

func (s *measuredStore) Shared(ctx context.Context, name string, value []byte) ([]byte, error) {
	start := time.Now()
	v, err := s.fullStore.Shared(ctx, name, value)
	s.m.done("shared", start, err)
	return v, err
}
