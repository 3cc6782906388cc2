package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/session"
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
	el       *Elicitor
	opts     Options
	calls    inflight    // tool calls being handled
	ups      *ups.Client // nil without credentials
	forms    *formCache
}

// NewServer builds the MCP server and its tools.
func NewServer(opts Options, version string) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	if opts.Timeout == 0 {
		opts.Timeout = session.DefaultTimeout
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = session.DefaultMaxAttempts
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	key := opts.StateKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	if opts.PullIdle == 0 {
		opts.PullIdle = opts.Timeout / 2
	}
	el := &Elicitor{clk: opts.Clock, signer: stateSigner{key: key}, timeout: opts.Timeout,
		maxAttempts: opts.MaxAttempts, keepalive: opts.Keepalive, pullIdle: opts.PullIdle, log: opts.Logger}
	el.reg = registry.New(registry.Config{Clock: opts.Clock, Rate: opts.Rate, Burst: opts.Burst, MaxLive: opts.MaxLive, OnEnd: el.ended})

	s := &Server{Registry: el.reg, el: el, opts: opts, forms: newFormCache(formCacheBudget, formCacheEntries)}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "elicitd", Version: version}, &mcp.ServerOptions{
		Logger:       cmp.Or(opts.SDKLogger, opts.Logger),
		Instructions: "elicitd asks the person using this client for what a tool is missing, through forms (MCP elicitation). Use ask_user to ask a structured question.",
	})
	s.MCP.AddSendingMiddleware(attachWireSchema)
	s.MCP.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			s.calls.begin()
			defer s.calls.end()
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && len(r.InputRequests) > 0 {
				res = inputRequired{r}
			}
			return res, err
		}
	})
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

// inputRequired is a 2026-07-28 input_required result as the spec has it: without the
// "content" the SDK writes as null (its CallToolResult always carries the field).
type inputRequired struct{ *mcp.CallToolResult }

// nullContent is how the SDK's encoding starts when _meta is empty: Content is the first
// field after the omitempty _meta.
const nullContent = `{"content":null,`

// MarshalJSON encodes the result once, without its _meta, cuts the leading null content and
// puts _meta back: one pass on a path every pull-era round takes. Should the SDK's layout
// change, it falls back to decoding the members and dropping the field.
func (r inputRequired) MarshalJSON() ([]byte, error) {
	bare := *r.CallToolResult
	bare.Meta = nil
	b, err := bare.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(nullContent)) {
		return r.dropContent()
	}
	out := append(make([]byte, 0, len(b)+128), '{')
	if len(r.Meta) > 0 {
		meta, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, `"_meta":`...), meta...), ',')
	}
	return append(out, b[len(nullContent):]...), nil
}

// dropContent is the general way: decode the members, drop a null content, encode again.
func (r inputRequired) dropContent() ([]byte, error) {
	b, err := r.CallToolResult.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	if string(fields["content"]) == "null" {
		delete(fields, "content")
	}
	return json.Marshal(fields)
}

// Shutdown is Close with reason shutdown.
func (s *Server) Shutdown(ctx context.Context) error { return s.Close(ctx, session.Shutdown) }

// Close refuses new questions, ends every open one with reason (shutdown, or client gone when
// the only client has gone), so the tool calls waiting on them return their results, and
// waits until those calls have been handled or ctx ends.
func (s *Server) Close(ctx context.Context, reason session.Reason) error {
	if err := s.Registry.Close(ctx, reason); err != nil {
		return err
	}
	select {
	case <-s.calls.none():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Elicitor returns the adapter the server's tools use, for tools added by other packages.
func (s *Server) Elicitor() *Elicitor { return s.el }

const statsURI = "elicitd://stats"

func (s *Server) readStats(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p50, p99, n := s.el.answerPercentiles()
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
