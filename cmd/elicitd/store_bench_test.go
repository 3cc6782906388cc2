package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// BenchmarkStoreCalls measures whole 2026-07-28 calls of ask_user (benchForm) over Streamable
// HTTP, end to end, with each store: the built binary with --store memory, --store embedded
// (on a temporary --data-dir), and --store on an external 3-node NATS cluster on loopback
// (natsCluster, in this process) with --store-replicas 3, all with --rate 0 --max-live
// 100000 --log-level error (started by startQuiet). A whole call is the first call, which hands out the question,
// and one retry answering it (name "Ada", weight 2.5, express true), which completes it.
// From 1 and 16 goroutines, each with a client session of its own on each server. The
// three servers run side by side and take turns in batches of calls (rotating who goes
// first), as in BenchmarkRoundTrip; b.N is whole calls per store. It reports, per store,
// whole calls/s over its own batches and the p50 and p99 latency of a whole call (µs), and
// the calls/s of embedded and cluster as fractions of memory's. Beside them, "spread" is
// three nodes on that cluster, each request sent to the next node in turn (the first call
// to one, its retry to another, as a load balancer may), which the hibernating question
// allows without forwarding: spread/memory is the cluster's fraction of one node. "sticky"
// is the same three nodes with each client session held by one of them (no round served by
// a node other than the one that asked): the most spreading could give on this machine,
// where the three nodes, the three NATS servers and the clients share its cores.
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkStoreCalls -benchtime 1500x
func BenchmarkStoreCalls(b *testing.B) {
	urls := natsCluster(b, 3) // stopped after the servers using it
	common := []string{"--rate", "0", "--max-live", "100000", "--log-level", "error"}
	servers := []struct {
		name string
		s    *httpServer
	}{
		{"memory", startQuiet(b, slices.Concat(common, []string{"--store", "memory"}))},
		{"embedded", startQuiet(b, slices.Concat(common, []string{"--store", "embedded", "--data-dir", b.TempDir()}))},
		{"cluster", startQuiet(b, slices.Concat(common, []string{"--store", strings.Join(urls, ","), "--store-replicas", "3"}))},
	}
	onCluster := slices.Concat(common, []string{"--store", strings.Join(urls, ","), "--store-replicas", "3"})
	spread := []*httpServer{servers[2].s, startQuiet(b, onCluster), startQuiet(b, onCluster)}
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			runs := make([]*implRun, len(servers), len(servers)+1)
			for i, sv := range servers {
				runs[i] = storeCallsRun(b, sv.name, func() *mcp.ClientSession { return pullSession(b, sv.s) }, conc)
			}
			runs = append(runs, storeCallsRun(b, "spread", func() *mcp.ClientSession { return spreadSession(b, spread) }, conc))
			k := 0
			runs = append(runs, storeCallsRun(b, "sticky", func() *mcp.ClientSession { k++; return pullSession(b, spread[k%len(spread)]) }, conc))
			// One whole call on each first: connections and the servers' first calls.
			for _, r := range runs {
				if err := r.call(); err != nil {
					b.Fatal(err)
				}
			}
			rate := interleave(b, runs, conc)
			b.ReportMetric(rate["embedded"]/rate["memory"], "embedded/memory")
			b.ReportMetric(rate["cluster"]/rate["memory"], "cluster/memory")
			b.ReportMetric(rate["spread"]/rate["memory"], "spread/memory")
			b.ReportMetric(rate["sticky"]/rate["memory"], "sticky/memory")
			b.Logf("c%-2d spread over three nodes %6.0f calls/s (%.2fx of one node with the memory store); sticky %6.0f calls/s (%.2fx)",
				conc, rate["spread"], rate["spread"]/rate["memory"], rate["sticky"], rate["sticky"]/rate["memory"])
			b.Logf("c%-2d %5d calls each: memory %6.0f calls/s | embedded %6.0f calls/s (%.2fx) | cluster %6.0f calls/s (%.2fx)",
				conc, b.N, rate["memory"], rate["embedded"], rate["embedded"]/rate["memory"], rate["cluster"], rate["cluster"]/rate["memory"])
		})
	}
}

// startQuiet is startHTTPWith for a server that says nothing (--log-level error): it picks a
// free loopback port itself, and the server is ready once that port takes connections. It
// is stopped with SIGTERM when b ends.
func startQuiet(b testing.TB, args []string) *httpServer {
	b.Helper()
	return startListening(b, bin, args)
}

// startListening is startQuiet for any server binary taking --http ADDR (elicitd, or the
// bare server): it runs binary --http ADDR args... on a free loopback port.
func startListening(b testing.TB, binary string, args []string) *httpServer {
	b.Helper()
	return startListeningEnv(b, binary, args, nil)
}

// startListeningEnv is startListening with env as the process's whole environment (nil:
// this process's).
func startListeningEnv(b testing.TB, binary string, args, env []string) *httpServer {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &httpServer{url: "http://" + addr + "/mcp", stderr: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(binary, append([]string{"--http", addr}, args...)...)
	s.cmd.Env = env
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	b.Cleanup(func() {
		_ = s.stop(b)
		if out := s.stderr.String(); strings.Contains(out, raceReport) {
			b.Errorf("the server raced:\n%s", out)
		}
	})
	var exited error
	gone := false
	require.Eventually(b, func() bool {
		select {
		case exited = <-s.exited:
			s.exited <- exited // for stop
			gone = true
			return true
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, failsafe, 5*time.Millisecond, "%s %v does not listen on %s:\n%s", filepath.Base(binary), args, addr, s.stderr.String())
	if gone {
		b.Fatalf("%s %v exited before listening: %v\n%s", filepath.Base(binary), args, exited, s.stderr.String())
	}
	return s
}

// storeCallsRun is a store's implRun: conc client sessions (from session), one for each
// goroutine of a batch (a goroutine takes one from the pool for each call), each making
// whole calls.
func storeCallsRun(b testing.TB, name string, session func() *mcp.ClientSession, conc int) *implRun {
	pool := make(chan *mcp.ClientSession, conc)
	for range conc {
		pool <- session()
	}
	args := map[string]any{"message": "m", "form": benchForm}
	answer := mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "weight": 2.5, "express": true}}}
	return &implRun{
		impl: name,
		call: func() error {
			cs := <-pool
			defer func() { pool <- cs }()
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			defer cancel()
			first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
			if err != nil {
				return fmt.Errorf("%s: first call: %w", name, err)
			}
			if _, ok := first.InputRequests["elicit-1"]; !ok || len(first.InputRequests) != 1 {
				return fmt.Errorf("%s: the first call did not hand out round 1: %+v", name, first.StructuredContent)
			}
			done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: first.RequestState, InputResponses: answer})
			if err != nil {
				return fmt.Errorf("%s: answer: %w", name, err)
			}
			if out, _ := done.StructuredContent.(map[string]any); done.NeedsInput() || out["status"] != "completed" {
				return fmt.Errorf("%s: the answer did not complete the call: %+v", name, done.StructuredContent)
			}
			return nil
		},
		close: func() {},
	}
}

// pullSession is pullByHand for a benchmark: a 2026-07-28 client of s, declaring forms, whose
// input requests the caller answers by calling again. It has an HTTP transport of its own,
// which keeps its connection between calls; both are closed when b ends.
func pullSession(b testing.TB, s *httpServer) *mcp.ClientSession {
	b.Helper()
	return pullSessionVia(b, s.url, http.DefaultTransport.(*http.Transport).Clone())
}

// spreadSession is a 2026-07-28 session whose requests go to nodes in turn, each to the next.
func spreadSession(b testing.TB, nodes []*httpServer) *mcp.ClientSession {
	b.Helper()
	rot := &rotating{next: http.DefaultTransport.(*http.Transport).Clone()}
	for _, n := range nodes {
		u, err := url.Parse(n.url)
		if err != nil {
			b.Fatal(err)
		}
		rot.hosts = append(rot.hosts, u.Host)
	}
	return pullSessionVia(b, nodes[0].url, rot)
}

// rotating sends each request to the next of hosts in turn, as a load balancer may.
type rotating struct {
	next  *http.Transport
	hosts []string
	n     atomic.Uint64
}

func (r *rotating) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = r.hosts[int(r.n.Add(1)%uint64(len(r.hosts)))]
	req.Host = req.URL.Host
	return r.next.RoundTrip(req)
}

func (r *rotating) CloseIdleConnections() { r.next.CloseIdleConnections() }

// pullSessionVia is pullSession on endpoint, through tr.
func pullSessionVia(b testing.TB, endpoint string, tr interface {
	http.RoundTripper
	CloseIdleConnections()
}) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-http", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// A handler, so that elicitation is declared; never called with the retries off.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the benchmark")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		tr.CloseIdleConnections()
	})
	return cs
}
