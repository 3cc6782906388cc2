package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/webhook"
)

// blipOutbox is an outbox whose store blips: its Adds go by a script, one step an Add, and
// once the script is done every Add goes through. A "down" step fails as a NATS store does
// while its connection reconnects; a "lost" step adds the event and then fails all the
// same (the ack lost to a connection reset), so the adder cannot know it landed.
type blipOutbox struct {
	*memory.Outbox

	mu     sync.Mutex
	script []string
	tries  int
}

func (b *blipOutbox) Add(ctx context.Context, id string, payload []byte) error {
	b.mu.Lock()
	step := ""
	if len(b.script) > 0 {
		step, b.script = b.script[0], b.script[1:]
	}
	b.tries++
	b.mu.Unlock()
	unavailable := fmt.Errorf("%w: not connected to NATS (reconnecting)", store.ErrUnavailable)
	switch step {
	case "down":
		return unavailable
	case "lost":
		if err := b.Outbox.Add(ctx, id, payload); err != nil {
			return err
		}
		return unavailable
	}
	return b.Outbox.Add(ctx, id, payload)
}

func (b *blipOutbox) attempts() int { b.mu.Lock(); defer b.mu.Unlock(); return b.tries }

// A question that ends while the store is out (its NATS connection reconnecting: three
// adds refused, then one that lands but is reported failed, one more refused) still has
// its event: the end's tool call is not held up, the event is queued once the store is
// back, and the receiver gets it once, under its one id, though it was added twice.
func TestWebhookOfAnEndWhileTheStoreBlips(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the last cleanup: after the receiver's
	mock := clock.NewMock()
	mock.Set(time.Now().Truncate(time.Second))
	mem, err := memory.NewOutbox(memory.OutboxOptions{Clock: mock})
	require.NoError(t, err)
	ob := &blipOutbox{Outbox: mem, script: []string{"down", "down", "down", "lost", "down"}}
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	d, err := webhook.New(webhook.Options{URLs: []string{rcv.srv.URL + "/hooks"}, Secret: secret, Outbox: ob,
		AllowPrivate: true, Answers: true, Clock: mock, Workers: 1, Logger: logger})
	require.NoError(t, err)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		assert.NoError(t, d.Stop(ctx))
	}
	defer stop()

	qid := "Q7KXH2M4ZB3RL6TDWJ5NCA2Y4E"
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		webhookOnEnd(d, logger)(ask.Ending{QuestionID: qid, Key: qid, Tool: "create_shipment", Owner: "owner-digest",
			State: elicitation.Completed, Attempts: 1, Created: mock.Now().Add(-time.Minute), Ended: mock.Now(),
			Answers: map[string]any{"service": "UPS Ground secret-answer"}})
	}()
	select {
	case <-ended:
	case <-time.After(failsafe):
		t.Fatal("the end's tool call was held up by a store that is out")
	}

	// The store comes back as the script runs out; time goes on, a step at a time, until
	// the event arrives (at most the minute a question's end waits for its store).
	want := webhook.EventID(qid)
	bound := mock.Now().Add(time.Minute)
	require.Eventually(t, func() bool {
		if rcv.deliveries()[want] > 0 {
			return true
		}
		if mock.Now().Before(bound) {
			mock.Add(100 * time.Millisecond)
		}
		return false
	}, failsafe, 5*time.Millisecond, "the event of a question that ended while the store was out never arrived (%d adds tried); log:\n%s",
		ob.attempts(), logs.String())

	// Well past any retry and the dedupe of the double add: still one delivery, one id.
	for range 20 {
		mock.Add(10 * time.Second)
	}
	stop()
	assert.Equal(t, map[string]int{want: 1}, rcv.deliveries())
	assert.Empty(t, mem.Pending(), "the event added twice is queued once")
	assert.Equal(t, uint64(1), d.Stats().Delivered)
	assert.NotContains(t, logs.String(), "secret-answer", "an answer was logged")
}
