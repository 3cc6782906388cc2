// Command elicitd is an MCP server, on stdio or (with --http) Streamable HTTP, whose tools
// ask the person using the client for what they are missing, through MCP elicitation.
//
// Every setting is a flag and may also come from an ELICITD_... environment variable; the
// flag wins. A bad value exits with status 2 and one line on stderr. Logs go to stderr
// (stdout is the JSON-RPC stream) and never carry what the person typed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/charmbracelet/x/term"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/tools/ups"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// Without this, a write to a client that has gone (a broken stdout pipe) kills the process
	// with SIGPIPE; ignored, it is an error the session handles: its questions end client_gone.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// gcPercent is elicitd's GOGC unless the environment sets one. The go-sdk decodes every
// JSON value it reads with a fresh 32 KiB buffer, so at the default of 100 a server with a
// few MiB of live heap collects every few calls; at 400 it collects a quarter as often, for
// a heap of a few tens of MiB at most.
//
// With the embedded store the NATS server lives in the process too, and the state it keeps
// for the stored records makes the live heap several times larger (25 MiB with 20,000
// records): a heap five times that swings through a hundred MiB between collections, and
// the Go runtime hands the top of it back to the system after one collection and takes it
// again (page faults, 5 to 13 a call, the largest share in zeroing the SDK's 32 KiB decode
// buffers) before the next. At 200 the swing is halved; measured beside raw go-sdk at 16 callers, 0.84x against
// 0.76x at 400.
const (
	gcPercent         = 400
	embeddedGCPercent = 200
)

// tuneGC sets the collector's target for the store kind (gcPercent, embeddedGCPercent)
// unless GOGC is set, and returns the target it starts at; stop ends the keeper that moves it
// as the live heap grows (keepHeadroom: with gcHeadroom where keepsHeadroom says so).
func tuneGC(getenv func(string) string, storeKind string, overHTTP bool) (percent int, stop func()) {
	if getenv("GOGC") != "" {
		prev := debug.SetGCPercent(-1)
		debug.SetGCPercent(prev)
		return prev, func() {}
	}
	p := gcPercent
	if storeKind == "embedded" {
		p = embeddedGCPercent
	}
	debug.SetGCPercent(p)
	var headroom uint64
	if keepsHeadroom(storeKind, overHTTP) {
		headroom = gcHeadroom
	}
	return p, keepHeadroom(p, headroom, nil)
}

// keepsHeadroom says whether a server keeps gcHeadroom: over HTTP, and with the embedded
// store. A stdio server with another store has a live heap of about a MiB, which gcPercent
// already lets grow to 16 MiB (the runtime's heap minimum at 400) and whose marking is cheap
// (under a millisecond every hundred-odd calls); 64 MiB more would be fresh pages to fault in
// for every call's garbage until the heap has been round once, and they are most of a short
// session's calls. Measured with the peers driver (stdio, memory store, 3000 calls a
// process, CPU per call by perf stat): with the keeper 266-286 us pull and 145-195 us push at
// one caller, 181-189 and 104-109 at 16, 5.9 page faults a call; without, 250-263 and
// 144-181, 172-198 and 91-94, 1.4 page faults. With the embedded store the keeper is the
// cheaper (pull, one caller: 362-406 us against 383-420 at GOGC 200; 16 callers: 245-287
// against 278-292).
func keepsHeadroom(storeKind string, overHTTP bool) bool {
	return overHTTP || storeKind == "embedded"
}

// gcHeadroom is about how much the heap may grow between two collections, whatever its live
// size (more when GOGC gives more): the collector's cost is the live heap it marks, times how
// often it runs, and the go-sdk's garbage (a fresh 32 KiB buffer for every JSON value it
// decodes, some 400 KiB a request) would otherwise start one every dozen calls over a live
// heap of a few MiB (the embedded NATS server's, mostly), a third of a pull-era call's CPU at
// one caller. Measured with BenchmarkHTTPRoundTrip (pull era, embedded store, beside bare
// go-sdk): CPU per call 1.52x bare at one caller and 1.19x at 16 with GOGC 200 alone, 1.32x
// and 0.91x with the keeper.
const gcHeadroom = 64 << 20

// What the heap may grow by between two collections at the most, whatever the base percent
// and the headroom give: gcGrowthFloor, or a gcGrowthShare-th of the live heap if that is
// more. A node's live heap is mostly its waiting questions (about a KB each, docs/settings.md),
// and a percentage of it (GOGC) would have the process hold two or three times what they
// need: 7 KB of RSS a waiting question at 100,000 with GOGC 200 (BenchmarkWaitingQuestions),
// where they take 2.5. With the cap, a large heap is marked more often, and only while it
// is large: what that costs a call is in docs/settings.md ("What a node holds").
const (
	gcGrowthFloor = 64 << 20
	gcGrowthShare = 4
)

// keepHeadroom keeps the collector's target at what headroomPercent gives for the live heap:
// after each collection it sets the target from the live heap that collection found. set,
// if given, is told each target it sets. stop ends it.
func keepHeadroom(base int, headroom uint64, set func(int)) (stop func()) {
	var stopped atomic.Bool
	// The live heap, then the stacks and globals the collector scans: GOGC is a percentage
	// of the three together.
	read := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	last := base
	var arm func()
	after := func(struct{}) { // on the runtime's cleanup goroutine, once a collection is done
		if stopped.Load() {
			return
		}
		metrics.Read(read)
		var b [3]uint64
		for i, s := range read {
			if s.Value.Kind() == metrics.KindUint64 {
				b[i] = s.Value.Uint64()
			}
		}
		if p := headroomPercent(base, b[0], b[0]+b[1]+b[2], headroom); p != last {
			debug.SetGCPercent(p)
			last = p
			if set != nil {
				set(p)
			}
		}
		arm()
	}
	// A sentinel found unreachable by the next collection: holding a pointer, it is not a
	// tiny allocation, which may share its block with the cleanup's closure (and never run).
	arm = func() { runtime.AddCleanup(&struct{ _ *byte }{}, after, struct{}{}) }
	arm()
	return func() { stopped.Store(true) }
}

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC 100; it scales with GOGC
// (at GOGC 1600 no collection starts below 64 MiB).
const runtimeHeapMinimum = 4 << 20

// headroomPercent is the GOGC that lets a heap of live bytes grow by about headroom before
// its next collection, and by base percent at the least, but by no more than the larger of
// gcGrowthFloor and a gcGrowthShare-th of the live heap. The runtime's goal for a GOGC of p
// is live + scanned*p/100 (scanned: the live heap, stacks and globals), and never below
// runtimeHeapMinimum*p/100: a small heap's p is bounded by the second, or the heap would
// grow by several times headroom.
func headroomPercent(base int, live, scanned, headroom uint64) int {
	if live == 0 || scanned == 0 {
		return base
	}
	p := uint64(base)
	if headroom > 0 {
		p = max(p, min(headroom*100/scanned, (live+headroom)*100/runtimeHeapMinimum))
	}
	growth := max(gcGrowthFloor, live/gcGrowthShare)
	return int(max(min(p, growth*100/scanned), 1))
}

// stdioProcs is how many threads run Go code at once (GOMAXPROCS) in a stdio server: one.
// Its one client's requests arrive over one pipe, and a call is a chain of hand-offs between
// goroutines (the reading one, the SDK's, the handler, the question's actor, the store's).
// With several Ps, each hand-off in a process that idles between requests wakes another
// operating-system thread (a futex call, a thread spinning for work and sleeping again); with
// one, the chain runs on one thread. Measured beside raw go-sdk (the peers harness's driver,
// interleaved): a pull-era call at one caller used 183 us less CPU than raw with one P and 33 us more with
// two, and at 16 callers one P is faster too: the server's CPU per call, not parallelism,
// bounds a stdio server's throughput. It needs stdin polled, not read in a system call
// (pollable): a read waiting on stdin would otherwise hold the only P.
const stdioProcs = 1

// tuneProcs sets GOMAXPROCS to stdioProcs unless GOMAXPROCS is set to a number the runtime
// took (a positive one), and returns the value in force.
func tuneProcs(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("GOMAXPROCS")); err == nil && n > 0 {
		return runtime.GOMAXPROCS(0)
	}
	runtime.GOMAXPROCS(stdioProcs)
	return stdioProcs
}

// tuneMemory sets the runtime's soft memory limit to limit unless GOMEMLIMIT is set, and
// returns the limit in force. gcPercent lets a small heap grow five-fold between collections;
// this keeps a large one (uploads held, many sessions) from doing so: near the limit the
// collector runs as often as it must.
func tuneMemory(getenv func(string) string, limit int64) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// terminalNotice is the line elicitd writes when its stdin is a terminal.
const terminalNotice = "elicitd: waiting for an MCP client on stdin (JSON-RPC, one message per line); " +
	"an MCP host starts elicitd itself, see README.md (https://github.com/elicitd/elicitd). Ctrl-D ends."

// maxFrameBytes is the largest JSON-RPC message elicitd reads on stdio: one line.
const maxFrameBytes = 16 << 20

// shutdownWithin bounds how long ending the open questions may take; exitWithin bounds a
// signalled exit as a whole, the replies' last moment to be written included (docs/settings.md
// promises 2 s; this keeps it near 1.5 s). shutdownWithin leaves room in
// exitWithin for the replies: the 200 ms they get before the hang-up, and the hang-up's own
// grace (hangUpWriteGrace).
const (
	shutdownWithin = 1 * time.Second
	exitWithin     = 1500 * time.Millisecond
)

func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "elicitd: %v\n", err)
		return 2
	}
	if cfg.version {
		// The MCP versions elicitd negotiates: its SDK's, which newServer does not narrow.
		fmt.Fprintf(stdout, "elicitd %s (MCP %s)\n", version, strings.Join(mcp.SupportedProtocolVersions(), ", "))
		return 0
	}
	_, stopGC := tuneGC(getenv, cfg.store.kind, cfg.http.addr != "")
	defer stopGC()
	cfg.settleCaps(tuneMemory(getenv, cfg.memoryLimit))
	// Everything written to stderr from here on goes through one buffer, in order.
	logw := newLogWriter(stderr, clock.New(), logInterval)
	defer logw.Close()
	stderr = logw
	if cfg.cpuProfile != "" {
		stop, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "elicitd: --cpu-profile: %v\n", err)
			return 2
		}
		defer stop()
	}
	logger := slog.New(cfg.logHandler(stderr, cfg.logLevel))
	opts := cfg.options()
	opts.Logger = logger
	// The SDK narrates every connection at info level; keep it to warnings unless debugging.
	opts.SDKLogger = slog.New(cfg.logHandler(stderr, max(cfg.logLevel, slog.LevelWarn)))
	if cfg.logLevel <= slog.LevelDebug {
		opts.SDKLogger = logger
	}
	st, err := openStore(context.Background(), cfg.store, cfg.page.maxHeld, logger)
	if err == nil && st != nil {
		opts.StateKey, err = sharedStateKey(context.Background(), st, opts.StateKey)
	}
	if err != nil {
		if st != nil {
			_ = st.Close()
		}
		fmt.Fprintf(stderr, "elicitd: %v\n", err)
		return 2
	}
	var storeCalls *storeMetrics
	if st != nil {
		defer st.Close()
		if cfg.metricsAddr != "" {
			storeCalls = newStoreMetrics()
		}
		opts.Store = measure(st, storeCalls)
		logger.Info("questions are kept in the store", "store", cfg.store.kind, "data_dir", cfg.store.dataDir)
	}
	hooks, err := startWebhooks(context.Background(), cfg.webhooks, st, logger)
	if err != nil {
		fmt.Fprintf(stderr, "elicitd: %v\n", err)
		return 2
	}
	if hooks != nil {
		defer func() {
			// After the questions have ended (and queued their events): deliveries under
			// way get a moment; what is left stays in the outbox.
			ctx, cancel := context.WithTimeout(context.Background(), webhookStopWithin)
			defer cancel()
			_ = hooks.Stop(ctx)
		}()
		opts.OnEnd, opts.MoreStats = webhookOnEnd(hooks, logger), map[string]func() any{"webhooks": webhookStats(hooks)}
		logger.Info("question ends are sent to webhooks", "urls", len(cfg.webhooks.urls), "answers", cfg.webhooks.answers)
	}
	var mx *metricsSetup
	if cfg.metricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			fmt.Fprintf(stderr, "elicitd: --metrics-listen: %v\n", err)
			return 1
		}
		mx = &metricsSetup{ln: ln, src: metricSources{store: storeCalls, webhooks: hooks, maxHeld: cfg.page.maxHeld}, conn: cfg.page.conn, log: logger}
		defer mx.stop()
	}
	if cfg.http.addr != "" {
		return runHTTP(cfg, opts, logger, stderr, mx)
	}
	pages := newPageOnDemand(cfg.page, logger)
	defer pages.close()
	opts.Pages = pages.pages
	// One client, served by this process alone: a question's first prompt need not wait
	// for its record (the requestState carries what a restarted elicitd needs to write it).
	// Not with the memory store, whose write costs less than going behind it does (a
	// goroutine, and a longer requestState each way).
	opts.RecordBehind = cfg.store.kind != "memory"
	srv := newServer(opts, version)
	var stopping atomic.Bool // /readyz on the metrics listener: 503 once a signal came
	if mx != nil {
		mx.src.el, mx.src.pages = srv.el, pages.pages
		mx.serve(&stopping, opts.Store)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	if f, ok := stdin.(*os.File); ok && term.IsTerminal(f.Fd()) {
		// Started by hand: say what it is waiting for, once, on stderr (stdout is the stream).
		fmt.Fprintln(stderr, terminalNotice)
	}
	ended := make(chan error, 1)
	in, out := stdin, stdout
	if f, ok := stdin.(*os.File); ok {
		p, restore := pollable(f)
		defer restore()
		in = p
	}
	if f, ok := stdout.(*os.File); ok {
		p, restore := pollable(f)
		defer restore()
		out = p
	}
	tuneProcs(getenv)
	stdio := &lineTransport{in: in, out: out, maxFrame: maxFrameBytes, log: logger}
	go func() {
		ended <- srv.mcp.Run(context.Background(), stdio) // ended by stdio.hangUp, not by a context
	}()

	select {
	case <-ended:
		// stdin reached EOF, or stdout broke: the client has gone. Everything open, and
		// anything a call still in flight starts, ends as client_gone, quietly.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWithin)
		defer cancel()
		_ = srv.close(ctx, elicitation.ClientGone)
		return 0
	case sig := <-sigs:
		stopping.Store(true)
		logger.Info("shutting down", "signal", sig.String())
		deadline := time.Now().Add(exitWithin)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWithin)
		defer cancel()
		if err := srv.close(ctx, elicitation.Shutdown); err != nil {
			logger.Warn("shutdown did not finish in time", "error", err)
		}
		// The waiting tool calls have been answered; give their responses a moment to be
		// written before the connection closes. A client that no longer reads can hold a
		// write forever: the process exits by the deadline all the same.
		select {
		case <-ended:
			return 0
		case <-time.After(200 * time.Millisecond):
		}
		stdio.hangUp()
		select {
		case <-ended:
		case <-time.After(time.Until(deadline)):
			logger.Warn("exiting with replies unwritten: the client is not reading")
		}
		return 0
	}
}

// runHTTP serves Streamable HTTP until SIGINT or SIGTERM.
func runHTTP(cfg config, opts options, logger *slog.Logger, stderr io.Writer, mx *metricsSetup) int {
	ln, err := net.Listen("tcp", cfg.http.addr)
	if err != nil {
		fmt.Fprintf(stderr, "elicitd: %v\n", err)
		return 1
	}
	opts.Owner = callerOwner
	// An embedded store that listens on no network is this process's alone: it serves
	// every client, as a stdio server does its one, and a first prompt need not wait for
	// its record either (no other node could list the question meanwhile).
	opts.RecordBehind = cfg.store.kind == "embedded" && cfg.store.listen == ""
	if host, _, _ := net.SplitHostPort(cfg.http.addr); cfg.page.url != "" || loopbackHost(host) {
		// The page is served beside MCP; beyond loopback only behind the https proxy named.
		base := cfg.page.base(ln.Addr())
		opts.Pages = page.New(cfg.page.options(func() (string, error) { return base, nil }, logger))
	}
	if cfg.http.verifier != nil {
		logger.Info("MCP requests need an OAuth access token (or a static token)", "resource", cfg.http.publicURL,
			"issuers", strings.Join(cfg.http.issuers, ","), "scopes", strings.Join(cfg.http.scopes, ","))
	}
	srv := newServer(opts, version)
	caps := newSessionCaps(cfg.http.maxPerCaller, cfg.http.maxSessions, logger)
	var stopping atomic.Bool
	if mx != nil {
		mx.src.el, mx.src.pages, mx.src.sessions = srv.el, opts.Pages, caps
		mx.serve(&stopping, opts.Store)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serveHTTP(ctx, srv, ln, cfg.http, cfg.page.conn, caps, &stopping, logger); err != nil {
		logger.Error("HTTP server failed", "error", err.Error())
		return 1
	}
	return 0
}

type config struct {
	timeout        time.Duration
	maxAttempts    int
	maxRounds      int
	ratePerMinute  int
	burst          int
	maxLive        int // 0 until settleCaps: auto
	maxAsleep      int // 0 until settleCaps: auto
	maxAnswerBytes int
	keepalive      time.Duration
	pullIdle       time.Duration
	keepAwake      bool
	linger         time.Duration
	logLevel       slog.Level
	logJSON        bool // --log-format json
	stateKey       string
	version        bool
	conformance    bool
	tasksOff       bool // --tasks off
	ups            ups.Config
	http           httpConfig
	page           pageConfig
	pageWait       time.Duration
	memoryLimit    int64
	store          storeConfig
	cpuProfile     string
	webhooks       webhookConfig
	templates      templateConfig
	metricsAddr    string // --metrics-listen: "" serves no metrics
}

// logHandler writes log records at level and above to w: slog's text lines (key=value), or
// with --log-format json one JSON object a line, with the same keys (time, level, msg, and
// each record's own).
func (c config) logHandler(w io.Writer, level slog.Level) slog.Handler {
	if c.logJSON {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
}

func (c config) options() options {
	o := options{Conformance: c.conformance, Tasks: !c.tasksOff,
		Timeout: c.timeout, MaxAttempts: c.maxAttempts, MaxRounds: c.maxRounds, MaxLive: c.maxLive, MaxAsleep: c.maxAsleep,
		MaxAnswerBytes: c.maxAnswerBytes, Keepalive: c.keepalive, PullIdle: c.pullIdle, KeepAwake: c.keepAwake, StateKey: []byte(c.stateKey), PageWait: c.pageWait,
		Linger: c.linger,
	}
	if c.ratePerMinute > 0 {
		o.Rate, o.Burst = rate.Limit(float64(c.ratePerMinute)/60), c.burst
	}
	o.UPS = c.ups
	o.Templates, o.TemplateDirs = c.templates.set, c.templates.dirs
	return o
}

// setting is one flag with its environment variable and its check.
type setting struct {
	name, env, usage, def string
	check                 func(string) error // parses into the config; says what it accepts
}

// Settings whose flag is not plain text: a boolean's flag given alone means true; a
// repeated one's values are joined by commas.
var (
	booleanSettings  = map[string]bool{"webhook-answers": true, "webhook-allow-private": true, "keep-awake": true}
	repeatedSettings = map[string]bool{"webhook": true, "auth-issuer": true, "auth-scope": true}
)

// flagText is a setting's flag: its text, a boolean's "true" when given alone, a repeated
// flag's values joined by commas.
type flagText struct {
	s               *string
	boolean, repeat bool
	given           bool
}

func (f *flagText) String() string {
	if f == nil || f.s == nil {
		return ""
	}
	return *f.s
}

func (f *flagText) Set(v string) error {
	if f.repeat && f.given {
		v = *f.s + "," + v
	}
	*f.s, f.given = v, true
	return nil
}

func (f *flagText) IsBoolFlag() bool { return f.boolean }

func durationIn(dst *time.Duration, lo, hi time.Duration, zeroOK bool) func(string) error {
	return func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || (d < lo || d > hi) && !(zeroOK && d == 0) {
			if zeroOK {
				return fmt.Errorf("must be 0 (off) or a duration between %s and %s, got %q", lo, hi, s)
			}
			return fmt.Errorf("must be a duration between %s and %s, got %q", lo, hi, s)
		}
		*dst = d
		return nil
	}
}

// text takes a setting as it is.
func text(dst *string) func(string) error {
	return func(s string) error {
		*dst = s
		return nil
	}
}

// auto is check for a setting that also takes "auto", which leaves its value zero.
func auto(check func(string) error) func(string) error {
	return func(s string) error {
		if strings.TrimSpace(s) == "auto" {
			return nil
		}
		if err := check(s); err != nil {
			return fmt.Errorf("%v, or auto", err)
		}
		return nil
	}
}

func intIn[T int | int64](dst *T, lo, hi T) func(string) error {
	return func(s string) error {
		var n T
		if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(s) || n < lo || n > hi {
			return fmt.Errorf("must be a whole number between %d and %d, got %q", lo, hi, s)
		}
		*dst = n
		return nil
	}
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	settings := []setting{
		{"timeout", "ELICITD_TIMEOUT", "how long a question waits for its answer", "10m", durationIn(&c.timeout, time.Second, 24*time.Hour, false)},
		{"max-attempts", "ELICITD_MAX_ATTEMPTS", "attempts per question: the first prompt, and one more for each invalid answer (follow-up rounds and page rounds are not attempts)", "3", intIn(&c.maxAttempts, 1, 10)},
		{"max-rounds", "ELICITD_MAX_ROUNDS", "prompts one question may take in all, follow-ups and re-prompts included; past it the question ends with ELICITATION_TOO_MANY_ROUNDS", "20", intIn(&c.maxRounds, 1, 1000)},
		{"rate", "ELICITD_RATE", "questions a client session may start per minute (0: no limit)", "10", intIn(&c.ratePerMinute, 0, 1_000_000)},
		{"burst", "ELICITD_BURST", "questions a client session may start at once", "10", intIn(&c.burst, 1, 1_000_000)},
		{"max-live", "ELICITD_MAX_LIVE", "open questions awake across all sessions (a goroutine each, about 27 KB: 2025-11-25 questions, and 2026-07-28 ones while a request runs or without a store); auto: an eighth of the memory limit at 32 KiB each", "auto", auto(intIn(&c.maxLive, 1, 10_000_000))},
		{"max-asleep", "ELICITD_MAX_ASLEEP", "open questions hibernating across all sessions (2026-07-28 and tasks with a store: no goroutine, about 1.5 KB each); auto: three quarters of the memory limit at 1.5 KiB each", "auto", auto(intIn(&c.maxAsleep, 1, 100_000_000))},
		{"max-answer-bytes", "ELICITD_MAX_ANSWER_BYTES", "the largest answer accepted, as JSON (at most half the stdio frame limit, so an answer always fits in a frame)", "1048576", intIn(&c.maxAnswerBytes, 1024, maxFrameBytes/2)},
		{"keepalive", "ELICITD_KEEPALIVE", "progress notifications while waiting, when the call has a progress token (0: off)", "15s", durationIn(&c.keepalive, 100*time.Millisecond, time.Hour, true)},
		{"keep-awake", "ELICITD_KEEP_AWAKE", "with a store: keep a 2026-07-28 call's handler running between its rounds, as without one, instead of hibernating it (retries are then forwarded to the node holding it)", "false", boolean(&c.keepAwake)},
		{"linger", "ELICITD_LINGER", "where one elicitd serves all its clients with a store (stdio; --http on an embedded store without --nats-listen): how long a question's first record write waits, its call awake, for an answer quick enough to make it unneeded (one store write instead of two, no hibernation and replay); a process killed within it leaves the question unrecorded until its client comes back (0: write at once)", "50ms", durationIn(&c.linger, time.Millisecond, time.Minute, true)},
		{"pull-idle", "ELICITD_PULL_IDLE", "opt-in: end a 2026-07-28 question as abandoned when its client has not come back with a round's answer for this long, to free its slot before the deadline (0: off; the question lives until its deadline)", "0", func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
				return fmt.Errorf("must be 0 (off) or a duration between 1s and 24h0m0s, got %q", s)
			}
			c.pullIdle = d
			return nil
		}},
		{"templates", "ELICITD_TEMPLATES", "a directory of form templates, NAME.json each (comma-separated for several): ask_user asks them by name, and create_shipment.json and rate_shipment.json reword the shipping tools' forms; a bad one refuses start-up; reloaded on SIGHUP", "", c.templates.parse},
		{"http", "ELICITD_HTTP", "serve Streamable HTTP on this host:port instead of stdio (a non-loopback address needs ELICITD_HTTP_TOKEN)", "", func(s string) error {
			c.http.addr = s
			return nil
		}},
		{"public-url", "ELICITD_PUBLIC_URL", "with --auth-issuer: the MCP endpoint's URL as clients reach it (https://elicitd.example.com/mcp): the resource every token must be for", "", func(s string) error {
			if s == "" {
				return nil
			}
			if u, err := url.Parse(s); err != nil || u.RawQuery != "" || u.Fragment != "" || !plainPath.MatchString(u.Path) {
				return fmt.Errorf("must be a URL with no query or fragment, its path letters, digits and . _ ~ - / only, got %q", s)
			}
			if err := oauth.CheckServerURL(s); err != nil {
				return err
			}
			c.http.publicURL = s
			return nil
		}},
		{"auth-issuer", "ELICITD_AUTH_ISSUER", "with --http: an OAuth authorization server whose access tokens are accepted, by its issuer URL (https; http on loopback only); give the flag again, or commas, for several. Every MCP request then needs a valid token", "", func(s string) error {
			for _, iss := range splitList(s) {
				if err := oauth.CheckServerURL(iss); err != nil {
					return err
				}
				c.http.issuers = append(c.http.issuers, iss)
			}
			return nil
		}},
		{"auth-scope", "ELICITD_AUTH_SCOPE", "with --auth-issuer: a scope every token must have; give the flag again, or commas, for several", "", func(s string) error {
			for _, sc := range splitList(s) {
				if strings.ContainsAny(sc, " \"\\") {
					return fmt.Errorf("must be scope names, comma-separated, got %q", sc)
				}
				c.http.scopes = append(c.http.scopes, sc)
			}
			return nil
		}},
		{"http-origins", "ELICITD_HTTP_ORIGINS", "with --http: browser origins allowed to call, comma-separated, besides the server's own (https://app.example.com, say)", "", func(s string) error {
			for _, o := range splitList(s) {
				u, err := url.Parse(o)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
					return fmt.Errorf("must be origins like https://app.example.com, comma-separated, got %q", o)
				}
				c.http.origins = append(c.http.origins, o)
			}
			return nil
		}},
		{"page-addr", "ELICITD_PAGE_ADDR", "serving stdio: where elicitd's page (for secrets and files, URL mode) listens, from the first question that needs it; loopback", "127.0.0.1:0", func(s string) error {
			c.page.addr = s
			return nil
		}},
		{"page-url", "ELICITD_PAGE_URL", "the https URL elicitd's page is reached at through a proxy in front (needed for the page when --http is not on loopback)", "", func(s string) error {
			c.page.url = strings.TrimSuffix(s, "/")
			return nil
		}},
		{"max-file-bytes", "ELICITD_MAX_FILE_BYTES", "the largest file accepted on elicitd's page", "10485760", intIn(&c.page.maxBytes, 1024, 1<<30)},
		{"max-held-upload-bytes", "ELICITD_MAX_HELD_UPLOAD_BYTES", "the upload bytes elicitd's page holds at once, for all questions: files being sent and files kept for a re-send; a send over it is refused (413); at most --memory-limit less 64 MiB", "134217728", intIn(&c.page.maxHeld, 1<<20, 1<<40)},
		{"memory-limit", "ELICITD_MEMORY_LIMIT", "bytes: the Go runtime's soft memory limit, near which it collects garbage as often as it must (GOMEMLIMIT, when set, wins); auto: three quarters of the smaller of the cgroup's memory limit and the machine's memory, else a quarter of the machine's, else 256 MiB; a small one holds fewer uploads unless --max-held-upload-bytes is set, which it then rises to fit", "auto", auto(intIn(&c.memoryLimit, 64<<20, 1<<42))},
		{"drain-wait", "ELICITD_DRAIN_WAIT", "with --http: after SIGTERM or SIGINT, how long the node serves on while GET /readyz answers 503, so that a load balancer stops sending it requests before it refuses them (0: stop at once)", "0", durationIn(&c.http.drainWait, 100*time.Millisecond, 5*time.Minute, true)},
		{"session-idle", "ELICITD_SESSION_IDLE", "with --http: a 2025-11-25 session whose client has sent nothing for this long ends, and its open questions end client_gone (a session with a call waiting on a person is not idle)", "30m", durationIn(&c.http.sessionIdle, time.Second, 24*time.Hour, false)},
		{"max-sessions", "ELICITD_MAX_SESSIONS", "with --http: live 2025-11-25 sessions in all; an initialize over it gets a JSON-RPC error", "5000", intIn(&c.http.maxSessions, 1, 10_000_000)},
		{"max-sessions-per-caller", "ELICITD_MAX_SESSIONS_PER_CALLER", "with --http: live 2025-11-25 sessions of one caller (a bearer token; without tokens, every client is one caller)", "1000", intIn(&c.http.maxPerCaller, 1, 10_000_000)},
		{"conn-idle", "ELICITD_CONN_IDLE", "HTTP listeners (MCP and the page): a keep-alive connection idle this long between requests is closed", "2m", durationIn(&c.page.conn.idle, time.Second, time.Hour, false)},
		{"body-timeout", "ELICITD_BODY_TIMEOUT", "HTTP listeners (MCP and the page): the longest a request's body may pause; the whole body must arrive within ten times this (a response that lasts, such as an SSE stream or a call waiting for a person, is not cut)", "1m", durationIn(&c.page.conn.body, time.Second, time.Hour, false)},
		{"page-wait", "ELICITD_PAGE_WAIT", "2026-07-28 clients: how long a retry that accepted the page's link waits for the page to be sent before the link is shown again", "30s", durationIn(&c.pageWait, 100*time.Millisecond, 10*time.Minute, false)},
		{"store", "ELICITD_STORE", "where 2026-07-28 questions are kept: memory (this process only), embedded (a NATS JetStream server inside elicitd, on --data-dir: a restart loses nothing) or nats://HOST:PORT[,HOST:PORT...] (an external NATS cluster several elicitd nodes share); default memory on stdio, embedded with --http", "", c.store.parseStore},
		{"data-dir", "ELICITD_DATA_DIR", "--store embedded: the directory it keeps its files in (default: $XDG_DATA_HOME/elicitd, else ~/.local/share/elicitd; on macOS ~/Library/Application Support/elicitd)", "", text(&c.store.dataDir)},
		{"nats-listen", "ELICITD_NATS_LISTEN", "--store embedded: also accept NATS clients on this host:port (by default the embedded server listens on no network)", "", text(&c.store.listen)},
		{"store-replicas", "ELICITD_STORE_REPLICAS", "--store nats://...: the servers that keep each bucket (3 on a 3-node cluster)", "1", intIn(&c.store.replicas, 1, 5)},
		{"store-max-bytes", "ELICITD_STORE_MAX_BYTES", "embedded or nats:// store: the bytes all question records may take together, on each server that keeps the bucket (a pull-era question about 600, a task about 1,700); past it new questions are refused", "1073741824", intIn(&c.store.maxBytes, 64<<20, 1<<42)},
		{"nats-user", "ELICITD_NATS_USER", "--store nats://...: the user name (the password comes from ELICITD_NATS_PASSWORD only)", "", text(&c.store.user)},
		{"nats-creds", "ELICITD_NATS_CREDS", "--store nats://...: a NATS .creds file (JWT and NKey seed)", "", text(&c.store.creds)},
		{"nats-ca", "ELICITD_NATS_CA", "--store nats://...: a PEM file of the CAs that sign the servers' certificates (tls:// servers)", "", text(&c.store.ca)},
		{"webhook", "ELICITD_WEBHOOK", "POST a signed event (Standard Webhooks) to this URL whenever a question ends; give the flag again, or commas, for several URLs; the secret comes from ELICITD_WEBHOOK_SECRET only", "", func(s string) error {
			c.webhooks.urls = splitList(s)
			return nil
		}},
		{"webhook-answers", "ELICITD_WEBHOOK_ANSWERS", "with --webhook: put the answers in the events (never those of sensitive fields, passwords or files)", "false", boolean(&c.webhooks.answers)},
		{"webhook-allow-private", "ELICITD_WEBHOOK_ALLOW_PRIVATE", "with --webhook: allow http:// and receivers on loopback or private addresses (a receiver on this machine or network)", "false", boolean(&c.webhooks.allowPrivate)},
		{"cpu-profile", "ELICITD_CPU_PROFILE", "write a Go CPU profile (go tool pprof) of the whole run to this file, for performance reports; it is complete once elicitd has exited", "", text(&c.cpuProfile)},
		{"metrics-listen", "ELICITD_METRICS_LISTEN", "serve Prometheus metrics (/metrics), the probes (/healthz, /readyz) and Go's profiles (/debug/pprof/) on this host:port, a loopback or private address (off by default)", "", func(s string) error {
			c.metricsAddr = s
			return checkMetricsAddr(s)
		}},
		{"tasks", "ELICITD_TASKS", "on: serve the MCP Tasks extension (io.modelcontextprotocol/tasks) to 2026-07-28 clients that declare it, so a call that has to wait comes back at once as a task (docs/tasks.md); off: never", "on", func(s string) error {
			switch s {
			case "on", "off":
				c.tasksOff = s == "off"
				return nil
			}
			return fmt.Errorf("must be on or off, got %q", s)
		}},
		{"log-format", "ELICITD_LOG_FORMAT", "text (key=value lines) or json (one JSON object a line, the same keys)", "text", func(s string) error {
			switch s {
			case "text", "json":
				c.logJSON = s == "json"
				return nil
			}
			return fmt.Errorf("must be text or json, got %q", s)
		}},
		{"log-level", "ELICITD_LOG_LEVEL", "debug, info, warn or error", "info", func(s string) error {
			if err := c.logLevel.UnmarshalText([]byte(s)); err != nil {
				return fmt.Errorf("must be debug, info, warn or error, got %q", s)
			}
			return nil
		}},
	}
	fs := flag.NewFlagSet("elicitd", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a parse error is one line, written by run; -help prints the usage
	values := map[string]*string{}
	for _, s := range settings {
		usage := fmt.Sprintf("%s (env %s)", s.usage, s.env)
		if !booleanSettings[s.name] && !repeatedSettings[s.name] {
			values[s.name] = fs.String(s.name, s.def, usage)
			continue
		}
		v := s.def
		values[s.name] = &v
		fs.Var(&flagText{s: &v, boolean: booleanSettings[s.name], repeat: repeatedSettings[s.name]}, s.name, usage)
	}
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.BoolVar(&c.conformance, "conformance-fixtures", false, "also serve the tools the MCP conformance suite calls")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "Usage of elicitd (an MCP server on stdio, or Streamable HTTP with --http; see README.md):")
			fs.PrintDefaults()
			return c, err
		}
		return c, fmt.Errorf("%v (elicitd -help lists the flags)", err)
	}
	if c.version {
		return c, nil // --version works whatever the other settings say
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q: elicitd takes only flags", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, s := range settings {
		v, from := *values[s.name], "--"+s.name
		if !given[s.name] {
			if env := getenv(s.env); env != "" {
				v, from = env, s.env
			}
		}
		if err := s.check(v); err != nil {
			return c, fmt.Errorf("%s %v", from, err)
		}
	}
	c.stateKey = getenv("ELICITD_STATE_KEY")
	if c.stateKey != "" && len(c.stateKey) < 32 {
		return c, fmt.Errorf("ELICITD_STATE_KEY must be at least 32 characters, got %d", len(c.stateKey))
	}
	// Tokens come only from the environment: a flag's value is visible to every local user.
	for _, t := range splitList(getenv("ELICITD_HTTP_TOKEN")) {
		if len(t) < 16 {
			return c, fmt.Errorf("ELICITD_HTTP_TOKEN: each token must be at least 16 characters, got one of %d", len(t))
		}
		c.http.tokens = append(c.http.tokens, t)
	}
	// Introspection's client credentials, like every secret, come only from the environment.
	c.http.clientID, c.http.clientSecret = getenv("ELICITD_AUTH_CLIENT_ID"), getenv("ELICITD_AUTH_CLIENT_SECRET")
	if err := c.http.check(); err != nil {
		return c, err
	}
	if err := c.http.checkOAuth(); err != nil {
		return c, err
	}
	if err := c.page.check(); err != nil {
		return c, err
	}
	if err := c.store.settle(c.http.addr != "", getenv); err != nil {
		return c, err
	}
	if err := c.webhooks.settle(getenv("ELICITD_WEBHOOK_SECRET")); err != nil {
		return c, err
	}
	if c.memoryLimit == 0 {
		c.memoryLimit = autoMemoryLimit(readSystemFile)
		if given["max-held-upload-bytes"] || getenv("ELICITD_MAX_HELD_UPLOAD_BYTES") != "" {
			c.memoryLimit = max(c.memoryLimit, c.page.maxHeld+64<<20) // the uploads asked for fit
		} else {
			// A small machine holds fewer uploads at once rather than a limit above its memory.
			c.page.maxHeld = max(min(c.page.maxHeld, (c.memoryLimit-64<<20)/2), 1<<20)
			c.memoryLimit = max(c.memoryLimit, c.page.maxHeld+64<<20)
		}
	}
	if c.page.maxHeld > c.memoryLimit-64<<20 {
		return c, fmt.Errorf("--max-held-upload-bytes (%d) must leave at least 64 MiB under --memory-limit (%d): raise the limit with it", c.page.maxHeld, c.memoryLimit)
	}
	var err error
	c.ups, err = ups.ConfigFromEnv(getenv)
	return c, err
}

// plainPath is a URL path that needs no escaping, for --public-url (its metadata's path is
// served on a ServeMux, where braces would be wildcards).
var plainPath = regexp.MustCompile(`^[A-Za-z0-9._~/-]*$`)

// splitList splits a comma-separated setting, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// startCPUProfile writes a CPU profile to path until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
