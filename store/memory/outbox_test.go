package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
)

func newOutbox(t *testing.T, o store.OutboxOptions) (*memory.Outbox, *clock.Mock) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))
	b, err := memory.NewOutbox(memory.OutboxOptions{Clock: mock, OutboxOptions: o})
	require.NoError(t, err)
	return b, mock
}

// The memory outbox keeps the outbox contract, on its injected clock; every handle is the
// same queue, as every goroutine of one process shares it.
func TestOutboxContract(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T, o store.OutboxOptions) storetest.OutboxHarness {
		b, mock := newOutbox(t, o)
		return storetest.OutboxHarness{Open: func() store.Outbox { return b }, Clock: mock}
	})
}

// Pending shows each event's state: a nakked event's ready time is exactly its delay
// after the nak, on the clock, and a held one's is AckWait after it was handed out.
func TestOutboxPending(t *testing.T) {
	b, mock := newOutbox(t, store.OutboxOptions{AckWait: time.Minute})
	ctx := context.Background()
	start := mock.Now()
	require.NoError(t, b.Add(ctx, "evt_a", []byte("a")))
	require.NoError(t, b.Add(ctx, "evt_b", []byte("b")))
	require.Equal(t, []memory.Pending{{ID: "evt_a", Ready: start}, {ID: "evt_b", Ready: start}}, b.Pending())
	d, err := b.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, memory.Pending{ID: "evt_a", Attempt: 1, Held: true, Ready: start.Add(time.Minute)}, b.Pending()[0])
	mock.Add(time.Second)
	require.NoError(t, d.Nak(ctx, 7*time.Second))
	require.Equal(t, memory.Pending{ID: "evt_a", Attempt: 1, Ready: start.Add(8 * time.Second)}, b.Pending()[0])
}

// A Next waiting on an empty outbox is woken by an Add, and one waiting on a nakked event
// by the clock reaching the end of its delay.
func TestOutboxNextWakes(t *testing.T) {
	b, mock := newOutbox(t, store.OutboxOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan store.Delivery)
	next := func() {
		d, err := b.Next(ctx)
		if err == nil {
			got <- d
		}
		close(got)
	}
	go next()
	require.NoError(t, b.Add(ctx, "evt_a", []byte("a")))
	d := <-got
	require.NotNil(t, d)
	<-got
	require.NoError(t, d.Nak(ctx, time.Hour))

	got = make(chan store.Delivery)
	go next()
	// The clock is moved on until the Next is woken: moved once, it may move before the
	// Next has read it and set its timer, which then waits an hour past the move (a CI run
	// failed so).
	require.Eventually(t, func() bool {
		select {
		case d = <-got:
			return true
		default:
			mock.Add(time.Hour)
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.NotNil(t, d, "handed out again once the delay has passed")
	require.Equal(t, 2, d.Attempt())
	<-got
}

func TestNewOutboxRefusesBadOptions(t *testing.T) {
	_, err := memory.NewOutbox(memory.OutboxOptions{OutboxOptions: store.OutboxOptions{Name: "no.dots"}})
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = memory.NewOutbox(memory.OutboxOptions{OutboxOptions: store.OutboxOptions{MaxAge: time.Minute, DedupeWindow: time.Hour}})
	require.ErrorIs(t, err, store.ErrInvalid)
}
