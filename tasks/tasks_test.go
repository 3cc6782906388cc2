package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/tasks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const bound = 30 * time.Second // a failsafe: no test waits this long unless it hangs

type idParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type updateParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses"`
}

type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

type detailed struct {
	mcp.ResultBase
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	CreatedAt      time.Time                  `json:"createdAt"`
	LastUpdatedAt  time.Time                  `json:"lastUpdatedAt"`
	TTLMs          json.Number                `json:"ttlMs"`
	PollIntervalMs json.Number                `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         *mcp.CallToolResult        `json:"result"`
	Error          *jsonrpc.Error             `json:"error"`
}

// fixture is a server with the extension, its tools, and a mock clock.
type fixture struct {
	clk    *clock.Mock
	server *mcp.Server
	tasks  *tasks.Server
	// release lets the tool "slow" return; stopped counts the slow calls cancelled.
	release chan struct{}
	stopped atomic.Int32
	hold    chan struct{} // see round2
	busy    atomic.Int32  // see flaky
	hold3   chan struct{} // see round3
	hold1   chan struct{} // see firstBusy
	firsts  atomic.Int32
	closedB atomic.Int32
	// ended says whether the question of "due" has ended; probes counts the looks.
	ended  atomic.Bool
	probes atomic.Int32
	// firsts made of "remakable": the question each named; dropped: DropUnseen's; holdR,
	// when set, holds the first call of "remakable" until the test ends.
	mu      sync.Mutex
	asked   []string
	dropped []string
	holdR   chan struct{}
}

// firstCalls returns the questions the first calls of "remakable" named here, and those
// dropped here.
func (f *fixture) firstCalls() (asked, dropped []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked), slices.Clone(f.dropped)
}

// keyOf is the one key of d's input requests.
func keyOf(d *detailed) string {
	for k := range d.InputRequests {
		return k
	}
	return ""
}

// firstCalls is FirstCalls as ask.Elicitor is: a first call's context names its question,
// and its tool says whether it may be made again.
type firstCalls struct{ f *fixture }

type firstKey struct{}

type first struct {
	question   string
	replayable atomic.Bool
}

func (fc firstCalls) FirstCall(ctx context.Context, question string) (context.Context, func() bool) {
	v := &first{question: question}
	return context.WithValue(ctx, firstKey{}, v), v.replayable.Load
}

func (fc firstCalls) DropUnseen(owner, question string) {
	fc.f.mu.Lock()
	defer fc.f.mu.Unlock()
	fc.f.dropped = append(fc.f.dropped, owner+"/"+question)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return newNode(t, clk, st)
}

// newNode is a fixture on st, which other fixtures may share: another node of a cluster.
func newNode(t *testing.T, clk *clock.Mock, st store.Store) *fixture {
	t.Helper()
	caps := &mcp.ServerCapabilities{}
	tasks.Capabilities(caps)
	f := &fixture{clk: clk, release: make(chan struct{}), hold3: make(chan struct{}), hold1: make(chan struct{})}
	f.server = mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	noArgs := json.RawMessage(`{"type":"object"}`)
	// two asks two questions in one round, and answers once both are answered.
	f.server.AddTool(&mcp.Tool{Name: "two", InputSchema: noArgs}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, okA := req.Params.InputResponses["a"].(*mcp.ElicitResult)
		b, okB := req.Params.InputResponses["b"].(*mcp.ElicitResult)
		if okA && okB {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Content["x"].(string) + "+" + b.Content["x"].(string)}}}, nil
		}
		ask := func(m string) *mcp.ElicitParams {
			return &mcp.ElicitParams{Message: m, RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": ask("A?"), "b": ask("B?")}, RequestState: "state-1"}, nil
	})
	// round2 asks once; the round that answers it waits for hold to close (a node that
	// stops mid-round), unless f.hold is nil.
	f.server.AddTool(&mcp.Tool{Name: "round2", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if a, ok := req.Params.InputResponses["a"].(*mcp.ElicitResult); ok {
			if f.hold != nil {
				<-f.hold
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "got " + a.Content["x"].(string)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "A?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: "r2"}, nil
	})
	// round3 asks a; the round answering it waits on hold3, then asks b; the answer to b is
	// counted in closedB when it is a cancel.
	f.server.AddTool(&mcp.Tool{Name: "round3", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ask := func(key, state string) *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: &mcp.ElicitParams{Message: key + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: state}
		}
		if b, ok := req.Params.InputResponses["b"].(*mcp.ElicitResult); ok {
			if b.Action == "cancel" {
				f.closedB.Add(1)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "b: " + b.Action}}}, nil
		}
		if _, ok := req.Params.InputResponses["a"]; ok {
			<-f.hold3
			return ask("b", "r3b"), nil
		}
		return ask("a", "r3a"), nil
	})
	// firstBusy: its first call waits on hold1 and is "busy" (retryable); the next is served.
	f.server.AddTool(&mcp.Tool{Name: "firstBusy", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if f.firsts.Add(1) == 1 {
			<-f.hold1
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "busy"}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "made"}}}, nil
	})
	// flaky asks once; the round that answers it is "busy" (retryable) the first time.
	f.server.AddTool(&mcp.Tool{Name: "flaky", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := req.Params.InputResponses["a"].(*mcp.ElicitResult); ok {
			if f.busy.Add(1) == 1 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "busy"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "served"}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "A?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: "f"}, nil
	})
	// remakable is replayable: its first call names its question, waits on holdR if set,
	// then asks a.
	f.server.AddTool(&mcp.Tool{Name: "remakable", InputSchema: noArgs}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if a, ok := req.Params.InputResponses["a"].(*mcp.ElicitResult); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "got " + a.Content["x"].(string)}}}, nil
		}
		v, _ := ctx.Value(firstKey{}).(*first)
		if v != nil {
			v.replayable.Store(true)
			f.mu.Lock()
			f.asked = append(f.asked, v.question)
			f.mu.Unlock()
		}
		if f.holdR != nil {
			select {
			case <-f.holdR:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "A?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: "rm"}, nil
	})
	f.server.AddTool(&mcp.Tool{Name: "quick", InputSchema: noArgs}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	f.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: noArgs}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-f.release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "worked"}}}, nil
		case <-ctx.Done():
			f.stopped.Add(1)
			return nil, ctx.Err()
		}
	})
	f.server.AddTool(&mcp.Tool{Name: "broken", InputSchema: noArgs}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-f.release
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "it broke"}
	})
	f.server.AddTool(&mcp.Tool{Name: "plain", InputSchema: noArgs}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "A?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: "s"}, nil
	})
	var sessions atomic.Int32
	var mu sync.Mutex
	owners := map[*mcp.ServerSession]string{}
	ownerOf := func(req *mcp.CallToolRequest) string {
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			return req.Extra.TokenInfo.UserID // over HTTP, the bearer token's (poll_test.go)
		}
		// One caller per session, as elicitd's stdio has it.
		mu.Lock()
		defer mu.Unlock()
		if o, ok := owners[req.Session]; ok {
			return o
		}
		o := "caller-" + string(rune('A'+sessions.Add(1)-1))
		owners[req.Session] = o
		return o
	}
	// due asks with a deadline a minute on; its question has ended once f.ended says so.
	f.server.AddTool(&mcp.Tool{Name: "due", InputSchema: noArgs}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["a"].(*mcp.ElicitResult); ok && r.Action == "cancel" && f.ended.Load() {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "timed out"}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "A?",
			Meta:            mcp.Meta{"deadline": clk.Now().Add(time.Minute).Format(time.RFC3339Nano)},
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}}, RequestState: "s"}, nil
	})
	f.tasks = tasks.New(tasks.Options{Store: st, Clock: clk, Owner: ownerOf, TTL: time.Hour, PollInterval: 500 * time.Millisecond,
		Retryable: func(res *mcp.CallToolResult) bool {
			return res.IsError && len(res.Content) == 1 && res.Content[0].(*mcp.TextContent).Text == "busy"
		},
		FirstCalls: firstCalls{f}, DeadlineKey: "deadline", Ended: func(context.Context, *mcp.CallToolRequest) bool {
			f.probes.Add(1)
			return f.ended.Load()
		}})
	f.tasks.Allow("due", tasks.Optional)
	f.tasks.Allow("two", tasks.Optional)
	f.tasks.Allow("round2", tasks.Optional)
	f.tasks.Allow("flaky", tasks.Optional)
	f.tasks.Allow("round3", tasks.Optional)
	f.tasks.Allow("firstBusy", tasks.Optional)
	f.tasks.Allow("quick", tasks.Optional)
	f.tasks.Allow("remakable", tasks.Optional)
	f.tasks.Allow("slow", tasks.Optional)
	f.tasks.Allow("broken", tasks.Required)
	require.NoError(t, f.tasks.Install(f.server))
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		require.NoError(t, f.tasks.Close(context.Background()))
	})
	return f
}

type client struct {
	cs *mcp.ClientSession
}

func (f *fixture) connect(t *testing.T, extension bool) *client {
	t.Helper()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	if extension {
		caps.AddExtension(tasks.Extension, map[string]any{})
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{Capabilities: caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked")
		}})
	require.NoError(t, mcp.AddSendingCustomMethod[*idParams, *detailed](c, "tasks/get"))
	require.NoError(t, mcp.AddSendingCustomMethod[*updateParams, *ack](c, "tasks/update"))
	require.NoError(t, mcp.AddSendingCustomMethod[*idParams, *ack](c, "tasks/cancel"))
	require.NoError(t, mcp.AddSendingCustomMethod[*idParams, *ack](c, "tasks/list"))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: tasks.PullEra})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return &client{cs: cs}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// call calls tool; for a call that takes longer than the window, it moves the clock on
// until the call has answered.
func (f *fixture) call(t *testing.T, c *client, tool string) (string, *mcp.CallToolResult, error) {
	t.Helper()
	res, err := callPastWindow(t, f.clk, c.cs, tool)
	if err != nil {
		return "", nil, err
	}
	return tasks.TaskOf(res), res, nil
}

// callPastWindow calls tool on cs, moving clk on until the call returns (the window is
// 250 ms).
func callPastWindow(t *testing.T, clk *clock.Mock, cs *mcp.ClientSession, tool string) (*mcp.CallToolResult, error) {
	t.Helper()
	type out struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		done <- out{res, err}
	}()
	var o out
	require.Eventually(t, func() bool {
		select {
		case o = <-done:
			return true
		default:
			clk.Add(50 * time.Millisecond)
			return false
		}
	}, bound, time.Millisecond)
	return o.res, o.err
}

func (c *client) get(t *testing.T, id string) (*detailed, error) {
	t.Helper()
	return mcp.CallCustomMethod[*idParams, *detailed](ctxT(t), c.cs, "tasks/get", &idParams{TaskID: id})
}

func (c *client) until(t *testing.T, id, status string) *detailed {
	t.Helper()
	var d *detailed
	require.Eventually(t, func() bool {
		got, err := c.get(t, id)
		if err != nil {
			return false // a failed look is looked at again
		}
		d = got
		return d.Status == status
	}, bound, time.Millisecond, "task %s never %s", id, status)
	return d
}

func (c *client) update(t *testing.T, id string, answers map[string]any) {
	t.Helper()
	a, err := mcp.CallCustomMethod[*updateParams, *ack](ctxT(t), c.cs, "tasks/update", &updateParams{TaskID: id, InputResponses: answers})
	require.NoError(t, err)
	assert.Equal(t, "complete", a.ResultType)
}

func rpcCode(t *testing.T, err error) int64 {
	t.Helper()
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je), "a JSON-RPC error: %v", err)
	return je.Code
}

func accept(x string) map[string]any {
	return map[string]any{"action": "accept", "content": map[string]any{"x": x}}
}

// A call that asks becomes a task at once, its record written before the handle goes out;
// its questions are answered one at a time: the task stays input_required with the keys
// still open, an answer under an unknown or answered key is ignored, and once both are in
// the call's next round runs and its result is inlined.
func TestAQuestionTaskIsAnsweredKeyByKey(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, res, err := f.call(t, c, "two")
	require.NoError(t, err)
	require.NotEmpty(t, id, "a task: %+v", res)
	assert.Empty(t, res.RequestState, "no requestState in a CreateTaskResult")
	assert.Empty(t, res.InputRequests)

	d, err := c.get(t, id) // at once: durably created
	require.NoError(t, err)
	require.Equal(t, tasks.InputRequired, d.Status)
	assert.Equal(t, "complete", d.ResultType)
	assert.Equal(t, json.Number("3600000"), d.TTLMs, "integer milliseconds")
	assert.Equal(t, json.Number("500"), d.PollIntervalMs)
	require.Len(t, d.InputRequests, 2)
	keys := map[string]string{}
	for k, raw := range d.InputRequests {
		var wire struct {
			Method string           `json:"method"`
			Params mcp.ElicitParams `json:"params"`
		}
		require.NoError(t, json.Unmarshal(raw, &wire))
		assert.Equal(t, "elicitation/create", wire.Method)
		keys[wire.Params.Message] = k
	}
	created := d.LastUpdatedAt

	f.clk.Add(time.Second)
	c.update(t, id, map[string]any{keys["A?"]: accept("1"), "elsewhere": accept("no")})
	d = c.until(t, id, tasks.InputRequired)
	assert.Len(t, d.InputRequests, 1, "only the open key is left")
	assert.Contains(t, d.InputRequests, keys["B?"])
	assert.True(t, d.LastUpdatedAt.After(created))
	c.update(t, id, map[string]any{keys["A?"]: accept("changed")}) // answered already: ignored
	c.update(t, id, map[string]any{keys["B?"]: accept("2")})
	d = c.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	require.Len(t, d.Result.Content, 1)
	assert.Equal(t, "1+2", d.Result.Content[0].(*mcp.TextContent).Text, "the first answer stood")
	assert.Nil(t, d.InputRequests)
}

// A call that completes within the window answers as it is; one that does not ask stays a
// plain result for a client without the extension too.
func TestACallDoneWithinTheWindowIsNoTask(t *testing.T) {
	f := newFixture(t)
	for _, ext := range []bool{true, false} {
		c := f.connect(t, ext)
		id, res, err := f.call(t, c, "quick")
		require.NoError(t, err)
		assert.Empty(t, id)
		require.Len(t, res.Content, 1)
		assert.Equal(t, "done", res.Content[0].(*mcp.TextContent).Text)
	}
	plain := f.connect(t, false)
	id, res, err := f.call(t, plain, "plain")
	require.NoError(t, err)
	assert.Empty(t, id, "no task for a client without the extension")
	assert.Len(t, res.InputRequests, 1, "the pull era's own round")
}

// A call still working when the window ends becomes a task in working; it completes when
// the work does. A cancel stops one that works: the task is cancelled at once, the tool's
// context ends, and what it returns then is dropped.
func TestAWorkingTaskCompletesOrIsCancelled(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "slow")
	require.NoError(t, err)
	require.NotEmpty(t, id)
	d, err := c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Working, d.Status)
	assert.Nil(t, d.Result)

	a, err := mcp.CallCustomMethod[*idParams, *ack](ctxT(t), c.cs, "tasks/cancel", &idParams{TaskID: id})
	require.NoError(t, err)
	assert.Equal(t, "complete", a.ResultType)
	d, err = c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Cancelled, d.Status, "cancelled at once")
	require.Eventually(t, func() bool { return f.stopped.Load() == 1 }, bound, time.Millisecond, "the tool's context ended")
	assert.Equal(t, tasks.Cancelled, c.until(t, id, tasks.Cancelled).Status, "and stays cancelled")

	id, _, err = f.call(t, c, "slow")
	require.NoError(t, err)
	close(f.release)
	d = c.until(t, id, tasks.Completed)
	assert.Equal(t, "worked", d.Result.Content[0].(*mcp.TextContent).Text)
}

// A JSON-RPC error from the tool is a failed task, with the error and no result; a Required
// tool is refused to a client without the extension, naming it.
func TestAProtocolErrorIsAFailedTask(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.call(t, f.connect(t, false), "broken")
	require.Equal(t, int64(mcp.CodeMissingRequiredClientCapabilities), rpcCode(t, err))
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je))
	assert.JSONEq(t, `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`, string(je.Data))

	c := f.connect(t, true)
	id, _, err := f.call(t, c, "broken")
	require.NoError(t, err)
	close(f.release)
	d := c.until(t, id, tasks.Failed)
	assert.Nil(t, d.Result)
	require.NotNil(t, d.Error)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), d.Error.Code)
	assert.Equal(t, "it broke", d.Error.Message)
}

// A task is its caller's: another caller, an id that never was, and a task past its TTL all
// get -32602; the methods refuse a client without the extension; tasks/list is no method.
func TestATaskIsItsCallersOnlyAndOnlyForItsTTL(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "two")
	require.NoError(t, err)

	other := f.connect(t, true)
	_, err = other.get(t, id)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err), "another caller's")
	_, err = c.get(t, "NOSUCHTASK")
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err))
	_, err = c.get(t, "../not an id")
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err))
	without := f.connect(t, false)
	_, err = without.get(t, id)
	assert.Equal(t, int64(mcp.CodeMissingRequiredClientCapabilities), rpcCode(t, err))
	_, err = mcp.CallCustomMethod[*idParams, *ack](ctxT(t), c.cs, "tasks/list", &idParams{})
	assert.Equal(t, int64(jsonrpc.CodeMethodNotFound), rpcCode(t, err))

	f.clk.Add(59 * time.Minute)
	_, err = c.get(t, id)
	require.NoError(t, err, "kept for its ttlMs")
	f.clk.Add(2 * time.Minute)
	_, err = c.get(t, id)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err), "gone after it")
}

// A task waiting for the person past its question's deadline looks whether the question has
// ended (not before); while it has not (extended, say) it looks again a little later, not at
// every poll; once it has, the call's next round runs, and the tool's own result for that end
// completes the task.
func TestATaskPastItsDeadlineEndsWithTheToolsResult(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "due")
	require.NoError(t, err)
	require.NotEmpty(t, id)
	f.clk.Add(30 * time.Second)
	d, err := c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.InputRequired, d.Status)
	assert.Zero(t, f.probes.Load(), "not looked at before its deadline")

	f.clk.Add(time.Minute) // past the deadline; the question goes on (extended)
	for range 3 {
		d, err = c.get(t, id)
		require.NoError(t, err)
		assert.Equal(t, tasks.InputRequired, d.Status)
	}
	assert.EqualValues(t, 1, f.probes.Load(), "looked at once, then again only later")

	f.ended.Store(true)
	f.clk.Add(10 * time.Second)
	d = c.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	assert.Equal(t, "timed out", d.Result.Content[0].(*mcp.TextContent).Text)
	assert.EqualValues(t, 2, f.probes.Load())
}

// A round whose node stops (Stop: what its tools answer as they stop is not the round's
// result) or dies (its beats stop) is run again by the node a tasks/get reaches once the
// node has been silent for 30 s: an identical resend, which completes the task. A first call
// (working, never asked again) whose node dies ends the task failed, with an error that says
// so; before 30 s of silence nothing is taken over.
func TestATaskWhoseNodeStopsIsTakenOver(t *testing.T) {
	clkA, clkB, st := twoClocks(t)
	a, b := newNode(t, clkA, st), newNode(t, clkB, st)
	a.hold = make(chan struct{})
	t.Cleanup(func() { close(a.hold) })
	ca := a.connect(t, true)
	// The same caller on both nodes: the fixture's first session is caller-A on each.
	cb := b.connect(t, true)

	id, _, err := a.call(t, ca, "round2")
	require.NoError(t, err)
	d := ca.until(t, id, tasks.InputRequired)
	key := keyOf(d)
	ca.update(t, id, map[string]any{key: accept("Ada")}) // A runs the round, which hangs
	a.tasks.Stop()                                       // and A stops

	clkB.Add(20 * time.Second)
	d, err = cb.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Working, d.Status, "not taken over before 30 s of silence")
	clkB.Add(15 * time.Second)
	d = cb.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	assert.Equal(t, "got Ada", d.Result.Content[0].(*mcp.TextContent).Text, "B ran the round again")

	// A first call, working on A when A dies (no Stop: its beats just end).
	a2 := newNode(t, clkA, st)
	c2 := a2.connect(t, true)
	first, _, err := a2.call(t, c2, "slow")
	require.NoError(t, err)
	require.NotEmpty(t, first)
	clkB.Add(10 * time.Minute)
	d, err = cb.get(t, first)
	require.NoError(t, err)
	assert.Equal(t, tasks.Failed, d.Status)
	require.NotNil(t, d.Error)
	assert.Contains(t, d.Error.Message, "stopped before it finished")
}

// twoClocks are the clocks of two nodes, A's and B's, set alike and moved apart, and a store
// on B's: A dies when the test stops moving its clock.
func twoClocks(t *testing.T) (clkA, clkB *clock.Mock, st *memory.Store) {
	t.Helper()
	clkA, clkB = clock.NewMock(), clock.NewMock()
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clkA.Set(start)
	clkB.Set(start)
	st = memory.New(memory.Options{Clock: clkB})
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return clkA, clkB, st
}

// The extension's methods sent with no params at all (or null) are refused with invalid
// params; they crashed the process (a nil params struct reached the middleware).
func TestAMethodWithoutParamsIsRefused(t *testing.T) {
	f := newFixture(t)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	conn, err := ct.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx := ctxT(t)
	send := func(id int64, method, params string) {
		t.Helper()
		msg := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `"`
		if params != "" {
			msg += `,"params":` + params
		}
		m, err := jsonrpc.DecodeMessage([]byte(msg + "}"))
		require.NoError(t, err)
		require.NoError(t, conn.Write(ctx, m))
	}
	read := func() *jsonrpc.Response {
		t.Helper()
		m, err := conn.Read(ctx)
		require.NoError(t, err)
		r, ok := m.(*jsonrpc.Response)
		require.True(t, ok, "%T", m)
		return r
	}
	send(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"raw","version":"1"}}`)
	require.Nil(t, read().Error)
	m, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, m))
	for i, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		for j, params := range []string{"", "null"} {
			send(int64(10+2*i+j), method, params)
			r := read()
			require.NotNil(t, r.Error, "%s with params %q", method, params)
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, r.Error), "%s with params %q", method, params)
		}
	}
	send(99, "ping", "")
	assert.Nil(t, read().Error, "the server still answers")
}

// landsThenFails is a store whose next update of a task lands and reports a failure, as a
// write whose answer is lost does.
type landsThenFails struct {
	*memory.Store
	armed atomic.Bool
}

func (s *landsThenFails) Update(ctx context.Context, rec store.Record) (uint64, error) {
	rev, err := s.Store.Update(ctx, rec)
	if err == nil && rec.Era == "task" && s.armed.CompareAndSwap(true, false) {
		return 0, fmt.Errorf("%w: nats: timeout", store.ErrUnavailable)
	}
	return rev, err
}

// The update that claims a round lands though its write reports a failure: nothing runs
// the round, and the node that claimed it runs it once it has been silent for 30 s, rather
// than leave the task working for good (it checked only other nodes' rounds).
func TestAClaimThatLandedUnseenIsRunAfterItsSilence(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	st := &landsThenFails{Store: memory.New(memory.Options{Clock: clk})}
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	f := newNode(t, clk, st)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "round2")
	require.NoError(t, err)
	d := c.until(t, id, tasks.InputRequired)
	key := keyOf(d)
	st.armed.Store(true)
	_, err = mcp.CallCustomMethod[*updateParams, *ack](ctxT(t), c.cs, "tasks/update", &updateParams{TaskID: id,
		InputResponses: map[string]any{key: accept("Ada")}})
	require.Error(t, err, "the client hears the write failed")
	d, err = c.get(t, id)
	require.NoError(t, err)
	require.Equal(t, tasks.Working, d.Status, "the claim landed")
	clk.Add(31 * time.Second)
	d = c.until(t, id, tasks.Completed)
	assert.Equal(t, "got Ada", d.Result.Content[0].(*mcp.TextContent).Text)
}

// An answer the tool could not read is refused at once, naming its key, and the answers
// already given stand.
func TestAnUnreadableAnswerIsRefused(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "two")
	require.NoError(t, err)
	d := c.until(t, id, tasks.InputRequired)
	var keys []string
	for k := range d.InputRequests {
		keys = append(keys, k)
	}
	require.Len(t, keys, 2)
	c.update(t, id, map[string]any{keys[0]: accept("1")})
	_, err = mcp.CallCustomMethod[*updateParams, *ack](ctxT(t), c.cs, "tasks/update", &updateParams{TaskID: id,
		InputResponses: map[string]any{keys[1]: "not a response"}})
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err))
	d, err = c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.InputRequired, d.Status)
	assert.Len(t, d.InputRequests, 1, "the first answer stands")
	c.update(t, id, map[string]any{keys[1]: accept("2")})
	assert.Equal(t, tasks.Completed, c.until(t, id, tasks.Completed).Status)
}

// A round the tools could not serve now (the store away, say: a retryable result) is sent
// again after a pause, not taken for the task's result.
func TestARetryableRoundIsSentAgain(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "flaky")
	require.NoError(t, err)
	d := c.until(t, id, tasks.InputRequired)
	for k := range d.InputRequests {
		c.update(t, id, map[string]any{k: accept("x")})
	}
	require.Eventually(t, func() bool {
		f.clk.Add(200 * time.Millisecond)
		d, err := c.get(t, id)
		return err == nil && d.Status == tasks.Completed
	}, bound, time.Millisecond)
	d, err = c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, "served", d.Result.Content[0].(*mcp.TextContent).Text)
	assert.EqualValues(t, 2, f.busy.Load())
}

// A task cancelled while its round runs, whose round then asks the next question: that
// question, which no one will answer, is ended at once (as the person's cancel would), not
// left open until its deadline.
func TestACancelledRoundsNextQuestionIsEnded(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "round3")
	require.NoError(t, err)
	d := c.until(t, id, tasks.InputRequired)
	for k := range d.InputRequests {
		c.update(t, id, map[string]any{k: accept("x")}) // the round runs, and waits
	}
	_, err = mcp.CallCustomMethod[*idParams, *ack](ctxT(t), c.cs, "tasks/cancel", &idParams{TaskID: id})
	require.NoError(t, err)
	close(f.hold3) // the round goes on to ask b
	require.Eventually(t, func() bool { return f.closedB.Load() == 1 }, bound, time.Millisecond, "b is answered cancel")
	d, err = c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Cancelled, d.Status)
}

// lagging is a replicated store whose replicas have not caught up yet: Get misses every
// task record, GetLatest (the leader) has it.
type lagging struct{ *memory.Store }

func (s lagging) Get(ctx context.Context, owner, id string) (store.Record, error) {
	if strings.HasPrefix(owner, "task:") {
		return store.Record{}, store.ErrNotFound
	}
	return s.Store.Get(ctx, owner, id)
}

func (s lagging) GetLatest(ctx context.Context, owner, id string) (store.Record, error) {
	return s.Store.Get(ctx, owner, id)
}

// A task is read as its latest write left it, not as a replica behind it has it: a tasks/get
// right after the CreateTaskResult finds the task on any node (a robustness run got "no such
// task" from a replica), and a poll after an answer does not show the round answered.
func TestATaskIsReadAsItsLatestWrite(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { require.NoError(t, mem.Close()) })
	f := newNode(t, clk, lagging{mem})
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "two")
	require.NoError(t, err)
	d, err := c.get(t, id)
	require.NoError(t, err, "found at once")
	assert.Equal(t, tasks.InputRequired, d.Status)
}

// A first call that became a task while working, which the tools then answer "could not
// serve now" (the store away: it made nothing), is made again, not taken for the task's
// result (the 10-minute run with task clients saw a task "completed" with
// STORE_UNAVAILABLE before anything was asked).
func TestARetryableFirstCallIsMadeAgain(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	id, _, err := f.call(t, c, "firstBusy")
	require.NoError(t, err)
	require.NotEmpty(t, id, "working past the window: a task")
	close(f.hold1)
	require.Eventually(t, func() bool {
		f.clk.Add(200 * time.Millisecond)
		d, err := c.get(t, id)
		return err == nil && d.Status == tasks.Completed
	}, bound, time.Millisecond)
	d, err := c.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, "made", d.Result.Content[0].(*mcp.TextContent).Text)
	assert.EqualValues(t, 2, f.firsts.Load())
}

// A first call of a replayable tool, working on a node that dies, is made again by the node
// a tasks/get reaches once the beats have stopped: the question the dead node's call may have
// asked, which no client was shown, is dropped first, and the new call names a question of
// its own. A robustness run lost a task so (it ended failed, "call the tool again").
func TestAReplayableFirstCallWhoseNodeDiedIsMadeAgain(t *testing.T) {
	clkA, clkB, st := twoClocks(t)
	a, b := newNode(t, clkA, st), newNode(t, clkB, st)
	a.holdR = make(chan struct{})
	t.Cleanup(func() { close(a.holdR) })
	ca, cb := a.connect(t, true), b.connect(t, true)

	id, _, err := a.call(t, ca, "remakable")
	require.NoError(t, err)
	require.NotEmpty(t, id, "working past the window: a task")
	// A dies: its call hangs, and its beats end.
	clkB.Add(20 * time.Second)
	d, err := cb.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Working, d.Status, "not taken over before 30 s of silence")
	clkB.Add(15 * time.Second)
	d = cb.until(t, id, tasks.InputRequired)
	key := keyOf(d)
	askedA, _ := a.firstCalls()
	askedB, dropped := b.firstCalls()
	require.Len(t, askedA, 1)
	require.Len(t, askedB, 1, "made again on B")
	assert.NotEqual(t, askedA[0], askedB[0], "under a question of its own")
	assert.Equal(t, []string{"caller-A/" + askedA[0]}, dropped, "A's question dropped, as its caller's")

	cb.update(t, id, map[string]any{key: accept("Ada")})
	d = cb.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	assert.Equal(t, "got Ada", d.Result.Content[0].(*mcp.TextContent).Text)
}

// A replayable tool's first call that comes to a result of its own as its node stops is
// recorded, not left to another node to make again: the tool may have acted, and must not
// act twice (a review found it dropped, and run again 30 s later).
func TestAFirstCallThatCompletesAsItsNodeStopsIsNotRunTwice(t *testing.T) {
	clkA, clkB, st := twoClocks(t)
	a, b := newNode(t, clkA, st), newNode(t, clkB, st)
	var runs atomic.Int32
	holdA := make(chan struct{})
	for _, n := range []struct {
		f    *fixture
		hold chan struct{}
	}{{a, holdA}, {b, nil}} {
		n.f.server.AddTool(&mcp.Tool{Name: "acts", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if v, _ := ctx.Value(firstKey{}).(*first); v != nil {
				v.replayable.Store(true)
			}
			if n.hold != nil {
				<-n.hold
			}
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
		n.f.tasks.Allow("acts", tasks.Optional)
	}
	ca, cb := a.connect(t, true), b.connect(t, true)
	id, _, err := a.call(t, ca, "acts")
	require.NoError(t, err)
	require.NotEmpty(t, id)
	a.tasks.Stop()
	close(holdA) // the call acts as A stops
	require.NoError(t, a.tasks.Close(ctxT(t)))
	d, err := cb.get(t, id)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, d.Status, "A recorded its result")
	clkB.Add(35 * time.Second)
	cb.until(t, id, tasks.Completed)
	assert.EqualValues(t, 1, runs.Load(), "run once")
}

// lossy reports the first write of a task record claimed with made 1 failed, though it
// landed (a JetStream proposal committed late).
type lossy struct {
	*memory.Store
	armed atomic.Bool
}

func (s *lossy) Update(ctx context.Context, r store.Record) (uint64, error) {
	rev, err := s.Store.Update(ctx, r)
	if err == nil && r.Era == "task" && strings.Contains(string(r.Task), `"made":1`) && s.armed.CompareAndSwap(true, false) {
		return 0, errors.New("timeout")
	}
	return rev, err
}

// A node taking over a first call drops the question of every call made before it, not the
// last one's only: a node whose claim landed unseen (or that died right after it) never
// dropped its predecessor's (a review found the dead node's question left to time out).
func TestATakeoverDropsEveryQuestionTheFirstCallsNamed(t *testing.T) {
	clkA, clkB, mem := twoClocks(t)
	st := &lossy{Store: mem}
	a, b := newNode(t, clkA, st), newNode(t, clkB, st)
	a.holdR = make(chan struct{})
	t.Cleanup(func() { close(a.holdR) })
	ca, cb := a.connect(t, true), b.connect(t, true)
	id, _, err := a.call(t, ca, "remakable")
	require.NoError(t, err)
	st.armed.Store(true)
	clkB.Add(35 * time.Second)
	_, err = cb.get(t, id) // B's claim lands, its answer lost: B does nothing more
	require.NoError(t, err)
	clkB.Add(35 * time.Second)
	cb.until(t, id, tasks.InputRequired)
	askedA, _ := a.firstCalls()
	_, dropped := b.firstCalls()
	require.Len(t, askedA, 1)
	assert.Contains(t, dropped, "caller-A/"+askedA[0], "A's question dropped too")
}
