package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// httpServer is an elicitd process serving Streamable HTTP on a loopback port.
type httpServer struct {
	url    string // the MCP endpoint
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan error
}

// listening finds the address in a log line, text (address=A) or JSON ("address":"A").
var listening = regexp.MustCompile(`address(?:=|":")([^\s"]+)`)

// startHTTP starts elicitd --http on a free loopback port with env added, and waits until it
// says where it listens. It is stopped with SIGTERM when the test ends.
func startHTTP(t testing.TB, env ...string) *httpServer {
	t.Helper()
	args := []string{"--pull-idle", "1m", "--rate", "0"}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "ELICITD_STORE=") }) {
		// The default store of --http (embedded), in a directory of the test's own.
		args = append(args, "--store", "embedded", "--data-dir", t.TempDir())
	}
	return startHTTPWith(t, args, env...)
}

// startHTTPWith is startHTTP with these flags (besides --http) and nothing else.
func startHTTPWith(t testing.TB, args []string, env ...string) *httpServer {
	t.Helper()
	s := &httpServer{stderr: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	s.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	s.cmd.Stderr = io.MultiWriter(s.stderr, pw)
	require.NoError(t, s.cmd.Start())
	go func() {
		s.exited <- s.cmd.Wait()
		_ = pw.Close()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && strings.Contains(sc.Text(), "Streamable HTTP") {
				addr <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a + "/mcp"
	case err := <-s.exited:
		t.Fatalf("elicitd exited before listening: %v\n%s", err, s.stderr.String())
	case <-time.After(failsafe):
		t.Fatalf("elicitd did not say where it listens:\n%s", s.stderr.String())
	}
	t.Cleanup(func() {
		s.stop(t)
		if out := s.stderr.String(); strings.Contains(out, raceReport) {
			t.Errorf("the server raced:\n%s", out)
		}
	})
	return s
}

// stop sends SIGTERM and waits for the exit; it reports the exit error.
func (s *httpServer) stop(t testing.TB) error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(failsafe):
		_ = s.cmd.Process.Kill()
		t.Errorf("elicitd did not exit on SIGTERM")
		return errors.New("killed")
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects a go-sdk client speaking version ("": 2026-07-28) to s, with token
// when not "".
func connectHTTP(t testing.TB, s *httpServer, version, token string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	hc := &http.Client{}
	if token != "" {
		hc.Transport = bearer{token}
	}
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// pullByHand connects a 2026-07-28 client, declaring caps (nil: forms) and sending through
// rt (nil: the default transport), that leaves input requests to the test: it answers them
// by calling the tool again itself.
func pullByHand(t *testing.T, s *httpServer, caps *mcp.ClientCapabilities, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: caps,
		// A handler, so that elicitation is declared; never called with the retries off.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test")
		}})
	cs, err := client.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: rt}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// neverAnswers is a person who is shown the form (asked) and never fills it in: the handler
// returns only when its request is cancelled or release is closed.
func neverAnswers(asked chan<- struct{}, release <-chan struct{}) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, errors.New("no answer")
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return structured(t, res), res.IsError
}

func TestHTTPAskUserInBothEras(t *testing.T) {
	s := startHTTP(t)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			answers := []map[string]any{{"weight": -1.0}, {"weight": 2.5}}
			n := 0
			cs, err := connectHTTP(t, s, era.version, "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				n++
				return &mcp.ElicitResult{Action: "accept", Content: answers[min(n, len(answers))-1]}, nil
			})
			require.NoError(t, err)
			out, isErr := callTool(t, cs, "ask_user", map[string]any{"message": "How heavy?", "form": weightForm})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"weight": 2.5}, out["data"], "the wrong weight earned a re-prompt")
			assert.Equal(t, 2, n)
		})
	}
}

func TestHTTPTokenIsRequiredWhenSet(t *testing.T) {
	const token, other = "0123456789abcdef-one", "0123456789abcdef-two"
	s := startHTTP(t, "ELICITD_HTTP_TOKEN="+token+","+other)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			_, err := connectHTTP(t, s, era.version, "", accept(map[string]any{"name": "A"}))
			require.Error(t, err, "no token: refused")
			_, err = connectHTTP(t, s, era.version, "wrong-token-wrong-token", accept(map[string]any{"name": "A"}))
			require.Error(t, err, "a wrong token: refused")
			for _, tok := range []string{token, other} {
				cs, err := connectHTTP(t, s, era.version, tok, accept(map[string]any{"name": "A"}))
				require.NoError(t, err)
				out, isErr := callTool(t, cs, "ask_user", map[string]any{"message": "m", "form": nameForm})
				require.False(t, isErr, "%v", out)
			}
		})
	}
	res, err := http.Post(s.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.NotContains(t, s.stderr.String(), token, "a token is never logged")
}

func TestHTTPBeyondLoopbackNeedsAToken(t *testing.T) {
	out, err := exec.Command(bin, "--http", "0.0.0.0:0").CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, string(out), "ELICITD_HTTP_TOKEN")
}

// Two clients over HTTP never see nor touch each other's questions: push-era clients are
// told apart by their sessions, pull-era (stateless) ones by their tokens.
func TestHTTPClientsAreIsolated(t *testing.T) {
	const tokA, tokB = "token-of-client-a-0001", "token-of-client-b-0002"
	s := startHTTP(t, "ELICITD_HTTP_TOKEN="+tokA+","+tokB)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			release := make(chan struct{})
			a, err := connectHTTP(t, s, era.version, tokA, func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			})
			require.NoError(t, err)
			b, err := connectHTTP(t, s, era.version, tokB, accept(map[string]any{"name": "B"}))
			require.NoError(t, err)
			type called struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan called, 1)
			go func() {
				res, err := a.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
				done <- called{res, err}
			}()
			select {
			case <-asked:
			case c := <-done:
				t.Fatalf("the call returned before its question was asked: %+v, %v", c.res, c.err)
			}
			mine, _ := callTool(t, a, "list_elicitations", map[string]any{})
			require.Len(t, mine["elicitations"], 1, "%v", mine)
			id := mine["elicitations"].([]any)[0].(map[string]any)["id"].(string)

			theirs, _ := callTool(t, b, "list_elicitations", map[string]any{})
			assert.Empty(t, theirs["elicitations"], "another client sees nothing")
			out, isErr := callTool(t, b, "cancel_elicitation", map[string]any{"id": id})
			require.True(t, isErr)
			assert.Equal(t, "NOT_FOUND", out["code"], "nor can it cancel it")
			out, isErr = callTool(t, b, "extend_elicitation", map[string]any{"id": id, "seconds": 60})
			require.True(t, isErr)
			assert.Equal(t, "NOT_FOUND", out["code"], "nor extend it")
			if id := a.ID(); id != "" { // push: nor end A's session with its id
				del, err := http.NewRequest(http.MethodDelete, s.url, nil)
				require.NoError(t, err)
				del.Header.Set("Mcp-Session-Id", id)
				res, err := bearer{tokB}.RoundTrip(del)
				require.NoError(t, err)
				_ = res.Body.Close()
				assert.GreaterOrEqual(t, res.StatusCode, 400, "B may not end A's session")
				mine, _ = callTool(t, a, "list_elicitations", map[string]any{})
				assert.Len(t, mine["elicitations"], 1, "A's question is still open")
			}

			// A cancels its own question: the call returns cancelled.
			out, isErr = callTool(t, a, "cancel_elicitation", map[string]any{"id": id})
			require.False(t, isErr, "%v", out)
			close(release) // a pull-era client hears of it when it comes back
			c := <-done
			require.NoError(t, c.err)
			res := structured(t, c.res)
			assert.Equal(t, "cancelled", res["status"], "%v", res)
		})
	}
}

// The Host and Origin checks refuse a DNS-rebound page and let the server's own origin in.
func TestHTTPRefusesRebindingHostsAndForeignOrigins(t *testing.T) {
	s := startHTTP(t, "ELICITD_HTTP_ORIGINS=https://app.example.com")
	post := func(host, origin string) int {
		req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	own := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
	assert.Equal(t, http.StatusForbidden, post("evil.example.com", "http://evil.example.com"), "a rebound name")
	assert.Equal(t, http.StatusForbidden, post("evil.example.com", ""), "a rebound name, no Origin")
	assert.Equal(t, http.StatusForbidden, post("", "http://evil.example.com"), "a foreign page")
	assert.Equal(t, http.StatusOK, post("", "http://"+own), "the server's own origin")
	assert.Equal(t, http.StatusOK, post("", "https://app.example.com"), "an allowed origin")
	assert.Equal(t, http.StatusOK, post("", ""), "no Origin: not a browser")
	assert.Equal(t, http.StatusOK, post("localhost:1", ""), "a loopback name")
}

// SIGTERM answers the calls waiting on a person, over HTTP as on stdio, and exits 0.
func TestHTTPShutdownAnswersOpenCalls(t *testing.T) {
	s := startHTTP(t)
	// Push era: the call is open while the person is asked.
	asked := make(chan struct{}, 1)
	gone := make(chan struct{}) // the person never answers; released before the client closes
	defer close(gone)
	cs, err := connectHTTP(t, s, "2025-11-25", "", neverAnswers(asked, gone))
	require.NoError(t, err)
	result := make(chan map[string]any, 1)
	go func() {
		res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
		if err != nil {
			result <- map[string]any{"error": err.Error()}
			return
		}
		result <- structured(t, res)
	}()
	<-asked
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	out := <-result
	assert.Equal(t, "cancelled", out["status"], "%v", out)
	assert.Equal(t, "shutdown", out["reason"])
	require.NoError(t, <-s.exited, "exit status 0")
}

// A push-era client that closes its session (DELETE) while a question is open ends it as
// client_gone.
func TestHTTPClosedSessionEndsItsQuestions(t *testing.T) {
	s := startHTTP(t)
	require.Less(t, askThenCloseSession(t, s), 300)
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "reason=client_gone") },
		failsafe, 10*time.Millisecond, "the question ends when its session does:\n%s", s.stderr.String())
}

// askThenCloseSession opens a 2025-11-25 session on s whose person never answers, has
// ask_user ask them, then closes the session with the DELETE a host sends, and returns its
// status. (The go-sdk client sends it only once its own handlers have returned, so the
// unanswered form would hold it back.)
func askThenCloseSession(t *testing.T, s *httpServer) int {
	t.Helper()
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	cs, err := connectHTTP(t, s, "2025-11-25", "", neverAnswers(asked, release))
	require.NoError(t, err)
	t.Cleanup(func() { close(release) }) // before the session's own cleanup, which waits for the handler
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
	}()
	<-asked
	del, err := http.NewRequest(http.MethodDelete, s.url, nil)
	require.NoError(t, err)
	del.Header.Set("Mcp-Session-Id", cs.ID())
	res, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// A push-era call whose response stream drops (the connection under the POST closes) while
// its session stays open ends its question client_gone at once, not at its deadline; the
// session goes on serving.
func TestHTTPDroppedStreamEndsItsQuestion(t *testing.T) {
	s := startHTTP(t)
	cs, err := connectHTTP(t, s, "2025-11-25", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	require.NoError(t, err)

	// The same session's tools/call, by hand, so that its stream can be cut once the
	// question is out on it.
	body := `{"jsonrpc":"2.0","id":"cut-1","method":"tools/call","params":{"name":"ask_user",` +
		`"arguments":{"message":"Who?","form":{"fields":[{"name":"name","type":"text","required":true}]}}}}`
	ctx, cut := context.WithCancel(timeout(t))
	defer cut()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Elicitd-Stream", "forged") // a client cannot name a stream
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"elicitation/create"`) {
	}
	require.Contains(t, sc.Text(), `"elicitation/create"`, "the question went out on the call's stream")
	cut()
	_ = res.Body.Close()

	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "reason=client_gone") },
		failsafe, 10*time.Millisecond, "the question ends when its stream drops, long before its deadline:\n%s", s.stderr.String())
	out, isErr := callTool(t, cs, "ask_user", map[string]any{"message": "Who?", "form": nameForm})
	require.False(t, isErr, "%v", out)
	assert.Equal(t, map[string]any{"name": "Ada"}, out["data"], "the session still serves")
}

// A 2026-07-28 retry may land on another process. With --store memory, after a restart with
// the same ELICITD_STATE_KEY the state is still recognised as elicitd's, but the question it
// names lived in the old process: the retry is told so, with a typed error, at once, and
// calling the tool again without the state asks afresh. With another key the state is
// forged. (With a store, the question goes on: store_e2e_test.go.)
func TestHTTPPullRetryAfterARestart(t *testing.T) {
	key := "ELICITD_STATE_KEY=" + strings.Repeat("r", 32)
	memory := "ELICITD_STORE=memory"
	args := map[string]any{"message": "Who?", "form": nameForm}
	ada := mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}

	before := startHTTP(t, key, memory)
	first, err := pullByHand(t, before, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	require.Contains(t, first.InputRequests, "elicit-1")
	require.NoError(t, before.stop(t))

	retry := func(s *httpServer) map[string]any {
		res, err := pullByHand(t, s, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args,
			RequestState: first.RequestState, InputResponses: ada})
		require.NoError(t, err)
		require.False(t, res.NeedsInput(), "the question is not asked from a state alone")
		require.True(t, res.IsError)
		return structured(t, res)
	}
	after := startHTTP(t, key, memory)
	out := retry(after)
	assert.Equal(t, "INVALID_REQUEST_STATE", out["code"], "%v", out)
	assert.Equal(t, "finished", out["reason"])
	assert.Contains(t, out["message"], "restarted", "the message says why the question is gone")
	assert.Contains(t, out["message"], "without requestState", "and what to do")

	cs := pullByHand(t, after, nil, nil)
	again, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, again.NeedsInput(), "called again, the tool asks afresh")
	done, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args,
		RequestState: again.RequestState, InputResponses: ada})
	require.NoError(t, err)
	out = structured(t, done)
	assert.Equal(t, "completed", out["status"], "%v", out)
	assert.Equal(t, map[string]any{"name": "Ada"}, out["data"])

	other := startHTTP(t, "ELICITD_STATE_KEY="+strings.Repeat("o", 32), memory)
	_, err = pullByHand(t, other, nil, nil).CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args,
		RequestState: first.RequestState, InputResponses: ada})
	out = refused(t, err)
	assert.Equal(t, "INVALID_REQUEST_STATE", out["code"])
	assert.Equal(t, "forged", out["reason"], "another key does not recognise the state")
	assert.NotContains(t, after.stderr.String()+other.stderr.String(), "Ada", "answers are never logged")
}

// BenchmarkThousandHTTPSessions opens 1,000 Streamable HTTP sessions (2025-11-25, push) to
// one elicitd at once, each calling ask_user with one question whose answer is the
// session's own. No one answers until all 1,000 questions are open at once; then every
// call must get its own answer back. It reports the wall
// time of a whole run and elicitd's peak resident memory. Run it with -benchtime 1x.
func BenchmarkThousandHTTPSessions(b *testing.B) {
	const sessions = 1000
	s := startHTTP(b, "ELICITD_MAX_LIVE=2000", "ELICITD_MAX_SESSIONS_PER_CALLER=5000")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
	var wall time.Duration
	for range b.N {
		began := time.Now()
		var g errgroup.Group
		var open sync.WaitGroup // the questions asked and not yet answered
		open.Add(sessions)
		allOpen := make(chan struct{})
		go func() { open.Wait(); close(allOpen) }()
		for i := range sessions {
			g.Go(func() error {
				name := fmt.Sprintf("person-%04d", i)
				client := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, &mcp.ClientOptions{
					ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						open.Done()
						select {
						case <-allOpen:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
					}})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, DisableStandaloneSSE: true},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					return fmt.Errorf("session %d: %w", i, err)
				}
				defer cs.Close()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "Who?", "form": nameForm}})
				if err != nil {
					return fmt.Errorf("session %d: %w", i, err)
				}
				got, _ := res.StructuredContent.(map[string]any)
				if data, _ := got["data"].(map[string]any); data["name"] != name {
					return fmt.Errorf("session %d got %v, want its own answer %q", i, got, name)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(began)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/1000-sessions")
	b.ReportMetric(float64(peakRSS(b, s.cmd.Process.Pid))/(1<<20), "peak-RSS-MiB")
}

// create_shipment over HTTP, in both eras: the missing fields are asked, the request is
// completed and sent to UPS (a fake that speaks its documented contract).
func TestHTTPCreateShipmentAgainstAFakeUPS(t *testing.T) {
	srv, seen := fakeUPS(t)
	s := startHTTP(t, "UPS_BASE_URL="+srv.URL, "UPS_CLIENT_ID=id", "UPS_CLIENT_SECRET=secret", "ELICITD_UPS_ALLOW_LOCAL=1")
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			cs, err := connectHTTP(t, s, era.version, "", rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "5"}))
			require.NoError(t, err)
			out, isErr := callTool(t, cs, "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic)})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, map[string]any{"result": "/api/shipments/v2409/ship"}, out)
			require.Len(t, rec.keys, 1, "one form")
			assert.ElementsMatch(t, []string{"shipper_city", "ship_to_name", "package_1_weight"}, rec.keys[0])
			sent, ok := seen.Load("/api/shipments/v2409/ship")
			require.True(t, ok)
			assert.Contains(t, sent, `"City":"Atlanta"`)
			seen.Delete("/api/shipments/v2409/ship")
		})
	}
	assert.NotContains(t, s.stderr.String(), "Atlanta", "answers are never logged")
}

// A 2026-07-28 request is answered in plain JSON: its one message, the whole body. Nothing
// else goes out on a pull-era request's response (its questions are in its result), so an
// SSE stream would only cost both sides its framing, flushes and stream reader. A push-era
// request still gets a stream: its questions go out on the call's response.
func TestHTTPPullEraAnswersInPlainJSON(t *testing.T) {
	s := startHTTP(t)
	meta := map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28",
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}
	args := map[string]any{"message": "Who?", "form": nameForm}
	call := func(id int, extra map[string]any) (string, map[string]any) {
		params := map[string]any{"name": "ask_user", "arguments": args, "_meta": meta}
		maps.Copy(params, extra)
		ct, msg := postMessage(t, s.url, "2026-07-28", "tools/call", "ask_user",
			map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
		require.Contains(t, msg, "result", "%v", msg)
		return ct, msg["result"].(map[string]any)
	}

	ct, first := call(1, nil)
	assert.Equal(t, "application/json", ct, "the first round's response")
	require.Equal(t, "input_required", first["resultType"], "%v", first)
	inputs := first["inputRequests"].(map[string]any)
	require.Len(t, inputs, 1, "%v", first)
	answers := map[string]any{}
	for key := range inputs {
		answers[key] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	ct, last := call(2, map[string]any{"requestState": first["requestState"], "inputResponses": answers})
	assert.Equal(t, "application/json", ct, "the answered round's response")
	assert.Equal(t, "complete", last["resultType"], "%v", last)
	assert.Equal(t, map[string]any{"name": "Ada"}, last["structuredContent"].(map[string]any)["data"], "%v", last)

	ct, init := postMessage(t, s.url, "", "initialize", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	assert.Equal(t, "text/event-stream", ct, "a push-era session's response")
	assert.Equal(t, "2025-11-25", init["result"].(map[string]any)["protocolVersion"], "%v", init)
}
