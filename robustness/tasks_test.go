package robustness

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/tasks"
)

// Task clients: clients of the MCP Tasks extension, each running ask_user's question as a
// task to its end (the call, polls, a refused answer, the right one, polls to the result),
// every request sent to a node picked as a balancer would, and sent again to another when it
// gets no definite answer. A task client's question is judged as a pull-era client's is: it
// completes, with the answers sent, in two attempts, and its webhook event comes once.

var taskClients = flag.Int("robustness.task-clients", 2, "of the eight 2026-07-28 clients, how many run their questions as MCP tasks")

// taskSession is the client's session with node i that declares the extension.
func (c *client) taskSession(ctx context.Context, i int) (*mcp.ClientSession, error) {
	if s := c.tasks[i]; s != nil {
		return s, nil
	}
	caps := tasks.Declare(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}})
	cl := mcp.NewClient(&mcp.Implementation{Name: "robustness-tasks", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: caps,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test")
		}})
	if err := tasks.AddClientMethods(cl); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	s, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: c.l.nodes[i].url(), DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: c.rng.IntN(2) == 0}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		return nil, err
	}
	if c.tasks == nil {
		c.tasks = map[int]*mcp.ClientSession{}
	}
	c.tasks[i] = s
	return s, nil
}

// taskSend sends op to nodes picked in turn until one answers definitely (op says so: a nil
// error, or one that is), or it gives up.
func (c *client) taskSend(q *question, what string, op func(ctx context.Context, s *mcp.ClientSession) (definite bool, err error)) error {
	first := time.Now()
	var trail []string
	for time.Since(first) < giveUp {
		i := c.pick()
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		at := time.Now()
		s, err := c.taskSession(ctx, i)
		if err == nil {
			c.l.started.Add(1)
			var definite bool
			definite, err = op(ctx, s)
			cancel()
			if definite {
				c.l.waits.add(*c.l.fault.Load(), time.Since(first), brief(trail))
				return err
			}
			var je *jsonrpc.Error
			if err != nil && !errors.As(err, &je) {
				_ = s.Close() // the connection failed: a fresh one next time
				delete(c.tasks, i)
			}
		} else {
			cancel()
		}
		trail = append(trail, fmt.Sprintf("node %d at %s: %s: %v (%v)", i, at.Format("15:04:05.000"), what, err, time.Since(at).Round(time.Millisecond)))
		q.trail = strings.Join(trail, "; ")
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: no definite answer within %s", what, giveUp)
}

// taskSeen is what a task client has seen of its task and sent it, to check that the task
// moves only forward: it never asks a round again once that round's answer was taken, nor
// an earlier round than one it asked, and never leaves its end. A key names its round
// ("2-elicit-1": round 2).
type taskSeen struct {
	answered, asked int
	ended           string
}

func roundOf(key string) int {
	r, _ := strconv.Atoi(strings.SplitN(key, "-", 2)[0])
	return r
}

// took notes that the answer to key was taken (tasks/update answered).
func (s *taskSeen) took(key string) { s.answered = max(s.answered, roundOf(key)) }

// see checks d, a tasks/get's answer, against what came before, and says how it moved
// back, if it did.
func (s *taskSeen) see(d *tasks.Detailed) string {
	switch {
	case s.ended != "" && d.Status != s.ended:
		return fmt.Sprintf("the task left its end %s for %s", s.ended, d.Status)
	case d.Status == tasks.Completed || d.Status == tasks.Failed || d.Status == tasks.Cancelled:
		s.ended = d.Status
	case d.Status == tasks.InputRequired:
		for k := range d.InputRequests {
			r := roundOf(k)
			if r < s.asked || r <= s.answered {
				return fmt.Sprintf("the task asked round %d (key %s) after round %d was asked and round %d's answer taken", r, k, s.asked, s.answered)
			}
			s.asked = max(s.asked, r)
		}
	}
	return ""
}

// taskQuestion runs one question as a task to its end.
func (c *client) taskQuestion(key string) *question {
	q := &question{key: key}
	fail := func(format string, args ...any) *question {
		q.failure = fmt.Sprintf(format, args...) + "; its attempts: " + q.trail
		return q
	}
	args := map[string]any{"message": "Who are you? (" + key + ")", "form": form}
	var id string
	err := c.taskSend(q, "the call", func(ctx context.Context, s *mcp.ClientSession) (bool, error) {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
		if err != nil {
			return false, err
		}
		if id = tasks.TaskOf(res); id == "" {
			return false, fmt.Errorf("not a task: %+v", res.StructuredContent)
		}
		return true, nil
	})
	if err != nil {
		return fail("%v", err)
	}
	var seen taskSeen
	// poll polls until the task is input_required (its one key, and the fields its form
	// asks) or ends.
	poll := func(what string) (*tasks.Detailed, error) {
		var d *tasks.Detailed
		for start := time.Now(); time.Since(start) < giveUp; time.Sleep(100 * time.Millisecond) {
			err := c.taskSend(q, what, func(ctx context.Context, s *mcp.ClientSession) (bool, error) {
				var err error
				d, err = tasks.Get(ctx, s, id)
				var je *jsonrpc.Error
				if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
					return true, err // no such task: definite
				}
				return err == nil, err
			})
			if err != nil {
				return nil, err
			}
			if why := seen.see(d); why != "" && q.backward == "" {
				q.backward = why
			}
			if d.Status != "working" {
				return d, nil
			}
		}
		return nil, fmt.Errorf("%s: still working after %s", what, giveUp)
	}
	answer := func(what string, d *tasks.Detailed, content map[string]any) (string, error) {
		if d.Status != "input_required" || len(d.InputRequests) != 1 {
			return "", fmt.Errorf("%s: the task is %s with %d input requests (%+v)", what, d.Status, len(d.InputRequests), d.Error)
		}
		var key, fields string
		for k, raw := range d.InputRequests {
			key = k
			var wire struct {
				Params struct {
					RequestedSchema struct {
						Properties map[string]any `json:"properties"`
					} `json:"requestedSchema"`
				} `json:"params"`
			}
			_ = json.Unmarshal(raw, &wire)
			var names []string
			for name := range wire.Params.RequestedSchema.Properties {
				names = append(names, name)
			}
			slices.Sort(names)
			fields = strings.Join(names, ",")
		}
		err := c.taskSend(q, what, func(ctx context.Context, s *mcp.ClientSession) (bool, error) {
			err := tasks.Update(ctx, s, id, map[string]any{key: map[string]any{"action": "accept", "content": content}})
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
				return true, err
			}
			return err == nil, err
		})
		if err == nil {
			seen.took(key)
		}
		return fields, err
	}
	d, err := poll("the first poll")
	if err != nil {
		return fail("%v", err)
	}
	name := "Ada " + key
	if fields, err := answer("round 1 (age 12, refused)", d, map[string]any{"name": name, "age": 12}); err != nil || fields != "age,name" {
		return fail("round 1: asked %q: %v", fields, err)
	}
	d, err = poll("the poll after round 1")
	if err != nil {
		return fail("%v", err)
	}
	age := 20 + c.rng.IntN(60)
	q.want = map[string]any{"name": name, "age": float64(age)}
	if fields, err := answer("round 2 (the right age)", d, map[string]any{"age": age}); err != nil || fields != "age" {
		return fail("round 2: asked %q: %v", fields, err)
	}
	d, err = poll("the poll after round 2")
	if err != nil {
		return fail("%v", err)
	}
	if d.Status != "completed" || d.Result == nil {
		return fail("the task ended %s (%+v)", d.Status, d.Error)
	}
	b, _ := json.Marshal(d.Result.StructuredContent)
	_ = json.Unmarshal(b, &q.outcome)
	q.completed, q.doneAt = true, time.Now()
	return q
}
