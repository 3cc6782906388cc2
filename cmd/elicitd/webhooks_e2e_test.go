package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/webhook"
)

// receiver is a webhook endpoint that verifies every webhook as docs/webhooks.md's snippet
// does (the Standard Webhooks library, the endpoint's secret, the timestamp's window), and
// keeps each verified event by its webhook-id. While down it answers 503 and keeps nothing.
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	wh  *standardwebhooks.Webhook

	mu     sync.Mutex
	down   bool
	events map[string][]map[string]any // every verified delivery, by webhook-id
	bodies []string
	got    chan string // the id of each verified delivery
	failed chan struct{}
}

func newReceiver(t *testing.T, secret string) *receiver {
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	r := &receiver{t: t, wh: wh, events: map[string][]map[string]any{}, got: make(chan string, 100), failed: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	if down {
		r.failed <- struct{}{}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.t.Errorf("a webhook that does not verify: %v", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	var event map[string]any
	if err := json.Unmarshal(body, &event); err != nil {
		r.t.Errorf("a webhook that is not an event: %s", body)
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	r.events[id] = append(r.events[id], event)
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	r.got <- id
}

func (r *receiver) setDown(down bool) { r.mu.Lock(); r.down = down; r.mu.Unlock() }

// next waits for the next verified delivery and returns its event.
func (r *receiver) next(t *testing.T) (string, map[string]any) {
	t.Helper()
	return r.nextWithin(t, failsafe)
}

// nextWithin is next, waiting at most d.
func (r *receiver) nextWithin(t *testing.T, d time.Duration) (string, map[string]any) {
	t.Helper()
	select {
	case id := <-r.got:
		r.mu.Lock()
		defer r.mu.Unlock()
		evs := r.events[id]
		return id, evs[len(evs)-1]
	case <-time.After(d):
		t.Fatal("no webhook arrived")
		return "", nil
	}
}

// deliveries returns how many times each id was delivered.
func (r *receiver) deliveries() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for id, evs := range r.events {
		n[id] = len(evs)
	}
	return n
}

func webhookArgs(r *receiver, dir string) []string {
	return []string{"--store", "embedded", "--data-dir", dir, "--webhook", r.srv.URL + "/hooks",
		"--webhook-allow-private", "--webhook-answers"}
}

// Every way a question ends sends one event, signed, in both eras: completed (with the
// answers), declined, and a timeout nobody came back for. The answers are never logged, and
// the stats count the deliveries.
func TestWebhooksTellEveryEnd(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	s := startHTTPWith(t, webhookArgs(r, t.TempDir()), "ELICITD_WEBHOOK_SECRET="+secret)

	// Completed, in the pull era: the answers come with it.
	cs, err := connectHTTP(t, s, "", "", accept(map[string]any{"name": "Zelda Quartermain", "age": 41}))
	require.NoError(t, err)
	out, isErr := callTool(t, cs, "ask_user", ageArgs)
	require.False(t, isErr, "%v", out)
	id, ev := r.next(t)
	assert.Equal(t, id, ev["id"], "the webhook-id is the event's id")
	assert.Equal(t, "elicitation.ended", ev["type"])
	assert.Equal(t, "completed", ev["outcome"])
	assert.Equal(t, "ask_user", ev["tool"])
	assert.EqualValues(t, 1, ev["attempts"])
	assert.Equal(t, map[string]any{"name": "Zelda Quartermain", "age": float64(41)}, ev["answers"])
	assert.NotEmpty(t, ev["owner"])
	assert.NotEmpty(t, ev["question_id"])

	// Declined, in the push era.
	push, err := connectHTTP(t, s, "2025-11-25", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	require.NoError(t, err)
	out, _ = callTool(t, push, "ask_user", ageArgs)
	require.Equal(t, "declined", out["status"], "%v", out)
	_, ev = r.next(t)
	assert.Equal(t, "declined", ev["outcome"])
	assert.Nil(t, ev["answers"])

	// A pull-era question whose client never comes back: it ends at its deadline.
	first, err := pullByHand(t, s, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
		Arguments: map[string]any{"message": "Who are you?", "form": ageForm, "timeout_seconds": 1}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	_, ev = r.next(t)
	assert.Equal(t, "timeout", ev["outcome"])

	for id, n := range r.deliveries() {
		assert.Equal(t, 1, n, "event %s delivered once", id)
	}
	// A delivery is counted once its receiver's answer is read, a moment after the receiver
	// has the event.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		stats := readStats(c, cs)
		hooks, _ := stats["webhooks"].(map[string]any)
		assert.Equal(c, float64(3), hooks["delivered"], "the stats count the deliveries: %v", stats)
	}, failsafe, 10*time.Millisecond)
	assert.NotContains(t, s.stderr.String(), "Zelda", "no answer is logged")
}

// readStats reads the elicitd://stats resource.
func readStats(t tester, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "elicitd://stats"})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	var stats map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &stats))
	return stats
}

// An event whose receiver is down stays in the store's outbox: elicitd killed with SIGKILL
// after a failed attempt and started again on the same data directory delivers it, once the
// receiver is back, with the same id.
func TestWebhookEventsOutliveAKilledProcess(t *testing.T) {
	t.Parallel() // it waits a minute for the outbox to hand the event out again
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	r.setDown(true)
	args := webhookArgs(r, t.TempDir())
	before := startHTTPWith(t, args, "ELICITD_WEBHOOK_SECRET="+secret)
	cs, err := connectHTTP(t, before, "", "", accept(map[string]any{"name": "Ada", "age": 36}))
	require.NoError(t, err)
	out, isErr := callTool(t, cs, "ask_user", ageArgs)
	require.False(t, isErr, "%v", out)
	select {
	case <-r.failed:
	case <-time.After(failsafe):
		t.Fatal("the first attempt never came")
	}
	// The failed attempt is handed back to the outbox (with its wait) before it is logged.
	require.Eventually(t, func() bool { return strings.Contains(before.stderr.String(), "webhook attempt failed; retrying") },
		failsafe, 10*time.Millisecond)
	before.kill(t)

	r.setDown(false)
	after := startHTTPWith(t, args, "ELICITD_WEBHOOK_SECRET="+secret)
	// The event was held by the process killed: the outbox hands it out again once its
	// AckWait (a minute) has passed since it was handed out.
	id, ev := r.nextWithin(t, store.DefaultOutboxAckWait+failsafe)
	assert.Equal(t, "completed", ev["outcome"])
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, ev["answers"])
	assert.Equal(t, map[string]int{id: 1}, r.deliveries(), "delivered once, after the restart")
	assert.NotContains(t, after.stderr.String(), "Ada", "no answer is logged")
}

// A receiver that redirects is not followed, to loopback or anywhere: the attempt fails and
// is retried, and the redirect's target never hears from elicitd.
func TestWebhookRedirectsAreNotFollowed(t *testing.T) {
	secret := webhook.NewSecret()
	target := newReceiver(t, secret)
	redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL+"/hooks", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	s := startHTTPWith(t, []string{"--store", "embedded", "--data-dir", t.TempDir(), "--webhook", redirect.URL,
		"--webhook-allow-private"}, "ELICITD_WEBHOOK_SECRET="+secret)
	cs, err := connectHTTP(t, s, "", "", accept(map[string]any{"name": "Ada", "age": 36}))
	require.NoError(t, err)
	_, isErr := callTool(t, cs, "ask_user", ageArgs)
	require.False(t, isErr)
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "webhook attempt failed; retrying") },
		failsafe, 10*time.Millisecond)
	assert.Contains(t, s.stderr.String(), "redirect")
	assert.Empty(t, target.deliveries(), "the redirect was not followed")
}

// Webhook settings that cannot work refuse start-up with one line naming them.
func TestBadWebhookSettingsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no secret", []string{"--webhook", "https://hooks.example.com/e"}, nil, "ELICITD_WEBHOOK_SECRET"},
		{"a bad secret", []string{"--webhook", "https://hooks.example.com/e"}, []string{"ELICITD_WEBHOOK_SECRET=not-a-secret"}, "secret"},
		{"loopback without allow-private", []string{"--webhook", "http://127.0.0.1:9/e"}, []string{"ELICITD_WEBHOOK_SECRET=" + webhook.NewSecret()}, "--webhook-allow-private"},
		{"not a URL", []string{"--webhook", "hooks"}, []string{"ELICITD_WEBHOOK_SECRET=" + webhook.NewSecret()}, `"hooks"`},
		{"answers without a webhook", []string{"--webhook-answers"}, nil, "need --webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runElicitd(t, tc.args, tc.env...)
			require.Error(t, err, "%s", out)
			assert.Equal(t, 2, exitCode(err), "%s", out)
			assert.Contains(t, out, tc.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "one line: %s", out)
		})
	}
}

// Three nodes on a 3-node NATS cluster share one outbox: thirty questions answered across
// them give thirty events, each delivered once; a question whose node is killed mid-way and
// which ends on another node gives one event, with the answers given on both.
func TestWebhooksAcrossThreeNodes(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	urls := natsCluster(t, 3)
	args := []string{"--store", strings.Join(urls, ","), "--store-replicas", "3", "--rate", "0", "--webhook", r.srv.URL + "/hooks",
		"--webhook-allow-private", "--webhook-answers"}
	var nodes []*httpServer
	for range 3 {
		nodes = append(nodes, startHTTPWith(t, args, "ELICITD_WEBHOOK_SECRET="+secret))
	}

	const n = 30
	for i := range n {
		s := nodes[i%3]
		cs, err := connectHTTP(t, s, "", "", accept(map[string]any{"name": "Ada", "age": 20 + i}))
		require.NoError(t, err)
		out, isErr := callTool(t, cs, "ask_user", ageArgs)
		require.False(t, isErr, "%v", out)
	}
	ids := map[string]bool{}
	for range n {
		id, ev := r.next(t)
		assert.Equal(t, "completed", ev["outcome"])
		ids[id] = true
	}
	assert.Len(t, ids, n, "thirty questions, thirty events")

	// Round 1 on A, a bad answer on A; A is killed; the good answer on C, which takes the
	// question over and ends it.
	a, c := nodes[0], nodes[2]
	first, err := pullByHand(t, a, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	require.NoError(t, err)
	second := round(t, a, first.RequestState, 1, map[string]any{"name": "Grace", "age": 12})
	_, fields := askedFields(t, second)
	require.Equal(t, []string{"age"}, fields)
	a.kill(t)
	done := structured(t, round(t, c, second.RequestState, 2, map[string]any{"age": 37}))
	require.Equal(t, "completed", done["status"], "%v", done)
	id, ev := r.next(t)
	assert.Equal(t, map[string]any{"name": "Grace", "age": float64(37)}, ev["answers"])
	assert.EqualValues(t, 2, ev["attempts"], "the bad answer given on A counts")

	for id, got := range r.deliveries() {
		assert.Equal(t, 1, got, "event %s delivered once", id)
	}
	assert.Len(t, r.deliveries(), n+1)
	assert.False(t, ids[id])
}

// A push-era question whose session the host closes ends client_gone, and says so.
func TestWebhookOfAQuestionWhoseClientWentAway(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, secret)
	s := startHTTPWith(t, webhookArgs(r, t.TempDir()), "ELICITD_WEBHOOK_SECRET="+secret)
	require.Less(t, askThenCloseSession(t, s), 300)
	_, ev := r.next(t)
	assert.Equal(t, "client_gone", ev["outcome"])
	assert.Equal(t, "ask_user", ev["tool"])
	assert.Nil(t, ev["answers"])
}
