package tools

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/session"
	"github.com/elicitd/elicitd/validator"
)

// pullEra is the first protocol version whose clients answer elicitations through multi
// round-trip tool calls; earlier sessions get server-initiated elicitation/create requests.
const pullEra = "2026-07-28"

// Elicitor is the adapter between tool handlers and the engine: the only code that sends
// elicitations over an MCP session. It picks the era from the request's protocol version.
type Elicitor struct {
	reg         *registry.Registry
	clk         clock.Clock
	signer      stateSigner
	timeout     time.Duration
	maxAttempts int
	keepalive   time.Duration
	pullIdle    time.Duration // how long a pull-era round waits for the client to come back
	log         *slog.Logger

	owners sync.Map // *mcp.ServerSession -> owner id
	pulls  sync.Map // elicitation id -> *pullState

	mu      sync.Mutex
	answers []time.Duration // recent times to a completed answer, a ring
	next    int
	recent  map[string]string // how recently ended pull-era elicitations ended, for late callers
	order   []string          // recent's keys, oldest first
}

// recentWindow is how many ended pull-era elicitations are remembered for a late call.
const recentWindow = 1024

// Ask is one question a tool puts to the person.
type Ask struct {
	Tool        string
	Title       string
	Message     string
	Form        *validator.Compiled
	Continue    session.Continuation
	Timeout     time.Duration // 0: the server's; clamped to [1s, the server's]
	MaxAttempts int           // 0: the server's; clamped to [1, the server's]
	Missing     []Missing     // what is asked, for the error a client without elicitation gets
	WireForm    session.Form  // sends another wire schema for Form (a fixture's exact schema); optional
	// Answered, when set, means nothing needs asking: Call finishes at once with this data.
	Answered map[string]any
}

// Step is where an elicitation stands when a tool call must return: either Pending, a
// result to return as is (pull era: the client answers in its next call), or the Outcome.
type Step struct {
	Pending *mcp.CallToolResult
	Outcome session.Outcome
}

// pullState is what a pull-era elicitation keeps between tool calls.
type pullState struct {
	prompts chan session.Prompt
	tool    string
	args    json.RawMessage // the arguments of the call that started it
	digest  string          // argsDigest(args), bound by every RequestState it issues

	mu       sync.Mutex
	answered int          // the latest round whose RequestState has been used
	idle     *clock.Timer // ends the question if the round handed out is not answered in time
}

// claim marks the RequestState of round as used, reporting false if it already was: a state
// is good for one resume, so two calls sent together with it cannot both go on (the second
// would otherwise be handed the first one's next prompt or outcome).
func (p *pullState) claim(round int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if round <= p.answered {
		return false
	}
	p.answered = round
	p.disarm()
	return true
}

// waitFor arms the idle expiry of a round just handed to the client: if the client does not
// come back with it within d, the question ends as abandoned (a go-sdk client whose own
// schema check fails gives up on the call without a word). d <= 0: no expiry.
func (p *pullState) waitFor(clk clock.Clock, d time.Duration, e *session.Elicitation) {
	if d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.disarm()
	p.idle = clk.AfterFunc(d, func() { _ = e.Cancel(session.Abandoned) })
}

// stop disarms the idle expiry once the question has ended.
func (p *pullState) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.disarm()
}

// disarm stops the idle expiry, if armed; p.mu is held.
func (p *pullState) disarm() {
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
}

// Prompt hands the prompt to whichever tool call comes for it.
func (p *pullState) Prompt(pr session.Prompt) { p.prompts <- pr }

// answerWindow is how many recent answer times the stats keep.
const answerWindow = 1024

// ended is the registry's OnEnd hook: one log line per elicitation, answer times, cleanup.
func (x *Elicitor) ended(owner string, o session.Outcome) {
	v, pulled := x.pulls.LoadAndDelete(o.ID)
	if pulled {
		v.(*pullState).stop()
	}
	d := o.Ended.Sub(o.Created)
	x.mu.Lock()
	if o.State == session.Completed {
		if len(x.answers) < answerWindow {
			x.answers = append(x.answers, d)
		} else {
			x.answers[x.next] = d
			x.next = (x.next + 1) % answerWindow
		}
	}
	if pulled {
		if x.recent == nil {
			x.recent = map[string]string{}
		}
		if len(x.order) == recentWindow {
			delete(x.recent, x.order[0])
			x.order = x.order[1:]
		}
		how := o.State.String()
		if o.Reason != session.None {
			how += ", " + o.Reason.String()
		}
		x.recent[o.ID], x.order = how, append(x.order, o.ID)
	}
	x.mu.Unlock()
	// Never the values the person typed: ids, names and counts only.
	x.log.Info("elicitation finished", "id", o.ID, "tool", o.Tool, "state", o.State.String(),
		"reason", o.Reason.String(), "attempts", o.Attempts, "duration", d.Round(time.Millisecond).String())
}

// answerPercentiles returns the p50 and p99 of recent times to a completed answer.
func (x *Elicitor) answerPercentiles() (p50, p99 time.Duration, n int) {
	x.mu.Lock()
	ds := slices.Clone(x.answers)
	x.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99), len(ds)
}

// owner returns the owner id of a client session, watching the session so that its
// elicitations are cancelled (client gone) when it ends.
func (x *Elicitor) owner(ss *mcp.ServerSession) string {
	if v, ok := x.owners.Load(ss); ok {
		return v.(string)
	}
	v, loaded := x.owners.LoadOrStore(ss, rand.Text())
	id := v.(string)
	if !loaded {
		go func() {
			_ = ss.Wait()
			x.reg.CloseOwner(id)
			x.owners.Delete(ss)
		}()
	}
	return id
}

// formElicitation reports whether the client behind req can show forms. A pull-era request
// carries the client's capabilities in its _meta, decoded from JSON into plain maps; they are
// read there as they are, because req.ClientCapabilities re-encodes and decodes the whole
// capabilities object on every call (measured in BenchmarkRoundTrip: 17 µs and 32 KiB of
// garbage a call, most of the garbage elicitd added to a bare server's). Anything else (no
// _meta entry, a shape the maps do not settle) goes through req.ClientCapabilities.
func formElicitation(req *mcp.CallToolRequest) bool {
	if caps, ok := req.Params.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		switch el := caps["elicitation"].(type) {
		case nil:
			return false
		case map[string]any:
			form, url := el["form"], el["url"]
			if objectOrNil(form) && objectOrNil(url) {
				return form != nil || url == nil // {} counts as form
			}
		}
	}
	return supportsForm(req.ClientCapabilities())
}

func objectOrNil(v any) bool {
	_, obj := v.(map[string]any)
	return obj || v == nil
}

func supportsForm(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil // {} counts as form
}

// Call is a whole tool call's worth of elicitation: a pull-era call that carries a
// RequestState resumes its question; any other call gets its question from ask and starts
// it. The result is the error's, the pending input requests, or finish(outcome).
func (x *Elicitor) Call(ctx context.Context, req *mcp.CallToolRequest, ask func() (Ask, *Error),
	finish func(session.Outcome) *mcp.CallToolResult) *mcp.CallToolResult {
	var step Step
	var terr *Error
	if req.Params.RequestState != "" {
		step, terr = x.Resume(ctx, req)
	} else {
		var a Ask
		a, terr = ask()
		switch {
		case terr != nil:
		case a.Answered != nil:
			return finish(session.Outcome{State: session.Completed, Data: a.Answered})
		default:
			step, terr = x.Start(ctx, req, a)
		}
	}
	switch {
	case terr != nil:
		return terr.Result()
	case step.Pending != nil:
		return step.Pending
	}
	return finish(step.Outcome)
}

// Start asks the person through the client behind req, in the era the request speaks.
func (x *Elicitor) Start(ctx context.Context, req *mcp.CallToolRequest, ask Ask) (Step, *Error) {
	if !formElicitation(req) {
		e := Errorf(CodeUnsupported, "no_form_elicitation",
			"this client cannot show forms (it declares no form elicitation); ask the person for these in the chat instead")
		e.Missing = ask.Missing
		if e.Missing == nil {
			e.Missing = formMissing(ask.Form)
		}
		return Step{}, e
	}
	owner := x.owner(req.Session)
	pull := req.ProtocolVersion() >= pullEra
	spec := session.Spec{
		Title: ask.Title, Tool: ask.Tool, Message: ask.Message, Form: ask.Form, Continue: ask.Continue,
		Timeout: clamp(ask.Timeout, time.Second, x.timeout), MaxAttempts: clamp(ask.MaxAttempts, 1, x.maxAttempts),
	}
	if ask.WireForm != nil {
		spec.Form = ask.WireForm
	} else {
		spec.Form = keepForm{ask.Form}
	}
	var ps *pullState
	if pull {
		ps = &pullState{prompts: make(chan session.Prompt, spec.MaxAttempts), tool: req.Params.Name,
			args: slices.Clone(req.Params.Arguments), digest: argsDigest(req.Params.Arguments)}
		spec.Prompter = ps
	} else {
		// A prompt's elicitation/create lives until the question ends, which it has when
		// Start returns (wait sees to that); then the SDK tells the client with
		// notifications/cancelled.
		prompts, stopPrompts := context.WithCancel(context.Background())
		defer stopPrompts()
		spec.Prompter = pushPrompter{ss: req.Session, ctx: prompts}
	}
	e, err := x.reg.Start(owner, spec)
	if err != nil {
		return Step{}, startError(err)
	}
	if !pull {
		return x.wait(ctx, req, e), nil
	}
	x.pulls.Store(e.ID(), ps)
	if _, done := e.Outcome(); done {
		x.pulls.Delete(e.ID()) // it ended before it was stored: OnEnd found nothing to delete
	}
	return x.nextPull(owner, e, ps), nil
}

func clamp[T int | time.Duration](v, lo, hi T) T {
	if v == 0 {
		return hi
	}
	return min(max(v, lo), hi)
}

func formMissing(f *validator.Compiled) []Missing {
	var out []Missing
	if f == nil {
		return out
	}
	for _, fd := range f.Fields() {
		prompt := fd.Label
		if prompt == "" {
			prompt = fd.Name
		}
		out = append(out, Missing{DotPath: fd.Name, FlatKey: fd.Name, Prompt: prompt})
	}
	return out
}

func startError(err error) *Error {
	var rl *registry.RateLimitError
	var se *session.SpecError
	switch {
	case errors.As(err, &rl):
		e := Errorf(CodeRateLimited, "rate_limited", "too many questions were started from this session; retry after %s", rl.RetryAfter)
		e.Details = map[string]any{"retry_after_seconds": rl.RetryAfter.Seconds()}
		return e
	case errors.Is(err, registry.ErrTooManyLive):
		return Errorf(CodeTooMany, "too_many_live", "the server is waiting on too many answers already; retry later")
	case errors.Is(err, registry.ErrClosed):
		return Errorf(CodeCancelled, session.Shutdown.String(), "the server is shutting down")
	case errors.As(err, &se):
		return Errorf(CodeInvalidForm, "invalid_spec", "%s", se.Error())
	}
	return Errorf(CodeFailed, "start_failed", "%s", err.Error())
}

// wait is the push era: the tool call waits for the outcome, sending keepalive progress if
// the call carried a progress token. If the call is cancelled or its client goes away, the
// elicitation is cancelled and its outcome returned.
func (x *Elicitor) wait(ctx context.Context, req *mcp.CallToolRequest, e *session.Elicitation) Step {
	var tick <-chan time.Time
	token := req.Params.GetProgressToken()
	if token != nil && x.keepalive > 0 {
		t := x.clk.Ticker(x.keepalive)
		defer t.Stop()
		tick = t.C
	}
	for n := 1; ; n++ {
		select {
		case <-e.Done():
			o, _ := e.Outcome()
			return Step{Outcome: o}
		case <-ctx.Done():
			reason := session.ToolCallCancelled
			if errors.Is(context.Cause(ctx), io.EOF) {
				reason = session.ClientGone
			}
			_ = e.Cancel(reason)
			<-e.Done()
			o, _ := e.Outcome()
			return Step{Outcome: o}
		case <-tick:
			s := e.Snapshot()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(n),
				Message: fmt.Sprintf("waiting for the user (attempt %d of %d)", s.Attempt, s.MaxAttempts),
			})
		}
	}
}

// pushPrompter sends each prompt as an elicitation/create request on its own goroutine, under
// ctx, which is cancelled once the elicitation has ended.
//
// Elicit is called without a RequestedSchema, so the SDK hands back the client's answer as it
// came instead of checking it against the schema and returning only an error: every accepted
// answer reaches the form's own size check, normaliser and validator, exactly as in the pull
// era. attachWireSchema puts the schema on the request that goes out.
type pushPrompter struct {
	ss  *mcp.ServerSession
	ctx context.Context
}

func (p pushPrompter) Prompt(pr session.Prompt) {
	go func() {
		ctx := context.WithValue(p.ctx, wireSchemaKey{}, pr.Form.WireSchema())
		res, err := p.ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: pr.Message})
		switch {
		case p.ctx.Err() != nil:
		case clientGone(err):
			// The client went away with the question open. The tool call's wait sees its
			// context end for the same reason; whichever is first, the reason is the same.
			_ = pr.Elicitation.Cancel(session.ClientGone)
		default:
			_ = pr.Elicitation.Answer(toAnswer(pr.Round, res, err))
		}
	}()
}

// clientGone reports whether err says the client has gone: the connection closed or ended,
// or a write to it found the pipe broken.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// FrameTooLarge is the message of the JSON-RPC error a transport delivers in place of a
// reply too large to read (elicitd's stdio transport does): for an elicitation, an answer
// over the size limit, which earns a re-prompt like any other.
const FrameTooLarge = "the message is larger than the frame limit"

// wireSchemaKey carries a push-era prompt's wire schema from pushPrompter to attachWireSchema.
type wireSchemaKey struct{}

// attachWireSchema is a sending middleware: an elicitation/create sent by pushPrompter goes
// out with its form's wire schema as requestedSchema. It sends a copy of the params, so the
// SDK's Elicit, which still holds the originals without a schema, does not check the answer.
func attachWireSchema(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if schema, ok := ctx.Value(wireSchemaKey{}).(json.RawMessage); ok && method == "elicitation/create" {
			ss, isServer := req.GetSession().(*mcp.ServerSession)
			if p, ok := req.GetParams().(*mcp.ElicitParams); ok && isServer && p.RequestedSchema == nil {
				params := *p
				params.RequestedSchema = schema
				req = &mcp.ServerRequest[*mcp.ElicitParams]{Session: ss, Params: &params}
			}
		}
		return next(ctx, method, req)
	}
}

func elicitParams(pr session.Prompt) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: pr.Message, RequestedSchema: pr.Form.WireSchema()}
}

func toAnswer(round int, res *mcp.ElicitResult, err error) session.Answer {
	a := session.Answer{Round: round}
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && we.Message == FrameTooLarge:
		a.Action = session.Accept
		a.Rejections = []validator.FieldError{{Label: "Answer", Constraint: "size",
			Message: "Answer: is too large to receive (the limit is the transport's frame size)"}}
	case err != nil:
		a.Action, a.Err = session.Failed, err
	case res == nil:
		a.Action, a.Err = session.Failed, errors.New("empty elicitation result")
	case res.Action == "accept":
		a.Action, a.Content = session.Accept, res.Content
		if a.Content == nil {
			a.Content = map[string]any{}
		}
	case res.Action == "decline":
		a.Action = session.Decline
	case res.Action == "cancel":
		a.Action = session.Cancel
	default:
		a.Action, a.Err = session.Unusable, fmt.Errorf("the client answered with action %q; expected accept, decline or cancel", res.Action)
	}
	return a
}

// inputKey names the input request of one round, so a response to an earlier round is
// recognised as such.
func inputKey(round int) string { return fmt.Sprintf("elicit-%d", round) }

// stateLifetime bounds how long a pull-era RequestState is honoured: the longest an
// elicitation may live.
const stateLifetime = session.DefaultMaxLifetime

// nextPull returns the next prompt as input requests, or the outcome if the elicitation has
// ended.
func (x *Elicitor) nextPull(owner string, e *session.Elicitation, ps *pullState) Step {
	for {
		if o, done := e.Outcome(); done {
			return Step{Outcome: o}
		}
		select {
		case pr := <-ps.prompts:
			if pr.Round != e.Snapshot().Attempt {
				continue // superseded while queued
			}
			token := x.signer.sign(requestState{ID: e.ID(), Owner: owner, Tool: ps.tool, Args: ps.digest, Round: pr.Round,
				Expires: x.clk.Now().Add(stateLifetime).Unix()})
			ps.waitFor(x.clk, x.pullIdle, e)
			return Step{Pending: &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{inputKey(pr.Round): elicitParams(pr)},
				RequestState:  token,
			}}
		case <-e.Done():
		}
	}
}

func stateError(reason, format string, args ...any) *Error {
	return Errorf(CodeInvalidRequestState, reason, format, args...)
}

// Resume is the pull era's second and later calls: it checks the RequestState, hands the
// response to the same live elicitation, and returns the next prompt or the outcome.
func (x *Elicitor) Resume(ctx context.Context, req *mcp.CallToolRequest) (Step, *Error) {
	st, err := x.signer.open(req.Params.RequestState)
	if err != nil {
		return Step{}, stateError("forged", "the requestState was not issued by this server or has been altered")
	}
	if st.expired(x.clk.Now()) {
		return Step{}, stateError("expired", "the requestState has expired; call the tool again without it")
	}
	owner := x.owner(req.Session)
	if st.Owner != owner {
		return Step{}, stateError("foreign", "the requestState belongs to another client session")
	}
	const otherCall = "the requestState belongs to another tool call (tool or arguments differ)"
	if st.Tool != req.Params.Name {
		return Step{}, stateError("foreign", otherCall)
	}
	e, eOwner, ok := x.reg.Get(st.ID)
	v, pulled := x.pulls.Load(st.ID)
	if !ok || !pulled || eOwner != owner {
		x.mu.Lock()
		how := x.recent[st.ID]
		x.mu.Unlock()
		if how != "" {
			how = " (" + how + ")"
		}
		return Step{}, stateError("finished", "that question has already ended%s; call the tool again without requestState", how)
	}
	ps := v.(*pullState)
	if st.Args != argsDigest(req.Params.Arguments) && !sameArgs(ps.args, req.Params.Arguments) {
		return Step{}, stateError("foreign", otherCall) // not merely re-encoded: other arguments
	}
	if cur := e.Snapshot().Attempt; cur != st.Round {
		return Step{}, stateError("stale_round", "the requestState is for question round %d, but round %d is current", st.Round, cur)
	}
	resp, ok := req.Params.InputResponses[inputKey(st.Round)]
	if !ok {
		return Step{}, stateError("missing_response", "inputResponses has no %q, the response to the current question", inputKey(st.Round))
	}
	if !ps.claim(st.Round) {
		return Step{}, stateError("used", "this requestState has already been used; a requestState is good for one call")
	}
	var a session.Answer
	if res, ok := resp.(*mcp.ElicitResult); ok {
		a = toAnswer(st.Round, res, nil)
	} else {
		a = session.Answer{Round: st.Round, Action: session.Unusable,
			Err: fmt.Errorf("inputResponses[%q] is a %T, not an elicitation result", inputKey(st.Round), resp)}
	}
	if err := e.Answer(a); err != nil {
		if errors.Is(err, session.ErrStaleRound) {
			return Step{}, stateError("stale_round", "that question round is no longer current")
		}
		if o, done := e.Outcome(); done {
			return Step{Outcome: o}, nil // it ended at that instant (deadline): report how
		}
		return Step{}, stateError("finished", "that question has already ended")
	}
	return x.nextPull(owner, e, ps), nil
}
