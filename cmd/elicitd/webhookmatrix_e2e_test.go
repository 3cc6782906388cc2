package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/webhook"
)

// person answers each question by what its message asks for: "accept" fills the form in,
// "cancel" cancels it, and "wait" is shown the form and answers only when the test lets it
// (too late), or not at all if its request is cancelled (a push-era deadline).
func person(release, gone <-chan struct{}) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		switch m := req.Params.Message; {
		case strings.Contains(m, "accept"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Zelda"}}, nil
		case strings.Contains(m, "cancel"):
			return &mcp.ElicitResult{Action: "cancel"}, nil
		default:
			select {
			case <-ctx.Done():
				return nil, errors.New("no answer")
			case <-gone:
				return nil, errors.New("the test is over")
			case <-release:
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Late"}}, nil
			}
		}
	}
}

// Every question that ends gives its webhook exactly one event, whatever the era, the store
// and the transport: the stdio default (--store memory) dropped every 2026-07-28 end, as no
// record marked them as having gone out (issue 52).
func TestEveryEndGivesOneEventInEveryEraStoreAndTransport(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, st := range []string{"memory", "embedded"} {
			t.Run(transport+"/"+st, func(t *testing.T) {
				t.Parallel()
				everyEndGivesOneEvent(t, transport == "http", st)
			})
		}
	}
}

func everyEndGivesOneEvent(t *testing.T, overHTTP bool, st string) {
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	args := func() []string {
		a := []string{"--rate", "0", "--store", st, "--webhook", r.srv.URL + "/hooks", "--webhook-allow-private"}
		if st == "embedded" {
			a = append(a, "--data-dir", t.TempDir()) // each process its own
		}
		return a
	}
	env := "ELICITD_WEBHOOK_SECRET=" + secret
	release, gone := make(chan struct{}, 1), make(chan struct{})
	defer close(gone) // before the sessions close (t.Cleanup): no handler is left waiting
	var hs *httpServer
	if overHTTP {
		hs = startHTTPWith(t, args(), env)
	}
	told := 0 // events the server that the last session is on has sent
	for _, era := range []struct{ name, version string }{{"pull", ""}, {"push", "2025-11-25"}} {
		var cs *mcp.ClientSession
		if hs != nil {
			var err error
			cs, err = connectHTTP(t, hs, era.version, "", person(release, gone))
			require.NoError(t, err)
		} else {
			cs = start(t, clientSetup{version: era.version, elicit: person(release, gone), args: args(), env: []string{env}}).cs
			told = 0 // a process of its own
		}
		for _, end := range []struct{ ask, status string }{
			{"accept", "completed"},
			{"cancel", "cancelled"},
			{"wait", "timeout"},
		} {
			what := fmt.Sprintf("%s era, %s", era.name, end.ask)
			type reply struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan reply, 1)
			go func() {
				res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
					Arguments: map[string]any{"message": "Please " + end.ask, "form": nameForm, "timeout_seconds": 1}})
				done <- reply{res, err}
			}()
			_, ev := r.next(t)
			told++
			assert.Equal(t, end.status, ev["outcome"], "%s: the event tells how it ended", what)
			assert.Equal(t, "ask_user", ev["tool"], what)
			if end.ask == "wait" && era.name == "pull" {
				release <- struct{}{} // the person answers, after the deadline
			}
			got := <-done
			require.NoError(t, got.err, what)
			assert.Equal(t, end.status, structured(t, got.res)["status"], what)
		}
		// Each question's event went out once, and nothing more comes: the stats count as
		// many deliveries as questions ended, once the last is delivered.
		waitDelivered(t, cs, told)
	}
	n := r.deliveries()
	assert.Len(t, n, 6, "one event per question: three in each era")
	for id, k := range n {
		assert.Equal(t, 1, k, "event %s delivered once", id)
	}
}

// A single node stopped (SIGTERM) and started again on the same store: its push question
// ends shutdown with one event, which the new process (sweeping the old one's roster) does
// not tell again; its 2026-07-28 question is kept across the restart with no event, and
// times out under the new process with one. (An end told again after a restart reached the
// receiver twice: the outbox forgets the ids it delivered before the restart.)
func TestASingleNodeRestartedTellsEachEndOnce(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	args := []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir(), "--webhook", r.srv.URL + "/hooks",
		"--webhook-allow-private"}
	env := "ELICITD_WEBHOOK_SECRET=" + secret
	before := startHTTPWith(t, args, env)

	first, err := pullByHand(t, before, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
		Arguments: map[string]any{"message": "Who?", "form": nameForm, "timeout_seconds": 15}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	asked, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release) // the handler left waiting when the node went; before the session closes
	push, err := connectHTTP(t, before, "2025-11-25", "", neverAnswers(asked, release))
	require.NoError(t, err)
	go func() {
		_, _ = push.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	}()
	select {
	case <-asked:
	case <-time.After(failsafe):
		t.Fatal("the push question was never asked")
	}

	// The push question ends with its node: its event is queued in the store's outbox, and
	// delivered by the old process or, if it left first, by the new one. The new process
	// sweeps the old one's roster within 5 s, and takes the pull question's timer over: it
	// times out 15 s after it was asked.
	require.NoError(t, before.stop(t))
	after := startHTTPWith(t, args, env)
	outcomes := map[string]bool{}
	for range 2 {
		// The timeout's event waits for the new process to start, its first sweep (5 s),
		// the adoption and the delivery: on a 2-core machine running three race-built
		// suites at once, longer than the usual 20 s failsafe (two CI runs failed here).
		_, ev := r.nextWithin(t, 60*time.Second)
		outcomes[fmt.Sprint(ev["outcome"])] = true
	}
	assert.Equal(t, map[string]bool{"shutdown": true, "timeout": true}, outcomes,
		"the push question ended with its node; the pull question timed out under the new process")
	assert.NotContains(t, after.stderr.String(), "is told again", "the end was kept when it was told")
	cs, err := connectHTTP(t, after, "", "", nil)
	require.NoError(t, err)
	// The new process delivered the timeout's event, and the push question's too if the
	// old one left before it could (a CI run saw it do so): no more. Its deliveries are
	// counted once the receiver has answered them.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		hooks, _ := readStats(c, cs)["webhooks"].(map[string]any)
		n, _ := hooks["delivered"].(float64)
		assert.True(c, n == 1 || n == 2, "the new process delivered %v events; want the timeout's, and at most the shutdown's", hooks["delivered"])
	}, failsafe, 10*time.Millisecond)
	open, _ := readStats(t, cs)["open_by_era"].(map[string]any)
	assert.Equal(t, map[string]any{"pull": float64(0), "push": float64(0)}, open,
		"the question the new process took over and ended is no longer open, and was counted open there first")
	n := r.deliveries()
	assert.Len(t, n, 2, "two questions, two events")
	for id, k := range n {
		assert.Equal(t, 1, k, "event %s delivered once", id)
	}
}

// waitDelivered waits until the stats of the server cs is on count n webhook deliveries (a
// delivery is counted once its receiver's answer is read, a moment after the receiver has
// the event).
func waitDelivered(t *testing.T, cs *mcp.ClientSession, n int) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		stats := readStats(c, cs)
		hooks, _ := stats["webhooks"].(map[string]any)
		assert.Equal(c, float64(n), hooks["delivered"], "the stats count every delivery: %v", stats)
	}, failsafe, 10*time.Millisecond)
}
