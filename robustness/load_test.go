package robustness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The load: clients that run pull-era questions of ask_user to the end (round 1, an answer
// the form refuses, the right answer), each request sent to a node picked as a load
// balancer would, and sent again unchanged to another node when it fails on the way
// (connection refused or reset, no reply in time, STORE_UNAVAILABLE, SERVER_STOPPING, or
// reason moved). Every request of a question is recorded in its history.

var form = map[string]any{"title": "Who", "fields": []any{
	map[string]any{"name": "name", "type": "text", "label": "Name", "required": true, "min_length": 2},
	map[string]any{"name": "age", "type": "integer", "label": "Age", "required": true, "minimum": 18},
}}

// attemptTimeout bounds one attempt of a request, as a load balancer's timeout does.
const attemptTimeout = 8 * time.Second

// giveUp bounds how long a client resends one request before the question counts as lost.
const giveUp = 90 * time.Second

// question is one question's record, as its client saw it.
type question struct {
	key       string
	history   []porcupine.Operation
	completed bool
	outcome   map[string]any // the final result's structured content
	want      map[string]any // the data the answers sent make
	failure   string         // why it did not complete, if it did not
	backward  string         // how a task was seen moving back, if it was (tasks_test.go)
	trail     string         // the attempts of its last request: node, answer, time taken
	doneAt    time.Time      // when its client got the outcome
}

// waits are the longest waits for a definite answer, by the fault injected last before the
// answer came (the fault, or its aftermath: the cluster settling once it is healed).
type waits struct {
	mu      sync.Mutex
	longest map[string]time.Duration
	trail   map[string]string // the attempts of the longest
	count   map[string]int
}

// brief is a trail of attempts for the report: the first and last few, and how many
// between (a client resending through a long outage makes hundreds).
func brief(trail []string) string {
	const ends = 3
	if len(trail) <= 2*ends+1 {
		return strings.Join(trail, "; ")
	}
	return fmt.Sprintf("%s; (%d more); %s", strings.Join(trail[:ends], "; "), len(trail)-2*ends, strings.Join(trail[len(trail)-ends:], "; "))
}

func (w *waits) add(fault string, d time.Duration, trail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d > w.longest[fault] {
		w.longest[fault], w.trail[fault] = d, trail
	}
	w.count[fault]++
}

// load is the clients and what they recorded.
type load struct {
	nodes   []*node
	fault   atomic.Pointer[string] // the fault injected last
	mu      sync.Mutex
	done    []*question
	waits   waits
	started atomic.Int64 // requests sent, attempts included
}

func newLoad(nodes []*node) *load {
	l := &load{nodes: nodes, waits: waits{longest: map[string]time.Duration{}, trail: map[string]string{}, count: map[string]int{}}}
	none := "none"
	l.fault.Store(&none)
	return l
}

func (l *load) setFault(f string) { l.fault.Store(&f) }

// run runs clients until ctx ends; each finishes the question it is on first.
func (l *load) run(ctx context.Context, clients int) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			cl := &client{l: l, id: c, rng: rand.New(rand.NewPCG(uint64(c), 7)), sessions: map[int]*mcp.ClientSession{}}
			defer cl.close()
			asTask := c < *taskClients
			for q := 0; ctx.Err() == nil; q++ {
				var qq *question
				if asTask {
					qq = cl.taskQuestion(fmt.Sprintf("t%d-q%d", c, q))
				} else {
					qq = cl.question(fmt.Sprintf("c%d-q%d", c, q))
				}
				l.mu.Lock()
				l.done = append(l.done, qq)
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

type client struct {
	l        *load
	id       int
	rng      *rand.Rand
	sessions map[int]*mcp.ClientSession
	tasks    map[int]*mcp.ClientSession // a task client's sessions (tasks_test.go)
	last     int
}

func (c *client) close() {
	for _, s := range c.sessions {
		_ = s.Close()
	}
	for _, s := range c.tasks {
		_ = s.Close()
	}
}

// pick is the node the balancer sends the next request to: one it routes to, other than
// the last (a resend goes elsewhere); now and then any node, as a balancer that has not
// yet noticed a node is down.
func (c *client) pick() int {
	var up []int
	for i, n := range c.l.nodes {
		if i != c.last && (n.routed.Load() || c.rng.IntN(10) == 0) {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		return c.rng.IntN(len(c.l.nodes))
	}
	c.last = up[c.rng.IntN(len(up))]
	return c.last
}

func (c *client) session(ctx context.Context, i int) (*mcp.ClientSession, error) {
	if s := c.sessions[i]; s != nil {
		return s, nil
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "robustness", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declares form elicitation; never called, the rounds are answered here.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test")
		}})
	cctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	s, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: c.l.nodes[i].url(), DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: c.rng.IntN(2) == 0}}}, nil)
	if err != nil {
		return nil, err
	}
	if v := s.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		// The SDK falls back to initialize when server/discover fails (a node stopping,
		// say), and a 2025-11-25 session would be asked by push: not what this client tests.
		_ = s.Close()
		return nil, fmt.Errorf("connected with protocol %s", v)
	}
	c.sessions[i] = s
	return s, nil
}

// reply is what one attempt got: its output for the model, and the parts the client uses.
type reply struct {
	out   opOutput
	state string         // the requestState of the round handed out
	body  map[string]any // the structured content of a result that is not a round
}

// send sends p until it gets a definite answer (or gives up): each attempt to a node
// picked anew. Each attempt of a question's request is recorded in q's history.
func (c *client) send(q *question, p *mcp.CallToolParams, in opInput) (reply, bool) {
	first := time.Now()
	var trail []string
	for time.Since(first) < giveUp {
		i := c.pick()
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		at := time.Now()
		s, err := c.session(ctx, i)
		if err != nil {
			cancel()
			trail = append(trail, fmt.Sprintf("node %d: connect: %v (%v)", i, err, time.Since(at).Round(time.Millisecond)))
			time.Sleep(50 * time.Millisecond) // the balancer's pause before the next node
			continue
		}
		c.l.started.Add(1)
		call := time.Now().UnixNano()
		res, err := s.CallTool(ctx, p)
		cancel()
		r := classify(res, err)
		ret := time.Now().UnixNano()
		if err != nil {
			_ = s.Close()
			delete(c.sessions, i)
		}
		if r.out.Kind == outUnknown {
			ret = never // the node may still act on it
		}
		if q != nil && in.Round > 0 {
			in.Node = i
			q.history = append(q.history, porcupine.Operation{ClientId: c.id, Input: in, Call: call, Output: r.out, Return: ret})
		}
		why := fmt.Sprint(r.out)
		if err != nil {
			why = err.Error()
		} else if r.body != nil {
			why = fmt.Sprintf("%v %v", r.out, r.body["reason"])
		}
		trail = append(trail, fmt.Sprintf("node %d at %s: %s (%v)", i, at.Format("15:04:05.000"), why, time.Since(at).Round(time.Millisecond)))
		if q != nil {
			q.trail = strings.Join(trail, "; ")
		}
		if r.out.Kind != outUnknown {
			c.l.waits.add(*c.l.fault.Load(), time.Since(first), brief(trail))
			return r, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return reply{}, false
}

// classify turns a call's result into the model's output.
func classify(res *mcp.CallToolResult, err error) reply {
	if err != nil {
		return reply{out: opOutput{Kind: outUnknown}}
	}
	if res.NeedsInput() {
		for k, v := range res.InputRequests {
			round, _ := strconv.Atoi(strings.TrimPrefix(k, "elicit-"))
			var fields []string
			if p, ok := v.(*mcp.ElicitParams); ok {
				if schema, ok := p.RequestedSchema.(map[string]any); ok {
					for name := range schema["properties"].(map[string]any) {
						fields = append(fields, name)
					}
				}
			}
			slices.Sort(fields)
			return reply{out: opOutput{Kind: outNext, Round: round, Digest: strings.Join(fields, ",")}, state: res.RequestState}
		}
	}
	var body map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &body)
	code, _ := body["code"].(string)
	reason, _ := body["reason"].(string)
	switch {
	case code == "STORE_UNAVAILABLE" || code == "SERVER_STOPPING" || reason == "moved":
		return reply{out: opOutput{Kind: outUnknown}, body: body}
	case code != "":
		return reply{out: opOutput{Kind: outError, Digest: code + "/" + reason}, body: body}
	}
	data, _ := json.Marshal(body["data"])
	return reply{out: opOutput{Kind: outFinal, Digest: fmt.Sprintf("%v/%v %s attempts=%v", body["status"], body["reason"], data, body["attempts"])}, body: body}
}

// question runs one question to its end.
func (c *client) question(key string) *question {
	q := &question{key: key}
	args := map[string]any{"message": "Who are you? (" + key + ")", "form": form}
	call := func(state string, round int, content map[string]any) (reply, bool) {
		p := &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: state}
		resp := ""
		if round > 0 {
			p.InputResponses = mcp.InputResponseMap{fmt.Sprintf("elicit-%d", round): &mcp.ElicitResult{Action: "accept", Content: content}}
			b, _ := json.Marshal(content)
			resp = string(b)
		}
		return c.send(q, p, opInput{Round: round, Resp: resp})
	}
	fail := func(what string, r reply, ok bool) *question {
		if !ok {
			q.failure = what + ": no definite answer within " + giveUp.String()
		} else {
			q.failure = fmt.Sprintf("%s: %v %v", what, r.out, r.body)
		}
		q.failure += "; its attempts: " + q.trail
		return q
	}
	r, ok := call("", 0, nil)
	if !ok || r.out.Kind != outNext || r.out.Round != 1 {
		return fail("the first call", r, ok)
	}
	name := "Ada " + key
	r, ok = call(r.state, 1, map[string]any{"name": name, "age": 12})
	if !ok || r.out.Kind != outNext || r.out.Round != 2 || r.out.Digest != "age" {
		return fail("round 1 (age 12, refused)", r, ok)
	}
	age := 20 + c.rng.IntN(60)
	q.want = map[string]any{"name": name, "age": float64(age)}
	r, ok = call(r.state, 2, map[string]any{"age": age})
	if !ok || r.out.Kind != outFinal {
		return fail("round 2 (the right age)", r, ok)
	}
	q.outcome = r.body
	q.completed, q.doneAt = true, time.Now()
	return q
}
