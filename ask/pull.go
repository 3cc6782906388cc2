package ask

// The pull era (2026-07-28): a tool call's handler runs on its own goroutine across the
// client's retries, each question it asks handed out as input requests with a signed
// requestState, each retry claimed once and answered to the question asked.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
)

// callKey carries the *call of a handler's context.
type callKey struct{}

// call is one tool call as its client sees it. In the push era it is the one request. In the
// pull era the handler runs on its own goroutine, across the client's retries: each question
// it asks is handed to whichever call is waiting (the first, or a retry that brought the last
// answer), as input requests with a signed requestState naming the call; its result goes to
// the call waiting when it returns.
type call struct {
	el    *Elicitor
	req   *mcp.CallToolRequest // the request that started it
	owner string
	pull  bool

	// Pull era only.
	id     string
	args   json.RawMessage // the arguments of the call that started it: a retry brings the same
	cancel context.CancelCauseFunc
	signal chan struct{} // a new event is queued; capacity 1

	mu      sync.Mutex
	queue   []event // prompts and the handler's result, in order
	handed  int     // input requests handed out
	claimed int     // the latest handed round whose requestState was used
	asking  elicitation.Prompt
	idle    *clock.Timer // forgets the call's result if the client does not come back for it
	killed  bool
	links   *links // the pages of the question asked now, if it may use them; set by its way
	how     string // how its last question ended
}

// event is a prompt to hand out, or the handler's result.
type event struct {
	prompt elicitation.Prompt
	end    *result
}

// result is what a handler returned (out only for typed handlers).
type result struct {
	res *mcp.CallToolResult
	out any
	err error
}

// endReason is the cause a pull-era handler's context is cancelled with.
type endReason struct{ r elicitation.Reason }

func (e endReason) Error() string { return "ask: the call ended: " + e.r.String() }

// reasonOf says why ctx ended, as a reason to end a question with.
func reasonOf(ctx context.Context) elicitation.Reason {
	var er endReason
	cause := context.Cause(ctx)
	switch {
	case errors.As(cause, &er):
		return er.r
	case cause == nil || cause == context.Canceled:
		// Cancelled without a cause: the client cancelled the request.
		return elicitation.ToolCallCancelled
	}
	// The connection failed under the request: its read ended (io.EOF) or its writes did.
	return elicitation.ClientGone
}

// AddTool is mcp.AddTool for a handler that asks: the handler may call Ask and the typed
// forms' Ask with its context, in either era, as straight-line code.
func AddTool[In, Out any](el *Elicitor, s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		r := el.run(ctx, req, func(ctx context.Context) result {
			res, out, err := h(ctx, req, in)
			return result{res, out, err}
		})
		out, _ := r.out.(Out)
		return r.res, out, r.err
	})
}

// Handler wraps a raw tool handler that asks, for Server.AddTool. An *Error it returns is
// sent as the error payload.
func (el *Elicitor) Handler(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := el.run(ctx, req, func(ctx context.Context) result {
			res, err := h(ctx, req)
			return result{res: res, err: err}
		})
		var e *Error
		if r.res == nil && errors.As(r.err, &e) {
			return e.Result(), nil
		}
		return r.res, r.err
	}
}

// run handles one tools/call: push era, the handler inline; pull era, a retry resumes its
// call and a first call starts the handler on its own goroutine.
func (el *Elicitor) run(ctx context.Context, req *mcp.CallToolRequest, start func(context.Context) result) result {
	ctx, done := el.watch(ctx, req)
	defer done()
	if req.ProtocolVersion() < PullEra {
		c := &call{el: el, req: req, owner: el.Owner(req)}
		return start(context.WithValue(ctx, callKey{}, c))
	}
	if req.Params.RequestState != "" {
		return el.resume(ctx, req)
	}
	c := &call{el: el, req: req, owner: el.Owner(req), pull: true, id: el.idPrefix + strconv.FormatUint(el.callSeq.Add(1), 36),
		args: slices.Clone(req.Params.Arguments), signal: make(chan struct{}, 1)}
	// The handler outlives this request: its context is not the request's, and ends when
	// the call does (abandoned, cancelled, shut down).
	hctx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), callKey{}, c))
	c.cancel = cancel
	el.calls.add(c)
	el.busy.begin()
	go func() {
		defer el.busy.end()
		r := start(hctx)
		cancel(nil)
		c.push(event{end: &r})
	}()
	return c.next(ctx)
}

// Prompt queues a prompt for the call waiting, or the next retry.
func (c *call) Prompt(pr elicitation.Prompt) { c.push(event{prompt: pr}) }

func (c *call) push(ev event) {
	c.mu.Lock()
	c.queue = append(c.queue, ev)
	killed := c.killed
	if ev.end != nil && !killed {
		// Kept for the retry that comes for it, as long as a round waits for one (with no
		// idle expiry, as long as a question may wait): never for ever.
		c.arm(cmp.Or(c.el.pullIdle, c.el.timeout), func() { c.el.forget(c) })
	}
	c.mu.Unlock()
	if ev.end != nil && killed {
		c.el.forget(c) // no retry can come for it; a call waiting still gets it
	}
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// next waits for what the call returns now: the next prompt, as input requests, or the
// handler's result. If ctx ends first (the client cancelled the request or went away), the
// call ends with it.
func (c *call) next(ctx context.Context) result {
	for {
		c.mu.Lock()
		var ev event
		have := len(c.queue) > 0
		if have {
			ev, c.queue = c.queue[0], c.queue[1:]
		}
		c.mu.Unlock()
		if !have {
			select {
			case <-c.signal:
			case <-ctx.Done():
				c.kill(reasonOf(ctx))
				return result{err: ctx.Err()}
			}
			continue
		}
		if ev.end != nil {
			c.el.forget(c)
			return *ev.end
		}
		pr := ev.prompt
		if _, over := pr.Elicitation.Outcome(); over || pr.Round != pr.Elicitation.Snapshot().Round {
			continue // superseded while queued, or ended: the handler says what follows
		}
		return c.hand(ctx, pr)
	}
}

// stateLifetime bounds how long a pull-era requestState is honoured: the longest a
// question may live.
const stateLifetime = elicitation.DefaultMaxLifetime

// hand returns pr as the input requests of a new round.
func (c *call) hand(ctx context.Context, pr elicitation.Prompt) result {
	params := elicitParams
	if isPage(pr) && c.links != nil {
		l, err := c.links.link(pr)
		if err != nil {
			_ = pr.Elicitation.Answer(elicitation.Answer{Round: pr.Round, Action: elicitation.Failed, Err: err})
			return c.next(ctx)
		}
		params = func(pr elicitation.Prompt) *mcp.ElicitParams { return urlParams(pr, l, false) }
	}
	c.mu.Lock()
	c.handed++
	n := c.handed
	c.asking = pr
	c.mu.Unlock()
	token := c.el.signer.sign(requestState{ID: c.id, Owner: c.owner, Tool: c.req.Params.Name, Round: n,
		Expires: c.el.clk.Now().Add(stateLifetime).Unix()})
	return result{res: &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputKey(n): params(pr)},
		RequestState:  token,
	}}
}

// arm (c.mu held) replaces the idle expiry with f after d: a result nobody comes for.
func (c *call) arm(d time.Duration, f func()) {
	c.disarm()
	c.idle = c.el.clk.AfterFunc(d, f)
}

// disarm (c.mu held) stops the idle expiry, if armed.
func (c *call) disarm() {
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
}

// claim marks the requestState of round as used, reporting false if it already was: a state
// is good for one resume, so two calls sent together with it cannot both go on.
func (c *call) claim(round int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if round <= c.claimed {
		return false
	}
	c.claimed = round
	c.disarm()
	return true
}

// kill ends the call: the handler's context is cancelled with reason, which ends the
// question it is asking.
func (c *call) kill(r elicitation.Reason) {
	if !c.pull {
		return
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	c.cancel(endReason{r})
}

func (c *call) setHow(o elicitation.Outcome) {
	how := o.State.String()
	if o.Reason != elicitation.None {
		how += ", " + o.Reason.String()
	}
	c.mu.Lock()
	c.how = how
	c.mu.Unlock()
}

// forget drops the call from those a retry may resume, remembering how it ended.
func (el *Elicitor) forget(c *call) {
	c.mu.Lock()
	c.disarm() // a call forgotten already has none armed
	how, handed := c.how, c.handed
	c.mu.Unlock()
	// Remembered only if a requestState names it: else no retry can ask.
	el.calls.end(c, how, handed > 0)
}

// inputKey names the input request of one round, so a response to an earlier round is
// recognised as such.
func inputKey(round int) string { return fmt.Sprintf("elicit-%d", round) }

func stateError(reason, format string, args ...any) *Error {
	return Errorf(CodeInvalidRequestState, reason, format, args...)
}

// resume is the pull era's second and later calls: it checks the requestState, hands the
// response to the question asked, and returns what the call returns next.
func (el *Elicitor) resume(ctx context.Context, req *mcp.CallToolRequest) result {
	fail := func(e *Error) result { return result{err: e} } // the payload, for typed handlers too
	st, err := el.signer.open(req.Params.RequestState)
	if err != nil {
		return fail(stateError("forged", "the requestState was not issued by this server or has been altered"))
	}
	if st.expired(el.clk.Now()) {
		return fail(stateError("expired", "the requestState has expired; call the tool again without it"))
	}
	if st.Owner != el.Owner(req) {
		return fail(stateError("foreign", "the requestState belongs to another client session"))
	}
	const otherCall = "the requestState belongs to another tool call (tool or arguments differ)"
	if st.Tool != req.Params.Name {
		return fail(stateError("foreign", otherCall))
	}
	c, how := el.calls.find(st.ID)
	if c == nil {
		if how == "" && !strings.HasPrefix(st.ID, el.idPrefix) {
			// Signed with this key, started by another Elicitor: its handler, and the
			// answers it had, lived in that process.
			how = "the server that asked it has restarted since, or is another instance"
		}
		if how != "" {
			how = " (" + how + ")"
		}
		return fail(stateError("finished", "that question has already ended%s; call the tool again without requestState", how))
	}
	if !sameArgs(c.args, req.Params.Arguments) {
		return fail(stateError("foreign", otherCall)) // not merely re-encoded: other arguments
	}
	c.mu.Lock()
	cur, pr := c.handed, c.asking
	c.mu.Unlock()
	if cur != st.Round {
		return fail(stateError("stale_round", "the requestState is for question round %d, but round %d is current", st.Round, cur))
	}
	resp, ok := req.Params.InputResponses[inputKey(st.Round)]
	if !ok {
		return fail(stateError("missing_response", "inputResponses has no %q, the response to the current question", inputKey(st.Round)))
	}
	if !c.claim(st.Round) {
		return fail(stateError("used", "this requestState has already been used; a requestState is good for one call"))
	}
	var a elicitation.Answer
	if res, ok := resp.(*mcp.ElicitResult); ok && res.Action == "accept" && isPage(pr) {
		return c.awaitPage(ctx, pr) // the answer comes from the page
	} else if ok {
		a = toAnswer(pr.Round, res, nil)
	} else {
		a = elicitation.Answer{Round: pr.Round, Action: elicitation.Unusable,
			Err: fmt.Errorf("inputResponses[%q] is a %T, not an elicitation result", inputKey(st.Round), resp)}
	}
	if err := pr.Elicitation.Answer(a); errors.Is(err, elicitation.ErrStaleRound) {
		return fail(stateError("stale_round", "that question round is no longer current"))
	}
	// Answered, or the question ended at that instant (its deadline): the handler says
	// what follows.
	return c.next(ctx)
}
