package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/tasks"
)

// taskClient is a go-sdk client session that speaks the extension.
type taskClient struct{ cs *mcp.ClientSession }

func tasksCaps() *mcp.ClientCapabilities {
	return tasks.Declare(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}})
}

// newTaskClient is a 2026-07-28 go-sdk client that declares the extension and answers input
// requests itself (its multi round-trip off), connected over transport.
func newTaskClient(t *testing.T, transport mcp.Transport) *taskClient {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-tasks", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: tasksCaps(),
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test, through tasks/update")
		}})
	require.NoError(t, tasks.AddClientMethods(client))
	cs, err := client.Connect(timeout(t), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &taskClient{cs: cs}
}

func httpTransport(s *httpServer, rt http.RoundTripper) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: rt}}
}

// call calls tool and returns the task id it became ("" for a plain result) and the result.
func (c *taskClient) call(t *testing.T, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := c.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return tasks.TaskOf(res), res
}

func (c *taskClient) get(t *testing.T, id string) *tasks.Detailed {
	t.Helper()
	d, err := mcp.CallCustomMethod[*tasks.IDParams, *tasks.Detailed](timeout(t), c.cs, "tasks/get", &tasks.IDParams{TaskID: id})
	require.NoError(t, err)
	return d
}

// until polls task id until its status is want, or a terminal one.
func (c *taskClient) until(t *testing.T, id, want string) *tasks.Detailed {
	t.Helper()
	var d *tasks.Detailed
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		got, err := mcp.CallCustomMethod[*tasks.IDParams, *tasks.Detailed](ctx, c.cs, "tasks/get", &tasks.IDParams{TaskID: id})
		if err != nil {
			return false // a slow or failed look is looked at again
		}
		d = got
		return d.Status == want || d.Status == tasks.Completed || d.Status == tasks.Failed || d.Status == tasks.Cancelled
	}, failsafe, 20*time.Millisecond)
	return d
}

func (c *taskClient) update(t *testing.T, id string, answers map[string]any) {
	t.Helper()
	a, err := mcp.CallCustomMethod[*tasks.UpdateParams, *tasks.Ack](timeout(t), c.cs, "tasks/update", &tasks.UpdateParams{TaskID: id, InputResponses: answers})
	require.NoError(t, err)
	assert.Equal(t, "complete", a.ResultType)
}

// elicitOf decodes input request raw as an elicitation/create.
func elicitOf(t *testing.T, raw json.RawMessage) *mcp.ElicitParams {
	t.Helper()
	var wire struct {
		Method string           `json:"method"`
		Params mcp.ElicitParams `json:"params"`
	}
	require.NoError(t, json.Unmarshal(raw, &wire))
	require.Equal(t, "elicitation/create", wire.Method)
	return &wire.Params
}

// The question that ask_user asks becomes a task, over HTTP and over stdio: the call comes
// back at once as a task waiting for the person, with the form the pull era would ask; a
// wrong answer puts it back to input_required under a new key with the field's error; the
// right one completes it, with ask_user's result inlined. The task is its caller's only.
func TestAQuestionAsATask(t *testing.T) {
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T) (*taskClient, func(t *testing.T) *taskClient)
	}{
		{"http", func(t *testing.T) (*taskClient, func(t *testing.T) *taskClient) {
			s := startHTTPWith(t, []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir()},
				"ELICITD_HTTP_TOKEN=alice-token-0123456789,bob-token-0123456789")
			as := func(token string) func(t *testing.T) *taskClient {
				return func(t *testing.T) *taskClient { return newTaskClient(t, httpTransport(s, bearer{token})) }
			}
			return as("alice-token-0123456789")(t), as("bob-token-0123456789")
		}},
		{"stdio", func(t *testing.T) (*taskClient, func(t *testing.T) *taskClient) {
			cmd := exec.Command(bin, "--rate", "0")
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			t.Cleanup(func() { assert.NotContains(t, stderr.String(), raceReport) })
			return newTaskClient(t, &mcp.CommandTransport{Command: cmd}), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, other := tc.connect(t)
			id, res := c.call(t, "ask_user", map[string]any{"message": "How old?", "form": map[string]any{"fields": []any{
				map[string]any{"name": "age", "type": "integer", "label": "Age", "required": true, "minimum": 0},
			}}})
			require.NotEmpty(t, id, "ask_user became a task: %+v", res)
			assert.Len(t, id, 26, "130 random bits")

			d := c.until(t, id, tasks.InputRequired)
			require.Equal(t, tasks.InputRequired, d.Status)
			assert.Positive(t, d.TTLMs)
			assert.Positive(t, d.PollIntervalMs)
			require.Len(t, d.InputRequests, 1)
			var first string
			for k, raw := range d.InputRequests {
				first = k
				p := elicitOf(t, raw)
				assert.Equal(t, "How old?", p.Message)
			}

			if other != nil {
				// Another caller gets what an id that never existed gets.
				oc := other(t)
				_, err := mcp.CallCustomMethod[*tasks.IDParams, *tasks.Detailed](timeout(t), oc.cs, "tasks/get", &tasks.IDParams{TaskID: id})
				var je *jsonrpc.Error
				require.True(t, errors.As(err, &je), "%v", err)
				assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)
			}

			c.update(t, id, map[string]any{first: map[string]any{"action": "accept", "content": map[string]any{"age": -3}}})
			d = c.until(t, id, tasks.InputRequired)
			require.Equal(t, tasks.InputRequired, d.Status, "re-prompted")
			require.Len(t, d.InputRequests, 1)
			for k, raw := range d.InputRequests {
				assert.NotEqual(t, first, k, "a new key for the new round")
				assert.Contains(t, elicitOf(t, raw).Message, "Age: must be at least 0", "the field's error is in the message")
				first = k
			}
			c.update(t, id, map[string]any{"no-such-key": map[string]any{"ignored": true}}) // ignored
			c.update(t, id, map[string]any{first: map[string]any{"action": "accept", "content": map[string]any{"age": 36}}})
			d = c.until(t, id, tasks.Completed)
			require.Equal(t, tasks.Completed, d.Status, "%+v", d)
			require.NotNil(t, d.Result)
			assert.False(t, d.Result.IsError)
			raw, err := json.Marshal(d.Result.StructuredContent)
			require.NoError(t, err)
			assert.Contains(t, string(raw), `"age":36`)

			// Cancel on a finished task: the same empty ack, and it stays completed.
			a, err := mcp.CallCustomMethod[*tasks.IDParams, *tasks.Ack](timeout(t), c.cs, "tasks/cancel", &tasks.IDParams{TaskID: id})
			require.NoError(t, err)
			assert.Equal(t, "complete", a.ResultType)
			assert.Equal(t, tasks.Completed, c.get(t, id).Status)
		})
	}
}

// A client without the extension gets the tools' plain results, and the extension's
// methods refuse it with MissingRequiredClientCapability, naming the extension.
func TestWithoutTheExtensionNothingIsATask(t *testing.T) {
	s := startHTTPWith(t, []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir()})
	cs := pullByHand(t, s, nil, nil)
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "Who?", "form": nameForm}})
	require.NoError(t, err)
	assert.True(t, res.NeedsInput(), "the pull era's own round")
	assert.Nil(t, res.Meta[tasks.RelatedTask])

	// The extension's methods refuse a request that does not declare it.
	raw := postRPC(t, s, "tasks/get", `{"taskId":"ABC","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	require.NotNil(t, raw.Error, "%+v", raw)
	assert.Equal(t, int64(mcp.CodeMissingRequiredClientCapabilities), raw.Error.Code)
	assert.Contains(t, string(raw.Error.Data), tasks.Extension)

	// --tasks off: not declared, and no task for a client that has the extension.
	off := startHTTPWith(t, []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir(), "--tasks", "off"})
	tc := newTaskClient(t, httpTransport(off, nil))
	id, res := tc.call(t, "ask_user", map[string]any{"message": "Who?", "form": nameForm})
	assert.Empty(t, id)
	assert.True(t, res.NeedsInput())
	on := newTaskClient(t, httpTransport(s, nil))
	id, _ = on.call(t, "ask_user", map[string]any{"message": "Who?", "form": nameForm})
	assert.NotEmpty(t, id, "the same call, on a node with the extension, is a task")
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64           `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// postRPC sends one 2026-07-28 request to s as plain HTTP.
func postRPC(t *testing.T, s *httpServer, method, params string) rpcResponse {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(timeout(t), http.MethodPost, s.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out rpcResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// docs/tasks.md's curl recipe, run as it stands against a real elicitd --http: the task
// waits for the person, takes the answer, and ends with ask_user's result.
func TestTasksDocRecipe(t *testing.T) {
	var recipe string
	for _, b := range docBlocks(t, "../../docs/tasks.md") {
		if b.lang == "sh" && b.section == "curl recipe" {
			recipe += b.text
		}
	}
	require.Contains(t, recipe, "$ELICITD_URL")
	s := startHTTP(t)
	values, err := runRecipe(t, s.url, recipe)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(values), 3, "%v", values)
	waiting, _ := values[0].(map[string]any)
	assert.Equal(t, "input_required", waiting["status"], "%v", values[0])
	asked, _ := json.Marshal(waiting["inputRequests"])
	assert.Contains(t, string(asked), "Who is the parcel for?")
	ack, _ := values[1].(map[string]any)
	assert.Equal(t, "complete", ack["resultType"], "the update's acknowledgement: %v", values[1])
	assert.NotContains(t, ack, "taskId", "an acknowledgement, not a task")
	out, ok := values[len(values)-1].(map[string]any)
	require.True(t, ok, "%v", values)
	assert.Equal(t, "completed", out["status"], "%v", out)
	assert.Equal(t, map[string]any{"name": "Ada"}, out["data"])
	assert.NotContains(t, s.stderr.String(), "Ada", "answers are never logged")
}

// A task is served by any node of three sharing a NATS cluster: made on A, read on B at once
// (its record is written before the handle goes out), answered badly on C (re-prompted),
// answered on B, read on A; a cancel on C of another task ends it for every node. Then a
// node killed with SIGKILL: its task goes on on the others.
func TestATaskOnThreeNodes(t *testing.T) {
	urls := natsCluster(t, 3)
	args := []string{"--store", strings.Join(urls, ","), "--store-replicas", "3", "--rate", "0"}
	var nodes []*httpServer
	var clients []*taskClient
	for range 3 {
		n := startHTTPWith(t, args)
		nodes = append(nodes, n)
		clients = append(clients, newTaskClient(t, httpTransport(n, nil)))
	}
	a, b, c := clients[0], clients[1], clients[2]
	id, _ := a.call(t, "ask_user", ageArgs)
	require.NotEmpty(t, id)
	d := b.get(t, id)
	require.Equal(t, tasks.InputRequired, d.Status, "read on another node at once")
	key := onlyKey(t, d)
	c.update(t, id, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "age": 12}}})
	d = a.until(t, id, tasks.InputRequired)
	next := onlyKey(t, d)
	require.NotEqual(t, key, next)
	b.update(t, id, map[string]any{next: map[string]any{"action": "accept", "content": map[string]any{"age": 36}}})
	d = a.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	raw, err := json.Marshal(d.Result.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"Ada","age":36}`, mustField(t, raw, "data"), "the valid name kept across nodes")

	other, _ := a.call(t, "ask_user", ageArgs)
	_, err = mcp.CallCustomMethod[*tasks.IDParams, *tasks.Ack](timeout(t), c.cs, "tasks/cancel", &tasks.IDParams{TaskID: other})
	require.NoError(t, err)
	for _, n := range clients {
		assert.Equal(t, tasks.Cancelled, n.get(t, other).Status)
	}

	// The node that made a task dies; the task is answered on another.
	third, _ := a.call(t, "ask_user", ageArgs)
	d = b.until(t, third, tasks.InputRequired)
	nodes[0].kill(t)
	c.update(t, third, map[string]any{onlyKey(t, d): map[string]any{"action": "accept", "content": map[string]any{"name": "Bo", "age": 40}}})
	d = b.until(t, third, tasks.Completed)
	require.NotNil(t, d.Result)
	assert.False(t, d.Result.IsError)
}

// A task outlives a restart of a single node on the embedded store: made, the process killed
// and started again on the same directory, it is found, answered and completed.
func TestATaskOutlivesARestart(t *testing.T) {
	args := []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir()}
	before := startHTTPWith(t, args)
	id, _ := newTaskClient(t, httpTransport(before, nil)).call(t, "ask_user", ageArgs)
	require.NotEmpty(t, id)
	before.kill(t)
	after := startHTTPWith(t, args)
	c := newTaskClient(t, httpTransport(after, nil))
	d := c.until(t, id, tasks.InputRequired)
	c.update(t, id, map[string]any{onlyKey(t, d): map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "age": 36}}})
	d = c.until(t, id, tasks.Completed)
	require.NotNil(t, d.Result)
	assert.False(t, d.Result.IsError, "%+v", d.Result)
}

func onlyKey(t *testing.T, d *tasks.Detailed) string {
	t.Helper()
	require.Len(t, d.InputRequests, 1, "%+v", d)
	for k := range d.InputRequests {
		return k
	}
	return ""
}

func mustField(t *testing.T, raw []byte, field string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return string(m[field])
}

// A task whose question reaches its deadline unanswered ends as a pull-era call does at its
// deadline: completed, with the tool's own result for the timeout, seen by a client that
// only polls (it never answers).
func TestATaskEndsAtItsQuestionsDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"embedded", []string{"--rate", "0", "--store", "embedded", "--data-dir", t.TempDir()}},
		{"memory", []string{"--rate", "0", "--store", "memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startHTTPWith(t, tc.args)
			c := newTaskClient(t, httpTransport(s, nil))
			id, _ := c.call(t, "ask_user", map[string]any{"message": "Who?", "form": nameForm, "timeout_seconds": 1})
			require.NotEmpty(t, id)
			d := c.until(t, id, tasks.Completed)
			require.Equal(t, tasks.Completed, d.Status, "%+v", d)
			require.NotNil(t, d.Result)
			raw, err := json.Marshal(d.Result.StructuredContent)
			require.NoError(t, err)
			assert.Contains(t, string(raw), `"status":"timeout"`, "ask_user's own result for a timeout: %s", raw)
		})
	}
}
