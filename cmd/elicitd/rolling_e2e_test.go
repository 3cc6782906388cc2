package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialPull connects a 2026-07-28 client to s that answers input requests by hand, as
// pullByHand does, but reports a failure to connect rather than fail the test.
func dialPull(s *httpServer) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-rolling", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil)
}

// resendable reports whether a client sends the same request again, to another node: a
// connection error, the store unreachable, the node stopping, or the question moved.
func resendable(res *mcp.CallToolResult, err error) bool {
	if err != nil {
		return true
	}
	if !res.IsError {
		return false
	}
	p, _ := res.StructuredContent.(map[string]any)
	switch p["code"] {
	case "STORE_UNAVAILABLE", "SERVER_STOPPING":
		return true
	case "INVALID_REQUEST_STATE":
		return p["reason"] == "moved"
	}
	return false
}

// A rolling restart under load: 2026-07-28 ask_user calls, each of three rounds (the first
// call, a bad answer re-prompted, the good answer), keep going to node A while A gets SIGTERM
// and is started again (A2) on the same store, beside node B. A client sends a request that
// gets a connection error, STORE_UNAVAILABLE or SERVER_STOPPING again, unchanged, to another
// node. No answer says shutdown or finished, and every question completes with its answers.
func TestARollingRestartLosesNoPullQuestion(t *testing.T) {
	ns := natsServer(t, &natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	args := []string{"--store", ns.ClientURL(), "--max-live", "100000", "--rate", "0"}
	a, b := startHTTPWith(t, args), startHTTPWith(t, args)
	var a2 atomic.Pointer[httpServer] // A started again
	var aGone atomic.Bool             // A has exited

	const workers = 12
	var flows, stopping atomic.Int32
	var bad sync.Map // what no answer may be, by text
	termed := make(chan struct{})
	// Every flow's requests, resent as long as they must be, end within this (a failsafe):
	// three processes, NATS and twelve clients on a loaded machine take their time.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	work := func(w int) error {
		sessions := map[*httpServer]*mcp.ClientSession{}
		defer func() {
			for _, cs := range sessions {
				_ = cs.Close()
			}
		}()
		session := func(s *httpServer) (*mcp.ClientSession, error) {
			if cs, ok := sessions[s]; ok {
				return cs, nil
			}
			cs, err := dialPull(s)
			if err == nil {
				sessions[s] = cs
			}
			return cs, err
		}
		// send sends p to A (A2 once A has exited) and, while it is resendable, to B.
		send := func(p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
			for try := 0; ctx.Err() == nil; try++ {
				target := a
				if aGone.Load() || try > 0 {
					target = b
					if n := a2.Load(); n != nil && try%2 == 0 {
						target = n
					}
				}
				cs, err := session(target)
				var res *mcp.CallToolResult
				if err == nil {
					callCtx, stop := context.WithTimeout(ctx, 20*time.Second)
					res, err = cs.CallTool(callCtx, p)
					stop()
				}
				if cs != nil && err != nil {
					_ = cs.Close()
					delete(sessions, target)
				}
				if res != nil {
					out := fmt.Sprint(res.StructuredContent)
					if strings.Contains(out, "shutdown") || strings.Contains(out, "finished") {
						bad.Store(out, true)
					}
					if strings.Contains(out, "SERVER_STOPPING") {
						stopping.Add(1)
					}
				}
				if !resendable(res, err) {
					return res, nil
				}
			}
			return nil, ctx.Err()
		}
		after := 0 // flows begun after SIGTERM
		for i := 0; ; i++ {
			select {
			case <-termed:
				if after++; after > 2 {
					return nil
				}
			default:
			}
			flows.Add(1)
			first, err := send(&mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
			if err != nil {
				return err
			}
			if !first.NeedsInput() {
				return fmt.Errorf("worker %d, flow %d: the first call asked nothing: %v", w, i, first.StructuredContent)
			}
			second, err := send(&mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs, RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 12}}}})
			if err != nil {
				return err
			}
			if !second.NeedsInput() || second.InputRequests["elicit-2"] == nil {
				return fmt.Errorf("worker %d, flow %d: round 1 did not re-prompt: %v", w, i, second.StructuredContent)
			}
			age := 20 + w*1000 + i
			last, err := send(&mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs, RequestState: second.RequestState,
				InputResponses: mcp.InputResponseMap{"elicit-2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"age": age}}}})
			if err != nil {
				return err
			}
			out, _ := last.StructuredContent.(map[string]any)
			if out["status"] != "completed" || fmt.Sprint(out["data"]) != fmt.Sprint(map[string]any{"name": "Ada", "age": float64(age)}) {
				return fmt.Errorf("worker %d, flow %d: round 2 did not complete with the answers: %v", w, i, out)
			}
		}
	}

	errs := make(chan error, workers)
	for w := range workers {
		go func() { errs <- work(w) }()
	}
	require.Eventually(t, func() bool { return flows.Load() >= 5*workers }, clusterFailsafe, time.Millisecond, "the load runs")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	close(termed)
	select {
	case err := <-a.exited:
		aGone.Store(true)
		require.NoError(t, err, "A exits 0:\n%s", tail(a.stderr.String(), 4000))
	case <-time.After(failsafe):
		t.Fatal("A did not exit on SIGTERM")
	}
	a2.Store(startHTTPWith(t, args))
	for range workers {
		assert.NoError(t, <-errs)
	}
	bad.Range(func(k, _ any) bool {
		t.Errorf("an answer no client may get during a rolling restart: %v", k)
		return true
	})
	t.Logf("%d flows, %d answers SERVER_STOPPING", flows.Load(), stopping.Load())
}

// GET /healthz is 200 while elicitd serves; GET /readyz is 200, then 503 from the moment
// SIGTERM arrives, while (--drain-wait) the node still serves MCP; then it exits 0.
//
// The drain is long (10 s) so that what the test checks during it fits in it on a loaded
// machine: with 2 s, a slow look at /readyz could come after the drain, and find the node
// gone. "At once" is checked against the drain: 503 within half of it.
func TestReadyzTurnsUnreadyOnSIGTERM(t *testing.T) {
	const drain = 10 * time.Second
	s := startHTTP(t, fmt.Sprintf("ELICITD_DRAIN_WAIT=%s", drain), "ELICITD_HTTP_TOKEN="+strings.Repeat("t", 20))
	base := strings.TrimSuffix(s.url, "/mcp")
	get := func(t tester, path string) int {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusOK, get(t, "/healthz"), "no token needed")
	assert.Equal(t, http.StatusOK, get(t, "/readyz"))
	assert.Equal(t, http.StatusUnauthorized, get(t, "/mcp"), "MCP still asks for the token")

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, http.StatusServiceUnavailable, get(c, "/readyz"))
	}, drain/2, 5*time.Millisecond, "/readyz turns 503 at once")
	t.Logf("/readyz said 503 %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	assert.Equal(t, http.StatusOK, get(t, "/healthz"), "while the node still serves")
	cs, err := connectHTTP(t, s, "", strings.Repeat("t", 20), nil)
	require.NoError(t, err, "MCP is served while draining")
	out, isErr := callTool(t, cs, "list_elicitations", map[string]any{})
	assert.False(t, isErr, "%v", out)
	select {
	case err := <-s.exited:
		require.NoError(t, err, "exit status 0")
	case <-time.After(drain + failsafe):
		t.Fatal("elicitd did not exit after its drain")
	}
}
