package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawPeer speaks JSON-RPC to elicitd over its pipes, line by line, as any client could, and
// can send what no SDK would, stop reading, or vanish.
type rawPeer struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *os.File // the read end of the server's stdout
	lines   chan map[string]any
	hold    chan struct{} // closed: the peer reads again
	holding atomic.Bool
	stderr  *syncBuffer
	exited  chan error // the process's exit, known without reading its output
}

func startPeer(t *testing.T, args ...string) *rawPeer {
	t.Helper()
	p := &rawPeer{t: t, cmd: exec.Command(bin, args...), lines: make(chan map[string]any, 16), hold: make(chan struct{}),
		stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	p.stdout, p.cmd.Stdout = pr, pw
	require.NoError(t, p.cmd.Start())
	pw.Close()
	go func() { p.exited <- p.cmd.Wait() }()
	done := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 64<<20)
		for {
			if p.holding.Load() {
				select {
				case <-p.hold:
				case <-done:
					return
				}
			}
			if !sc.Scan() {
				close(p.lines)
				return
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unreadable": sc.Text()}
			}
			select {
			case p.lines <- m:
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(failsafe):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		close(done)
		_ = pr.Close()
		<-read
		if out := p.stderr.String(); strings.Contains(out, raceReport) {
			t.Errorf("the server raced:\n%s", out)
		}
	})
	return p
}

// tail returns the last n bytes of s.
func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// waitExit returns how the process ended, failing the test if it does not.
func (p *rawPeer) waitExit() error {
	p.t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		return err
	case <-time.After(failsafe):
		p.t.Fatalf("elicitd did not exit; stderr:\n%s", p.stderr.String())
		return nil
	}
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(p.t, err)
}

func (p *rawPeer) sendJSON(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(p.t, err)
	p.send(string(b))
}

// next returns the next message the server wrote.
func (p *rawPeer) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.lines:
		require.True(p.t, ok, "the server closed its output; stderr:\n%s", p.stderr.String())
		return m
	case <-time.After(failsafe):
		p.t.Fatalf("no message from the server; stderr:\n%s", p.stderr.String())
		return nil
	}
}

// initialize opens a push-era (2025-11-25) session that declares form elicitation.
func (p *rawPeer) initialize() { p.initializeAt("2025-11-25") }

// initializeAt opens a session at a protocol version that declares form elicitation.
func (p *rawPeer) initializeAt(version string) {
	p.t.Helper()
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": version, "capabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	resp := p.next()
	require.Contains(p.t, resp, "result", "%v", resp)
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (p *rawPeer) askUser(id int) {
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": "ask_user", "arguments": map[string]any{"message": "Who?", "form": nameForm}}})
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// One bad line gets one JSON-RPC error and changes nothing else: a call left open across all
// of them is answered, and the lines after a truncated object are read (before, the first bad
// line ended the process and the open call never got an answer).
func TestBadFramesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	p := startPeer(t)
	p.initialize()
	p.askUser(1)
	create := p.next()
	require.Equal(t, "elicitation/create", create["method"], "%v", create)

	deep := `{"jsonrpc":"2.0","id":50,"method":"tools/list","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`
	for _, tc := range []struct {
		name string
		line string
		code float64
		id   any
	}{
		{"not JSON", "hello", -32700, nil},
		{"NUL bytes", "\x00\x00\x00", -32700, nil},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"x\":\"\xff\xfe\"}", -32700, nil},
		{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, nil},
		{"a bare value", `42`, -32600, nil},
		{"no method or result", `{"jsonrpc":"2.0","id":9}`, -32600, 9.0},
		{"truncated object", `{"jsonrpc":"2.0","id":10,"method":"tools/list"`, -32700, nil},
		{"50 MB", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"x":"` + strings.Repeat("a", 50<<20) + `"}}`, -32600, 11.0},
	} {
		p.send(tc.line)
		got := p.next()
		assert.Equal(t, tc.code, errorCode(got), "%s: %v", tc.name, got)
		assert.Equal(t, tc.id, got["id"], tc.name)
	}
	p.send(deep) // valid JSON nested 1,000 deep: refused as a request, by its id
	got := p.next()
	assert.Equal(t, 50.0, got["id"])
	assert.Equal(t, -32600.0, errorCode(got), "%v", got)

	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 12, "method": "ping"})
	assert.Equal(t, 12.0, p.next()["id"], "the session goes on")

	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": create["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}})
	res := p.next()
	require.Equal(t, 1.0, res["id"], "%v", res)
	assert.Contains(t, fmt.Sprint(res["result"]), "completed", "the call open across the bad lines is answered")
}

// A reply too large for a frame (17.8 MB killed the process) is refused as an answer over the
// size limit: the person is asked again, and the question goes on.
func TestAnAnswerOverTheFrameLimitEarnsAReprompt(t *testing.T) {
	p := startPeer(t)
	p.initialize()
	p.askUser(1)
	create := p.next()
	require.Equal(t, "elicitation/create", create["method"])
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": create["id"], "result": map[string]any{"action": "accept",
		"content": map[string]any{"name": strings.Repeat("A", 17_800_000)}}})
	again := p.next()
	require.Equal(t, "elicitation/create", again["method"], "%v", again)
	msg := again["params"].(map[string]any)["message"].(string)
	assert.True(t, strings.HasPrefix(msg, "Answer: is too large to receive"), msg)
	assert.Less(t, len(msg), 200)
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": again["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}})
	res := p.next()
	require.Equal(t, 1.0, res["id"])
	assert.Contains(t, fmt.Sprint(res["result"]), "completed")
}

// A client that vanishes with push questions open (it stops reading, then its input ends)
// does not kill elicitd by SIGPIPE: every question ends client_gone and the process exits 0.
func TestVanishedClientEndsQuestionsAsClientGone(t *testing.T) {
	p := startPeer(t, "--rate", "0")
	p.initialize()
	const open = 20
	for i := range open {
		p.askUser(100 + i)
	}
	for range open {
		require.Equal(t, "elicitation/create", p.next()["method"])
	}
	p.holding.Store(true)
	require.NoError(t, p.stdout.Close()) // the client's end of stdout is gone: writes fail
	require.NoError(t, p.stdin.Close())
	err := p.waitExit()
	if ee, ok := err.(*exec.ExitError); ok {
		ws := ee.Sys().(syscall.WaitStatus)
		require.False(t, ws.Signaled(), "killed by %v; stderr:\n%s", ws.Signal(), p.stderr.String())
	}
	require.NoError(t, err)
	assert.Equal(t, open, strings.Count(p.stderr.String(), "reason=client_gone"), p.stderr.String())
	assert.NotContains(t, p.stderr.String(), "reason=shutdown")
}

// A client that stops reading with many replies pending does not hold a signalled exit past
// the promised bound; a clean SIGTERM logs no error.
func TestSIGTERMWithAClientThatStoppedReading(t *testing.T) {
	p := startPeer(t, "--rate", "0", "--max-live", "5000")
	p.initialize()
	const calls = 2000
	for i := range calls {
		p.askUser(1000 + i)
	}
	// Nothing more is read: the server's writes fill the pipe and block.
	p.holding.Store(true)
	require.Eventually(t, func() bool { return len(p.lines) == cap(p.lines) }, failsafe, 10*time.Millisecond)
	startedAt := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	err := p.waitExit()
	t.Logf("exited %s after SIGTERM with %d replies pending", time.Since(startedAt).Round(time.Millisecond), calls)
	require.NoError(t, err, "stderr:\n%s", tail(p.stderr.String(), 4000))
	assert.Contains(t, p.stderr.String(), "exiting with replies unwritten", "the bounded exit acted")
	assert.NotContains(t, p.stderr.String(), "level=ERROR", p.stderr.String())
}

func TestCleanSIGTERMLogsNoError(t *testing.T) {
	p := startPeer(t)
	p.initialize()
	p.askUser(1)
	require.Equal(t, "elicitation/create", p.next()["method"])
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	for {
		m := p.next()
		if m["id"] == 1.0 {
			assert.Contains(t, fmt.Sprint(m["result"]), "shutdown")
			break
		}
	}
	require.NoError(t, p.waitExit())
	assert.NotContains(t, p.stderr.String(), "level=ERROR", p.stderr.String())
}

// A pull-era client killed with calls still arriving: every question it had, including those
// started by calls read after its input ended, ends client_gone, never shutdown (2 runs in 9
// logged some as shutdown).
func TestKilledPullClientEndsEveryQuestionAsClientGone(t *testing.T) {
	p := startPeer(t, "--rate", "0")
	p.initializeAt("2026-07-28")
	for i := range 300 {
		p.askUser(10 + i)
	}
	p.holding.Store(true)
	require.NoError(t, p.stdin.Close())
	require.NoError(t, p.stdout.Close())
	require.NoError(t, p.waitExit(), p.stderr.String())
	log := p.stderr.String()
	assert.NotContains(t, log, "reason=shutdown")
	assert.Equal(t, strings.Count(log, "elicitation finished"), strings.Count(log, "reason=client_gone"), log)
}
