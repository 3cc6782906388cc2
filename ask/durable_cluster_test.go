package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/validator"
)

// A cluster in one process: Elicitors sharing one store (and, with a relay, forwarding to
// each other), each with a pull-era client of its own, all one caller.
type clusterNode struct {
	el     *ask.Elicitor
	u      *elicittest.User
	starts *atomic.Int32 // the tool's handler starts on this node
	tool   string
}

var personForm = func() *validator.Compiled {
	f, err := validator.Compile(validator.Form{Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true, MinLength: ptr(2)},
		{Name: "age", Type: validator.Integer, Label: "Age", Required: true, Minimum: ptr(18.0)},
	}})
	if err != nil {
		panic(err)
	}
	return f
}()

func ptr[T any](v T) *T { return &v }

// pureTools makes the clusters' tools Pure (TestTheStoreSuitesWithPureTools).
var pureTools bool

// recordBehind sets the clusters' Options.RecordBehind (behind_test.go).
var recordBehind bool

// nodeOptions, if set, changes the options of the clusters' node i (behind_test.go).
var nodeOptions func(i int, o *ask.Options)

// keepAwake has the clusters' calls keep their handlers between rounds (Options.KeepAwake):
// for tests of forwarding, and of what a call that stays awake writes.
var keepAwake bool

// awake sets keepAwake for the test.
func awake(t *testing.T) {
	keepAwake = true
	t.Cleanup(func() { keepAwake = false })
}

func newCluster(t *testing.T, n int, s store.Store, relay store.Relay) []*clusterNode {
	return newClusterOn(t, clock.New(), n, s, relay)
}

func newClusterOn(t *testing.T, clk clock.Clock, n int, s store.Store, relay store.Relay) []*clusterNode {
	return newClusterWith(t, clk, n, s, relay, "contact", func(_ *ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
		return func(ctx context.Context, _ json.RawMessage) (any, error) {
			return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
		}
	})
}

// newClusterWith is a cluster whose replayable tool is named tool and handled as handler
// says, on each node.
func newClusterWith(t *testing.T, clk clock.Clock, n int, s store.Store, relay store.Relay, tool string,
	handler func(el *ask.Elicitor) func(context.Context, json.RawMessage) (any, error)) []*clusterNode {
	t.Helper()
	key := []byte(strings.Repeat("k", 32))
	var nodes []*clusterNode
	for i := range n {
		server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		o := ask.Options{Clock: clk, Timeout: time.Minute, StateKey: key, Store: s, Relay: relay,
			Owner: func(*mcp.CallToolRequest) string { return "caller:test" }, RecordBehind: recordBehind, KeepAwake: keepAwake}
		if nodeOptions != nil {
			nodeOptions(i, &o)
		}
		el := ask.New(server, o)
		t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
		starts := &atomic.Int32{}
		h := handler(el)
		tl := ask.RawTool[struct{}](tool, "", "asks", func(ctx context.Context, args json.RawMessage) (any, error) {
			starts.Add(1)
			return h(ctx, args)
		})
		tl.Replayable, tl.Pure = true, pureTools
		el.Add(server, tl)
		el.AddManagement(server)
		nodes = append(nodes, &clusterNode{el: el, u: elicittest.Connect(t, server, elicittest.Pull), starts: starts, tool: tool})
	}
	return nodes
}

func (n *clusterNode) call(t *testing.T, state string, round int, content map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: n.tool, Arguments: map[string]any{}, RequestState: state}
	if state != "" {
		p.InputResponses = mcp.InputResponseMap{"elicit-" + itoa(round): &mcp.ElicitResult{Action: "accept", Content: content}}
	}
	res, err := n.u.Session.CallTool(failsafe(t), p) // bounded: a call that hangs fails the test
	require.NoError(t, err)
	return res
}

func itoa(n int) string { return string(rune('0' + n)) }

func asked(t *testing.T, res *mcp.CallToolResult) (round int, params *mcp.ElicitParams) {
	t.Helper()
	require.Len(t, res.InputRequests, 1, "one round out: %+v", res.Content)
	for k, v := range res.InputRequests {
		p, ok := v.(*mcp.ElicitParams)
		require.True(t, ok)
		return int(k[len(k)-1] - '0'), p
	}
	return 0, nil
}

// Round 1 on node A, a bad answer on node B (the re-prompt keeps the valid field), the good
// answer on node C: the question completes once, with every answer. With a relay the
// handler stays on A (the retries are forwarded); without one each node takes the call
// over and replays it from the log.
func TestAQuestionMovesAcrossNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		relay store.Relay
		awake bool
	}{{"forwarded", &memory.Relay{}, true}, {"taken over", nil, true}, {"woken", &memory.Relay{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.awake {
				awake(t)
			}
			nodes := newCluster(t, 3, memory.New(memory.Options{}), tc.relay)
			a, b, c := nodes[0], nodes[1], nodes[2]

			first := a.call(t, "", 0, nil)
			r, _ := asked(t, first)
			require.Equal(t, 1, r)

			second := b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
			r, p := asked(t, second)
			require.Equal(t, 2, r)
			assert.Equal(t, []string{"age"}, properties(t, p), "the re-prompt asks only the field at fault")
			assert.Contains(t, p.Message, "Age")

			third := c.call(t, second.RequestState, 2, map[string]any{"age": 36})
			require.Empty(t, third.InputRequests)
			out, err := elicittest.Payload(third)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, out)

			switch {
			case tc.name == "forwarded":
				assert.Equal(t, []int32{1, 0, 0}, []int32{a.starts.Load(), b.starts.Load(), c.starts.Load()}, "forwarded: the handler ran once, on A")
			default:
				// Taken over by B, then by C; or, hibernating, woken on B, then on C, with
				// no forward to the node that asked (it holds no goroutine to forward to).
				assert.Equal(t, []int32{1, 1, 1}, []int32{a.starts.Load(), b.starts.Load(), c.starts.Load()}, "run on A, B, then C")
			}
			if tc.name == "woken" {
				for _, n := range nodes {
					for result, count := range n.el.Counts().Forwards {
						assert.Zero(t, count, "nothing forwarded (%s)", result)
					}
				}
				assert.EqualValues(t, 1, a.el.Counts().Hibernated, "A hibernated round 1")
				assert.EqualValues(t, 1, b.el.Counts().Hibernated, "B hibernated round 2")
				assert.EqualValues(t, 0, c.el.Counts().Hibernated, "C ended it")
			}

			// The winner's identical resend gets its outcome again, on any node; another
			// answer with the same state is a second use.
			for _, n := range nodes {
				again := n.call(t, second.RequestState, 2, map[string]any{"age": 36})
				out, err := elicittest.Payload(again)
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, out)
				used, err := elicittest.Payload(n.call(t, second.RequestState, 2, map[string]any{"age": 40}))
				require.NoError(t, err)
				assert.Equal(t, ask.CodeInvalidRequestState, used["code"])
				assert.Equal(t, "used", used["reason"])
			}
		})
	}
}

// 500 retries of one requestState with different answers, at once, spread over three
// nodes: exactly one goes on, every other hears "used", whichever node it reached.
func TestOneStateIsUsedOnceAcrossNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		relay store.Relay
	}{{"forwarded", &memory.Relay{}}, {"taken over", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := newCluster(t, 3, memory.New(memory.Options{}), tc.relay)
			first := nodes[0].call(t, "", 0, nil)
			const n = 500
			var wg sync.WaitGroup
			var completed, used atomic.Int32
			winner := make(chan int, n)
			for i := range n {
				wg.Go(func() {
					res := nodes[i%3].call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 20 + i})
					p, err := elicittest.Payload(res)
					if !assert.NoError(t, err) {
						return
					}
					switch {
					case p["code"] == nil && p["age"] == float64(20+i):
						completed.Add(1)
						winner <- i
					case p["code"] == ask.CodeInvalidRequestState && p["reason"] == "used":
						used.Add(1)
					default:
						t.Errorf("retry %d on node %d: %v", i, i%3, p)
					}
				})
			}
			wg.Wait()
			require.Equal(t, int32(1), completed.Load(), "exactly one retry completes")
			assert.Equal(t, int32(n-1), used.Load(), "every other one was told the state is used")
			w := <-winner
			for _, node := range nodes {
				p, err := elicittest.Payload(node.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 20 + w}))
				require.NoError(t, err)
				assert.Equal(t, float64(20+w), p["age"], "the winner's identical resend gets its outcome again: %v", p)
			}
		})
	}
}

// A node that stops mid-question (its relay stops answering, as a killed process's does):
// the question goes on on another node, with the answers and attempts it had.
func TestANodeThatStopsHandsItsQuestionsOver(t *testing.T) {
	relay := &memory.Relay{}
	nodes := newCluster(t, 2, memory.New(memory.Options{}), relay)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	second := a.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
	r, _ := asked(t, second)
	require.Equal(t, 2, r)

	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))

	third := b.call(t, second.RequestState, 2, map[string]any{"age": 17})
	r, p := asked(t, third)
	require.Equal(t, 3, r, "a second bad answer: the third and last attempt")
	assert.Equal(t, []string{"age"}, properties(t, p), "the name answered on A is kept")
	assert.Contains(t, p.Message, "Age")
	assert.Equal(t, int32(1), b.starts.Load(), "B replayed the handler")

	last, err := elicittest.Payload(b.call(t, third.RequestState, 3, map[string]any{"age": 15}))
	require.NoError(t, err)
	assert.Equal(t, ask.CodeMaxRetries, last["code"], "the attempts made on A count: %v", last)
}

// A request in flight when its node stops is told to send it again, and the resend goes on
// elsewhere with the answer it brought.
func TestAStoppingNodeLeavesItsQuestionsOpen(t *testing.T) {
	nodes := newCluster(t, 2, memory.New(memory.Options{}), &memory.Relay{})
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	p, err := elicittest.Payload(b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30}))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada", "age": float64(30)}, p)
}

func (n *clusterNode) manage(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := n.u.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	return p
}

// list_elicitations, extend_elicitation and cancel_elicitation reach the caller's questions
// on every node: on the node that holds one while it runs, on its record once it is gone.
func TestManagementReachesEveryNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stopA  bool
		wantOn string
	}{{"A running", false, "A"}, {"A gone", true, "the record"}} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := newCluster(t, 2, memory.New(memory.Options{}), &memory.Relay{})
			a, b := nodes[0], nodes[1]
			first := a.call(t, "", 0, nil)
			_, p := asked(t, first)
			shown, err := time.Parse(time.RFC3339Nano, p.Meta[ask.DeadlineKey].(string))
			require.NoError(t, err)
			if tc.stopA {
				require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
			}

			listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
			require.Len(t, listed, 1, "B lists the question A asked")
			q := listed[0].(map[string]any)
			assert.Equal(t, "contact", q["tool"])
			stats := readStats(t, b.u)
			assert.EqualValues(t, 1, stats["your_open_questions"], "B's stats count the caller's question on A")
			assert.EqualValues(t, 1, stats["your_open_questions_on_other_nodes"])
			id := q["id"].(string)

			ext := b.manage(t, "extend_elicitation", map[string]any{"id": id, "seconds": 600})
			require.Nil(t, ext["code"], "%v", ext)
			moved, err := time.Parse(time.RFC3339, ext["deadline"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, shown.Add(600*time.Second), moved, 2*time.Second, "extended on %s", tc.wantOn)
			listed = b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
			assert.Equal(t, ext["deadline"], listed[0].(map[string]any)["deadline"], "the record moved with it")

			cancelled := b.manage(t, "cancel_elicitation", map[string]any{"id": id})
			require.Equal(t, "cancelled", cancelled["state"], "%v", cancelled)
			res, err := elicittest.Payload(b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30}))
			require.NoError(t, err)
			assert.Equal(t, ask.CodeCancelled, res["code"], "the client's retry hears the question was cancelled: %v", res)
			assert.Empty(t, b.manage(t, "list_elicitations", map[string]any{})["elicitations"])
			again := b.manage(t, "cancel_elicitation", map[string]any{"id": id})
			assert.Equal(t, ask.CodeNotFound, again["code"])
		})
	}
}

// A question past its deadline is a timeout on every node, even when the node that held it
// is gone: its record outlives the deadline, and the node that takes it over replays it
// into a question whose deadline has passed.
func TestADeadlinePassesOnEveryNode(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	nodes := newClusterOn(t, clk, 2, memory.New(memory.Options{Clock: clk}), &memory.Relay{})
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	clk.Add(time.Minute + time.Second) // past the question's one-minute deadline
	p, err := elicittest.Payload(b.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30}))
	require.NoError(t, err)
	assert.Equal(t, ask.CodeTimeout, p["code"], "%v", p)
	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	assert.Empty(t, listed)
}

// A handler that asks something else when replayed (here: what it asks names its node) is
// not answered from the log: the call ends with REPLAY_DIVERGED.
func TestAReplayThatAsksSomethingElseEndsTheCall(t *testing.T) {
	nodes := newClusterWith(t, clock.New(), 2, memory.New(memory.Options{}), nil, "fickle",
		func(el *ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
			return func(ctx context.Context, _ json.RawMessage) (any, error) {
				if _, err := ask.Ask(ctx, ask.Question{Message: "Who are you? (node " + el.Node() + ")", Form: personForm}); err != nil {
					return nil, err
				}
				return ask.Ask(ctx, ask.Question{Message: "And again?", Form: personForm})
			}
		})
	a, b := nodes[0], nodes[1]
	answer := map[string]any{"name": "Ada", "age": 30}
	first := a.call(t, "", 0, nil)
	second := a.call(t, first.RequestState, 1, answer)
	r, _ := asked(t, second)
	require.Equal(t, 2, r)
	out := payload(t, b, second.RequestState, 2, answer)
	assert.Equal(t, ask.CodeReplayDiverged, out["code"], "%v", out)
	assert.Contains(t, out["message"], "round 1")
	again := payload(t, b, second.RequestState, 2, answer)
	assert.Equal(t, ask.CodeReplayDiverged, again["code"], "the resend gets the same end: %v", again)
	fromA := payload(t, a, second.RequestState, 2, answer)
	assert.Equal(t, ask.CodeReplayDiverged, fromA["code"], "on the first node too, from the record: %v", fromA)
}

// A node that stops while a handler works between two asks leaves the call open: the retry
// waiting there hears SERVER_STOPPING, and the same request sent to another node goes on
// with the second question.
func TestAStopBetweenTwoAsksLeavesTheCallOpen(t *testing.T) {
	a, b, first, answer := stopBetweenAsks(t, clock.New(), false)
	again := payload(t, a, first.RequestState, 1, answer)
	assert.Equal(t, ask.CodeStopping, again["code"], "the identical resend, to the stopped node: %v", again)
	r, params := asked(t, b.call(t, first.RequestState, 1, answer))
	assert.Equal(t, 2, r, "the resend, on B, goes on with the second question")
	assert.Equal(t, "And again?", params.Message)
}

// stopBetweenAsks runs a two-question tool on two nodes, A and B, and stops A while the
// first run of its handler works between the questions (until its context ends; giveUp: it
// then returns its context's error, else it asks the second question): the round in
// flight on A must hear SERVER_STOPPING. It returns the nodes, the first round's result
// and the answer sent to it.
func stopBetweenAsks(t *testing.T, clk clock.Clock, giveUp bool) (a, b *clusterNode, first *mcp.CallToolResult, answer map[string]any) {
	t.Helper()
	between := make(chan struct{}, 1)
	var blocked atomic.Bool // only the first run of the handler works until its node stops
	nodes := newClusterWith(t, clk, 2, memory.New(memory.Options{Clock: clk}), &memory.Relay{}, "twostep",
		func(*ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
			return func(ctx context.Context, _ json.RawMessage) (any, error) {
				if _, err := ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm}); err != nil {
					return nil, err
				}
				if blocked.CompareAndSwap(false, true) {
					between <- struct{}{}
					<-ctx.Done() // some work between the two questions, until the node stops
					if giveUp {
						return nil, context.Cause(ctx)
					}
				}
				return ask.Ask(ctx, ask.Question{Message: "And again?", Form: personForm})
			}
		})
	a, b = nodes[0], nodes[1]
	answer = map[string]any{"name": "Ada", "age": 30}
	first = a.call(t, "", 0, nil)
	waiting := make(chan map[string]any, 1)
	go func() { waiting <- payload(t, a, first.RequestState, 1, answer) }()
	<-between
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
	p := <-waiting
	assert.Equal(t, ask.CodeStopping, p["code"], "%v", p)
	return a, b, first, answer
}
