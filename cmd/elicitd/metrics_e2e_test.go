package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var servingMetrics = regexp.MustCompile(`msg(?:=|":")"?serving metrics and probes"?,? ?"?address(?:=|":")([^\s"]+)`)

// metricsURL is where s, started with --metrics-listen, serves its metrics listener.
func metricsURL(t tester, s *httpServer) string {
	t.Helper()
	m := servingMetrics.FindStringSubmatch(s.stderr.String())
	require.NotNil(t, m, "elicitd did not say where it serves metrics:\n%s", s.stderr.String())
	return "http://" + m[1]
}

// scrape reads s's /metrics: the families by name, and the text as served.
func scrape(t tester, s *httpServer) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	res, err := http.Get(metricsURL(t, s) + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	return families, body
}

// sample is the value of the sample of family name whose labels are labels (name=value
// pairs); a histogram's is its count. It fails the test when there is none.
func sample(t tester, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := families[name]
	require.NotNil(t, f, "no metric %s", name)
	for _, m := range f.Metric {
		got := []string{}
		for _, l := range m.Label {
			got = append(got, l.GetName(), l.GetValue())
		}
		if !slices.Equal(got, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	require.Failf(t, "no sample", "no sample of %s with labels %v in %v", name, labels, f.Metric)
	return 0
}

// The metrics of a node after known questions in both eras count them, lint clean, and are
// those docs/operations.md lists, with their labels, both ways.
func TestMetricsCountKnownQuestionsInBothEras(t *testing.T) {
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hooks.Close()
	s := startHTTPWith(t, []string{"--pull-idle", "1m", "--rate", "0", "--store", "embedded", "--data-dir", t.TempDir(),
		"--metrics-listen", "127.0.0.1:0", "--webhook", hooks.URL, "--webhook-allow-private", "--memory-limit", "268435456"},
		"ELICITD_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	args := map[string]any{"message": "Who?", "form": nameForm}

	// Push era: one answered, one declined.
	var calls atomic.Int32
	push, err := connectHTTP(t, s, "2025-11-25", "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if calls.Add(1) == 1 {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	require.NoError(t, err)
	for range 2 {
		_, err := push.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
		require.NoError(t, err)
	}

	// Pull era: one answered after an invalid answer (a re-prompt), one left open.
	pull := pullByHand(t, s, nil, nil)
	first, err := pull.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	again, err := pull.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": ""}}}})
	require.NoError(t, err)
	require.True(t, again.NeedsInput(), "an empty name is asked again")
	var key string
	for k := range again.InputRequests {
		key = k
	}
	done, err := pull.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: again.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}})
	require.NoError(t, err)
	require.Equal(t, "completed", structured(t, done)["status"])
	open, err := pull.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	require.True(t, open.NeedsInput())

	// The open question's first round is written behind its prompt, once its linger is up
	// (--linger): each pull-era question is then recorded.
	var families map[string]*dto.MetricFamily
	var body []byte
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		f, b := scrape(c, s)
		assert.GreaterOrEqual(c, sample(c, f, "elicitd_store_operation_duration_seconds", "op", "create"), 2.0)
		families, body = f, b
	}, failsafe, 10*time.Millisecond, "each pull-era question is recorded")
	got := func(name string, labels ...string) float64 { return sample(t, families, name, labels...) }
	assert.Equal(t, 2.0, got("elicitd_questions_started_total", "era", "push", "tool", "ask_user"))
	assert.Equal(t, 2.0, got("elicitd_questions_started_total", "era", "pull", "tool", "ask_user"))
	assert.Equal(t, 1.0, got("elicitd_questions_ended_total", "era", "push", "outcome", "completed", "reason", "none", "tool", "ask_user"))
	assert.Equal(t, 1.0, got("elicitd_questions_ended_total", "era", "push", "outcome", "cancelled", "reason", "declined", "tool", "ask_user"))
	assert.Equal(t, 1.0, got("elicitd_questions_ended_total", "era", "pull", "outcome", "completed", "reason", "none", "tool", "ask_user"))
	assert.Equal(t, 0.0, got("elicitd_questions_open", "era", "push"))
	assert.Equal(t, 1.0, got("elicitd_questions_open", "era", "pull"))
	assert.Equal(t, 4.0, got("elicitd_question_rounds_total"), "1 + 1 push prompts, 2 pull prompts")
	assert.Equal(t, 1.0, got("elicitd_question_reprompts_total"))
	assert.Equal(t, 2.0, got("elicitd_time_to_answer_seconds"), "the completed questions")
	assert.Equal(t, 1.0, got("elicitd_http_sessions_open"), "the push-era client's session")
	assert.Equal(t, 0.0, got("elicitd_questions_refused_total", "reason", "rate_limited"))
	assert.Equal(t, 0.0, got("elicitd_store_operation_errors_total", "op", "create"))
	assert.Equal(t, 1.0, got("elicitd_build_info", "go_version", families["elicitd_build_info"].Metric[0].Label[0].GetValue(),
		"protocol_versions", strings.Join(mcp.SupportedProtocolVersions(), ","), "version", version))
	assert.GreaterOrEqual(t, got("elicitd_webhook_outbox_entries"), 0.0, "the outbox can be read")
	// The collector's policy, as the runtime reports it.
	assert.Greater(t, got("elicitd_heap_goal_bytes"), got("elicitd_heap_live_bytes"), "the target is above the live heap")
	assert.Greater(t, got("elicitd_heap_live_bytes"), 0.0)
	assert.Positive(t, got("elicitd_gc_percent"), "elicitd's collector policy, GOGC unset")
	assert.Equal(t, float64(256<<20), got("elicitd_memory_limit_bytes"), "--memory-limit as given")

	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems, "promlint")

	// docs/operations.md lists every elicitd_ metric with its labels, and nothing else.
	documented := operationsMetrics(t)
	exposed := map[string][]string{}
	for name, f := range families {
		if !strings.HasPrefix(name, "elicitd_") {
			continue
		}
		labels := []string{}
		for _, l := range f.Metric[0].Label {
			if l.GetName() != "le" {
				labels = append(labels, l.GetName())
			}
		}
		slices.Sort(labels)
		exposed[name] = labels
	}
	assert.Equal(t, documented, exposed, "docs/operations.md's metrics table against /metrics")

	// Every query of the Grafana dashboard names metrics /metrics exposes.
	for _, expr := range dashboardQueries(t) {
		names := promqlMetrics(expr)
		assert.NotEmpty(t, names, "the dashboard's query %q names no metric", expr)
		for _, name := range names {
			assert.True(t, exposes(families, name), "the dashboard's query %q names %s, which elicitd does not expose", expr, name)
		}
	}
}

// exposes reports whether families has the series name: a family's own, or a histogram's
// _bucket, _sum or _count.
func exposes(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f := families[strings.TrimSuffix(name, suffix)]; f != nil && strings.HasSuffix(name, suffix) && f.GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// dashboardQueries are the PromQL expressions of docs/grafana-dashboard.json: its panels'
// targets, and its variables' queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal([]byte(readDoc(t, "docs/grafana-dashboard.json")), &d), "the dashboard is JSON")
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		// label_values(METRIC, LABEL): the metric alone is an expression.
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out = append(out, m[1])
		}
	}
	require.NotEmpty(t, out, "the dashboard has queries")
	return out
}

var (
	labelValues    = regexp.MustCompile(`^label_values\(([^,]+),`)
	promqlStrings  = regexp.MustCompile(`"[^"]*"`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlLists    = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlNames    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promqlWords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// promqlMetrics returns the metric names expr selects: its identifiers, less functions,
// keywords, label matchers, ranges and grouping lists.
func promqlMetrics(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlLists.ReplaceAllString(s, " ")
	var names []string
	for _, m := range promqlNames.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promqlWords[strings.TrimSpace(m)] {
			continue
		}
		names = append(names, strings.TrimSpace(m))
	}
	return names
}

// The metrics listener serves Go's profiles of the process; the MCP listener does not.
func TestProfilesOnTheMetricsListenerOnly(t *testing.T) {
	s := startHTTPWith(t, []string{"--metrics-listen", "127.0.0.1:0"})
	_, _ = scrape(t, s) // serving
	res, err := http.Get(metricsURL(t, s) + "/debug/pprof/heap")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.NotEmpty(t, body, "a heap profile")
	res, err = http.Get(metricsURL(t, s) + "/debug/pprof/profile?seconds=100000")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "a CPU profile is bounded")
	res, err = http.Get(strings.TrimSuffix(s.url, "/mcp") + "/debug/pprof/heap")
	require.NoError(t, err)
	res.Body.Close()
	assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, res.StatusCode, "not on the MCP listener")
}

func TestPromQLMetricsFindsTheSelectedMetrics(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][]string{
		`elicitd_questions_open`: {"elicitd_questions_open"},
		`histogram_quantile(0.99, sum by (le, op) (rate(elicitd_store_operation_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`: {"elicitd_store_operation_duration_seconds_bucket"},
		`sum(rate(a_total{x="y(z)"}[5m])) / ignoring (k) sum(rate(b_total[5m])) > bool 0`:                                                            {"a_total", "b_total"},
		`max(elicitd_webhook_outbox_entries) or vector(0)`:                                                                                           {"elicitd_webhook_outbox_entries"},
	} {
		assert.Equal(t, want, promqlMetrics(expr), expr)
	}
}

var docMetric = regexp.MustCompile("^`(elicitd_[a-z_]+)`$")
var docLabel = regexp.MustCompile("`([a-z_]+)`")

// operationsMetrics are the metrics docs/operations.md's table lists, with their labels,
// sorted.
func operationsMetrics(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range tableRows(readDoc(t, "docs/operations.md")) {
		m := docMetric.FindStringSubmatch(r[0])
		if m == nil || len(r) < 3 {
			continue
		}
		labels := []string{}
		for _, l := range docLabel.FindAllStringSubmatch(r[2], -1) {
			labels = append(labels, l[1])
		}
		slices.Sort(labels)
		out[m[1]] = labels
	}
	require.NotEmpty(t, out, "docs/operations.md has a metrics table")
	return out
}

// With --log-format json every line elicitd writes is one JSON object with time, level and
// msg, the keys of the text format, and never what the person typed.
func TestJSONLogsAreOneObjectALine(t *testing.T) {
	s := startHTTPWith(t, []string{"--log-format", "json", "--store", "embedded", "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0"})
	args := map[string]any{"message": "Who?", "form": nameForm}
	cs := pullByHand(t, s, nil, nil)
	first, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args})
	require.NoError(t, err)
	done, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Lovelace"}}}})
	require.NoError(t, err)
	require.Equal(t, "completed", structured(t, done)["status"])
	require.NoError(t, s.stop(t)) // every line written

	out := s.stderr.String()
	assert.NotContains(t, out, "Lovelace", "answers are never logged")
	var finished map[string]any
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Greater(t, len(lines), 3, out)
	for _, line := range lines {
		var rec map[string]any
		if !assert.NoError(t, json.Unmarshal([]byte(line), &rec), "not one JSON object: %q", line) {
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			assert.Contains(t, rec, k, line)
		}
		if rec["msg"] == "elicitation finished" {
			finished = rec
		}
	}
	require.NotNil(t, finished, "the question's end is logged")
	for _, k := range []string{"id", "tool", "state", "reason", "attempts", "rounds", "duration"} {
		assert.Contains(t, finished, k, "the keys of the text format")
	}
	assert.Equal(t, "completed", finished["state"])
}
