package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Push-era (2025-11-25) sessions, each pinned to one node as a sticky load balancer pins
// it, answering through the client's elicitation handler; and the webhook receiver every
// node sends its events to. A push question lives in its node's memory: when the node dies,
// the question must end (client_gone, or shutdown on SIGTERM) within 10 s, with its event.

// event is a webhook event as the receiver got it.
type event struct {
	ID       string         `json:"id"`
	Outcome  string         `json:"outcome"`
	Reason   string         `json:"reason"`
	Tool     string         `json:"tool"`
	Created  time.Time      `json:"created"`
	Ended    time.Time      `json:"ended"`
	Answers  map[string]any `json:"answers"`
	received time.Time
}

// hooks is the webhook receiver.
type hooks struct {
	srv        *httptest.Server
	mu         sync.Mutex
	events     map[string]event // by id
	deliveries map[string]int   // by id: more than one is a redelivery
}

func startHooks(t testing.TB) *hooks {
	h := &hooks{events: map[string]event{}, deliveries: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var e event
		if err != nil || json.Unmarshal(b, &e) != nil || e.ID == "" || e.ID != r.Header.Get("webhook-id") {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		e.received = time.Now()
		h.mu.Lock()
		if _, ok := h.events[e.ID]; !ok {
			h.events[e.ID] = e
		}
		h.deliveries[e.ID]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) snapshot() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []event
	for _, e := range h.events {
		out = append(out, e)
	}
	return out
}

// cut is a push question whose node went away while it waited.
type cut struct {
	key  string
	node int
	at   time.Time
	why  string // what the client got
	// asked is when the person was asked: a question asked less than the roster's flush
	// (100 ms) before its node died may go unfound (ask/durable_roster.go), a limit of the design.
	asked time.Time
	// unseen: the call was cut before its prompt reached the client. Its node may have made
	// the question (and a survivor then ends it, client_gone, with an event) or not: its end
	// may match an event, and need not.
	unseen bool
}

// pushLoad is the push-era clients and what they saw.
type pushLoad struct {
	nodes     []*node
	mu        sync.Mutex
	completed map[string]map[string]any // key: the data the question completed with
	doneAt    map[string]time.Time
	want      map[string]map[string]any
	cuts      []cut
	failures  []string
}

func newPushLoad(nodes []*node) *pushLoad {
	return &pushLoad{nodes: nodes, completed: map[string]map[string]any{}, doneAt: map[string]time.Time{}, want: map[string]map[string]any{}}
}

// run runs one pinned client per node until ctx ends.
func (p *pushLoad) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range p.nodes {
		wg.Go(func() { p.client(ctx, i) })
	}
	wg.Wait()
}

func (p *pushLoad) client(ctx context.Context, i int) {
	var mu sync.Mutex
	key, rounds := "", 0
	var asked time.Time
	cl := mcp.NewClient(&mcp.Implementation{Name: "robustness-push", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			rounds++
			if rounds == 1 {
				asked = time.Now()
			}
			// Valid at once: go-sdk's client checks an answer against the form's schema
			// before it sends it, so a push client cannot send one the form refuses.
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada " + key, "age": 40}}, nil
		}})
	var s *mcp.ClientSession
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	for q := 0; ctx.Err() == nil; q++ {
		if s == nil {
			cctx, cancel := context.WithTimeout(ctx, attemptTimeout)
			var err error
			s, err = cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: p.nodes[i].url(), DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			cancel()
			if err != nil {
				s = nil
				time.Sleep(100 * time.Millisecond) // the node is down: try again soon
				continue
			}
		}
		k := fmt.Sprintf("p%d-q%d", i, q)
		mu.Lock()
		key, rounds = k, 0
		mu.Unlock()
		p.mu.Lock()
		p.want[k] = map[string]any{"name": "Ada " + k, "age": float64(40)}
		p.mu.Unlock()
		// No bound of the test's own: the node answers, or its connection drops.
		res, err := s.CallTool(context.WithoutCancel(ctx), &mcp.CallToolParams{Name: "ask_user",
			Arguments: map[string]any{"message": "Who are you? (" + k + ")", "form": form}})
		var body map[string]any
		if err == nil {
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &body)
		}
		mu.Lock()
		wasAsked, askedAt := rounds > 0, asked
		mu.Unlock()
		p.mu.Lock()
		switch {
		case (err != nil || body["code"] != nil) && !wasAsked:
			// Refused (the node stopping: SERVER_STOPPING, or ELICITATION_CANCELLED reason
			// shutdown from a registry already closed), or cut off before it was asked: no
			// question the person saw. One cut off may be a question its node had made.
			if err != nil {
				p.cuts = append(p.cuts, cut{key: k, node: i, at: time.Now(), why: err.Error(), unseen: true})
			}
			_ = s.Close()
			s = nil
		case err != nil, body["reason"] == "shutdown" || body["reason"] == "client_gone":
			why := fmt.Sprint(body)
			if err != nil {
				why = err.Error()
			}
			p.cuts = append(p.cuts, cut{key: k, node: i, at: time.Now(), why: why, asked: askedAt})
			_ = s.Close()
			s = nil
		case body["status"] == "completed":
			data, _ := body["data"].(map[string]any)
			p.completed[k] = data
			p.doneAt[k] = time.Now()
		default:
			p.failures = append(p.failures, fmt.Sprintf("%s on node %d: %v", k, i, body))
		}
		p.mu.Unlock()
	}
}
