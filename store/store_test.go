package store_test

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store"
)

// Every test in the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A key is q.<owner digest>.<id>, each part one token of a NATS subject whatever the owner
// holds, and one owner's keys share a prefix no other owner's has.
func TestKeys(t *testing.T) {
	token := regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)
	seen := map[string]string{}
	for _, owner := range []string{"alice", "Alice", "a.b.c", "*", ">", "a b", "ünï/cødé", strings.Repeat("x", 10_000), "session-01HZX"} {
		d := store.OwnerDigest(owner)
		require.Regexp(t, token, d, owner)
		require.NotContains(t, seen, d, "two owners, one digest")
		seen[d] = owner
		require.Equal(t, "q."+d+".", store.OwnerPrefix(owner))
		require.Equal(t, "q."+d+".Q1", store.Key(owner, "Q1"))
	}
	require.Equal(t, store.OwnerDigest("alice"), store.OwnerDigest("alice"), "stable")
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"Q", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "a-b_c=d", strings.Repeat("x", 128)} {
		require.True(t, store.ValidID(id), id)
	}
	for _, id := range []string{"", "a.b", "a*", "a>", "a b", "a/b", "ü", strings.Repeat("x", 129)} {
		require.False(t, store.ValidID(id), id)
	}
}

// Encode checks the record, keeps the revision out of the encoding, and refuses a record
// over its size limit; Decode gives the record back at the revision it is told.
func TestEncodeDecode(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	r := store.Record{ID: "Q1", Owner: "alice", Created: now, Deadline: now.Add(time.Hour), Revision: 98765,
		Log: []store.Round{{Prompt: "p1", Answers: []byte(`{"a":1}`), At: now}}}
	b, err := store.Encode(r, now, 1<<10)
	require.NoError(t, err)
	require.NotContains(t, string(b), "98765", "the revision is the store's, not the record's")
	got, err := store.Decode(b, 9)
	require.NoError(t, err)
	require.EqualValues(t, 9, got.Revision)
	require.Equal(t, r.Log, got.Log)
	require.True(t, r.Deadline.Equal(got.Deadline))

	_, err = store.Encode(r, now, len(b)-1)
	require.ErrorIs(t, err, store.ErrTooLarge)
	_, err = store.Encode(r, r.Deadline, 1<<10)
	require.ErrorIs(t, err, store.ErrInvalid, "a deadline that is now has passed")
	_, err = store.Decode([]byte("{"), 1)
	require.Error(t, err)
}

func TestLimitReader(t *testing.T) {
	for _, n := range []int{0, 1, 100, 32 << 10} {
		got, err := io.ReadAll(store.LimitReader(bytes.NewReader(make([]byte, n)), int64(n)))
		require.NoError(t, err, n)
		require.Len(t, got, n)
		_, err = io.ReadAll(store.LimitReader(bytes.NewReader(make([]byte, n+1)), int64(n)))
		require.ErrorIs(t, err, store.ErrTooLarge, n)
	}
}
