package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioRoundTrip is BenchmarkHTTPRoundTrip over stdio: whole answered tool calls
// from a go-sdk client (mcp.CommandTransport) that answers every elicitation at once with
// valid content, to a server process it starts and talks to over its stdin and stdout, as an
// MCP host does. The servers are "bare" (the bare server's ask_person: a raw go-sdk handler,
// Elicit in the push era, input requests with requestState in the pull era, as the peers
// harness's raw go-sdk server), "memory" (elicitd --store memory, stdio's default) and
// "embedded" (elicitd --store embedded on a fresh --data-dir), elicitd with --rate 0
// --max-live 100000 --log-level error and asked through ask_user with bare.PersonSchema as
// its schema. Each is run in both eras, "push" (the client pinned to 2025-11-25) and "pull"
// (2026-07-28: the first call returns input requests, the client calls again with the
// answer), from 1 and 16 goroutines sharing the one session a stdio server has, as
// BenchmarkStdioRoundTrip/ERA/cN/SERVER.
//
// One op is one completed tools/call, both rounds of the pull era included. Each run starts
// its server, and for elicitd a bare server beside it, warms both up, and has them take turns
// in batches with the clock running for elicitd's only, as BenchmarkHTTPRoundTrip does. It
// reports the same metrics: calls/s, server-cpu-us/call, and for elicitd x-bare (calls/s as
// a fraction of bare's: above 1 is faster) and cpu-x-bare (CPU per call as a multiple of
// bare's: above 1 costs more).
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkStdioRoundTrip -benchtime 300x
func BenchmarkStdioRoundTrip(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"push", "2025-11-25"}, {"pull", "2026-07-28"}} {
		for _, conc := range []int{1, 16} {
			for _, server := range []string{"bare", "memory", "embedded"} {
				b.Run(fmt.Sprintf("%s/c%d/%s", era.name, conc, server), func(b *testing.B) {
					r := startStdioRun(b, server, era.version, conc)
					var ref *serverRun
					if server != "bare" {
						ref = startStdioRun(b, "bare", era.version, conc)
					}
					timeServerRuns(b, conc, r, ref)
					r.report(b, ref)
				})
			}
		}
	}
}

// startStdioRun starts server as a child process, connects one client session speaking
// version to it over the child's stdin and stdout, and warms them up (warmedUpRun). The
// session, and with it the process, ends when b does.
func startStdioRun(b *testing.B, server, version string, conc int) *serverRun {
	common := []string{"--rate", "0", "--max-live", "100000", "--log-level", "error"}
	var cmd *exec.Cmd
	switch server {
	case "bare":
		cmd = exec.Command(bareBinary(b))
	case "memory":
		cmd = exec.Command(bin, append(common, "--store", "memory")...)
	case "embedded":
		cmd = exec.Command(bin, append(common, "--store", "embedded", "--data-dir", b.TempDir())...)
	default:
		b.Fatalf("no server %q", server)
	}
	asked := new(atomic.Int64)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := answeringClient("bench-stdio", asked).Connect(ctx, &mcp.CommandTransport{Command: cmd},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("asked for protocol %s, got %s", version, got)
	}
	return warmedUpRun(b, server, cs, asked, cmd.Process.Pid, conc)
}
