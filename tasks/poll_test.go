package tasks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/tasks"
)

// pollServers serves f's server over go-sdk's stateless Streamable HTTP handler twice:
// direct, as it is, and fast, behind tasks.Server.Polls; passed counts the requests Polls
// let through to the handler. The caller is the bearer token.
func pollServers(t *testing.T, f *fixture) (direct, fast string, passed *atomic.Int32) {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	passed = new(atomic.Int32)
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		passed.Add(1)
		h.ServeHTTP(w, r)
	})
	// The bearer token is the caller: the fixture's owner is its TokenInfo's user.
	bearer := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)
	d := httptest.NewServer(bearer(h))
	p := httptest.NewServer(bearer(f.tasks.Polls(counted, &mcp.Implementation{Name: "t", Version: "1"}, func(r *http.Request) string {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			return ti.UserID
		}
		return ""
	})))
	t.Cleanup(func() {
		d.Close()
		p.Close()
	})
	return d.URL, p.URL, passed
}

// aPoll is a raw tasks/get over HTTP, as a go-sdk client of 2026-07-28 sends it, with
// edits.
type aPoll struct {
	name   string
	fast   bool                             // Polls answers it itself
	body   func(id string) string           // nil: the plain one
	header func(r *http.Request, id string) // edits to the plain request's headers
}

func plainPoll(id string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"` + id + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
}

// send sends p for task id to url, as caller.
func (p aPoll) send(t *testing.T, url, caller, id string) (int, http.Header, string) {
	t.Helper()
	body := plainPoll(id)
	if p.body != nil {
		body = p.body(id)
	}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", tasks.PullEra)
	req.Header.Set("Mcp-Method", "tasks/get")
	req.Header.Set("Authorization", "Bearer "+caller)
	if p.header != nil {
		p.header(req, id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

var polls = []aPoll{
	{name: "plain", fast: true},
	{name: "a string id", fast: true, body: func(id string) string { return strings.Replace(plainPoll(id), `"id":7`, `"id":"p-1"`, 1) }},
	{name: "Mcp-Name naming the task", fast: true, header: func(r *http.Request, id string) { r.Header.Set("Mcp-Name", id) }},
	{name: "Mcp-Name naming another task", header: func(r *http.Request, _ string) { r.Header.Set("Mcp-Name", "other") }},
	{name: "without the extension", body: func(id string) string {
		return strings.Replace(plainPoll(id), `,"extensions":{"io.modelcontextprotocol/tasks":{}}`, "", 1)
	}},
	{name: "another caller", header: func(r *http.Request, _ string) { r.Header.Set("Authorization", "Bearer caller-Z") }},
	{name: "an unknown task", body: func(string) string { return plainPoll("no-such-task") }},
	{name: "a batch", body: func(id string) string { return "[" + plainPoll(id) + "]" }},
	{name: "no Mcp-Method header", header: func(r *http.Request, _ string) { r.Header.Del("Mcp-Method") }},
	{name: "another version in _meta", body: func(id string) string {
		return strings.Replace(plainPoll(id), `/protocolVersion":"2026-07-28"`, `/protocolVersion":"2025-11-25"`, 1)
	}},
	{name: "no event stream accepted", header: func(r *http.Request, _ string) { r.Header.Set("Accept", "application/json") }},
	{name: "no taskId", body: func(id string) string { return strings.Replace(plainPoll(id), `"taskId"`, `"task"`, 1) }},
	{name: "a client info that does not decode", body: func(id string) string {
		return strings.Replace(plainPoll(id), `{"name":"c","version":"1"}`, `{"name":5}`, 1)
	}},
	{name: "taskId in other case", body: func(id string) string { return strings.Replace(plainPoll(id), `"taskId"`, `"TaskID"`, 1) }},
	{name: "extensions in other case", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"extensions"`, `"Extensions"`, 1)
	}},
	{name: "taskId twice", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"taskId"`, `"taskId":"other","taskId"`, 1)
	}},
	{name: "a null id", body: func(id string) string { return strings.Replace(plainPoll(id), `"id":7`, `"id":null`, 1) }},
	{name: "an id past what a float64 holds", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"id":7`, `"id":9007199254740993`, 1)
	}},
	{name: "a string id to escape", fast: true, body: func(id string) string {
		return strings.Replace(plainPoll(id), `"id":7`, `"id":"<&>\u00e9"`, 1)
	}},
	{name: "any type accepted", fast: true, header: func(r *http.Request, _ string) { r.Header.Set("Accept", "*/*") }},
	{name: "a charset", fast: true, header: func(r *http.Request, _ string) { r.Header.Set("Content-Type", "application/json; charset=utf-8") }},
	{name: "plain text", header: func(r *http.Request, _ string) { r.Header.Set("Content-Type", "text/plain") }},
	{name: "a Last-Event-ID", header: func(r *http.Request, _ string) { r.Header.Set("Last-Event-ID", "1") }},
	{name: "another host on loopback", header: func(r *http.Request, _ string) { r.Host = "elicitd.example.com" }},
	{name: "a null client info", body: func(id string) string {
		return strings.Replace(plainPoll(id), `{"name":"c","version":"1"}`, `null`, 1)
	}},
	{name: "an error member", body: func(id string) string { return strings.Replace(plainPoll(id), `"id":7`, `"id":7,"error":1`, 1) }},
	{name: "a _meta value past a float64", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"_meta":{`, `"_meta":{"x/y":1e400,`, 1)
	}},
	{name: "nested past 1000", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"_meta":{`, `"_meta":{"x/y":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`,`, 1)
	}},
	{name: "another JSON-RPC version", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"jsonrpc":"2.0"`, `"jsonrpc":"1.0"`, 1)
	}},
	{name: "a fractional id", body: func(id string) string { return strings.Replace(plainPoll(id), `"id":7`, `"id":7.5`, 1) }},
	{name: "a body past the bound", body: func(id string) string {
		return strings.Replace(plainPoll(id), `"version":"1"`, `"version":"1","pad":"`+strings.Repeat("x", 20<<10)+`"`, 1)
	}},
}

// A plain poll is answered before go-sdk's handler with exactly the response the handler
// writes, whatever the task's status; every other request, refused or not, goes on to the
// handler whole and gets the handler's answer.
func TestAPlainPollIsAnsweredAsTheSDKWould(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	direct, fast, passed := pollServers(t, f)

	waiting, _, err := f.call(t, c, "round2")
	require.NoError(t, err)
	done, _, err := f.call(t, c, "round2")
	require.NoError(t, err)
	c.update(t, done, map[string]any{keyOf(c.until(t, done, tasks.InputRequired)): accept("x")})
	c.until(t, done, tasks.Completed)
	cancelled, _, err := f.call(t, c, "slow")
	require.NoError(t, err)
	_, err = mcp.CallCustomMethod[*idParams, *ack](ctxT(t), c.cs, "tasks/cancel", &idParams{TaskID: cancelled})
	require.NoError(t, err)
	working, _, err := f.call(t, c, "slow")
	require.NoError(t, err)
	broken, _, err := f.call(t, c, "broken")
	require.NoError(t, err)

	compare := func(id, status string) {
		t.Helper()
		d := c.until(t, id, status)
		for _, p := range polls {
			before := passed.Load()
			code, h, body := p.send(t, fast, "caller-A", id)
			wantCode, wantH, want := p.send(t, direct, "caller-A", id)
			answered := passed.Load() == before
			assert.Equal(t, p.fast, answered, "%s, %s: answered before the handler", status, p.name)
			assert.Equal(t, wantCode, code, "%s, %s", status, p.name)
			assert.Equal(t, wantH.Get("Content-Type"), h.Get("Content-Type"), "%s, %s", status, p.name)
			assert.Equal(t, wantH.Get("Cache-Control"), h.Get("Cache-Control"), "%s, %s", status, p.name)
			assert.Equal(t, want, body, "%s, %s", status, p.name)
			if p.name == "plain" {
				var got struct {
					Result detailed `json:"result"`
				}
				require.NoError(t, json.Unmarshal([]byte(body), &got))
				assert.Equal(t, d.Status, got.Result.Status)
				assert.Equal(t, id, got.Result.TaskID)
			}
		}
	}
	compare(waiting, tasks.InputRequired)
	compare(done, tasks.Completed)
	compare(cancelled, tasks.Cancelled)
	compare(working, tasks.Working)
	close(f.release)
	compare(broken, tasks.Failed)
}

// A poll that has work to do (its question's deadline is past, and the question may have
// ended) goes on to the handler, which does it: the task ends with the tool's result.
// Before the deadline, the same poll is answered without the handler.
func TestAPollWithWorkToDoGoesToTheHandler(t *testing.T) {
	f := newFixture(t)
	c := f.connect(t, true)
	_, fast, passed := pollServers(t, f)
	id, _, err := f.call(t, c, "due")
	require.NoError(t, err)
	c.until(t, id, tasks.InputRequired)

	code, _, body := aPoll{}.send(t, fast, "caller-A", id)
	require.Equal(t, http.StatusOK, code, body)
	assert.Zero(t, passed.Load(), "before its deadline, a poll is only read")
	assert.Contains(t, body, `"status":"input_required"`)

	f.ended.Store(true)
	f.clk.Add(2 * time.Minute)
	code, _, body = aPoll{}.send(t, fast, "caller-A", id)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, int32(1), passed.Load(), "past it, the poll went to the handler")
	assert.NotContains(t, body, `"status":"input_required"`, "the round that ends it is under way")
	d := c.until(t, id, tasks.Completed)
	assert.Equal(t, "timed out", d.Result.Content[0].(*mcp.TextContent).Text)
}

// A poll of a working task whose node has gone silent goes on to the handler, which runs
// the round again: the task is taken over, as by a poll through go-sdk.
func TestAPollOfASilentTaskGoesToTheHandler(t *testing.T) {
	clkA, clkB, st := twoClocks(t)
	a, b := newNode(t, clkA, st), newNode(t, clkB, st)
	a.hold = make(chan struct{})
	t.Cleanup(func() { close(a.hold) })
	ca := a.connect(t, true)
	id, _, err := a.call(t, ca, "round2")
	require.NoError(t, err)
	ca.update(t, id, map[string]any{keyOf(ca.until(t, id, tasks.InputRequired)): accept("Ada")}) // A runs the round, which hangs
	a.tasks.Stop()                                                                               // and A stops

	_, fast, passed := pollServers(t, b)
	code, _, body := aPoll{}.send(t, fast, "caller-A", id)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"working"`)
	assert.Zero(t, passed.Load(), "a working task whose node beats is only read")

	clkB.Add(35 * time.Second)
	code, _, body = aPoll{}.send(t, fast, "caller-A", id)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, int32(1), passed.Load(), "silent for 35 s: the poll went to the handler")
	d := b.connect(t, true).until(t, id, tasks.Completed)
	assert.Equal(t, "got Ada", d.Result.Content[0].(*mcp.TextContent).Text, "B ran the round again")
}

// A body cut short is handed on to go-sdk ending with the error its read ended with, not as
// a shorter body that ends cleanly.
func TestAPollCutShortGoesOnCutShort(t *testing.T) {
	f := newFixture(t)
	_, fast, passed := pollServers(t, f)
	body := plainPoll("T1")
	conn, err := net.Dial("tcp", strings.TrimPrefix(fast, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer caller-A\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tasks/get\r\nContent-Length: %d\r\n\r\n%s", len(body)+5, body)
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, int32(1), passed.Load())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, string(got))
	assert.Contains(t, string(got), "unexpected EOF")
}
