package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/tasks"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools/ups"
)

// options configure a server. Zero values take the defaults noted.
type options struct {
	Clock          clock.Clock   // the real clock
	Timeout        time.Duration // per question, and the most a tool may ask for; 10m
	MaxAttempts    int           // attempts per question (an invalid answer earns another), and the most a tool may ask for; 3
	MaxRounds      int           // prompts per question, follow-ups included; 20
	Rate           rate.Limit    // questions a client session may start per second; 0: no limit
	Burst          int           // with Rate
	MaxLive        int           // questions awake across all sessions; 0: no cap
	MaxAsleep      int           // questions hibernating across all sessions; 0: no cap
	MaxAnswerBytes int           // the largest answer ask_user accepts; 1 MiB
	Keepalive      time.Duration // push era: progress notifications while waiting, if the call has a token; 0: none
	PullIdle       time.Duration // see ask.Options.PullIdle
	KeepAwake      bool          // see ask.Options.KeepAwake
	Linger         time.Duration // see ask.Options.Linger (with RecordBehind only)
	StateKey       []byte        // the pull-era requestState HMAC key; random when empty
	Logger         *slog.Logger  // elicitd's own log; discards when nil
	SDKLogger      *slog.Logger  // the MCP SDK's log; Logger when nil
	UPS            ups.Config    // the shipping tools' UPS settings; without credentials only dry_run works
	Conformance    bool          // add the MCP conformance suite's fixtures
	Tasks          bool          // serve the Tasks extension
	// Owner names the owner of a call's questions (see ask.Options.Owner); nil: the client
	// session.
	Owner    func(*mcp.CallToolRequest) string
	Pages    *page.Server  // elicitd's page, for secrets and files; nil: none
	PageWait time.Duration // see ask.Options.PageWait
	Store    store.Store   // where 2026-07-28 questions are kept (ask.Options.Store); nil: this process only
	// RecordBehind: a call's first prompt goes out before its record is written
	// (ask.Options.RecordBehind); set where this process alone serves its clients: stdio, and
	// --http on an embedded store that listens on no network.
	RecordBehind bool
	// Templates are the forms ask_user asks by name, and the shipping tools' wording; nil:
	// the built-in ones only. TemplateDirs, when set, are where they were loaded from: the
	// server loads them again on SIGHUP, until close.
	Templates    *templates.Set
	TemplateDirs []string
	OnEnd        func(ask.Ending) error // see ask.Options.OnEndErr: the webhooks
	MoreStats    map[string]func() any  // see ask.Options.MoreStats
}

// server is elicitd: an MCP server with elicitd's tools, all asking through one Elicitor.
type server struct {
	mcp         *mcp.Server
	el          *ask.Elicitor
	pages       *page.Server // served beside MCP over HTTP; nil when there is none
	opts        options
	log         *slog.Logger
	tasks       *tasks.Server       // nil: the extension is off
	impl        *mcp.Implementation // mcp's, which names it in every 2026-07-28 result
	closeTasks  func() error        // closes the tasks' own store, if they have one
	templates   served
	stopReloads func() // stops the SIGHUP watcher; nil without template directories
}

// newServer wires the MCP server, the Elicitor and the tools together.
func newServer(o options, version string) *server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{}
	var caps *mcp.ServerCapabilities
	if o.Tasks {
		// Capabilities replaces go-sdk's defaults, of which logging is the one not added
		// from what the server serves.
		//lint:ignore SA1019 go-sdk's default, kept: 2025-11-25 clients set a log level (logging-set-level)
		caps = &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
		tasks.Capabilities(caps)
	}
	impl := &mcp.Implementation{Name: "elicitd", Version: version}
	*s = server{impl: impl, mcp: mcp.NewServer(impl, &mcp.ServerOptions{
		Logger:       cmp.Or(o.SDKLogger, o.Logger),
		Capabilities: caps,
		// go-sdk answers prompts/list on every server, so elicitd declares prompts: a
		// 2026-07-28 server/discover MUST name every capability the server serves.
		//lint:ignore SA1019 the one switch that adds prompts and keeps go-sdk's other defaults (Capabilities replaces them all)
		HasPrompts: true,
		// Templates' prompts complete their choice arguments (which declares completions).
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return s.complete(ctx, req)
		},
		Instructions: "elicitd asks the person using this client for what a tool is missing, through forms (MCP elicitation). Use ask_user to ask a structured question.",
	}), pages: o.Pages, opts: o, log: o.Logger}
	s.el = ask.New(s.mcp, ask.Options{Clock: o.Clock, Timeout: o.Timeout, MaxAttempts: o.MaxAttempts, MaxRounds: o.MaxRounds,
		Rate: o.Rate, Burst: o.Burst, MaxLive: o.MaxLive, MaxAsleep: o.MaxAsleep, Keepalive: o.Keepalive, PullIdle: o.PullIdle, KeepAwake: o.KeepAwake,
		StateKey: o.StateKey, Logger: o.Logger, Owner: o.Owner, Pages: o.Pages, PageWait: o.PageWait, Store: o.Store,
		RecordBehind: o.RecordBehind, Linger: o.Linger, OnEndErr: o.OnEnd, MoreStats: o.MoreStats})
	set := o.Templates
	if set == nil {
		var err error
		if set, err = loadTemplates(nil); err != nil {
			panic(fmt.Sprintf("built-in templates: %v", err)) // fixed forms: any test catches it
		}
	}
	s.serveTemplates(set) // ask_user, the shipping tools, the templates' resources
	s.el.AddManagement(s.mcp)
	if o.Conformance {
		s.addConformanceFixtures()
	}
	if len(o.TemplateDirs) > 0 {
		s.log.Info("serving templates", "templates", strings.Join(set.Names(), ","))
		s.stopReloads = s.watchReloads()
	}
	if caps != nil {
		// Outside the Elicitor's middleware: a task's rounds are the tools' own calls.
		taskStore := o.Store
		if taskStore == nil {
			// The memory store (stdio's default): tasks, as the questions, live in this
			// process only.
			mem := memory.New(memory.Options{Clock: o.Clock})
			s.closeTasks = mem.Close
			taskStore = mem
		}
		s.tasks = tasks.New(tasks.Options{Store: taskStore, Clock: o.Clock, Logger: o.Logger,
			Owner: s.el.Owner, TTL: tasksTTL(o.Timeout),
			SupportOf:   func(name string) tasks.Support { return tasks.Support(s.el.TaskSupport(name)) },
			DeadlineKey: ask.DeadlineKey, Ended: s.el.QuestionEnded, Retryable: ask.Retryable, FirstCalls: s.el})
		if o.Conformance {
			s.allowConformanceTasks()
		}
		if err := s.tasks.Install(s.mcp); err != nil {
			panic(fmt.Sprintf("tasks: %v", err)) // fixed method names: any test catches it
		}
	}
	return s
}

// tasksTTL is how long a task is kept from its last change: the longest its question may
// wait (its deadline, extensions included, within a question's lifetime) and a day more
// for its result.
func tasksTTL(timeout time.Duration) time.Duration {
	return max(timeout, elicitation.DefaultMaxLifetime) + 24*time.Hour
}

// close refuses new questions, ends every open one with reason (shutdown, or client gone
// when the only client has gone), so the tool calls waiting on them return their results,
// and waits until those calls have been handled or ctx ends.
func (s *server) close(ctx context.Context, reason elicitation.Reason) error {
	if s.stopReloads != nil {
		s.stopReloads()
	}
	if s.tasks != nil {
		s.tasks.Stop() // first: the rounds the Elicitor's stop cuts short are left to another node
	}
	err := s.el.Close(ctx, reason)
	if s.tasks != nil {
		err = errors.Join(err, s.tasks.Close(ctx))
	}
	if s.closeTasks != nil {
		err = errors.Join(err, s.closeTasks())
	}
	return err
}
