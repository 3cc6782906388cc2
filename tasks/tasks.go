package tasks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/store"
)

// Extension is the extension's name, under capabilities.extensions.
const Extension = "io.modelcontextprotocol/tasks"

// PullEra is the first protocol version whose calls can be tasks: a task's rounds are the
// multi round-trip requests (SEP-2322) of 2026-07-28.
const PullEra = "2026-07-28"

// Support is how a tool takes part in tasks, as tools/list declares it
// (execution.taskSupport).
type Support string

// The supports the extension names.
const (
	Forbidden Support = "forbidden" // never a task (the default)
	Optional  Support = "optional"  // a task when it has to wait, for a client that has the extension
	Required  Support = "required"  // only for a client that has the extension; refused otherwise
)

// Task statuses.
const (
	Working       = "working"
	InputRequired = "input_required"
	Completed     = "completed"
	Failed        = "failed"
	Cancelled     = "cancelled"
)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	// Store keeps the tasks' records; required. Every node of a cluster shares it.
	Store store.Store
	Clock clock.Clock // the real clock
	// Window is how long a call runs before it becomes a task; 250 ms. A call that has
	// completed by then answers as it is; one asking the person becomes a task at once.
	Window time.Duration
	// PollInterval is the pollIntervalMs a task suggests; 1 s.
	PollInterval time.Duration
	// TTL is how long a task is kept from its last change (ttlMs counts from its creation,
	// and grows with each change); 24 h. Give it the longest a question may wait,
	// extensions included, plus the time a result is kept for.
	TTL time.Duration
	// Owner names the caller a task belongs to, from the request (its session, its OAuth
	// subject or its static token); required.
	Owner func(*mcp.CallToolRequest) string
	// SupportOf, when set, says how a tool not declared with Allow takes part (for one,
	// ask.Elicitor.TaskSupport, which reads ask.Tool.Tasks).
	SupportOf func(tool string) Support
	// DeadlineKey, when set, is the _meta key of an input request's params under which the
	// tool says when its question ends unanswered (RFC 3339; ask.DeadlineKey). Past it, a
	// tasks/get asks Ended whether the question has ended; if so the call's next round runs
	// at once, and the task ends with the tool's own result for that end.
	DeadlineKey string
	// Retryable, when set, reports whether a round's result is the tools' answer to a
	// request they could not serve now, their question not over (ask.Retryable: the store
	// away, the node stopping): the round is sent again after a pause, rather than taken
	// for the task's result.
	Retryable func(*mcp.CallToolResult) bool
	// Ended reports whether the question of the round whose requestState req carries has
	// ended without its answer (ask.Elicitor.QuestionEnded).
	Ended func(ctx context.Context, req *mcp.CallToolRequest) bool
	// FirstCalls, when set, lets another node make a task's first call again once the node
	// making it is gone (its beats stopped for staleAfter), for a tool FirstCalls says may
	// be (ask.Elicitor: a Replayable tool, with a store). Without it, or for another tool,
	// such a task ends failed ("call the tool again").
	FirstCalls FirstCalls
	Logger     *slog.Logger // discards when nil
}

// FirstCalls names the question a task's first call asks, so that a node making the call
// again can drop the one the gone node's call may have asked, which no client was shown.
// *ask.Elicitor is one.
type FirstCalls interface {
	// FirstCall returns the context a first call runs in, naming the question it may ask,
	// and reports, once the call has begun, whether its tool may be made again elsewhere.
	FirstCall(ctx context.Context, question string) (context.Context, func() bool)
	// DropUnseen removes owner's question id (or keeps it from being written later).
	DropUnseen(owner, question string)
}

// Server serves the extension beside the tools of a go-sdk server.
type Server struct {
	o     Options
	log   *slog.Logger
	mu    sync.Mutex
	tools map[string]toolTasks
	// running are the calls this node runs for a task in working, by task id.
	running map[string]runEntry
	busy    sync.WaitGroup
	closed  bool
	stop    chan struct{} // closed by Stop
}

type toolTasks struct {
	support Support
	inline  bool
}

// New returns a Server; Install puts it on a go-sdk server.
func New(o Options) *Server {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Window <= 0 {
		o.Window = 250 * time.Millisecond
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{o: o, log: log, tools: map[string]toolTasks{}, running: map[string]runEntry{}, stop: make(chan struct{})}
}

// ToolOption qualifies a tool's Support.
type ToolOption int

// AsksInline: the tool asks the person over the pull era's own rounds (input_required
// results to the call), and becomes a task only for the work that follows its last round.
const AsksInline ToolOption = 1

// Allow declares how the tool name takes part in tasks.
func (s *Server) Allow(name string, support Support, opts ...ToolOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools[name] = toolTasks{support: support, inline: slices.Contains(opts, AsksInline)}
}

func (s *Server) toolOf(name string) toolTasks {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok && s.o.SupportOf != nil {
		t.support = s.o.SupportOf(name)
	}
	if t.support != Optional && t.support != Required {
		t.support = Forbidden
	}
	return t
}

// Capabilities adds the extension to caps, the server's capabilities (mcp.ServerOptions),
// for server/discover and initialize.
func Capabilities(caps *mcp.ServerCapabilities) {
	caps.AddExtension(Extension, map[string]any{})
}

// Install registers the extension's methods on srv and puts its middleware outside the
// middleware srv has: call it after the tools' own (ask.Elicitor's) are in place.
func (s *Server) Install(srv *mcp.Server) error {
	for _, err := range []error{
		mcp.AddReceivingCustomMethod(srv, "tasks/get", func(context.Context, *mcp.ServerSession, *taskParams) (*detailed, error) {
			return nil, errNotReached
		}),
		mcp.AddReceivingCustomMethod(srv, "tasks/update", func(context.Context, *mcp.ServerSession, *updateParams) (*ack, error) {
			return nil, errNotReached
		}),
		mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(context.Context, *mcp.ServerSession, *taskParams) (*ack, error) {
			return nil, errNotReached
		}),
	} {
		if err != nil {
			return err
		}
	}
	srv.AddReceivingMiddleware(s.middleware)
	return nil
}

// errNotReached: the methods are answered by the middleware, which holds the handler of
// tools/call that a task's rounds go to.
var errNotReached = errors.New("tasks: the extension's middleware is not installed")

// Stop begins the node's stop: a round it runs for a task is left to another node (its
// record is not written: once its beats stop, the next tasks/get elsewhere runs it again),
// and a first call it runs, which cannot be asked again, is stopped, its task failed. Call
// it before the tools' own stop (ask.Elicitor.Close), whose results for the calls it cuts
// short are then not taken for the tasks'.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.stop)
}

// Close stops (Stop) and waits for the calls this node runs for tasks, or for ctx.
func (s *Server) Close(ctx context.Context) error {
	s.Stop()
	done := make(chan struct{})
	go func() { s.busy.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errStopping = errors.New("the node running the task stopped before it finished; call the tool again")

// Wire types.

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type updateParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
	// Raw: a response under a key the task never asked is ignored, whatever its shape.
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// ack is the empty answer of tasks/update and tasks/cancel.
type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// envelope is a task as the wire has it: CreateTaskResult (resultType "task") and, with
// the detail, tasks/get's DetailedTask (resultType "complete").
type envelope struct {
	ResultType     string    `json:"resultType"`
	TaskID         string    `json:"taskId"`
	Status         string    `json:"status"`
	StatusMessage  string    `json:"statusMessage,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	LastUpdatedAt  time.Time `json:"lastUpdatedAt"`
	TTLMs          int64     `json:"ttlMs"`
	PollIntervalMs int64     `json:"pollIntervalMs"`
}

type created struct {
	mcp.ResultBase
	envelope
}

type detailed struct {
	mcp.ResultBase
	envelope
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *wireError                 `json:"error,omitempty"`
}

type wireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// task is what a task's record keeps (store.Record.Task).
type task struct {
	Status  string    `json:"status"`
	Message string    `json:"message,omitempty"`
	Tool    string    `json:"tool"`
	Args    any       `json:"args,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// The round being asked: the call's requestState, and its open input requests and the
	// answers given to them so far, by the task's keys (round-qualified: unique over the
	// task's life) with the tool's own key beside.
	Round        int                        `json:"round,omitempty"`
	RequestState string                     `json:"requestState,omitempty"`
	Inputs       map[string]input           `json:"inputs,omitempty"`
	Answers      map[string]json.RawMessage `json:"answers,omitempty"`
	Result       json.RawMessage            `json:"result,omitempty"`
	Error        *wireError                 `json:"error,omitempty"`
	// Due is when the round's question ends unless answered, as its input requests said
	// (Options.DeadlineKey), or when to look again.
	Due time.Time `json:"due,omitzero"`
	// Beat is when the node running the task (working) last said it still does: every
	// beatEvery. A round whose node has not said so for staleAfter is run again by the
	// node a tasks/get reaches (an identical resend of the pull era's request).
	Beat time.Time `json:"beat,omitzero"`
	// Claim names the run of the round (working) that may beat for it and record what it
	// comes to: a run whose claim the record no longer names (cancelled, taken over, a
	// later round) changes nothing.
	Claim string `json:"claim,omitempty"`
	// Remake says that the first call (working, Round 0) may be made again on another node
	// (Options.FirstCalls); Made counts the times it was made again, each under a question
	// id of its own (questionID).
	Remake bool `json:"remake,omitempty"`
	Made   int  `json:"made,omitempty"`
}

// questionID is the id of the question the first call of task id, made the made-th time
// again, may ask: derived from the task id, which it does not disclose.
func questionID(id string, made int) string {
	sum := sha256.Sum256([]byte("elicitd task question\x00" + id + "\x00" + strconv.Itoa(made)))
	return "t" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// remakes reports whether tk, working, is a first call another node may make again.
func (tk *task) remakes() bool { return tk.Remake && tk.Round == 0 && tk.RequestState == "" }

// How often a node running a task says so, and how long a silence means it is gone.
const (
	beatEvery  = 10 * time.Second
	staleAfter = 3 * beatEvery
)

// readResponse decodes v, an answer given under the tool's input key, as the tool will read
// it.
func readResponse(key string, v json.RawMessage, into *mcp.InputResponseMap) error {
	return json.Unmarshal([]byte(`{`+strconv.Quote(key)+`:`+string(v)+`}`), into)
}

// resendable reports whether tk, working, runs a round the pull era can be asked again
// (its requestState and every answer are in the record): not a first call.
func (tk *task) resendable() bool {
	return tk.RequestState != "" && len(tk.Answers) == len(tk.Inputs) && len(tk.Inputs) > 0
}

type input struct {
	Key     string          `json:"key"` // the tool's
	Request json.RawMessage `json:"request"`
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func terminal(status string) bool {
	return status == Completed || status == Failed || status == Cancelled
}

// ownerKey is the store owner of the tasks of caller owner: apart from its questions.
func ownerKey(owner string) string { return "task:" + owner }

// declares reports whether caps names the extension.
func declares(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[Extension]
	return ok
}

// callDeclares reports whether the tools/call req declares the extension: read from the
// plain maps its _meta was decoded into (req.ClientCapabilities re-encodes and decodes the
// whole capabilities object, some 17 µs and 32 KiB of garbage, on every call of a tool that
// takes part), else as req.ClientCapabilities says (a session's initialize).
func callDeclares(req *mcp.CallToolRequest) bool {
	if caps, ok := req.Params.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		ext, _ := caps["extensions"].(map[string]any)
		_, ok := ext[Extension]
		return ok
	}
	return declares(req.ClientCapabilities())
}

func missingCapability(what string) error {
	data, err := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{Extension: map[string]any{}}}})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("%s needs the client capability extensions[%q], which the request does not declare", what, Extension)}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			r, ok := req.(*mcp.CallToolRequest)
			if !ok {
				break
			}
			return s.call(ctx, r, next)
		case "tools/list":
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return s.listed(l), nil
			}
			return res, err
		case "tasks/get", "tasks/update", "tasks/cancel":
			return s.method(ctx, method, req, next)
		}
		return next(ctx, method, req)
	}
}

// call runs a tools/call: as a task, or as it is.
func (s *Server) call(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	t := s.toolOf(req.Params.Name)
	if t.support == Forbidden {
		return next(ctx, "tools/call", req)
	}
	if !callDeclares(req) {
		if t.support == Required {
			return nil, missingCapability("the tool " + strconv.Quote(req.Params.Name))
		}
		return next(ctx, "tools/call", req)
	}
	if req.ProtocolVersion() < PullEra {
		return next(ctx, "tools/call", req) // its questions go out as elicitation/create
	}
	owner := s.o.Owner(req)
	if owner == "" {
		return next(ctx, "tools/call", req)
	}
	id := rand.Text()
	now := s.o.Clock.Now()
	tk := task{Status: Working, Tool: req.Params.Name, Created: now, Updated: now}
	if len(req.Params.Arguments) > 0 {
		tk.Args = json.RawMessage(req.Params.Arguments)
	}
	fctx, replayable := ctx, func() bool { return false }
	if s.o.FirstCalls != nil && req.Params.RequestState == "" {
		fctx, replayable = s.o.FirstCalls.FirstCall(ctx, questionID(id, 0))
	}
	run, ok := s.start(fctx, detached(req), next)
	if !ok {
		return next(ctx, "tools/call", req) // this node stops: no task is begun here
	}
	select {
	case o := <-run.done:
		res, ok := toolResult(o.res)
		if o.err != nil || !ok || len(res.InputRequests) == 0 || t.inline {
			// Completed (or failed) within the window, or asking over the pull era's own
			// rounds: as it is.
			return o.res, o.err
		}
		s.settle(&tk, o)
		rec, err := s.create(ctx, owner, id, tk)
		if err != nil {
			return nil, err
		}
		return s.createdResult(rec, tk), nil
	case <-s.o.Clock.After(s.o.Window):
	}
	// Still working: a task from here. Its record first, then the handle.
	tk.Beat, tk.Claim, tk.Remake = tk.Created, newClaim(), replayable()
	rec, err := s.create(ctx, owner, id, tk)
	if err != nil {
		run.cancel(err)
		return nil, err
	}
	s.adoptFirst(ctx, owner, id, run, tk, detached(req), req, next)
	return s.createdResult(rec, tk), nil
}

// adoptFirst adopts run, task id's first call (first), as tk has claimed it. A first call the
// tools could not serve now (the store away: it asked nothing, and made nothing) is made
// again; another node makes it again only if tk.Remake says so.
func (s *Server) adoptFirst(ctx context.Context, owner, id string, run running, tk task, first *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) {
	again, other := func() (running, bool) { return s.start(ctx, first, next) }, nothing
	if tk.Remake {
		again, other = func() (running, bool) { return s.remakeFirst(ctx, owner, id, tk.Claim, first, next) }, remake
	}
	s.adopt(owner, id, run, again, other, tk.Claim,
		func(res *mcp.CallToolResult) { s.closeOut(ctx, first, req, tk.Tool, tk.Args, res, next) })
}

// remakeFirst makes task id's first call again, under claim, with a question id of its own:
// the one the call before it named may be kept from landing (its write failed), and is not
// to be asked twice. The record counts it first, so that a node taking the task over knows
// which question to drop; false if the claim is lost, or the node stops before the store
// answers.
func (s *Server) remakeFirst(ctx context.Context, owner, id, claim string, first *mcp.CallToolRequest, next mcp.MethodHandler) (running, bool) {
	pause := time.Second
	for {
		made, ours := 0, false
		err := s.change(context.WithoutCancel(ctx), owner, id, func(tk *task) bool {
			if ours = !terminal(tk.Status) && tk.Claim == claim; !ours {
				return false
			}
			tk.Made++
			made = tk.Made
			return true
		})
		switch {
		case err == nil && !ours, isGone(err):
			return running{}, false
		case err == nil:
			fctx, _ := s.o.FirstCalls.FirstCall(ctx, questionID(id, made))
			return s.start(fctx, first, next)
		}
		select {
		case <-s.o.Clock.After(pause):
		case <-s.stop:
			return running{}, false
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// running is a tools/call under way for a task.
type running struct {
	done   chan outcome
	cancel context.CancelCauseFunc
}

type outcome struct {
	res mcp.Result
	err error
}

// runEntry is a call this node runs for a task, under the claim the task's record names.
type runEntry struct {
	claim  string
	cancel context.CancelCauseFunc
}

// stopping reports whether Stop has been called.
func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// isRunning reports whether this node runs task id's round under claim.
func (s *Server) isRunning(id, claim string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.running[id]
	return ok && e.claim == claim
}

// start calls the tool for req on its own goroutine, outliving the request; false once the
// node stops (Stop): it starts nothing then.
func (s *Server) start(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (running, bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return running{}, false
	}
	s.busy.Add(1) // under s.mu, before Close's Wait can begin
	s.mu.Unlock()
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := running{done: make(chan outcome, 1), cancel: cancel}
	go func() {
		defer s.busy.Done()
		res, err := next(cctx, "tools/call", req)
		r.done <- outcome{res, err}
		cancel(nil)
	}()
	return r, true
}

// isGone reports whether err says the task's record is no longer there (expired).
func isGone(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams
}

// newClaim is a claim on a task's round: the record names the one run that may beat for it
// and write what it comes to.
func newClaim() string { return rand.Text()[:16] }

// elsewhere says what another node can do with a call a node runs for a task, should the
// node stop or die first.
type elsewhere int

const (
	// nothing: a first call of a tool that is not replayable. A stop cuts it short, and the
	// task fails (saying so) unless it came to a result first.
	nothing elsewhere = iota
	// resend: a round, whose request is in the record. What the tools answer as the node
	// stops is not the round's result: another node sends the round again.
	resend
	// remake: a replayable tool's first call (task.Remake). A result of its own, reached as
	// the node stops, is recorded (the tool may have acted: it must not run twice); what a
	// stop cut short is made again by another node.
	remake
)

// adopt waits, on its own goroutine, for the call run started for task id (working, under
// claim), beats for it, and records what it comes to: while the record still names claim.
// again runs the call again, for a result the tools could not serve now (Retryable); other
// says what another node can do with it.
func (s *Server) adopt(owner, id string, run running, again func() (running, bool), other elsewhere, claim string, closeOut func(*mcp.CallToolResult)) {
	s.mu.Lock()
	s.running[id] = runEntry{claim: claim, cancel: run.cancel}
	s.busy.Add(1) // the run's goroutine holds the count above zero
	s.mu.Unlock()
	go func() {
		defer s.busy.Done()
		defer run.cancel(nil)
		beat := s.o.Clock.Ticker(beatEvery)
		defer beat.Stop()
		stop := s.stop
		ours := func(tk *task) bool { return !terminal(tk.Status) && tk.Claim == claim }
		beatNow := func() {
			_ = s.change(context.Background(), owner, id, func(tk *task) bool {
				if !ours(tk) {
					return false
				}
				tk.Beat = s.o.Clock.Now()
				return true
			})
		}
		var o outcome
		pause := time.Second
	wait:
		for {
			select {
			case o = <-run.done:
				res, ok := toolResult(o.res)
				if again == nil || o.err != nil || !ok || s.o.Retryable == nil || !s.o.Retryable(res) {
					break wait
				}
				// The tools could not serve the round now: sent again after a pause, beating
				// meanwhile (a pause grows to the silence that has another node take over).
				for paused := s.o.Clock.After(pause); paused != nil; {
					select {
					case <-paused:
						paused = nil
					case <-beat.C:
						beatNow()
					case <-s.stop:
						break wait
					}
				}
				pause = min(2*pause, 30*time.Second)
				next, ok := again()
				if !ok {
					break wait
				}
				s.mu.Lock()
				if e, held := s.running[id]; held && e.claim == claim {
					s.running[id] = runEntry{claim: claim, cancel: next.cancel}
				}
				s.mu.Unlock()
				run = next
			case <-beat.C:
				beatNow()
			case <-stop:
				stop = nil
				if other == nothing {
					run.cancel(errStopping) // recorded failed, below, unless it finished
				}
			}
		}
		s.mu.Lock()
		if e, ok := s.running[id]; ok && e.claim == claim {
			delete(s.running, id)
		}
		stopping := s.closed
		s.mu.Unlock()
		res, ok := toolResult(o.res)
		cut := o.err != nil || !ok || res.IsError // perhaps by the stop
		if stopping && (other == resend || other == remake && cut) {
			// What the tools answered as this node stops is not the call's result: it is
			// run again elsewhere. A first call's own result stands: it may have acted.
			return
		}
		if stopping && cut {
			o = outcome{err: errStopping} // cut short by the stop; a result it made stands
		}
		// Written until it lands, the claim is lost (cancelled, taken over), or the node
		// stops: a store that is away for a while must not leave the task working.
		wait := time.Second
		for {
			cancelled := false
			err := s.change(context.Background(), owner, id, func(tk *task) bool {
				cancelled = tk.Status == Cancelled
				if !ours(tk) {
					return false
				}
				s.settle(tk, o)
				return true
			})
			if res, ok := toolResult(o.res); err == nil && cancelled && ok && len(res.InputRequests) > 0 && closeOut != nil {
				// Cancelled while it ran (on another node, say): the question it went on to
				// ask has no one to answer it, and is ended now.
				closeOut(res)
			}
			if err == nil || isGone(err) {
				return
			}
			s.log.Warn("a task's outcome could not be recorded; trying again", "task", id, "error", err.Error())
			select {
			case <-s.o.Clock.After(wait):
			case <-s.stop:
				return // another node runs the round again once the beats have stopped
			}
			wait = min(2*wait, 30*time.Second)
		}
	}()
}

// toolResult is res as a CallToolResult, however the middleware inside wrapped it.
func toolResult(res mcp.Result) (*mcp.CallToolResult, bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r, r != nil
	case interface{ ToolResult() *mcp.CallToolResult }:
		tr := r.ToolResult()
		return tr, tr != nil
	}
	return nil, false
}

// settle puts into tk what a round of its call came to: the next round's input requests,
// the tool's result, or the JSON-RPC error.
func (s *Server) settle(tk *task, o outcome) {
	tk.Updated = s.o.Clock.Now()
	tk.Answers, tk.Inputs, tk.RequestState, tk.Message, tk.Beat, tk.Claim = nil, nil, "", "", time.Time{}, ""
	if o.err != nil {
		tk.Status, tk.Error = Failed, asWireError(o.err)
		return
	}
	res, ok := toolResult(o.res)
	if !ok {
		tk.Status, tk.Error = Failed, &wireError{Code: jsonrpc.CodeInternalError, Message: "the tool returned no result"}
		return
	}
	if len(res.InputRequests) > 0 {
		raw, err := json.Marshal(res.InputRequests)
		var reqs map[string]json.RawMessage
		if err == nil {
			err = json.Unmarshal(raw, &reqs)
		}
		if err != nil {
			tk.Status, tk.Error = Failed, &wireError{Code: jsonrpc.CodeInternalError, Message: "the tool's input requests do not encode: " + err.Error()}
			return
		}
		tk.Round++
		tk.Status, tk.RequestState, tk.Inputs, tk.Due = InputRequired, res.RequestState, map[string]input{}, time.Time{}
		for k, r := range reqs {
			tk.Inputs[strconv.Itoa(tk.Round)+"-"+k] = input{Key: k, Request: r}
			if due := s.deadlineOf(res.InputRequests[k]); !due.IsZero() && (tk.Due.IsZero() || due.Before(tk.Due)) {
				tk.Due = due
			}
		}
		tk.Message = "waiting for the person's answer"
		return
	}
	bare := *res
	bare.Meta = nil // the server's _meta of the round, not the task's
	raw, err := json.Marshal(&bare)
	if err != nil {
		tk.Status, tk.Error = Failed, &wireError{Code: jsonrpc.CodeInternalError, Message: "the tool's result does not encode: " + err.Error()}
		return
	}
	tk.Status, tk.Result = Completed, withComplete(raw)
}

// deadlineOf is the deadline the input request r carries (Options.DeadlineKey), or zero.
func (s *Server) deadlineOf(r mcp.InputRequest) time.Time {
	p, ok := r.(*mcp.ElicitParams)
	if !ok || s.o.DeadlineKey == "" || p.Meta == nil {
		return time.Time{}
	}
	v, _ := p.Meta[s.o.DeadlineKey].(string)
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// expirySlack is how long after a question's deadline a task looks whether it has ended:
// the tool's timer decides, a moment later.
const expirySlack = time.Second

// lookAgain is how long a task whose question outlived its deadline (extended) waits before
// it looks again.
const lookAgain = 5 * time.Second

// expire runs the next round of task id, waiting for the person past its question's
// deadline, if that question has ended: the tool's result for that end (its timeout, say)
// ends the task. Otherwise the task looks again a little later.
func (s *Server) expire(ctx context.Context, owner, id string, rec store.Record, tk task, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) (store.Record, task) {
	probe := &mcp.CallToolRequest{Session: caller.Session, Extra: caller.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: callMeta(req), Name: tk.Tool, Arguments: argsOf(tk.Args), RequestState: tk.RequestState}}
	claimed := tk
	for _, in := range tk.Inputs {
		if !strings.Contains(string(in.Request), `"elicitation/create"`) {
			// Only a form can be answered "cancel" for its ended question: a task that
			// also waits on another request is left to its client.
			claimed.Due = time.Time{}
			if s.write(ctx, rec, claimed) != nil {
				return rec, tk
			}
			return rec, claimed
		}
	}
	ended := s.o.Ended(ctx, probe)
	if ended {
		claimed.Status, claimed.Message, claimed.Updated, claimed.Claim = Working, "", s.o.Clock.Now(), newClaim()
	} else {
		claimed.Due = s.o.Clock.Now().Add(lookAgain)
	}
	if ended {
		// The question has ended: whatever the round answers, the tool's own result for
		// that end is what the call returns.
		claimed.Answers = map[string]json.RawMessage{}
		for k := range tk.Inputs {
			claimed.Answers[k] = json.RawMessage(`{"action":"cancel"}`)
		}
		claimed.Beat = claimed.Updated
	}
	if err := s.write(ctx, rec, claimed); err != nil {
		return rec, tk // another request changed it: that one's doing
	}
	if !ended {
		return rec, claimed
	}
	s.runRound(ctx, owner, id, claimed, caller, req, next)
	return rec, claimed
}

// runRound runs the round tk has claimed for this node (working, every answer in): the
// call's next request, with the requestState and the answers.
func (s *Server) runRound(ctx context.Context, owner, id string, tk task, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) {
	responses := mcp.InputResponseMap{}
	for k, v := range tk.Answers {
		var one mcp.InputResponseMap
		if err := readResponse(tk.Inputs[k].Key, v, &one); err != nil {
			// Not a response the tool could read: the round is asked again as it was.
			_ = s.change(ctx, owner, id, func(t *task) bool {
				if t.Status != Working || t.Claim != tk.Claim {
					return false
				}
				t.Status, t.Answers, t.Claim = InputRequired, nil, ""
				t.Message = fmt.Sprintf("the answer to %s could not be read (%v); answer again", k, err)
				return true
			})
			return
		}
		maps.Copy(responses, one)
	}
	call := &mcp.CallToolRequest{Session: caller.Session, Extra: caller.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: callMeta(req), Name: tk.Tool, Arguments: argsOf(tk.Args), RequestState: tk.RequestState, InputResponses: responses}}
	again := func() (running, bool) { return s.start(ctx, call, next) }
	if run, ok := again(); ok {
		s.adopt(owner, id, run, again, resend, tk.Claim, func(res *mcp.CallToolResult) { s.closeOut(ctx, caller, req, tk.Tool, tk.Args, res, next) })
	} // else this node stops: the round is run again elsewhere, once its beats are missed
}

// closeOut ends the questions res asks (a round of a task cancelled meanwhile), as the
// person's cancel would: its next request, each form answered "cancel"; its result dropped.
// Requests other than forms cannot be so answered, and are left to their deadlines.
func (s *Server) closeOut(ctx context.Context, caller *mcp.CallToolRequest, req mcp.Request, tool string, args any, res *mcp.CallToolResult, next mcp.MethodHandler) {
	responses := mcp.InputResponseMap{}
	for k, r := range res.InputRequests {
		if _, form := r.(*mcp.ElicitParams); !form {
			return
		}
		responses[k] = &mcp.ElicitResult{Action: "cancel"}
	}
	call := &mcp.CallToolRequest{Session: caller.Session, Extra: caller.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: callMeta(req), Name: tool, Arguments: argsOf(args), RequestState: res.RequestState, InputResponses: responses}}
	_, _ = s.start(ctx, call, next) // its result is dropped
}

// orphaned takes over task id, working on a node that has not said it still runs it for
// staleAfter (gone, or stopped): its round is run again here, an identical resend of the
// pull era's request, which gets what the round got, or runs it; a first call, which
// cannot be asked again, ends the task failed.
func (s *Server) orphaned(ctx context.Context, owner, id string, rec store.Record, tk task, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) (store.Record, task) {
	claimed := tk
	now := s.o.Clock.Now()
	remakes := tk.remakes() && s.o.FirstCalls != nil
	switch {
	case tk.resendable():
		claimed.Beat, claimed.Claim = now, newClaim()
	case remakes:
		claimed.Beat, claimed.Claim, claimed.Made = now, newClaim(), tk.Made+1
	default:
		claimed.Status, claimed.Updated, claimed.Message = Failed, now, ""
		claimed.Error = &wireError{Code: jsonrpc.CodeInternalError, Message: "the node running the task stopped before it finished; call the tool again"}
	}
	if err := s.write(ctx, rec, claimed); err != nil {
		return rec, tk // another request took it first
	}
	if claimed.Status == Working {
		s.log.Info("took over a task whose node stopped", "task", id)
		if remakes {
			s.remade(ctx, owner, id, claimed, caller, req, next)
		} else {
			s.runRound(ctx, owner, id, claimed, caller, req, next)
		}
	}
	return rec, claimed
}

// remade makes the first call of task id again here, as tk has claimed it (its tk.Made-th
// making), once the questions the calls before it may have asked are dropped: no client was
// shown them. Every one, not the last only: a node that claimed the task before may have
// died, or had its claim land unseen, before it dropped its own.
func (s *Server) remade(ctx context.Context, owner, id string, tk task, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) {
	for n := range tk.Made {
		s.o.FirstCalls.DropUnseen(owner, questionID(id, n))
	}
	first := &mcp.CallToolRequest{Session: caller.Session, Extra: caller.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: callMeta(req), Name: tk.Tool, Arguments: argsOf(tk.Args)}}
	fctx, _ := s.o.FirstCalls.FirstCall(ctx, questionID(id, tk.Made))
	run, ok := s.start(fctx, first, next)
	if !ok {
		return // this node stops: made again elsewhere, once its beats are missed
	}
	s.adoptFirst(ctx, owner, id, run, tk, first, req, next)
}

// withComplete is a CallToolResult's encoding with resultType "complete".
func withComplete(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	if b, err := json.Marshal(m); err == nil {
		return b
	}
	return raw
}

func asWireError(err error) *wireError {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &wireError{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	return &wireError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// create writes task id's first record.
func (s *Server) create(ctx context.Context, owner, id string, tk task) (store.Record, error) {
	raw, err := json.Marshal(tk)
	if err != nil {
		return store.Record{}, err
	}
	rec := store.Record{ID: id, Owner: ownerKey(owner), Tool: tk.Tool, Era: "task", Created: tk.Created,
		Deadline: tk.Created.Add(s.o.TTL), State: tk.Status, Task: raw}
	rev, err := s.o.Store.Create(context.WithoutCancel(ctx), rec)
	if err != nil {
		return store.Record{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task could not be recorded: " + err.Error()}
	}
	rec.Revision = rev
	return rec, nil
}

// read returns caller owner's task id.
func (s *Server) read(ctx context.Context, owner, id string) (store.Record, task, error) {
	if !store.ValidID(id) {
		return store.Record{}, task{}, invalidParams("taskId %q: no such task", id)
	}
	// The latest write, wherever it was made: a replica's read may miss the record just
	// created on another node ("durably created": a tasks/get anywhere finds it at once),
	// or show a round the client has answered since (a robustness run saw both).
	var rec store.Record
	var err error
	if r, ok := s.o.Store.(store.Replicated); ok {
		rec, err = r.GetLatest(ctx, ownerKey(owner), id)
	} else {
		rec, err = s.o.Store.Get(ctx, ownerKey(owner), id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return rec, task{}, invalidParams("taskId %q: no such task", id)
	}
	if err != nil {
		return rec, task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task's store did not answer: " + err.Error()}
	}
	var tk task
	if err := json.Unmarshal(rec.Task, &tk); err != nil {
		return rec, task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task's record does not decode: " + err.Error()}
	}
	return rec, tk, nil
}

// change applies f to task id's record, compare-and-set; f returns false to leave it.
func (s *Server) change(ctx context.Context, owner, id string, f func(*task) bool) error {
	for range 10 {
		rec, tk, err := s.read(ctx, owner, id)
		if err != nil {
			return err
		}
		if !f(&tk) {
			return nil
		}
		if err := s.write(ctx, rec, tk); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return errors.New("the task is changing too fast")
}

func (s *Server) write(ctx context.Context, rec store.Record, tk task) error {
	raw, err := json.Marshal(tk)
	if err != nil {
		return err
	}
	rec.Task, rec.State = raw, tk.Status
	// Kept TTL from its last change: its ttlMs only grows.
	rec.Deadline = later(rec.Deadline, tk.Updated.Add(s.o.TTL))
	_, err = s.o.Store.Update(ctx, rec)
	return err
}

func (s *Server) envelope(rec store.Record, tk task, resultType string) envelope {
	return envelope{ResultType: resultType, TaskID: rec.ID, Status: tk.Status, StatusMessage: tk.Message,
		CreatedAt: tk.Created.UTC(), LastUpdatedAt: tk.Updated.UTC(),
		TTLMs: max(rec.Deadline.Sub(tk.Created).Milliseconds(), 1), PollIntervalMs: max(s.o.PollInterval.Milliseconds(), 1)}
}

// RelatedTask is the _meta key under which a CreateTaskResult repeats its taskId
// ({"taskId": id}): a client whose SDK decodes a tools/call result into its own type
// (go-sdk's CallToolResult) keeps _meta, and drops the fields it does not know.
const RelatedTask = "io.modelcontextprotocol/related-task"

func (s *Server) createdResult(rec store.Record, tk task) *created {
	c := &created{envelope: s.envelope(rec, tk, "task")}
	c.Meta = mcp.Meta{RelatedTask: map[string]any{"taskId": rec.ID}}
	return c
}

// method answers tasks/get, tasks/update and tasks/cancel.
func (s *Server) method(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	// The SDK lets a request without params through, as a nil params struct: refused
	// before anything reads it (it panicked).
	var id string
	var answers map[string]json.RawMessage
	switch p := req.GetParams().(type) {
	case *taskParams:
		if p == nil {
			return nil, invalidParams("%s needs params with a taskId", method)
		}
		id = p.TaskID
	case *updateParams:
		if p == nil {
			return nil, invalidParams("%s needs params with a taskId and inputResponses", method)
		}
		id, answers = p.TaskID, p.InputResponses
	default:
		return nil, invalidParams("%s: unexpected params", method)
	}
	if !declares(requestCapabilities(req)) {
		return nil, missingCapability(method)
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		// SEP-2663's routing header: a load balancer may route on it, so it must name the
		// task the body does.
		if name, ok := extra.Header[http.CanonicalHeaderKey("Mcp-Name")]; ok && (len(name) != 1 || strings.TrimSpace(name[0]) != id) {
			return nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
				Message: fmt.Sprintf("header mismatch: the Mcp-Name header %q does not name the task %q of the body", strings.Join(name, ","), id)}
		}
	}
	caller := &mcp.CallToolRequest{Session: sessionOf(req), Extra: req.GetExtra(), Params: &mcp.CallToolParamsRaw{}}
	caller = detached(caller)
	owner := s.o.Owner(caller)
	if owner == "" {
		return nil, invalidParams("taskId %q: no such task", id)
	}
	switch method {
	case "tasks/get":
		rec, tk, err := s.read(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		switch {
		case s.stopping():
			// A stopping node takes nothing on: another node will.
		case s.due(tk):
			rec, tk = s.expire(ctx, owner, id, rec, tk, caller, req, next)
		case s.silent(id, tk):
			rec, tk = s.orphaned(ctx, owner, id, rec, tk, caller, req, next)
		}
		return s.detailed(rec, tk), nil
	case "tasks/cancel":
		return s.cancel(ctx, owner, id, caller, req, next)
	default:
		return s.update(ctx, owner, id, answers, caller, req, next)
	}
}

// plainGet reports whether a tasks/get of tk has nothing to do but read it (method): the
// node is stopping, or tk is neither due nor silent, whichever node runs it.
func (s *Server) plainGet(tk task) bool {
	return s.stopping() || !s.due(tk) && !s.silent("", tk)
}

// due reports whether tk waits for an answer past its question's deadline: its question
// may have ended (expire).
func (s *Server) due(tk task) bool {
	return tk.Status == InputRequired && s.o.Ended != nil && !tk.Due.IsZero() && s.o.Clock.Now().After(tk.Due.Add(expirySlack))
}

// silent reports whether tk is working on a node whose beats have stopped (orphaned): not
// this one, running task id (id "": asked of the beats alone, when this node runs it, it
// beats).
func (s *Server) silent(id string, tk task) bool {
	return tk.Status == Working && s.o.Clock.Now().Sub(tk.Beat) > staleAfter && (id == "" || !s.isRunning(id, tk.Claim))
}

func (s *Server) detailed(rec store.Record, tk task) *detailed {
	d := &detailed{envelope: s.envelope(rec, tk, "complete")}
	switch tk.Status {
	case InputRequired:
		d.InputRequests = map[string]json.RawMessage{}
		for k, in := range tk.Inputs {
			if _, answered := tk.Answers[k]; !answered {
				d.InputRequests[k] = in.Request
			}
		}
	case Completed:
		d.Result = tk.Result
	case Failed:
		d.Error = tk.Error
	}
	return d
}

// update takes the answers to the open input requests of task id; once every one is
// answered, the call's next round runs, as the task.
func (s *Server) update(ctx context.Context, owner, id string, answers map[string]json.RawMessage, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	if s.stopping() {
		// It would claim a round it cannot run: sent again, it reaches another node.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "this node is stopping; send the request again"}
	}
	var round *task
	for range 10 {
		rec, tk, err := s.read(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		if tk.Status != InputRequired {
			return &ack{ResultType: "complete"}, nil // nothing to answer: ignored
		}
		took := false
		for k, v := range answers {
			if _, open := tk.Inputs[k]; !open {
				continue // never asked, or a round gone by
			}
			if _, done := tk.Answers[k]; done {
				continue // answered already
			}
			// An answer the tool could not read is refused now, not found out once every key
			// is in (which would drop the good ones with it).
			var one mcp.InputResponseMap
			if err := readResponse(tk.Inputs[k].Key, v, &one); err != nil {
				return nil, invalidParams("inputResponses[%q]: %v", k, err)
			}
			if tk.Answers == nil {
				tk.Answers = map[string]json.RawMessage{}
			}
			tk.Answers[k], took = v, true
		}
		if !took {
			return &ack{ResultType: "complete"}, nil
		}
		tk.Updated = s.o.Clock.Now()
		all := len(tk.Answers) == len(tk.Inputs)
		if all {
			tk.Status, tk.Message, tk.Beat, tk.Claim = Working, "", tk.Updated, newClaim() // this node runs the round
		}
		err = s.write(ctx, rec, tk)
		switch {
		case errors.Is(err, store.ErrConflict):
			continue
		case errors.Is(err, store.ErrTooLarge):
			return nil, invalidParams("inputResponses: too large to keep: %v", err)
		case err != nil:
			// It may have landed all the same: then the round, unrun here, is run by the
			// node a tasks/get reaches once its beats are missed (30 s).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task's store did not answer: " + err.Error()}
		}
		if !all {
			return &ack{ResultType: "complete"}, nil
		}
		round = &tk
		break
	}
	if round == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task is changing too fast; try again"}
	}
	s.runRound(ctx, owner, id, *round, caller, req, next)
	return &ack{ResultType: "complete"}, nil
}

// cancel ends task id cancelled: a call running here is stopped, and a question waiting for
// the person is ended (its round answered "cancel").
func (s *Server) cancel(ctx context.Context, owner, id string, caller *mcp.CallToolRequest, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	var was task
	err := s.change(ctx, owner, id, func(tk *task) bool {
		was = *tk
		if terminal(tk.Status) {
			return false
		}
		tk.Status, tk.Message, tk.Updated, tk.Claim = Cancelled, "cancelled by the client", s.o.Clock.Now(), ""
		return true
	})
	if err != nil {
		return nil, err
	}
	switch was.Status {
	case Working:
		s.mu.Lock()
		e, ok := s.running[id]
		s.mu.Unlock()
		if ok {
			e.cancel(context.Canceled)
		}
	case InputRequired:
		// The question ends as the person's cancel would end it; what the tool makes of
		// that is dropped: the task is cancelled.
		responses := mcp.InputResponseMap{}
		for _, in := range was.Inputs {
			if strings.Contains(string(in.Request), `"elicitation/create"`) {
				responses[in.Key] = &mcp.ElicitResult{Action: "cancel"}
			}
		}
		if len(responses) == len(was.Inputs) {
			call := &mcp.CallToolRequest{Session: caller.Session, Extra: caller.Extra, Params: &mcp.CallToolParamsRaw{
				Meta: callMeta(req), Name: was.Tool, Arguments: argsOf(was.Args), RequestState: was.RequestState, InputResponses: responses}}
			_, _ = s.start(ctx, call, next) // its result is dropped

		}
	}
	return &ack{ResultType: "complete"}, nil
}

// detached is req for a call that outlives the HTTP request it came with: with the
// caller's token (whose owner it is), without the request's headers, which tie a call to
// its response stream (a call whose stream has ended is stopped).
func detached(req *mcp.CallToolRequest) *mcp.CallToolRequest {
	if req.Extra == nil {
		return req
	}
	r := *req
	r.Extra = &mcp.RequestExtra{TokenInfo: req.Extra.TokenInfo}
	return &r
}

func argsOf(a any) json.RawMessage {
	if a == nil {
		return nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	return b
}

// callMeta is the _meta a task's round goes with: the request's (its protocol version and
// client capabilities).
func callMeta(req mcp.Request) mcp.Meta {
	if p, ok := req.GetParams().(interface{ GetMeta() map[string]any }); ok {
		return maps.Clone(p.GetMeta())
	}
	return nil
}

func sessionOf(req mcp.Request) *mcp.ServerSession {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}

// requestCapabilities are the client capabilities req declares: in its _meta (2026-07-28),
// else its session's.
func requestCapabilities(req mcp.Request) *mcp.ClientCapabilities {
	if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		return r.ClientCapabilities()
	}
	return nil
}

// listed is l with each tool's execution.taskSupport, for the tools that have one.
func (s *Server) listed(l *mcp.ListToolsResult) mcp.Result {
	return toolsList{l, s}
}

type toolsList struct {
	*mcp.ListToolsResult
	s *Server
}

func (t toolsList) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(t.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return raw, nil
	}
	changed := false
	for _, tool := range tools {
		var name string
		if json.Unmarshal(tool["name"], &name) != nil {
			continue
		}
		if sup := t.s.toolOf(name).support; sup != Forbidden {
			tool["execution"] = json.RawMessage(`{"taskSupport":` + strconv.Quote(string(sup)) + `}`)
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
