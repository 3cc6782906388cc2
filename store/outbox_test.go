package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
)

func TestOutboxOptions(t *testing.T) {
	o := store.OutboxOptions{}.WithDefaults()
	require.Equal(t, store.OutboxOptions{Name: "webhooks", AckWait: time.Minute, MaxAge: 72 * time.Hour, DedupeWindow: time.Hour,
		MaxBytes: 64 << 20, MaxEventBytes: 256 << 10}, o)
	require.NoError(t, o.Check())
	for what, bad := range map[string]store.OutboxOptions{
		"a dotted name":                   {Name: "web.hooks"},
		"a wildcard name":                 {Name: "hooks>"},
		"a long name":                     {Name: strings.Repeat("x", 33)},
		"a dedupe window past the maxage": {MaxAge: time.Minute, DedupeWindow: time.Hour},
		"an event bigger than the outbox": {MaxBytes: 1 << 10, MaxEventBytes: 2 << 10},
	} {
		require.ErrorIs(t, bad.WithDefaults().Check(), store.ErrInvalid, what)
	}
}

func TestValidOutboxID(t *testing.T) {
	for _, id := range []string{"e", "evt_Q7KX_ended", "evt_Q7KX_ended.0a1b2c3d4e5f", "a-b_c=d.e", strings.Repeat("x", 255)} {
		require.True(t, store.ValidOutboxID(id), id)
	}
	for _, id := range []string{"", "a b", "a*", "a>", "a/b", "ü", strings.Repeat("x", 256)} {
		require.False(t, store.ValidOutboxID(id), id)
	}
	require.ErrorIs(t, store.CheckOutboxEvent(store.OutboxOptions{MaxEventBytes: 3}, "e", []byte("abcd")), store.ErrTooLarge)
	require.NoError(t, store.CheckOutboxEvent(store.OutboxOptions{MaxEventBytes: 3}, "e", []byte("abc")))
}
