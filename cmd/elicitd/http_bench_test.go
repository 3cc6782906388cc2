package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
)

// personAnswer is the valid answer to bare.PersonSchema every HTTP benchmark client gives.
var personAnswer = map[string]any{"name": "Ada", "age": 36, "email": "ada@example.com"}

// httpWarmUp is how many calls each sub-benchmark of BenchmarkHTTPRoundTrip makes, per
// goroutine, before it starts the clock: connections, the servers' first calls and the
// embedded store's first writes are not measured.
const httpWarmUp = 8

// BenchmarkHTTPRoundTrip guards the Streamable HTTP figures: whole answered tool calls over
// loopback, from a go-sdk client (mcp.StreamableClientTransport) that answers every
// elicitation at once with valid content, to a server process. The servers are "bare" (the
// bare server's ask_person: a raw go-sdk handler, push era on a session, pull era stateless
// with requestState, as the peers harness's raw go-sdk server), "memory" (elicitd --http
// --store memory) and "embedded" (elicitd --http --store embedded, its default, on a fresh
// --data-dir), elicitd with --rate 0 --max-live 100000 --log-level error and asked through
// ask_user with bare.PersonSchema as its schema. Each is run in both eras, "push" (the client
// pinned to 2025-11-25: the question comes on the call's response stream) and "pull"
// (2026-07-28: the first call returns input requests, the client calls again with the
// answer), from 1 and 16 goroutines sharing one client session, as
// BenchmarkHTTPRoundTrip/ERA/cN/SERVER.
//
// One op is one completed tools/call, both rounds of the pull era included; each run starts
// its own server and makes httpWarmUp calls per goroutine before the clock starts. It
// reports calls/s and server-cpu-us/call (the server process's CPU time over the timed
// calls, per call; see processCPU), and for elicitd, beside the bare server's latest run in
// the same era and concurrency (run just before it unless -bench leaves bare out), x-bare
// (its calls/s as a fraction of bare's) and cpu-x-bare (its CPU per call as a multiple of
// bare's). The servers run one after another, not in turns: compare ratios from one run.
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkHTTPRoundTrip -benchtime 300x
func BenchmarkHTTPRoundTrip(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"push", "2025-11-25"}, {"pull", "2026-07-28"}} {
		for _, conc := range []int{1, 16} {
			var ref *httpFigures // bare's latest run in this era and concurrency
			for _, server := range []string{"bare", "memory", "embedded"} {
				b.Run(fmt.Sprintf("%s/c%d/%s", era.name, conc, server), func(b *testing.B) {
					f := httpRoundTrips(b, server, era.version, conc)
					b.ReportMetric(f.callsPerSecond, "calls/s")
					b.ReportMetric(f.cpuPerCall.Seconds()*1e6, "server-cpu-us/call")
					if server == "bare" {
						ref = &f
						return
					}
					if ref != nil {
						b.ReportMetric(f.callsPerSecond/ref.callsPerSecond, "x-bare")
						if ref.cpuPerCall > 0 { // 0: no CPU-time clock to read (not Linux)
							b.ReportMetric(f.cpuPerCall.Seconds()/ref.cpuPerCall.Seconds(), "cpu-x-bare")
						}
					}
				})
			}
		}
	}
}

// httpFigures is what one run of a BenchmarkHTTPRoundTrip sub-benchmark measured.
type httpFigures struct {
	callsPerSecond float64
	cpuPerCall     time.Duration // the server process's
}

// httpRoundTrips starts server, connects one client session speaking version, warms it up,
// then times b.N calls from conc goroutines. It fails b on any call that does not complete
// with the answer, or that did not take exactly one elicitation.
func httpRoundTrips(b *testing.B, server, version string, conc int) httpFigures {
	common := []string{"--rate", "0", "--max-live", "100000", "--log-level", "error"}
	tool, args := "ask_user", map[string]any{"message": "Who?", "schema": bare.PersonSchema}
	var s *httpServer
	switch server {
	case "bare":
		tool, args = "ask_person", nil
		s = startListening(b, bareBinary(b), nil)
	case "memory":
		s = startQuiet(b, append(common, "--store", "memory"))
	case "embedded":
		s = startQuiet(b, append(common, "--store", "embedded", "--data-dir", b.TempDir()))
	default:
		b.Fatalf("no server %q", server)
	}
	cs, asked := answeringHTTPSession(b, s, version, conc)
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", server, err)
		case res.IsError || res.NeedsInput() || !strings.Contains(resultText(res), `"Ada"`):
			return fmt.Errorf("%s: the call did not complete with the answer: %s", server, resultText(res))
		}
		return nil
	}
	if err := httpCalls(conc, httpWarmUp*conc, call); err != nil {
		b.Fatal(err)
	}
	if n := asked.Load(); n != int64(httpWarmUp*conc) {
		b.Fatalf("%s: %d elicitations for %d warm-up calls", server, n, httpWarmUp*conc)
	}
	pid := s.cmd.Process.Pid
	cpu0 := processCPU(pid)
	b.ResetTimer()
	err := httpCalls(conc, b.N, call)
	b.StopTimer()
	cpu := processCPU(pid) - cpu0
	if err != nil {
		b.Fatal(err)
	}
	if n := asked.Load() - int64(httpWarmUp*conc); n != int64(b.N) {
		b.Fatalf("%s: %d elicitations for %d calls", server, n, b.N)
	}
	return httpFigures{callsPerSecond: float64(b.N) / b.Elapsed().Seconds(), cpuPerCall: cpu / time.Duration(b.N)}
}

// httpCalls makes n calls from conc goroutines and returns the first error, after which no
// goroutine starts another call.
func httpCalls(conc, n int, call func() error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call(); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n)) // no more calls
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// answeringHTTPSession connects a go-sdk client speaking version to s over Streamable HTTP,
// which answers every elicitation at once with personAnswer and counts them in asked. Its
// HTTP transport keeps up to two idle connections per goroutine (a push-era call has its own
// request and its answer's in flight), so calls reuse connections rather than time TCP
// set-up. Session and connections are closed when b ends.
func answeringHTTPSession(b *testing.B, s *httpServer, version string, conc int) (*mcp.ClientSession, *atomic.Int64) {
	b.Helper()
	asked := new(atomic.Int64)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-http", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: personAnswer}, nil
		}})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * conc
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: tr}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		tr.CloseIdleConnections()
	})
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("asked for protocol %s, got %s", version, got)
	}
	return cs, asked
}

// resultText is a tool result's text content, or its structured content as JSON when it has
// no text.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	if sb.Len() == 0 && res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return fmt.Sprintf("%+v", res.StructuredContent)
		}
		return string(raw)
	}
	return sb.String()
}
