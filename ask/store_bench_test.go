package ask_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/natsstore"
	"github.com/elicitd/elicitd/tasks"
	"github.com/elicitd/elicitd/validator"
)

// What writing 2026-07-28 calls through a store costs, in process: an Elicitor on an
// mcp.Server with one replayable tool that asks one 3-field question, a pull-era client on
// in-memory transports that answers by hand, and Options.Store nil (nothing written), the
// memory store, or the embedded NATS store (a nats-server with JetStream on a temporary
// directory, in this process).
//
//	go test ./ask -run '^$' -bench BenchmarkStoreRound -benchtime 2000x -count 1
//	go test ./ask -run '^$' -bench BenchmarkLiveQuestions -benchtime 100x -count 1
//
// BenchmarkLiveQuestions fills a node with 100,000 questions for each sub-benchmark (nil,
// memory, embedded): about a minute each on two CPUs. Its loop lists one owner's questions,
// which on the embedded store takes tens of milliseconds: give it a small -benchtime.

// parcelForm is the 3-field question of cmd/elicitd's benchmarks (benchForm), compiled.
var parcelForm = func() *validator.Compiled {
	f, err := validator.Compile(validator.Form{Title: "Parcel", Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true},
		{Name: "weight", Type: validator.Number, Label: "Weight", Required: true, ExclusiveMinimum: ptr(0.0)},
		{Name: "express", Type: validator.Boolean, Label: "Express"},
	}})
	if err != nil {
		panic(err)
	}
	return f
}()

var parcelAnswer = map[string]any{"name": "Ada", "weight": 2.5, "express": true}

// benchNode is an Elicitor with the tool "parcel" (and the management tools) on a server of
// its own, and a pull-era client of that server.
type benchNode struct {
	el     *ask.Elicitor
	server *mcp.Server
	u      *elicittest.User
}

// newBenchNode starts a node on s (nil: no store). owner is the Owner hook. The Elicitor is
// closed when b ends, after the client and before whatever b closes that was registered
// before this call (the store: register its Close first).
func newBenchNode(b *testing.B, s store.Store, owner func(*mcp.CallToolRequest) string) *benchNode {
	b.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	var relay store.Relay
	if c, ok := s.(*countingStore); ok {
		relay, _ = c.Store.(store.Relay)
	}
	el := ask.New(server, ask.Options{StateKey: []byte(strings.Repeat("k", 32)), Store: s, Relay: relay, Owner: owner, KeepAwake: benchAwake})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := el.Close(ctx, elicitation.Shutdown); err != nil {
			b.Errorf("closing the Elicitor: %v", err)
		}
	})
	tool := ask.RawTool[struct{}]("parcel", "", "asks for a parcel", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return ask.Ask(ctx, ask.Question{Message: "Your parcel?", Form: parcelForm})
	})
	tool.Replayable, tool.Pure = true, true // as ask_user is
	el.Add(server, tool)
	el.AddManagement(server)
	if benchTasks {
		ts := tasks.New(tasks.Options{Store: s, Owner: owner})
		ts.Allow("parcel", tasks.Optional)
		if err := ts.Install(server); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ts.Close(context.Background()) })
	}
	return &benchNode{el: el, server: server, u: elicittest.Connect(b, server, elicittest.Pull)}
}

// benchTasks has the bench nodes serve the Tasks extension, and askOn's calls declare it:
// each first call becomes a task waiting for the person.
var benchTasks bool

// benchAwake has the bench nodes keep their calls awake between rounds (Options.KeepAwake),
// to compare with hibernation.
var benchAwake bool

// ask makes a first call of parcel (meta: the request's _meta, nil for none), which hands
// out round 1, and returns its requestState.
func (n *benchNode) ask(ctx context.Context, meta mcp.Meta) (string, error) {
	return askOn(ctx, n.u.Session, meta)
}

// askOn is ask on the client session cs.
func askOn(ctx context.Context, cs *mcp.ClientSession, meta mcp.Meta) (string, error) {
	if benchTasks {
		meta = maps.Clone(meta)
		meta[mcp.MetaKeyClientCapabilities] = map[string]any{"elicitation": map[string]any{"form": map[string]any{}},
			"extensions": map[string]any{tasks.Extension: map[string]any{}}}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "parcel", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if benchTasks {
		related, _ := res.Meta[tasks.RelatedTask].(map[string]any)
		id, _ := related["taskId"].(string)
		if id == "" {
			return "", fmt.Errorf("the first call did not become a task: %+v", res)
		}
		return id, nil
	}
	if _, ok := res.InputRequests["elicit-1"]; !ok || len(res.InputRequests) != 1 || res.RequestState == "" {
		return "", fmt.Errorf("the first call did not hand out round 1: %+v", res.Content)
	}
	return res.RequestState, nil
}

// answer answers round 1 of the call whose state is state; the call completes.
func (n *benchNode) answer(ctx context.Context, state string) error {
	res, err := n.u.Session.CallTool(ctx, &mcp.CallToolParams{Name: "parcel", Arguments: map[string]any{}, RequestState: state,
		InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: parcelAnswer}}})
	if err != nil {
		return err
	}
	if len(res.InputRequests) > 0 || res.IsError {
		return fmt.Errorf("the answer did not complete the call: %+v", res.Content)
	}
	return nil
}

// roundTimes are the latencies of whole rounds and of their two requests.
type roundTimes struct{ ask, answer, round []time.Duration }

// round asks and answers one question on n, adding its latencies to t.
func (t *roundTimes) play(b *testing.B, n *benchNode) {
	ctx := context.Background()
	t0 := time.Now()
	state, err := n.ask(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	if err := n.answer(ctx, state); err != nil {
		b.Fatal(err)
	}
	t2 := time.Now()
	t.ask = append(t.ask, t1.Sub(t0))
	t.answer = append(t.answer, t2.Sub(t1))
	t.round = append(t.round, t2.Sub(t0))
}

// pct returns the p-th percentile (0-100) of ds, which it sorts.
func pct(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkStoreRound measures the latency a store adds to a pull-era round of a pure tool
// (as ask_user is): the first call, which hands out a question (a Create in the store), and
// the retry that answers it (one compare-and-set Update: the claim with the result). Each iteration plays one round on a
// node with no store (the base) and one on a node with the store named by the
// sub-benchmark, in alternating order, so that both see the same machine. It reports, in
// µs, the p50 and p99 of the store's rounds (round-p50, round-p99) and of the base's
// (base-p50, base-p99), what the store adds (added-p50, added-p99: the difference of the
// percentiles), and what it adds to each request (ask-added-p50, answer-added-p50); and the
// store calls a round makes (writes/round, reads/round). Sub-benchmark "nil" has no store on either node: its "added" is the noise of the
// measurement. ns/op is one round on each node.
func BenchmarkStoreRound(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"nil", func(*testing.B) store.Store { return nil }},
		{"memory", func(*testing.B) store.Store { return memory.New(memory.Options{}) }},
		{"embedded", func(b *testing.B) store.Store {
			s, err := natsstore.Embedded(context.Background(), natsstore.ServerOptions{Dir: b.TempDir()}, natsstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	fixed := func(*mcp.CallToolRequest) string { return "bench-owner" }
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			var counted *countingStore
			if s != nil {
				b.Cleanup(func() { _ = s.Close() }) // after the Elicitor's Close
				counted = &countingStore{Store: s}
			}
			base := newBenchNode(b, nil, fixed)
			var node *benchNode
			if counted != nil {
				node = newBenchNode(b, counted, fixed)
			} else {
				node = newBenchNode(b, nil, fixed)
			}
			var bt, nt roundTimes
			// One round on each first: the first calls pay for what is set up once.
			bt.play(b, base)
			nt.play(b, node)
			bt, nt = roundTimes{}, roundTimes{}
			if counted != nil {
				counted.reset()
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					bt.play(b, base)
					nt.play(b, node)
				} else {
					nt.play(b, node)
					bt.play(b, base)
				}
				i++
			}
			r50, r99, b50, b99 := pct(nt.round, 50), pct(nt.round, 99), pct(bt.round, 50), pct(bt.round, 99)
			b.ReportMetric(us(r50), "us/round-p50")
			b.ReportMetric(us(r99), "us/round-p99")
			b.ReportMetric(us(b50), "us/base-p50")
			b.ReportMetric(us(b99), "us/base-p99")
			b.ReportMetric(us(r50-b50), "us/added-p50")
			b.ReportMetric(us(r99-b99), "us/added-p99")
			b.ReportMetric(us(pct(nt.ask, 50)-pct(bt.ask, 50)), "us/ask-added-p50")
			b.ReportMetric(us(pct(nt.answer, 50)-pct(bt.answer, 50)), "us/answer-added-p50")
			if counted != nil {
				w, r := counted.per(len(nt.round))
				b.ReportMetric(w, "writes/round")
				b.ReportMetric(r, "reads/round")
			}
			b.Logf("%-8s %6d rounds  round p50 %7.1f µs p99 %7.1f µs | base p50 %7.1f µs p99 %7.1f µs | added p50 %+7.1f µs p99 %+7.1f µs (ask %+6.1f, answer %+6.1f)",
				st.name, len(nt.round), us(r50), us(r99), us(b50), us(b99), us(r50-b50), us(r99-b99),
				us(pct(nt.ask, 50)-pct(bt.ask, 50)), us(pct(nt.answer, 50)-pct(bt.answer, 50)))
		})
	}
}

// countingStore counts the calls made to a store: the writes (Create, Update, Delete) and
// the reads (Get, List). newBenchNode gives the Elicitor the Relay of the store it wraps, as
// the Elicitor would have found it on the store itself.
type countingStore struct {
	store.Store
	writes, reads atomic.Int64
}

func (c *countingStore) reset() { c.writes.Store(0); c.reads.Store(0) }

// per returns the writes and reads per round over n rounds.
func (c *countingStore) per(n int) (writes, reads float64) {
	return float64(c.writes.Load()) / float64(n), float64(c.reads.Load()) / float64(n)
}

func (c *countingStore) Create(ctx context.Context, r store.Record) (uint64, error) {
	c.writes.Add(1)
	return c.Store.Create(ctx, r)
}

func (c *countingStore) Update(ctx context.Context, r store.Record) (uint64, error) {
	c.writes.Add(1)
	return c.Store.Update(ctx, r)
}

func (c *countingStore) Delete(ctx context.Context, owner, id string, rev uint64) error {
	c.writes.Add(1)
	return c.Store.Delete(ctx, owner, id, rev)
}

func (c *countingStore) Get(ctx context.Context, owner, id string) (store.Record, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, owner, id)
}

func (c *countingStore) List(ctx context.Context, owner string) ([]store.Record, error) {
	c.reads.Add(1)
	return c.Store.List(ctx, owner)
}

// liveQuestions is how many open questions BenchmarkLiveQuestions keeps on one node, over
// liveOwners owners: 100,000 unless -live.questions says (1000000 for the stretch
// target, 1,000,000 questions in under 2 GB).
var liveQuestions = 100_000

// liveHeapProfile, if set (-live.heapprofile FILE), is where BenchmarkLiveQuestions writes
// a heap profile once its questions are open: where their live bytes go
// (go tool pprof -sample_index=inuse_space).
var liveHeapProfile string

func init() {
	flag.StringVar(&liveHeapProfile, "live.heapprofile", "", "BenchmarkLiveQuestions: write a heap profile here once the questions are open")
	flag.IntVar(&liveQuestions, "live.questions", liveQuestions, "BenchmarkLiveQuestions: how many open questions to keep (a multiple of 1000)")
}

const (
	liveOwners   = 1000
	fillSessions = 8  // client sessions making the first calls
	fillCallers  = 64 // goroutines making them
)

// BenchmarkLiveQuestions keeps 100,000 open questions on one node (first calls that hand out a
// question left unanswered, 100 for each of 1000 owners; the owner is the request's _meta
// "owner", so that the management tools, whose arguments are fixed, name it too) and
// measures what they take: per question, the store's bytes (store-B/question: the memory
// store's encoded records; for the embedded store the bucket stream's bytes, and
// disk-B/question the JetStream directory on disk), the process's heap in use
// (heap-B/question, after a GC, the embedded nats-server included, which runs in the
// process) and goroutine stacks (stack-B/question), and goroutines. The loop is one owner's
// list_elicitations (100 questions), owner after owner: ns/op is its latency; besides,
// list-p50 and list-p99 are its percentiles in µs, and store-list-p50 and store-list-p99
// those of store.List for one owner alone. fill-s is the time the 100,000 first calls took.
// rss-B/question is the process's resident memory per question, measured after
// debug.FreeOSMemory. Sub-benchmark embedded-awake is the embedded store with
// Options.KeepAwake: each question's call kept awake, as before hibernation, to compare;
// embedded-tasks the embedded store with the Tasks extension, each question a task waiting
// for the person (its record beside the question's: store-B/question counts both).
func BenchmarkLiveQuestions(b *testing.B) {
	b.Run("nil", func(b *testing.B) { benchLive(b, nil, nil) })
	b.Run("memory", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.Cleanup(func() { _ = s.Close() })
		benchLive(b, s, func() (int64, int64) { r, _ := s.Bytes(); return r, 0 })
	})
	b.Run("embedded", func(b *testing.B) { benchLiveEmbedded(b) })
	b.Run("embedded-tasks", func(b *testing.B) {
		benchTasks = true
		b.Cleanup(func() { benchTasks = false })
		benchLiveEmbedded(b)
	})
	b.Run("embedded-awake", func(b *testing.B) {
		benchAwake = true
		b.Cleanup(func() { benchAwake = false })
		benchLiveEmbedded(b)
	})
}

// benchLiveEmbedded is BenchmarkLiveQuestions on the embedded store (a NATS server in the
// process, as elicitd --http runs it by default).
func benchLiveEmbedded(b *testing.B) {
	{
		// StartServer and Open rather than Embedded, to read the bucket's stream.
		dir := b.TempDir()
		srv, err := natsstore.StartServer(natsstore.ServerOptions{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Shutdown)
		nc, err := nats.Connect("", append(natsstore.ClientOptions("bench"), nats.InProcessServer(srv))...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		s, err := natsstore.Open(context.Background(), nc, natsstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		benchLive(b, s, func() (int64, int64) {
			stream, err := js.Stream(context.Background(), "KV_"+natsstore.DefaultBucket)
			if err != nil {
				b.Fatal(err)
			}
			info, err := stream.Info(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			return int64(info.State.Bytes), dirBytes(b, dir)
		})
	}
}

// rss is the process's resident set, in bytes, after the heap's free pages have gone back
// to the system (Linux: /proc/self/status; 0 elsewhere).
func rss(b *testing.B) int64 {
	debug.FreeOSMemory()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	return 0
}

// benchLive fills a node on s with liveQuestions open questions, reports what they take
// (storeBytes: the store's bytes and its bytes on disk, 0 for none), then times
// list_elicitations.
func benchLive(b *testing.B, s store.Store, storeBytes func() (records, disk int64)) {
	owner := func(req *mcp.CallToolRequest) string {
		o, _ := req.Params.Meta["owner"].(string)
		return o
	}
	n := newBenchNode(b, s, owner)
	ownerName := func(i int) string { return fmt.Sprintf("owner-%04d", i%liveOwners) }
	ctx := context.Background()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	rss0 := rss(b)
	var r0, d0 int64
	if storeBytes != nil {
		r0, d0 = storeBytes()
	}

	// Several client sessions: one session's messages are read one at a time.
	sessions := []*mcp.ClientSession{n.u.Session}
	for range fillSessions - 1 {
		sessions = append(sessions, elicittest.Connect(b, n.server, elicittest.Pull).Session)
	}
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, fillCallers)
	for g := range fillCallers {
		wg.Go(func() {
			cs := sessions[g%len(sessions)]
			for i := int(next.Add(1) - 1); i < liveQuestions; i = int(next.Add(1) - 1) {
				if _, err := askOn(ctx, cs, mcp.Meta{"owner": ownerName(i)}); err != nil {
					errs <- fmt.Errorf("question %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	fill := time.Since(began)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	rss1 := rss(b)
	if liveHeapProfile != "" {
		f, err := os.Create(liveHeapProfile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	goroutines := runtime.NumGoroutine() - g0
	live := 0
	for _, k := range n.el.Registry().Stats().Live {
		live += k
	}
	if live != liveQuestions {
		b.Fatalf("%d questions are live, want %d", live, liveQuestions)
	}
	perQ := func(v int64) float64 { return float64(v) / float64(liveQuestions) }
	heap := perQ(int64(after.HeapInuse) - int64(before.HeapInuse))
	stack := perQ(int64(after.StackInuse) - int64(before.StackInuse))
	// list_elicitations for one owner, and store.List.
	list := func(i int) error {
		res, err := n.u.Session.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"owner": ownerName(i)}, Name: "list_elicitations", Arguments: map[string]any{}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("list_elicitations: %+v", res.Content)
		}
		return nil
	}
	res, err := n.u.Session.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"owner": ownerName(7)}, Name: "list_elicitations", Arguments: map[string]any{}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := elicittest.Payload(res)
	if err != nil {
		b.Fatal(err)
	}
	if got, _ := p["elicitations"].([]any); len(got) != liveQuestions/liveOwners {
		b.Fatalf("one owner lists %d questions, want %d", len(got), liveQuestions/liveOwners)
	}
	var storeList []time.Duration
	if s != nil {
		for i := range 200 {
			t0 := time.Now()
			recs, err := s.List(ctx, ownerName(i))
			storeList = append(storeList, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if len(recs) != liveQuestions/liveOwners {
				b.Fatalf("store.List: %d records for one owner, want %d", len(recs), liveQuestions/liveOwners)
			}
		}
	}

	var lists []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if err := list(i); err != nil {
			b.Fatal(err)
		}
		lists = append(lists, time.Since(t0))
		i++
	}

	var recB, diskB float64
	if storeBytes != nil {
		r1, d1 := storeBytes()
		recB, diskB = perQ(r1-r0), perQ(d1-d0)
	}
	rssQ := perQ(rss1 - rss0)
	b.ReportMetric(rssQ, "rss-B/question")
	b.ReportMetric(heap, "heap-B/question")
	b.ReportMetric(stack, "stack-B/question")
	b.ReportMetric(float64(goroutines)/float64(liveQuestions), "goroutines/question")
	b.ReportMetric(fill.Seconds(), "fill-s")
	b.ReportMetric(us(pct(lists, 50)), "us/list-p50")
	b.ReportMetric(us(pct(lists, 99)), "us/list-p99")
	b.ReportMetric(float64(rss1)/1e6, "rss-MB")
	line := fmt.Sprintf("%d open questions, %d owners; filled in %.1f s; process RSS %.0f MB (the test's client sessions included); per question: RSS %.0f B, heap %.0f B, stacks %.0f B, %.2f goroutines",
		liveQuestions, liveOwners, fill.Seconds(), float64(rss1)/1e6, rssQ, heap, stack, float64(goroutines)/float64(liveQuestions))
	if storeBytes != nil {
		b.ReportMetric(recB, "store-B/question")
		line += fmt.Sprintf(", store %.0f B", recB)
		if diskB != 0 {
			b.ReportMetric(diskB, "disk-B/question")
			line += fmt.Sprintf(", disk %.0f B", diskB)
		}
	}
	line += fmt.Sprintf("; list_elicitations (one owner) p50 %.0f µs p99 %.0f µs", us(pct(lists, 50)), us(pct(lists, 99)))
	if len(storeList) > 0 {
		b.ReportMetric(us(pct(storeList, 50)), "us/store-list-p50")
		b.ReportMetric(us(pct(storeList, 99)), "us/store-list-p99")
		line += fmt.Sprintf(", store.List p50 %.0f µs p99 %.0f µs", us(pct(storeList, 50)), us(pct(storeList, 99)))
	}
	b.Log(line)
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // JetStream replaced it meanwhile
		}
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
