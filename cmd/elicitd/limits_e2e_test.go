package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What an HTTP client can make elicitd hold is bounded: sessions end when idle and are
// capped, idle connections close, a body must arrive in time, and none of that cuts a
// stream or a call that legitimately lasts.

// askInBackground calls ask_user for a name on cs, and hands over its structured result (or
// {"error": ...}) when it returns.
func askInBackground(t *testing.T, cs *mcp.ClientSession) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() {
		res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "Who?", "form": nameForm}})
		if err != nil {
			done <- map[string]any{"error": err.Error()}
			return
		}
		done <- res.StructuredContent.(map[string]any)
	}()
	return done
}

// A session whose client has sent nothing for --session-idle ends; one whose call waits on a
// person is not idle, and its call completes after the other has been reclaimed.
func TestHTTPIdleSessionsEnd(t *testing.T) {
	s := startHTTP(t, "ELICITD_SESSION_IDLE=1s", "ELICITD_LOG_LEVEL=debug")
	idle, err := connectHTTP(t, s, "2025-11-25", "", nil)
	require.NoError(t, err)
	reclaimed := make(chan struct{})
	var once sync.Once
	busy, err := connectHTTP(t, s, "2025-11-25", "", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select { // the person takes longer than the idle time
		case <-reclaimed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { once.Do(func() { close(reclaimed) }) }) // a failed test lets the person go first
	began := time.Now()
	done := askInBackground(t, busy)
	require.Eventually(t, func() bool {
		return strings.Contains(s.stderr.String(), `"HTTP session ended" session=`+idle.ID()) ||
			strings.Contains(s.stderr.String(), "msg=\"HTTP session ended\" session="+idle.ID())
	}, failsafe, 20*time.Millisecond, "the idle session ends")
	assert.Error(t, idle.Ping(timeout(t), nil), "its id is gone")
	// The person answers only once the busy session has been quiet past the idle time too.
	<-time.After(time.Until(began.Add(1500 * time.Millisecond)))
	once.Do(func() { close(reclaimed) })
	out := <-done
	assert.Greater(t, time.Since(began), time.Second, "the call waited past the idle time")
	assert.Equal(t, "completed", out["status"], "the busy session's call completes: %v", out)
	assert.NoError(t, busy.Ping(timeout(t), nil), "and the busy session lives on")
}

// Live sessions are capped per caller and in all; the one over a cap gets a JSON-RPC error
// saying which, and a session that ends makes room.
func TestHTTPSessionCaps(t *testing.T) {
	const one, two = "caller-one-token-0123456789", "caller-two-token-0123456789"
	s := startHTTP(t, "ELICITD_HTTP_TOKEN="+one+","+two, "ELICITD_MAX_SESSIONS_PER_CALLER=2", "ELICITD_MAX_SESSIONS=3")
	first, err := connectHTTP(t, s, "2025-11-25", one, nil)
	require.NoError(t, err)
	_, err = connectHTTP(t, s, "2025-11-25", one, nil)
	require.NoError(t, err)
	_, err = connectHTTP(t, s, "2025-11-25", one, nil)
	require.Error(t, err, "a third session of one caller")
	assert.Contains(t, err.Error(), "this caller has 2 open")
	assert.Contains(t, err.Error(), "--max-sessions-per-caller")

	_, err = connectHTTP(t, s, "2025-11-25", two, nil)
	require.NoError(t, err, "another caller has room")
	_, err = connectHTTP(t, s, "2025-11-25", two, nil)
	require.Error(t, err, "a fourth session in all")
	assert.Contains(t, err.Error(), "the server has 3 open")

	// A 2026-07-28 request has no session: the caps do not apply to it.
	pull, err := connectHTTP(t, s, "", two, accept(map[string]any{"name": "Ada"}))
	require.NoError(t, err)
	out, isErr := callTool(t, pull, "ask_user", map[string]any{"message": "Who?", "form": nameForm})
	require.False(t, isErr, "%v", out)

	require.NoError(t, first.Close()) // DELETE: the session ends, and makes room
	require.Eventually(t, func() bool {
		_, err := connectHTTP(t, s, "2025-11-25", two, nil)
		return err == nil
	}, failsafe, 20*time.Millisecond)
	assert.NotContains(t, s.stderr.String(), one, "tokens are never logged")
}

// rawConn is a TCP connection to s's listener that speaks HTTP/1.1 by hand.
func rawConn(t *testing.T, s *httpServer) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	u, err := url.Parse(s.url)
	require.NoError(t, err)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c), u.Host
}

// closedByServer waits for the server to close c: a read that ends in EOF or a reset, not
// the failsafe.
func closedByServer(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(failsafe)))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if err != nil && (!assert.ErrorAs(t, err, &ne) || ne.Timeout()) {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

// Idle keep-alive connections are closed after --conn-idle and a body that does not arrive
// within --body-timeout is cut off; meanwhile a push call that waits for a person longer
// than both completes, and a session's standalone SSE stream stays open.
func TestHTTPConnectionLimitsSpareLongStreams(t *testing.T) {
	s := startHTTP(t, "ELICITD_CONN_IDLE=1s", "ELICITD_BODY_TIMEOUT=1s")
	limitsSeen := make(chan struct{})
	push, err := connectHTTP(t, s, "2025-11-25", "", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-limitsSeen:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	require.NoError(t, err)
	var seen sync.Once
	t.Cleanup(func() { seen.Do(func() { close(limitsSeen) }) }) // a failed test lets the person go first
	began := time.Now()
	done := askInBackground(t, push)

	// The session's standalone SSE stream, opened by hand on its id.
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", push.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	sse, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sse.StatusCode)
	t.Cleanup(func() { _ = sse.Body.Close() })
	streamEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, sse.Body)
		streamEnded <- err
	}()

	// An idle keep-alive connection after a refused request.
	c, r, host := rawConn(t, s)
	_, err = fmt.Fprintf(c, "GET /nowhere HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	require.NoError(t, err)
	res, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	closedByServer(t, c, r)

	// A body that never arrives.
	c, r, host = rawConn(t, s)
	_, err = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", host)
	require.NoError(t, err)
	closedByServer(t, c, r)

	// A body that keeps coming, slowly, for longer than the pause allowed is read whole.
	c, r, host = rawConn(t, s)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`
	_, err = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n", host, len(body))
	require.NoError(t, err)
	slowStart := time.Now()
	pace := time.NewTicker(300 * time.Millisecond)
	for i := 0; i < len(body); i += len(body)/6 + 1 {
		<-pace.C // a slow uplink: a piece every 300 ms, 1.8 s in all against a 1 s pause
		_, err = io.WriteString(c, body[i:min(i+len(body)/6+1, len(body))])
		require.NoError(t, err)
	}
	pace.Stop()
	require.Greater(t, time.Since(slowStart), time.Second)
	res, err = http.ReadResponse(r, nil)
	require.NoError(t, err, "the slow body was read, not cut")
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	require.Greater(t, time.Since(began), time.Second, "both limits have passed while the call waited")
	select {
	case err := <-streamEnded:
		t.Fatalf("the SSE stream was cut: %v", err)
	default:
	}
	seen.Do(func() { close(limitsSeen) })
	out := <-done
	assert.Equal(t, "completed", out["status"], "the push call completes: %v", out)
	require.NoError(t, push.Close()) // DELETE: now the stream ends
	select {
	case <-streamEnded:
	case <-time.After(failsafe):
		t.Fatal("the SSE stream did not end with its session")
	}
}
