package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// bin is the elicitd binary, built once for every end-to-end test.
var bin string

func TestMain(m *testing.M) {
	if config := os.Getenv(natsChildEnv); config != "" {
		os.Exit(natsChild(config)) // a NATS server of a benchmark's (natschild_test.go)
	}
	dir, err := os.MkdirTemp("", "elicitd-e2e")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "elicitd")
	// Processes started here keep their questions in memory unless a test says otherwise:
	// with --http the default is a store in the user's data directory, which one process
	// at a time may hold.
	os.Setenv("ELICITD_STORE", "memory")
	if len(raceBuild) > 0 {
		// A race-detecting binary sleeps a second at exit unless told not to.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	if out, err := goBuild(bin, "."); err != nil {
		fmt.Fprintf(os.Stderr, "building elicitd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// goBuild builds pkg into bin, with the race detector when the tests run with it.
func goBuild(bin, pkg string) ([]byte, error) {
	args := append(append([]string{"build"}, raceBuild...), "-o", bin, pkg)
	return exec.Command("go", args...).CombinedOutput()
}

// raceReport is how the race detector starts a report on a program's stderr.
const raceReport = "WARNING: DATA RACE"

// eras are the two ways a client can be answered: the default (2026-07-28, pull) and a
// client pinned to 2025-11-25 (push).
var eras = []struct{ name, version string }{{"pull-2026-07-28", ""}, {"push-2025-11-25", "2025-11-25"}}

// failsafe bounds every wait, so a hang fails the test rather than stalling it.
const failsafe = 20 * time.Second

// clusterFailsafe bounds a wait on a NATS cluster or a server started again: a leader
// election, a reconnect, a question taken over. They take seconds, more on a loaded
// 2-core machine running the whole suite with the race detector.
const clusterFailsafe = 60 * time.Second

// tester is what a check needs of its test: a *testing.T, or a poll's *assert.CollectT. A
// poll (require.EventuallyWithT) runs its condition on a goroutine of its own, where a
// require on the test's t would end that goroutine, not the test, and the poll would wait
// out its bound as if the condition never held: checks made in a poll report to the
// poll's CollectT, a try that failed, tried again.
type tester interface {
	require.TestingT
	Helper()
}

type harness struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *syncBuffer
	stdin  io.WriteCloser // the server's stdin, with pipes
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type clientSetup struct {
	version  string
	elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	progress func(context.Context, *mcp.ProgressNotificationClientRequest)
	// url, when set, declares URL elicitation as well as forms, and hears the
	// notifications/elicitation/complete the server sends.
	url      bool
	complete func(context.Context, *mcp.ElicitationCompleteNotificationRequest)
	caps     *mcp.ClientCapabilities // declared as they are, when set
	noMRTR   bool
	// middleware, when set, wraps the client's handling of what the server sends.
	middleware mcp.Middleware
	args       []string
	env        []string
	pipes      bool // start the process here and talk over its pipes, so a test can cut them
	// tee, with pipes, wraps the server's stdout, so a test can read the wire.
	tee func(io.Reader) io.Reader
}

func start(t *testing.T, c clientSetup) *harness {
	t.Helper()
	h := &harness{stderr: &syncBuffer{}}
	h.cmd = exec.Command(bin, c.args...)
	h.cmd.Env = append(os.Environ(), c.env...)
	h.cmd.Stderr = h.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler:          c.elicit,
		ProgressNotificationHandler: c.progress,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: c.noMRTR},
		ElicitationCompleteHandler:  c.complete,
		Capabilities:                cmp.Or(c.caps, urlCaps(c.url)),
	})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	var transport mcp.Transport = &mcp.CommandTransport{Command: h.cmd}
	if c.pipes {
		stdin, err := h.cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := h.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, h.cmd.Start())
		h.stdin = stdin
		var out io.Reader = stdout
		if c.tee != nil {
			out = c.tee(stdout)
		}
		transport = &mcp.IOTransport{Reader: io.NopCloser(out), Writer: stdin}
	}
	if c.middleware != nil {
		client.AddReceivingMiddleware(c.middleware)
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: c.version})
	require.NoError(t, err)
	h.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		if out := h.stderr.String(); strings.Contains(out, raceReport) {
			t.Errorf("the server raced:\n%s", out)
		}
	})
	return h
}

func accept(content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

var nameForm = map[string]any{"title": "Who", "fields": []any{
	map[string]any{"name": "name", "type": "text", "label": "Name", "required": true},
}}

var weightForm = map[string]any{"title": "Parcel", "fields": []any{
	map[string]any{"name": "weight", "type": "number", "label": "Package weight", "required": true, "exclusive_minimum": 0},
}}

// call calls a tool and returns its structured content as a map.
func (h *harness) call(t tester, ctx context.Context, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return structured(t, res), res.IsError
}

// refused is the payload of a request elicitd refused with a JSON-RPC error (a
// requestState that fails its integrity check): invalid params, the message starting with
// the payload's code, the data the payload.
func refused(t tester, err error) map[string]any {
	t.Helper()
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we, "refused with a JSON-RPC error")
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, we.Code)
	var out map[string]any
	require.NoError(t, json.Unmarshal(we.Data, &out))
	assert.True(t, strings.HasPrefix(we.Message, fmt.Sprint(out["code"])+": "), "%s", we.Message)
	return out
}

func structured(t tester, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var out map[string]any
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	require.NotEmpty(t, res.Content)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok)
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(text.Text), &fromText), "the text is the same JSON")
	assert.Equal(t, out, fromText)
	return out
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	return ctx
}

func TestAskUserAccept(t *testing.T) {
	for _, era := range eras {
		for _, format := range []string{"text", "json"} {
			t.Run(era.name+"/"+format, func(t *testing.T) { askUserAccept(t, era.version, format) })
		}
	}
}

// askUserAccept asks a question that is answered, in a client of version, with logs in
// format: whichever, the answer never reaches them.
func askUserAccept(t *testing.T, version, format string) {
	var asked []string
	h := start(t, clientSetup{version: version, args: []string{"--log-format", format}, elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "  Ada ", "junk": "dropped"}}, nil
	}})
	out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Who are you?", "form": nameForm})
	require.False(t, isErr, "%v", out)
	assert.Equal(t, "completed", out["status"])
	assert.Equal(t, map[string]any{"name": "Ada"}, out["data"])
	assert.EqualValues(t, 1, out["attempts"])
	assert.Equal(t, []string{"Who are you?"}, asked)
	assert.NotContains(t, h.stderr.String(), "Ada", "answers are never logged")
}

func TestAskUserInvalidThenValid(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			var messages []string
			answers := []any{-1.0, 5.0}
			h := start(t, clientSetup{version: era.version, elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				messages = append(messages, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"weight": answers[len(messages)-1]}}, nil
			}})
			out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "How heavy?", "form": weightForm})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"weight": 5.0}, out["data"])
			assert.EqualValues(t, 2, out["attempts"])
			require.Len(t, messages, 2)
			assert.True(t, strings.HasPrefix(messages[1], "Package weight: must be a positive, finite number"), messages[1])
			assert.Contains(t, messages[1], "How heavy?")
		})
	}
}

func TestAskUserDeclineAndCancel(t *testing.T) {
	for _, era := range eras {
		for _, action := range []string{"decline", "cancel"} {
			t.Run(era.name+"/"+action, func(t *testing.T) {
				h := start(t, clientSetup{version: era.version, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: action}, nil
				}})
				out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Who?", "form": nameForm})
				require.False(t, isErr)
				if action == "decline" {
					assert.Equal(t, "declined", out["status"])
				} else {
					assert.Equal(t, "cancelled", out["status"])
					assert.Equal(t, "user_cancelled", out["reason"])
				}
				assert.Nil(t, out["data"])
			})
		}
	}
}

func TestAskUserDeadline(t *testing.T) {
	t.Run("push-2025-11-25", func(t *testing.T) {
		h := start(t, clientSetup{version: "2025-11-25", args: []string{"--timeout", "1s"},
			elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				<-ctx.Done() // the person never answers; the server gives up and cancels the request
				return nil, ctx.Err()
			}})
		out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Who?", "form": nameForm})
		require.False(t, isErr)
		assert.Equal(t, "timeout", out["status"])
		require.Eventually(t, func() bool { return strings.Contains(h.stderr.String(), "state=timeout") }, failsafe, 20*time.Millisecond)
	})
	t.Run("pull-2026-07-28", func(t *testing.T) {
		h := start(t, clientSetup{args: []string{"--timeout", "1s", "--pull-idle", "1h"}, // the deadline, not the idle expiry
			elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				select { // the person answers after the deadline
				case <-time.After(2 * time.Second):
				case <-ctx.Done():
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Late"}}, nil
			}})
		// The late answer's retry gets the result the push era gets: the question timed out.
		out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Who?", "form": nameForm})
		require.False(t, isErr)
		assert.Equal(t, "timeout", out["status"])
	})
}

func TestClientWithoutElicitation(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			h := start(t, clientSetup{version: era.version})
			out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Where to?", "form": weightForm})
			require.True(t, isErr)
			assert.Equal(t, "ELICITATION_UNSUPPORTED", out["code"])
			assert.Equal(t, []any{map[string]any{"dot_path": "weight", "flat_key": "weight", "prompt": "Package weight"}}, out["missing"])
		})
	}
}

func TestSixtyFourConcurrentCalls(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			h := start(t, clientSetup{version: era.version, args: []string{"--rate", "0"},
				elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": req.Params.Message}}, nil
				}})
			ctx := timeout(t)
			var wg sync.WaitGroup
			results := make([]map[string]any, 64)
			for i := range results {
				wg.Go(func() {
					res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user",
						Arguments: map[string]any{"message": fmt.Sprintf("caller-%d", i), "form": nameForm}})
					if assert.NoError(t, err) {
						results[i] = structured(t, res)
					}
				})
			}
			wg.Wait()
			for i, out := range results {
				assert.Equal(t, map[string]any{"name": fmt.Sprintf("caller-%d", i)}, out["data"], "call %d", i)
			}
		})
	}
}

func TestRateLimitAndInvalidForm(t *testing.T) {
	h := start(t, clientSetup{version: "2025-11-25", args: []string{"--rate", "1", "--burst", "1"}, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	out, _ := h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": map[string]any{"fields": []any{}}})
	assert.Equal(t, "INVALID_FORM", out["code"])
	out, _ = h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": map[string]any{"fields": []any{map[string]any{"name": "x", "type": "colour"}}}})
	assert.Contains(t, out["message"], `unknown type "colour"`)
	// Arguments that break ask_user's input schema get the same error shape, naming the argument.
	out, isErr := h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": nameForm, "timeout_seconds": "soon"})
	require.True(t, isErr)
	assert.Equal(t, "INVALID_ARGUMENT", out["code"])
	assert.Equal(t, "invalid_arguments", out["reason"])
	assert.Contains(t, out["message"], `"timeout_seconds" must be a whole number, got "soon"`)
	out, _ = h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": nameForm, "colour": "red"})
	assert.Contains(t, out["message"], `unknown argument "colour"`)

	out, isErr = h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": nameForm})
	require.False(t, isErr, "%v", out)
	out, isErr = h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": nameForm})
	require.True(t, isErr)
	assert.Equal(t, "RATE_LIMITED", out["code"])
}

// Every tool answers arguments that break its input schema with the one error shape (h.call
// checks the structured content and the JSON text agree), naming the argument.
func TestBadArgumentsGetTheToolErrorShape(t *testing.T) {
	h := start(t, clientSetup{version: "2025-11-25", args: []string{"--conformance-fixtures"}, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"ask_user", map[string]any{"message": []any{"m"}, "form": nameForm}, `"message" must be a string`},
		{"list_elicitations", map[string]any{"state": "active"}, `unexpected additional properties ["state"]`},
		{"cancel_elicitation", map[string]any{"id": 5}, `argument "id": type: 5 has type "integer", want "string"`},
		{"cancel_elicitation", map[string]any{}, `missing properties: ["id"]`},
		{"extend_elicitation", map[string]any{"id": "x", "seconds": "soon"}, `argument "seconds": type: soon has type "string", want "integer"`},
		{"create_shipment", map[string]any{"request_body": "x"}, `argument "request_body"`},
		{"rate_shipment", map[string]any{"request_option": "Rate", "request_body": map[string]any{}, "dry_run": "yes"}, `argument "dry_run"`},
		{"test_elicitation", map[string]any{"message": 1}, `argument "message"`},
	} {
		out, isErr := h.call(t, ctx, c.tool, c.args)
		require.True(t, isErr, "%s %v", c.tool, c.args)
		assert.Equal(t, "INVALID_ARGUMENT", out["code"], c.tool)
		assert.Equal(t, "invalid_arguments", out["reason"], c.tool)
		assert.Contains(t, out["message"], c.want, c.tool)
		assert.Equal(t, []any{}, out["missing"], c.tool)
	}
	// Good arguments still reach the tools (defaults and all).
	out, isErr := h.call(t, ctx, "list_elicitations", map[string]any{})
	require.False(t, isErr, "%v", out)
	assert.Equal(t, []any{}, out["elicitations"])
	out, _ = h.call(t, ctx, "cancel_elicitation", map[string]any{"id": "nope"})
	assert.Equal(t, "NOT_FOUND", out["code"])
}

func TestToolCallCancelledMidWait(t *testing.T) {
	asked := make(chan struct{}, 1)
	h := start(t, clientSetup{version: "2025-11-25", elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		<-ctx.Done() // cancelled by the server once the tool call is cancelled
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(timeout(t))
	done := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(failsafe):
		t.Fatal("never asked")
	}
	cancel()
	require.Error(t, <-done)
	// The server ends the elicitation: it leaves the list (polled, since the cancel
	// notification and the list call race over the wire).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		out, _ := h.call(c, ctx, "list_elicitations", map[string]any{})
		assert.Empty(c, out["elicitations"])
	}, failsafe, 20*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(h.stderr.String(), "reason=tool_call_cancelled") }, failsafe, 20*time.Millisecond)
}

func TestManagementToolsPullEra(t *testing.T) {
	h := start(t, clientSetup{noMRTR: true, elicit: accept(map[string]any{"name": "A"})})
	other := start(t, clientSetup{noMRTR: true, elicit: accept(map[string]any{"name": "B"})})
	ctx := timeout(t)
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())

	out, _ := h.call(t, ctx, "list_elicitations", map[string]any{})
	list := out["elicitations"].([]any)
	require.Len(t, list, 1)
	item := list[0].(map[string]any)
	assert.Equal(t, "ask_user", item["tool"])
	assert.Equal(t, "active", item["state"])
	id := item["id"].(string)

	theirs, _ := other.call(t, ctx, "list_elicitations", map[string]any{})
	assert.Empty(t, theirs["elicitations"], "another session sees nothing")
	out, isErr := other.call(t, ctx, "cancel_elicitation", map[string]any{"id": id})
	require.True(t, isErr)
	assert.Equal(t, "NOT_FOUND", out["code"], "nor can it touch it")

	out, isErr = h.call(t, ctx, "extend_elicitation", map[string]any{"id": id, "seconds": 60})
	require.False(t, isErr, "%v", out)
	out, _ = h.call(t, ctx, "extend_elicitation", map[string]any{"id": id, "seconds": 0})
	assert.Equal(t, "INVALID_ARGUMENT", out["code"])
	out, isErr = h.call(t, ctx, "cancel_elicitation", map[string]any{"id": id})
	require.False(t, isErr, "%v", out)
	out, _ = h.call(t, ctx, "list_elicitations", map[string]any{})
	assert.Empty(t, out["elicitations"])

	stats, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "elicitd://stats"})
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(stats.Contents[0].Text), &st))
	assert.EqualValues(t, 1, st["started"])
	assert.Equal(t, map[string]any{"operator": 1.0}, st["cancelled"])
}

func TestRequestStateIsChecked(t *testing.T) {
	// Two servers sharing a state key, so the other session's token passes the MAC check and
	// must be refused for what it binds.
	sharedKey := []string{"ELICITD_STATE_KEY=" + strings.Repeat("k", 32)}
	h := start(t, clientSetup{noMRTR: true, env: sharedKey, elicit: accept(map[string]any{"name": "A"})})
	other := start(t, clientSetup{noMRTR: true, env: sharedKey, elicit: accept(map[string]any{"name": "B"})})
	ctx := timeout(t)
	args := map[string]any{"message": "m", "form": nameForm}
	first, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	require.Len(t, first.InputRequests, 1)
	var key string
	for k := range first.InputRequests {
		key = k
	}
	good := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": ""}}}

	retry := func(cs *mcp.ClientSession, state string, responses mcp.InputResponseMap, a any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: a, RequestState: state, InputResponses: responses})
		require.NoError(t, err)
		if res.NeedsInput() {
			return map[string]any{"needs_input": res}
		}
		return structured(t, res)
	}
	reason := func(out map[string]any) any {
		assert.Equal(t, "INVALID_REQUEST_STATE", out["code"])
		return out["reason"]
	}
	state := first.RequestState
	tampered := state[:len(state)-2] + map[bool]string{true: "AA", false: "AB"}[strings.HasSuffix(state, "AA")]
	for _, forged := range []string{tampered, "bm9wZQ.bm9wZQ"} {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: forged, InputResponses: good})
		assert.Equal(t, "forged", reason(refused(t, err)), "a state that fails its integrity check is refused as a request")
	}
	assert.Equal(t, "foreign", reason(retry(other.cs, state, good, args)), "another session's state never reaches this elicitation")
	assert.Equal(t, "foreign", reason(retry(h.cs, state, good, map[string]any{"message": "other", "form": nameForm})))
	assert.Equal(t, "missing_response", reason(retry(h.cs, state, mcp.InputResponseMap{"elicit-9": good[key]}, args)))

	// A blank name: round 2 is asked.
	second := retry(h.cs, state, good, args)["needs_input"].(*mcp.CallToolResult)
	assert.Contains(t, second.InputRequests, "elicit-2")
	// The round-1 state is used: sent again with the same response (its answer lost, say),
	// it gets the same round 2 again; with another response it is refused.
	resent := retry(h.cs, state, good, args)["needs_input"].(*mcp.CallToolResult)
	assert.Equal(t, second.RequestState, resent.RequestState, "an identical resend gets what the first got")
	other1 := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo"}}}
	assert.Equal(t, "used", reason(retry(h.cs, state, other1, args)))
	// The same arguments encoded differently (key order, spacing) are the same call.
	form, err := json.Marshal(nameForm)
	require.NoError(t, err)
	reencoded := json.RawMessage(`{ "message" : "m", "form": ` + string(form) + ` }`)
	done := retry(h.cs, second.RequestState, mcp.InputResponseMap{"elicit-2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}, reencoded)
	assert.Equal(t, "completed", done["status"])
	// Replaying the finished state is refused.
	assert.Equal(t, "finished", reason(retry(h.cs, second.RequestState, good, args)))
}

func TestPullResponseOfTheWrongKindEndsTheQuestion(t *testing.T) {
	h := start(t, clientSetup{noMRTR: true, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	args := map[string]any{"message": "m", "form": nameForm}
	first, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	// A sampling result where the elicitation's answer belongs (sampling is deprecated, which
	// is why a confused client might still send one).
	//lint:ignore SA1019 the deprecated kind is the point of the test
	wrong := mcp.InputResponseMap{"elicit-1": &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}}
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: first.RequestState, InputResponses: wrong})
	require.NoError(t, err)
	out := structured(t, res)
	assert.Equal(t, "cancelled", out["status"])
	assert.Equal(t, "invalid_response", out["reason"])
	again, _ := h.call(t, ctx, "list_elicitations", map[string]any{})
	assert.Empty(t, again["elicitations"])
}

func TestKeepaliveProgress(t *testing.T) {
	progressed := make(chan string, 16)
	h := start(t, clientSetup{version: "2025-11-25", args: []string{"--keepalive", "100ms"},
		progress: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressed <- req.Params.Message
		},
		elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select { // the person answers once the client has seen that the server is alive
			case <-progressed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}})
	params := &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}}
	params.SetProgressToken("tok-1")
	res, err := h.cs.CallTool(timeout(t), params)
	require.NoError(t, err)
	// The person answers only after a progress notification, so completed proves one came.
	assert.Equal(t, "completed", structured(t, res)["status"])
}

func TestSIGTERMAnswersPendingCalls(t *testing.T) {
	asked := make(chan struct{}, 1)
	h := start(t, clientSetup{version: "2025-11-25", elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	result := make(chan map[string]any, 1)
	go func() {
		res, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
		if err != nil {
			result <- map[string]any{"error": err.Error()}
			return
		}
		result <- structured(t, res)
	}()
	<-asked
	began := time.Now()
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	out := <-result
	assert.Equal(t, "cancelled", out["status"], "%v", out)
	assert.Equal(t, "shutdown", out["reason"])
	_ = h.cs.Close()
	require.NotNil(t, h.cmd.ProcessState)
	assert.Equal(t, 0, h.cmd.ProcessState.ExitCode())
	// At once by design (the call is answered, the exit follows within 1.5 s); a shutdown
	// that waited for the person would wait for ever. Half the failsafe tells them apart with
	// room for a loaded machine.
	assert.Less(t, time.Since(began), failsafe/2)
}

func TestClientGoneMidWait(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			stop := make(chan struct{}) // the "person" in this client, who never answers
			h := start(t, clientSetup{version: era.version, pipes: true, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- struct{}{}
				<-stop
				return nil, errors.New("client stopped")
			}})
			called := make(chan struct{})
			go func() {
				defer close(called)
				_, _ = h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
			}()
			<-asked
			require.NoError(t, h.stdin.Close()) // the client process dies: the server's stdin ends
			exited := make(chan error, 1)
			go func() { exited <- h.cmd.Wait() }()
			select {
			case err := <-exited:
				require.NoError(t, err, "the server exits cleanly (status 0)")
			case <-time.After(failsafe):
				t.Fatal("the server did not exit")
			}
			assert.Contains(t, h.stderr.String(), "reason=client_gone")
			close(stop)
			<-called
		})
	}
}

func TestBadSettingExitsWithStatus2(t *testing.T) {
	cmd := exec.Command(bin, "--max-attempts", "11")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Equal(t, "elicitd: --max-attempts must be a whole number between 1 and 10, got \"11\"\n", stderr.String())

	cmd = exec.Command(bin)
	cmd.Env = append(os.Environ(), "ELICITD_TIMEOUT=forever")
	stderr.Reset()
	cmd.Stderr = &stderr
	require.ErrorAs(t, cmd.Run(), &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, stderr.String(), "ELICITD_TIMEOUT must be a duration between 1s and 24h0m0s")

	// An upload budget that would not fit under the memory limit.
	cmd = exec.Command(bin, "--memory-limit", "134217728", "--max-held-upload-bytes", "100000000")
	stderr.Reset()
	cmd.Stderr = &stderr
	require.ErrorAs(t, cmd.Run(), &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, stderr.String(), "--max-held-upload-bytes (100000000) must leave at least 64 MiB under --memory-limit (134217728)")
}

func TestConformanceFixtures(t *testing.T) {
	answers := map[string]map[string]any{
		"test_elicitation":                  {"username": "testuser", "email": "test@example.com"},
		"test_elicitation_sep1034_defaults": {"name": "Jane Smith", "age": 25.0, "score": 88.0, "status": "inactive", "verified": false},
		"test_elicitation_sep1330_enums": {"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
			"untitledMulti": []any{"option1", "option2"}, "titledMulti": []any{"value1", "value2"}},
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			schemas := map[string]map[string]any{}
			var mu sync.Mutex
			h := start(t, clientSetup{version: era.version, args: []string{"--conformance-fixtures"},
				elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					b, _ := json.Marshal(req.Params.RequestedSchema)
					var s map[string]any
					_ = json.Unmarshal(b, &s)
					props := s["properties"].(map[string]any)
					mu.Lock()
					defer mu.Unlock()
					for tool, a := range answers {
						if _, ok := props[firstKey(a)]; ok {
							schemas[tool] = props
							return &mcp.ElicitResult{Action: "accept", Content: a}, nil
						}
					}
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
			ctx := timeout(t)
			for tool := range answers {
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "Please provide your information"}})
				require.NoError(t, err)
				require.False(t, res.IsError, tool)
				text := res.Content[0].(*mcp.TextContent).Text
				if tool == "test_elicitation" {
					assert.Contains(t, text, "User response: <action: accept, content: {", tool)
				} else {
					assert.Contains(t, text, "Elicitation completed: action=accept, content={", tool)
				}
			}
			legacy := schemas["test_elicitation_sep1330_enums"]["legacyEnum"].(map[string]any)
			assert.Equal(t, []any{"Option One", "Option Two", "Option Three"}, legacy["enumNames"], "sent as given")
			titled := schemas["test_elicitation_sep1330_enums"]["titledSingle"].(map[string]any)
			assert.NotContains(t, titled, "enum")
			assert.Equal(t, 30.0, schemas["test_elicitation_sep1034_defaults"]["age"].(map[string]any)["default"])
			assert.Equal(t, "John Doe", schemas["test_elicitation_sep1034_defaults"]["name"].(map[string]any)["default"])
		})
	}
	// Without the flag the fixtures are not there.
	h := start(t, clientSetup{version: "2025-11-25"})
	tools, err := h.cs.ListTools(timeout(t), nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		assert.False(t, strings.HasPrefix(tool.Name, "test_"), tool.Name)
		assert.NotEqual(t, "json_schema_2020_12_tool", tool.Name)
	}
}

// firstKey returns a key unique to each fixture's answer, to tell the schemas apart.
func firstKey(m map[string]any) string {
	for _, k := range []string{"username", "verified", "legacyEnum"} {
		if _, ok := m[k]; ok {
			return k
		}
	}
	return ""
}
