package tasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/tasks"
	"github.com/elicitd/elicitd/validator"
)

// askNode is a node of elicitd's kind: a go-sdk server whose tool asks through a real
// ask.Elicitor on the shared store, with the extension outside it.
type askNode struct {
	server *mcp.Server
	el     *ask.Elicitor
	tasks  *tasks.Server
	mu     sync.Mutex
	ends   []ask.Ending
}

func newAskNode(t *testing.T, name string, clk clock.Clock, st store.Store, hold chan struct{}) *askNode {
	t.Helper()
	form, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "name", Type: validator.Text, Label: "Name", Required: true}}})
	require.NoError(t, err)
	n := &askNode{server: mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)}
	owner := func(*mcp.CallToolRequest) string { return "caller:test" }
	n.el = ask.New(n.server, ask.Options{Clock: clk, Timeout: time.Hour, StateKey: []byte(strings.Repeat("k", 32)), Store: st,
		Node: name, Owner: owner, OnEnd: func(e ask.Ending) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.ends = append(n.ends, e)
		}})
	tl := ask.RawTool[struct{}]("who", "", "asks a name", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if hold != nil {
			select { // as a slow store would hold it, before it asks
			case <-hold:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: form})
	})
	tl.Replayable, tl.Tasks = true, "optional"
	n.el.Add(n.server, tl)
	n.tasks = tasks.New(tasks.Options{Store: st, Clock: clk, Owner: owner, TTL: 2 * time.Hour,
		SupportOf:   func(name string) tasks.Support { return tasks.Support(n.el.TaskSupport(name)) },
		DeadlineKey: ask.DeadlineKey, Ended: n.el.QuestionEnded, Retryable: ask.Retryable, FirstCalls: n.el})
	require.NoError(t, n.tasks.Install(n.server))
	t.Cleanup(func() {
		n.tasks.Stop()
		require.NoError(t, n.el.Close(context.Background(), elicitation.Shutdown))
		require.NoError(t, n.tasks.Close(context.Background()))
	})
	return n
}

func (n *askNode) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   tasks.Declare(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}),
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	require.NoError(t, tasks.AddClientMethods(c))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := n.server.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := c.Connect(ctxT(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: tasks.PullEra})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// A task's first call, working on node A (its question not asked yet: a slow store, say)
// when A dies, is made again by node B, through the real ask.Elicitor: the person is asked
// once, on B, and answers; the question A's call named is kept from being written when A's
// call gets that far, and no end is told for it.
func TestAFirstCallMadeAgainAsksThePersonOnce(t *testing.T) {
	clkA, clkB, mem := twoClocks(t)
	hold := make(chan struct{})
	a, b := newAskNode(t, "a", clkA, mem, hold), newAskNode(t, "b", clkB, mem, nil)
	ca, cb := a.connect(t), b.connect(t)

	res, err := callPastWindow(t, clkA, ca, "who")
	require.NoError(t, err)
	id := tasks.TaskOf(res)
	require.NotEmpty(t, id, "working past the window: a task")

	// A dies: its clock stops, so its beats end. B takes the task over after 30 s of silence.
	clkB.Add(35 * time.Second)
	var d *tasks.Detailed
	require.Eventually(t, func() bool {
		got, err := tasks.Get(ctxT(t), cb, id)
		if err == nil {
			d = got
		}
		return err == nil && d.Status == tasks.InputRequired
	}, bound, time.Millisecond, "made again on B, which asks")
	require.Len(t, d.InputRequests, 1)

	// A's call goes on to ask now: the question it named is not written.
	close(hold)
	require.Eventually(t, func() bool {
		recs, err := mem.All(context.Background())
		if err != nil {
			return false
		}
		active, ended := 0, 0
		for _, r := range recs {
			if r.Era != "pull" {
				continue
			}
			switch r.State {
			case "active":
				active++
			case "ended":
				ended++
			}
		}
		return active == 1 && ended == 1 // B's question, and A's kept out
	}, bound, time.Millisecond)

	var key string
	for k := range d.InputRequests {
		key = k
	}
	require.NoError(t, tasks.Update(ctxT(t), cb, id, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}))
	require.Eventually(t, func() bool {
		got, err := tasks.Get(ctxT(t), cb, id)
		if err == nil {
			d = got
		}
		return err == nil && d.Status == tasks.Completed
	}, bound, time.Millisecond)
	require.NotNil(t, d.Result)
	assert.Equal(t, map[string]any{"name": "Ada"}, d.Result.StructuredContent)
	a.mu.Lock()
	assert.Empty(t, a.ends, "no end told for the question A's call named")
	a.mu.Unlock()
	b.mu.Lock()
	require.Len(t, b.ends, 1)
	assert.Equal(t, elicitation.Completed, b.ends[0].State)
	b.mu.Unlock()
}
