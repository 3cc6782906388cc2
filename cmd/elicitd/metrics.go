package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/webhook"
)

// elicitd's Prometheus metrics, on a listener of their own (--metrics-listen) beside
// /healthz and /readyz. Most are read at scrape time from the counters elicitd keeps anyway
// (ask.Elicitor.Counts, which the stats resource shows too; the registry's refusals; the
// webhooks' Stats; the session caps; the page's budget): a question pays nothing more for
// being measured. Only the store's calls are timed as they happen (storemetrics.go).
// docs/operations.md lists every metric; a test holds the list to what /metrics shows.

// checkMetricsAddr refuses (in words that follow the setting's name) a --metrics-listen address that is not host:port with a host
// on loopback or a private network: the metrics name the tools and the nodes, and have no
// token.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port (127.0.0.1:9090, say), got %q", addr)
	}
	if loopbackHost(host) {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && (ip.IsPrivate() || ip.IsLinkLocalUnicast()) {
		return nil
	}
	return fmt.Errorf("must be a loopback or private address (127.0.0.1:9090, 10.0.0.5:9090), got %q: the metrics have no token", addr)
}

// metricSources are what the metrics read; a nil one is not measured.
type metricSources struct {
	el       *ask.Elicitor
	store    *storeMetrics      // the store's calls, when there is a store
	webhooks *webhook.Deliverer // with --webhook
	pages    *page.Server       // elicitd's page, when there is one
	maxHeld  int64              // the page's upload budget (--max-held-upload-bytes)
	sessions *sessionCaps       // with --http
}

// collectorGauges are the Go runtime's figures that say what the collector's policy
// (tuneGC, keepHeadroom) does, read as the runtime reports them at each scrape.
var collectorGauges = []struct{ name, help, sample string }{
	{"elicitd_heap_goal_bytes", "The heap size at which the next garbage collection starts: the target in force, as elicitd's collector policy and the memory limit set it.", "/gc/heap/goal:bytes"},
	{"elicitd_heap_live_bytes", "The heap the last garbage collection found live.", "/gc/heap/live:bytes"},
	{"elicitd_gc_percent", "The collector's GOGC in force, as elicitd's collector policy last set it.", "/gc/gogc:percent"},
	{"elicitd_memory_limit_bytes", "The runtime's soft memory limit in force (--memory-limit, or GOMEMLIMIT).", "/gc/gomemlimit:bytes"},
}

// newMetricsRegistry returns a registry of its own (not Prometheus's global one) holding
// elicitd's metrics from src, the Go runtime's and the process's.
func newMetricsRegistry(src metricSources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "elicitd_build_info",
		Help: "Always 1; its labels name the build: elicitd's version, the Go version, the MCP protocol versions served.",
		ConstLabels: prometheus.Labels{"version": version, "go_version": runtime.Version(),
			"protocol_versions": strings.Join(mcp.SupportedProtocolVersions(), ",")},
	}, func() float64 { return 1 }))
	for _, g := range collectorGauges {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 {
			sample := []metrics.Sample{{Name: g.sample}}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return float64(sample[0].Value.Uint64())
		}))
	}
	reg.MustRegister(&elicitorCollector{el: src.el})
	if src.store != nil {
		reg.MustRegister(src.store.duration, src.store.errors)
	}
	if d := src.webhooks; d != nil {
		counter := func(name, help string, f func(webhook.Stats) uint64) prometheus.Collector {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(d.Stats())) })
		}
		reg.MustRegister(
			counter("elicitd_webhook_deliveries_total", "Webhook events delivered (answered 2xx), one per event and URL.", func(s webhook.Stats) uint64 { return s.Delivered }),
			counter("elicitd_webhook_retries_total", "Webhook delivery attempts that failed and will be tried again.", func(s webhook.Stats) uint64 { return s.Retries }),
			counter("elicitd_webhook_failures_total", "Webhook deliveries given up (past the retries' bound, or unsendable).", func(s webhook.Stats) uint64 { return s.Failures }),
			counter("elicitd_webhook_lost_events_total", "Webhook events never queued (the outbox did not take them in time): never sent.", func(s webhook.Stats) uint64 { return s.Lost }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "elicitd_webhook_outbox_entries",
				Help: "Entries in the webhook outbox not yet delivered, one per event and URL (with a NATS store, the whole cluster's); -1 when the outbox cannot be read."},
				func() float64 {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					n, ok, err := d.Backlog(ctx)
					if !ok || err != nil {
						return -1
					}
					return float64(n)
				}))
	}
	if p := src.pages; p != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "elicitd_page_upload_held_bytes",
				Help: "Upload bytes elicitd's page holds now (files being sent, files kept for a re-send)."}, func() float64 { return float64(p.Held()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "elicitd_page_upload_max_bytes",
				Help: "The page's upload budget (--max-held-upload-bytes): a send past it is refused."}, func() float64 { return float64(src.maxHeld) }))
	}
	if sc := src.sessions; sc != nil {
		reg.MustRegister(&sessionCollector{sc: sc})
	}
	return reg
}

var (
	descStarted = prometheus.NewDesc("elicitd_questions_started_total",
		"Questions started, by tool and era (push: 2025-11-25 and earlier; pull: 2026-07-28).", []string{"tool", "era"}, nil)
	descEnded = prometheus.NewDesc("elicitd_questions_ended_total",
		"Questions ended, by tool, era, outcome (completed, cancelled, timeout) and reason (why cancelled; none otherwise).", []string{"tool", "era", "outcome", "reason"}, nil)
	descOpen = prometheus.NewDesc("elicitd_questions_open",
		"Questions open on this node now, by era.", []string{"era"}, nil)
	descRounds = prometheus.NewDesc("elicitd_question_rounds_total",
		"Prompts of the questions that have ended, follow-ups and re-prompts included.", nil, nil)
	descReprompts = prometheus.NewDesc("elicitd_question_reprompts_total",
		"Prompts that asked again after an invalid answer, of the questions that have ended.", nil, nil)
	descAnswer = prometheus.NewDesc("elicitd_time_to_answer_seconds",
		"Time from a question's start to its valid final answer, of the completed questions.", nil, nil)
	descRefused = prometheus.NewDesc("elicitd_questions_refused_total",
		"Questions refused before they started, by reason: rate_limited (--rate, --burst) or too_many_live (--max-live).", []string{"reason"}, nil)
	descForwards = prometheus.NewDesc("elicitd_forwards_total",
		"Retries sent to the node holding their call, by result: answered, gone, silent (then taken over here), failed.", []string{"result"}, nil)
	descTakeOvers = prometheus.NewDesc("elicitd_takeovers_total",
		"Calls this node took over from a node that is gone or silent.", nil, nil)
	descReplayed = prometheus.NewDesc("elicitd_replayed_rounds_total",
		"Rounds the replays answered from the record: of hibernating calls woken here, and of take-overs.", nil, nil)
	descHibernated = prometheus.NewDesc("elicitd_hibernations_total",
		"Rounds after which a 2026-07-28 call hibernated: its goroutines ended, its record alone keeping it until the next round wakes it, on any node.", nil, nil)
	descDiverged = prometheus.NewDesc("elicitd_replay_divergences_total",
		"Take-overs whose replay went another way than the record, ending the call.", nil, nil)
	descSwept = prometheus.NewDesc("elicitd_swept_questions_total",
		"Open questions of dead nodes this node ended client_gone.", nil, nil)
)

// elicitorCollector reads an Elicitor's counters at scrape time.
type elicitorCollector struct{ el *ask.Elicitor }

func (c *elicitorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStarted, descEnded, descOpen, descRounds, descReprompts, descAnswer,
		descRefused, descForwards, descTakeOvers, descReplayed, descHibernated, descDiverged, descSwept} {
		ch <- d
	}
}

func (c *elicitorCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.el.Counts()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, s := range n.Started {
		counter(descStarted, s.N, s.Tool, s.Era)
	}
	for _, e := range n.Ended {
		counter(descEnded, e.N, e.Tool, e.Era, e.State, cmp.Or(e.Reason, "none"))
	}
	for era, open := range n.Open() {
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(open), era)
	}
	counter(descRounds, n.Rounds)
	counter(descReprompts, n.Reprompts)
	buckets := map[float64]uint64{}
	for i, le := range ask.AnswerBuckets() {
		buckets[le] = n.AnswerSeconds.Buckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(descAnswer, n.AnswerSeconds.Count, n.AnswerSeconds.Sum, buckets)
	rs := c.el.Registry().Stats()
	counter(descRefused, rs.RateLimited, "rate_limited")
	counter(descRefused, rs.TooManyLive, "too_many_live")
	for result, v := range n.Forwards {
		counter(descForwards, v, result)
	}
	counter(descTakeOvers, n.TakeOvers)
	counter(descHibernated, n.Hibernated)
	counter(descReplayed, n.ReplayedRounds)
	counter(descDiverged, n.Divergences)
	counter(descSwept, n.Swept)
}

var (
	descSessionsOpen = prometheus.NewDesc("elicitd_http_sessions_open",
		"Live 2025-11-25 HTTP sessions.", nil, nil)
	descSessionsRefused = prometheus.NewDesc("elicitd_http_sessions_refused_total",
		"HTTP session initializes refused, by the cap they would pass: per_caller (--max-sessions-per-caller) or total (--max-sessions).", []string{"cap"}, nil)
)

// sessionCollector reads the session caps' counts at scrape time.
type sessionCollector struct{ sc *sessionCaps }

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSessionsOpen
	ch <- descSessionsRefused
}

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	open, caller, all := c.sc.counts()
	ch <- prometheus.MustNewConstMetric(descSessionsOpen, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(descSessionsRefused, prometheus.CounterValue, float64(caller), "per_caller")
	ch <- prometheus.MustNewConstMetric(descSessionsRefused, prometheus.CounterValue, float64(all), "total")
}

// maxProfileSeconds bounds a CPU profile taken on the metrics listener.
const maxProfileSeconds = 120

// serveMetrics serves /metrics from reg, the probes (/healthz, /readyz: see probes) and Go's
// profiles (/debug/pprof/) on ln until the returned stop is called. Anything else is 404.
func serveMetrics(ln net.Listener, reg *prometheus.Registry, stopping *atomic.Bool, st store.Store, cl connLimits, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), Registry: reg, MaxRequestsInFlight: 4}))
	// Go's profiles of the process as it runs (go tool pprof http://HOST:PORT/debug/pprof/heap):
	// where a node's memory and CPU go, measured on the product rather than a test harness.
	// They hold code locations and sizes, never a value anybody typed.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		// One CPU profile runs at a time (the runtime's rule); a long one would keep the
		// next from being taken.
		if secs, err := strconv.Atoi(r.URL.Query().Get("seconds")); r.URL.Query().Has("seconds") && (err != nil || secs < 1 || secs > maxProfileSeconds) {
			http.Error(w, fmt.Sprintf("seconds must be a whole number from 1 to %d", maxProfileSeconds), http.StatusBadRequest)
			return
		}
		pprof.Profile(w, r)
	})
	hs := cl.server(probes(stopping, st, mux), log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	log.Info("serving metrics and probes", "address", ln.Addr().String())
	return func() {
		_ = hs.Close()
		<-done
	}
}

// metricsSetup is --metrics-listen between its listener's opening and its serving, once
// every source is known.
type metricsSetup struct {
	ln     net.Listener
	src    metricSources
	conn   connLimits
	log    *slog.Logger
	served func() // stops the serving; nil before serve
}

// serve starts serving on the listener.
func (m *metricsSetup) serve(stopping *atomic.Bool, st store.Store) {
	m.served = serveMetrics(m.ln, newMetricsRegistry(m.src), stopping, st, m.conn, m.log)
}

// stop stops the serving, or closes the listener if it never served.
func (m *metricsSetup) stop() {
	if m.served == nil {
		_ = m.ln.Close()
		return
	}
	m.served()
}
