package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
)

// personAnswer is the valid answer to bare.PersonSchema every HTTP benchmark client gives.
var personAnswer = map[string]any{"name": "Ada", "age": 36, "email": "ada@example.com"}

// httpWarmUp is how many calls each server of a BenchmarkHTTPRoundTrip (or
// BenchmarkStdioRoundTrip) sub-benchmark answers, per goroutine, before the clock starts: connections, the servers' first calls and
// the embedded store's first writes are not measured.
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
// One op is one completed tools/call of the sub-benchmark's server, both rounds of the pull
// era included. Each run starts its server, and for elicitd a bare server beside it, and
// makes httpWarmUp calls per goroutine to each before the clock starts. elicitd and bare then
// take turns in batches of calls (rotating who goes first), as in BenchmarkRoundTrip, so
// that a machine whose speed drifts slows both alike; the clock stops for bare's batches,
// which make as many calls as elicitd's. It reports the server's calls/s and
// server-cpu-us/call (its process's CPU time over its timed calls, per call; see
// processCPU), and for elicitd x-bare (its calls/s as a fraction of bare's: above 1 is
// faster) and cpu-x-bare (its CPU per call as a multiple of bare's: above 1 costs more).
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkHTTPRoundTrip -benchtime 300x
func BenchmarkHTTPRoundTrip(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"push", "2025-11-25"}, {"pull", "2026-07-28"}} {
		for _, conc := range []int{1, 16} {
			for _, server := range []string{"bare", "memory", "embedded"} {
				b.Run(fmt.Sprintf("%s/c%d/%s", era.name, conc, server), func(b *testing.B) {
					r := startHTTPRun(b, server, era.version, conc)
					var ref *serverRun
					if server != "bare" {
						ref = startHTTPRun(b, "bare", era.version, conc)
					}
					timeServerRuns(b, conc, r, ref)
					r.report(b, ref)
				})
			}
		}
	}
}

// serverRun is a server process of BenchmarkHTTPRoundTrip or BenchmarkStdioRoundTrip with
// its answering client session, and what its batches measured.
type serverRun struct {
	*implRun
	asked *atomic.Int64 // elicitations the client has answered since the warm-up
}

// startHTTPRun starts server, connects one client session speaking version to it, and warms
// them up with httpWarmUp calls from each of conc goroutines. Its call fails unless the call
// completes with the answer. Server and session end when b does.
func startHTTPRun(b *testing.B, server, version string, conc int) *serverRun {
	common := []string{"--rate", "0", "--max-live", "100000", "--log-level", "error"}
	var s *httpServer
	switch server {
	case "bare":
		s = startListening(b, bareBinary(b), nil)
	case "memory":
		s = startQuiet(b, append(common, "--store", "memory"))
	case "embedded":
		s = startQuiet(b, append(common, "--store", "embedded", "--data-dir", b.TempDir()))
	default:
		b.Fatalf("no server %q", server)
	}
	cs, asked := answeringHTTPSession(b, s, version, conc)
	return warmedUpRun(b, server, cs, asked, s.cmd.Process.Pid, conc)
}

// warmedUpRun is server's run over the session cs, whose client counts the elicitations it
// answers in asked, pid the server's process: it asks ask_person of the bare server and
// ask_user with bare.PersonSchema of elicitd, and fails a call unless it completes with the
// answer. It makes httpWarmUp calls from each of conc goroutines before it returns, and
// checks each was asked once.
func warmedUpRun(b *testing.B, server string, cs *mcp.ClientSession, asked *atomic.Int64, pid, conc int) *serverRun {
	b.Helper()
	tool, args := "ask_user", map[string]any{"message": "Who?", "schema": bare.PersonSchema}
	if server == "bare" {
		tool, args = "ask_person", nil
	}
	r := &serverRun{asked: asked, implRun: &implRun{
		impl: server,
		cpu:  func() time.Duration { return processCPU(pid) },
		call: func() error {
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
		},
	}}
	if err := r.batch(conc, httpWarmUp*conc); err != nil {
		b.Fatal(err)
	}
	r.checkAsked(b)
	r.lat, r.busy, r.serverCPU = nil, 0, 0
	asked.Store(0)
	return r
}

// checkAsked fails b unless the client answered exactly one elicitation per call measured.
func (r *serverRun) checkAsked(b *testing.B) {
	if n := r.asked.Load(); n != int64(len(r.lat)) {
		b.Fatalf("%s: %d elicitations for %d calls", r.impl, n, len(r.lat))
	}
}

func (r *serverRun) callsPerSecond() float64 { return float64(len(r.lat)) / r.busy.Seconds() }

func (r *serverRun) cpuPerCall() time.Duration { return r.serverCPU / time.Duration(len(r.lat)) }

// report adds r's calls/s and server-cpu-us/call to b's metrics, and when ref (the bare
// server r took turns with) is not nil, x-bare and cpu-x-bare.
func (r *serverRun) report(b *testing.B, ref *serverRun) {
	b.ReportMetric(r.callsPerSecond(), "calls/s")
	b.ReportMetric(r.cpuPerCall().Seconds()*1e6, "server-cpu-us/call")
	if ref == nil {
		return
	}
	b.ReportMetric(r.callsPerSecond()/ref.callsPerSecond(), "x-bare")
	if ref.cpuPerCall() > 0 { // 0: no CPU-time clock to read (not Linux)
		b.ReportMetric(r.cpuPerCall().Seconds()/ref.cpuPerCall().Seconds(), "cpu-x-bare")
	}
}

// timeServerRuns makes b.N calls to r from conc goroutines with the clock running, and as
// many to ref (when not nil) with it stopped, the two taking turns in batches.
func timeServerRuns(b *testing.B, conc int, r, ref *serverRun) {
	size := 8 * conc
	b.ResetTimer()
	for round := 0; round*size < b.N; round++ {
		n := min(size, b.N-round*size)
		turns := []*serverRun{r, ref}
		if round%2 == 1 {
			turns[0], turns[1] = ref, r
		}
		for _, t := range turns {
			if t == nil {
				continue
			}
			if t == ref {
				b.StopTimer()
			}
			if err := t.batch(conc, n); err != nil {
				b.Fatal(err)
			}
			if t == ref {
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	r.checkAsked(b)
	if ref != nil {
		ref.checkAsked(b)
	}
}

// answeringClient is a go-sdk client that answers every elicitation at once with
// personAnswer, counting them in asked.
func answeringClient(name string, asked *atomic.Int64) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: personAnswer}, nil
		}})
}

// answeringHTTPSession connects a go-sdk client speaking version to s over Streamable HTTP,
// which answers every elicitation at once with personAnswer and counts them in asked. Its
// HTTP transport keeps up to two idle connections per goroutine (a push-era call has its own
// request and its answer's in flight), so calls reuse connections rather than time TCP
// set-up. Session and connections are closed when b ends.
func answeringHTTPSession(b *testing.B, s *httpServer, version string, conc int) (*mcp.ClientSession, *atomic.Int64) {
	b.Helper()
	asked := new(atomic.Int64)
	client := answeringClient("bench-http", asked)
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
