// Package tools holds elicitd's own MCP tools (ask_user, the management tools and the UPS
// shipping tools) and the server that wires them to the ask package's Elicitor.
//
// Every tool failure is a tool result with isError true whose structured content, and whose
// JSON text, is one shape (ask.Error): {code, message, reason, missing: [{dot_path,
// flat_key, prompt}]}. The codes are stable API.
package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/tools/ups"
)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	Clock          clock.Clock   // the real clock
	Timeout        time.Duration // per elicitation, and the most a tool may ask for; 10m
	MaxAttempts    int           // prompts per elicitation, and the most a tool may ask for; 3
	Rate           rate.Limit    // elicitations a client session may start per second; 0: no limit
	Burst          int           // with Rate
	MaxLive        int           // live elicitations across all sessions; 0: no cap
	MaxAnswerBytes int           // the largest answer accepted; 1 MiB
	Keepalive      time.Duration // progress notifications while waiting, if the call has a token; 0: none
	// PullIdle is how long a pull-era question waits for the client to come back with the
	// answer to a round before it ends as abandoned; 0: half of Timeout; negative: never.
	PullIdle  time.Duration
	StateKey  []byte       // the pull-era RequestState HMAC key; random when empty
	Logger    *slog.Logger // elicitd's own log; discards when nil
	SDKLogger *slog.Logger // the MCP SDK's log; Logger when nil
	UPS       ups.Config   // the shipping tools' UPS settings; without credentials only dry_run works
}

// Server is elicitd: an MCP server with the elicitation tools, over one registry.
type Server struct {
	MCP      *mcp.Server
	Registry *registry.Registry
	el       *ask.Elicitor
	opts     Options
	ups      *ups.Client // nil without credentials
	forms    *formCache
}

// NewServer builds the MCP server and its tools.
func NewServer(opts Options, version string) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	// The Elicitor applies the question defaults (timeout, attempts).
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, forms: newFormCache(formCacheBudget, formCacheEntries)}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "elicitd", Version: version}, &mcp.ServerOptions{
		Logger:       cmp.Or(opts.SDKLogger, opts.Logger),
		Instructions: "elicitd asks the person using this client for what a tool is missing, through forms (MCP elicitation). Use ask_user to ask a structured question.",
	})
	s.el = ask.New(s.MCP, ask.Options{Clock: opts.Clock, Timeout: opts.Timeout, MaxAttempts: opts.MaxAttempts,
		Rate: opts.Rate, Burst: opts.Burst, MaxLive: opts.MaxLive, Keepalive: opts.Keepalive, PullIdle: opts.PullIdle,
		StateKey: opts.StateKey, Logger: opts.Logger})
	s.Registry = s.el.Registry()
	if opts.UPS.Configured() {
		s.ups = ups.New(opts.UPS)
	}
	s.addAskUser()
	s.addManagement()
	s.addShipping()
	s.MCP.AddResource(&mcp.Resource{URI: statsURI, Name: "stats", Title: "elicitd statistics", MIMEType: "application/json",
		Description: "Live elicitations by state, totals by outcome and reason, and time-to-answer percentiles."}, s.readStats)
	return s
}

// Shutdown is Close with reason shutdown.
func (s *Server) Shutdown(ctx context.Context) error { return s.Close(ctx, elicitation.Shutdown) }

// Close refuses new questions, ends every open one with reason (shutdown, or client gone when
// the only client has gone), so the tool calls waiting on them return their results, and
// waits until those calls have been handled or ctx ends.
func (s *Server) Close(ctx context.Context, reason elicitation.Reason) error {
	return s.el.Close(ctx, reason)
}

// Elicitor returns the adapter the server's tools use, for tools added by other packages.
func (s *Server) Elicitor() *ask.Elicitor { return s.el }

const statsURI = "elicitd://stats"

func (s *Server) readStats(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p50, p99, n := s.el.AnswerPercentiles()
	b, err := json.MarshalIndent(struct {
		registry.Stats
		AnswerP50 float64 `json:"time_to_answer_p50_seconds"`
		AnswerP99 float64 `json:"time_to_answer_p99_seconds"`
		Answers   int     `json:"time_to_answer_samples"`
	}{s.Registry.Stats(), p50.Seconds(), p99.Seconds(), n}, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: statsURI, MIMEType: "application/json", Text: string(b)}}}, nil
}
