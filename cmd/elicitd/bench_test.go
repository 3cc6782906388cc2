package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// The same 3-field question as the bare server's, as elicitd's ask_user form.
var benchForm = map[string]any{"title": "Parcel", "fields": []any{
	map[string]any{"name": "name", "type": "text", "label": "Name", "required": true},
	map[string]any{"name": "weight", "type": "number", "label": "Weight", "required": true, "exclusive_minimum": 0},
	map[string]any{"name": "express", "type": "boolean", "label": "Express"},
}}

var (
	bareBinOnce sync.Once
	bareBin     string
	bareBinErr  error
)

// bareBinary builds testdata/bareserver next to the elicitd binary, once.
func bareBinary(b *testing.B) string {
	bareBinOnce.Do(func() {
		bareBin = filepath.Join(filepath.Dir(bin), "bareserver")
		out, err := goBuild(bareBin, "./testdata/bareserver")
		if err != nil {
			bareBinErr = fmt.Errorf("building bareserver: %v\n%s", err, out)
		}
	})
	if bareBinErr != nil {
		b.Fatal(bareBinErr)
	}
	return bareBin
}

// BenchmarkRoundTrip compares a whole answered tool call through elicitd's ask_user with the
// same question from a bare go-sdk server, with a go-sdk client that answers at once: over
// stdio (the built binaries) and in process (in-memory transports), in both eras, from 1 and
// 16 goroutines. Each sub-benchmark connects every implementation, then takes turns between
// them in batches of calls (rotating who goes first), so a machine whose speed drifts during
// the run slows them all alike; b.N is calls per implementation. It reports, per
// implementation, calls/s over the time spent on its own batches and the p50 and p99 latency of
// a call, and elicitd's calls/s as a fraction of the bare server's ("elicitd/bare") and of
// the raw tool's ("elicitd/raw", the ratio the peers harness's table reports; over stdio also
// "embedded/raw").
//
// Implementations: "raw" (a raw handler, no arguments, nothing checked: the peers harness's
// raw go-sdk server), "bare" (a typed tool, no arguments), "bare-args" (the typed tool given
// ask_user's arguments, to show what carrying the form costs the SDK), "elicitd" (ask_user),
// over stdio "elicitd-embedded" (ask_user, with the embedded store in a fresh directory), and
// in process "engine" (elicitd's engine with a precompiled form, no arguments).
func BenchmarkRoundTrip(b *testing.B) {
	for _, transport := range []string{"stdio", "mem"} {
		for _, era := range []struct{ name, version string }{{"pull", ""}, {"push", "2025-11-25"}} {
			for _, conc := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%s/c%d", transport, era.name, conc), func(b *testing.B) {
					impls := []string{"raw", "bare", "bare-args", "elicitd", "engine"}
					if transport == "stdio" {
						// The engine variant is an in-process tool; over stdio, elicitd
						// with its embedded store instead.
						impls = append(impls[:4], "elicitd-embedded")
					}
					runs := make([]*implRun, len(impls))
					for i, impl := range impls {
						runs[i] = newImplRun(b, transport, impl, era.version)
					}
					rate := interleave(b, runs, conc)
					b.ReportMetric(rate["elicitd"]/rate["bare"], "elicitd/bare")
					b.ReportMetric(rate["elicitd"]/rate["raw"], "elicitd/raw")
					if transport == "stdio" {
						b.ReportMetric(rate["elicitd-embedded"]/rate["raw"], "embedded/raw")
					}
				})
			}
		}
	}
}

// implRun is one implementation's session and what its batches measured.
type implRun struct {
	impl  string
	call  func() error
	close func()
	busy  time.Duration
	lat   []time.Duration

	// cpu, when set, returns the CPU time the server's process has used so far; serverCPU
	// adds up what it used during this implementation's batches.
	cpu       func() time.Duration
	serverCPU time.Duration
	// mem: the server runs in this process; mallocs and bytes add up the heap allocations
	// made during this implementation's batches (client and server alike).
	mem            bool
	mallocs, bytes uint64
}

func newImplRun(b *testing.B, transport, impl, version string) *implRun {
	tool, args := "ask", map[string]any{}
	switch impl {
	case "raw":
		tool = "ask_raw"
	case "bare-args":
		tool, args = "ask_args", map[string]any{"message": "m", "form": benchForm}
	case "elicitd", "elicitd-embedded":
		tool, args = "ask_user", map[string]any{"message": "m", "form": benchForm}
	}
	cs, pid, done := benchSession(b, transport, impl, version)
	var cpu func() time.Duration
	if pid != 0 {
		cpu = func() time.Duration { return processCPU(pid) }
	}
	return &implRun{
		impl: impl,
		cpu:  cpu,
		mem:  transport == "mem",
		call: func() error {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err == nil && res.IsError {
				err = fmt.Errorf("%s: tool error: %v", impl, res.Content)
			}
			return err
		},
		close: func() {
			_ = cs.Close()
			done()
		},
	}
}

// batch makes n calls from conc goroutines, adding their latencies and the batch's duration.
func (r *implRun) batch(conc, n int) error {
	var next atomic.Int64
	first := len(r.lat)
	r.lat = append(r.lat, make([]time.Duration, n)...)
	lat := r.lat[first:]
	errs := make(chan error, conc)
	var cpu0 time.Duration
	if r.cpu != nil {
		cpu0 = r.cpu()
	}
	var ms runtime.MemStats
	if r.mem {
		runtime.ReadMemStats(&ms)
		r.mallocs -= ms.Mallocs
		r.bytes -= ms.TotalAlloc
	}
	began := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := r.call(); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	r.busy += time.Since(began)
	if r.cpu != nil {
		r.serverCPU += r.cpu() - cpu0
	}
	if r.mem {
		runtime.ReadMemStats(&ms)
		r.mallocs += ms.Mallocs
		r.bytes += ms.TotalAlloc
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// report adds the implementation's calls/s, p50 and p99 to b's metrics and returns calls/s.
func (r *implRun) report(b *testing.B) float64 {
	slices.Sort(r.lat)
	n := len(r.lat)
	rate := float64(n) / r.busy.Seconds()
	b.ReportMetric(rate, r.impl+"-calls/s")
	b.ReportMetric(float64(r.lat[n/2].Microseconds()), r.impl+"-p50-us")
	b.ReportMetric(float64(r.lat[min(n-1, n*99/100)].Microseconds()), r.impl+"-p99-us")
	if r.cpu != nil {
		b.ReportMetric(r.serverCPU.Seconds()*1e6/float64(n), r.impl+"-server-cpu-us/call")
	}
	if r.mem {
		b.ReportMetric(float64(r.mallocs)/float64(n), r.impl+"-allocs/call")
		b.ReportMetric(float64(r.bytes)/float64(n), r.impl+"-B/call")
	}
	return rate
}

// processCPU returns the CPU time (user and system, in nanoseconds) process pid has used so
// far, or 0 where it cannot be read. It reads the process's CPU-time clock
// (clock_getcpuclockid(3): clock_gettime on a clock id made from the pid), which on Linux is
// the kernel's exact sum over all the process's threads, those that have ended included.
// rusage, as /proc/<pid>/stat gives it, counts in 10 ms ticks, too coarse for a batch of
// calls; the threads' schedstat is exact but forgets a thread once it ends; and the child's
// rusage, read once it has exited, cannot tell the calls measured from the start-up and
// warm-up before them.
func processCPU(pid int) time.Duration {
	const cpuClockSched = 2 // CPUCLOCK_SCHED: time on a CPU, as the scheduler counts it
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|cpuClockSched), &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// benchSession connects an answering client to the implementation under test: its binary
// over stdio, or its server in process over in-memory transports.
func benchSession(b *testing.B, transport, impl, version string) (cs *mcp.ClientSession, pid int, done func()) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "weight": 2.5, "express": true}}, nil
		},
	})
	opts := &mcp.ClientSessionOptions{ProtocolVersion: version}
	if transport == "stdio" {
		var cmd *exec.Cmd
		switch impl {
		case "elicitd":
			cmd = exec.Command(bin, "--rate", "0", "--max-live", "100000", "--log-level", "error")
		case "elicitd-embedded":
			cmd = exec.Command(bin, "--rate", "0", "--max-live", "100000", "--log-level", "error", "--store", "embedded", "--data-dir", b.TempDir())
		default:
			cmd = exec.Command(bareBinary(b))
		}
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, opts)
		if err != nil {
			b.Fatal(err)
		}
		return cs, cmd.Process.Pid, func() {}
	}
	var mcpServer *mcp.Server
	var srv *server
	switch impl {
	case "raw", "bare", "bare-args":
		mcpServer = bare.Server()
	default:
		srv = newServer(options{MaxLive: 1 << 20}, "bench")
		mcpServer = srv.mcp
		if impl == "engine" {
			addEngineTool(b, srv)
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpServer.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err = client.Connect(context.Background(), ct, opts)
	if err != nil {
		b.Fatal(err)
	}
	return cs, 0, func() {
		_ = ss.Wait()
		if srv != nil {
			_ = srv.close(context.Background(), elicitation.Shutdown)
		}
	}
}

// addEngineTool adds "ask": the same question as the bare server's, asked through elicitd's
// Elicitor with a precompiled form. Beside ask_user it separates the engine's cost from the
// cost of carrying a form in every call's arguments.
func addEngineTool(b *testing.B, srv *server) {
	raw, _ := json.Marshal(benchForm)
	form, err := validator.CompileJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	ask.AddTool(srv.el, srv.mcp, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		data, err := ask.Ask(ctx, ask.Question{Message: "m", Form: form})
		if err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(data)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
}

// interleave times b.N calls on each of runs from conc goroutines, the runs taking turns in
// batches (rotating who goes first) so that a machine whose speed drifts slows them all
// alike, then reports each and closes it, and returns each one's calls/s by its name.
func interleave(b *testing.B, runs []*implRun, conc int) map[string]float64 {
	size := 8 * conc
	b.ResetTimer()
	for round := 0; round*size < b.N; round++ {
		n := min(size, b.N-round*size)
		for k := range runs {
			if err := runs[(round+k)%len(runs)].batch(conc, n); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	rate := map[string]float64{}
	for _, r := range runs {
		rate[r.impl] = r.report(b)
		r.close()
	}
	return rate
}
