package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/elicitd/elicitd/tasks"
)

// productQuestions is how many questions BenchmarkWaitingQuestions leaves waiting: 100,000
// unless -product.questions says (1000000 for the figure in docs/settings.md).
var productQuestions = 100_000

// productFlags are flags BenchmarkWaitingQuestions gives elicitd besides its own, space-separated
// (-product.flags "--memory-limit 2147483648"): none, to measure the defaults.
var productFlags string

// productBinaryFlag, if set (-product.binary PATH), is the elicitd BenchmarkWaitingQuestions
// measures instead of this tree's: a build of another commit, to compare.
var productBinaryFlag string

// productCalls is how many whole calls BenchmarkWaitingQuestions makes at each concurrency
// once its questions wait, to measure CPU per call (0: none).
var productCalls = 2000

// productSteady has BenchmarkWaitingQuestions also read the RSS once the process has been
// idle through one of the runtime's periodic collections (one every two minutes at the
// most): what a node holds while its questions wait, after the garbage of the burst that
// asked them is gone (-product.steady).
var productSteady bool

// productHeapProfile, if set (-product.heapprofile PREFIX), is where BenchmarkWaitingQuestions
// writes elicitd's heap profile once its questions wait (PREFIX-pull.pprof, PREFIX-tasks.pprof),
// as /debug/pprof/heap serves it: where their live bytes go.
var productHeapProfile string

func init() {
	flag.StringVar(&productBinaryFlag, "product.binary", "", "BenchmarkWaitingQuestions: measure this elicitd binary instead of this tree's")
	flag.IntVar(&productCalls, "product.calls", productCalls, "BenchmarkWaitingQuestions: whole calls to time at 1 and 16 callers once the questions wait")
	flag.BoolVar(&productSteady, "product.steady", false, "BenchmarkWaitingQuestions: also read the RSS after a periodic collection (some 2 minutes more)")
	flag.StringVar(&productFlags, "product.flags", "", "BenchmarkWaitingQuestions: more flags for elicitd, space-separated")
	flag.StringVar(&productHeapProfile, "product.heapprofile", "", "BenchmarkWaitingQuestions: write elicitd's heap profiles to PREFIX-KIND.pprof")
	flag.IntVar(&productQuestions, "product.questions", productQuestions, "BenchmarkWaitingQuestions: how many questions to leave waiting")
}

// productBinary is elicitd as it ships: built without the race detector whatever the tests
// run with (its memory is what is measured), once per test binary, beside bin (removed with
// it).
var productBinary = sync.OnceValues(func() (string, error) {
	path := filepath.Join(filepath.Dir(bin), "elicitd-product")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building elicitd: %v\n%s", err, out)
	}
	return path, nil
})

// productEnv is the environment elicitd runs with in BenchmarkWaitingQuestions: this
// process's, less every ELICITD_ setting and Go's own tuning, so that elicitd's defaults are
// what is measured.
func productEnv(dataDir string) []string {
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch {
		case strings.HasPrefix(name, "ELICITD_"), name == "GOGC", name == "GOMEMLIMIT", name == "GOMAXPROCS", name == "GODEBUG",
			name == "XDG_DATA_HOME", name == "HOME":
			continue
		}
		env = append(env, e)
	}
	// The default store of --http, in its default place (the data directory under
	// $XDG_DATA_HOME), here a directory of the benchmark's own.
	return append(env, "XDG_DATA_HOME="+dataDir, "HOME="+dataDir)
}

// BenchmarkWaitingQuestions measures what a waiting question costs the operator: it starts
// the built elicitd (without the race detector) over Streamable HTTP on its own defaults
// (embedded store, memory limit, collector), with only --rate 0 (the per-session rate limit
// would refuse a fill this fast) and --timeout 3h (so no question ends while it is
// measured), leaves -product.questions (100,000) questions waiting, asked by ask_user from
// 8 go-sdk clients and never answered, and reads the process's resident memory (VmRSS)
// after they settle. "pull": 2026-07-28 first calls, each handing out a question;
// "tasks": the same calls from clients that declare the Tasks extension, each a task
// waiting for the person. It reports rss-B/question ((RSS after - RSS before) / questions),
// rss-MB (after), heap-live-B/question and heap-goal-MB (from /metrics, the runtime's own
// figures: live heap after the last collection and the target in force) and fill-s; then,
// with the questions still waiting, it times -product.calls (2,000) whole pull-era calls of
// ask_user (asked and answered at once) at 1 and at 16 callers and reports the server's CPU
// per call (server-cpu-us/call-c1, -c16): what the collector's policy costs a call while the
// live heap is large.
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkWaitingQuestions -benchtime 1x
func BenchmarkWaitingQuestions(b *testing.B) {
	for _, kind := range []string{"pull", "tasks"} {
		b.Run(kind, func(b *testing.B) { benchWaiting(b, kind == "tasks") })
	}
}

func benchWaiting(b *testing.B, withTasks bool) {
	path, err := productBinary()
	if productBinaryFlag != "" {
		path, err = productBinaryFlag, nil
	}
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	args := append([]string{"--rate", "0", "--timeout", "3h", "--metrics-listen", "127.0.0.1:0"}, strings.Fields(productFlags)...)
	s := startListeningEnv(b, path, args, productEnv(dir))
	ctx := context.Background()
	const clients, perClient = 8, 8
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not asked")
			}}
		if withTasks {
			opts.Capabilities = tasksCaps()
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts).Connect(ctx, httpTransport(s, nil),
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	ask := func(cs *mcp.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
		switch {
		case err != nil:
			return err
		case withTasks && tasks.TaskOf(res) == "":
			return errors.New("ask_user did not become a task")
		case !withTasks && !res.NeedsInput():
			return errors.New("ask_user did not ask")
		}
		return nil
	}
	// A few calls first, so that what the first calls of any kind load (code paths, the
	// store's streams) is in the figure before.
	for range 20 {
		if err := ask(sessions[0]); err != nil {
			b.Fatal(err)
		}
	}
	before := settledRSS(b, s.cmd.Process.Pid)
	n := productQuestions
	start := time.Now()
	var next atomic.Int64
	var g errgroup.Group
	for c := range clients * perClient {
		cs := sessions[c%clients]
		g.Go(func() error {
			for next.Add(1) <= int64(n) {
				if err := ask(cs); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	fill := time.Since(start)
	after := settledRSS(b, s.cmd.Process.Pid)
	if productSteady {
		gcs := func() uint64 {
			f, _ := scrape(b, s)
			if g := f["go_gc_duration_seconds"]; g != nil && len(g.Metric) > 0 && g.Metric[0].Summary != nil {
				return g.Metric[0].Summary.GetSampleCount()
			}
			b.Fatal("elicitd's /metrics has no go_gc_duration_seconds")
			return 0
		}
		// Idle from here: the collection that comes is the runtime's periodic one.
		n0 := gcs()
		for i := 0; gcs() == n0; i++ {
			if i > 150 {
				b.Fatal("no collection in 150 s")
			}
			time.Sleep(time.Second) // a measurement's interval, not a wait for a state
		}
		b.ReportMetric(float64(settledRSS(b, s.cmd.Process.Pid)-before)/float64(n), "rss-steady-B/question")
	}
	families, _ := scrape(b, s)
	if productHeapProfile != "" {
		kind := map[bool]string{false: "pull", true: "tasks"}[withTasks]
		res, err := http.Get(metricsURL(b, s) + "/debug/pprof/heap?gc=1")
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("/debug/pprof/heap: %v %s", err, res.Status)
		}
		if err := os.WriteFile(productHeapProfile+"-"+kind+".pprof", body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The runtime's figures, where the binary serves them (a build before they were added
	// does not).
	gauge := func(name string) (float64, bool) {
		if f := families[name]; f != nil && len(f.Metric) > 0 && f.Metric[0].Gauge != nil {
			return f.Metric[0].Gauge.GetValue(), true
		}
		return 0, false
	}
	b.ReportMetric(float64(after-before)/float64(n), "rss-B/question")
	b.ReportMetric(float64(after)/1e6, "rss-MB")
	if live, ok := gauge("elicitd_heap_live_bytes"); ok {
		b.ReportMetric(live/float64(n), "heap-live-B/question")
	}
	if goal, ok := gauge("elicitd_heap_goal_bytes"); ok {
		b.ReportMetric(goal/1e6, "heap-goal-MB")
	}
	b.ReportMetric(fill.Seconds(), "fill-s")
	// What a call costs the server while they wait: whole pull-era calls (asked and
	// answered at once), from a client without the extension, at 1 and 16 callers.
	if productCalls > 0 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).Connect(ctx, httpTransport(s, nil),
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		whole := func() error { return askedAndAnswered(ctx, cs) }
		for _, conc := range []int{1, 16} {
			var left atomic.Int64
			left.Store(int64(productCalls))
			run := func() error {
				var g errgroup.Group
				for range conc {
					g.Go(func() error {
						for left.Add(-1) >= 0 {
							if err := whole(); err != nil {
								return err
							}
						}
						return nil
					})
				}
				return g.Wait()
			}
			left.Store(100) // warm-up
			if err := run(); err != nil {
				b.Fatal(err)
			}
			left.Store(int64(productCalls))
			cpu0 := processCPU(s.cmd.Process.Pid)
			if err := run(); err != nil {
				b.Fatal(err)
			}
			cpu := processCPU(s.cmd.Process.Pid) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(productCalls), fmt.Sprintf("server-cpu-us/call-c%d", conc))
		}
	}
	b.ReportMetric(0, "ns/op")
}

// askedAndAnswered makes one whole pull-era call of ask_user with ageArgs over cs: the first
// call, and the retry that answers its question.
func askedAndAnswered(ctx context.Context, cs *mcp.ClientSession) error {
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	if err != nil {
		return err
	}
	answer := mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36}}}
	done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs, RequestState: first.RequestState, InputResponses: answer})
	if err == nil && done.NeedsInput() {
		err = errors.New("the answer was not taken")
	}
	return err
}

// settledRSS is pid's resident memory once it has settled, as an operator reading it a little
// after a burst would see it: read each second until it moves by under 1% in a second, for
// 10 s at the most, and then the last reading.
func settledRSS(b *testing.B, pid int) int64 {
	b.Helper()
	last := rss(b, pid)
	for range 10 {
		time.Sleep(time.Second) // a measurement's interval, not a wait for a state
		now := rss(b, pid)
		settled := now-last < last/100 && last-now < last/100
		last = now
		if settled {
			break
		}
	}
	return last
}

// rss is pid's VmRSS in bytes.
func rss(b *testing.B, pid int) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
