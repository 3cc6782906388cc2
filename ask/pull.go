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
	"github.com/elicitd/elicitd/internal/stack"
)

// callKey carries the *call of a handler's context.
type callKey struct{}

// call is one tool call as its client sees it. In the push era it is the one request. In the
// pull era the handler runs on its own goroutine, across the client's retries: each question
// it asks is handed to whichever call is waiting (the first, or a retry that brought the last
// answer), as input requests with a signed requestState naming the call; its result goes to
// the call waiting when it returns. With a store (durable.go) the call is also a record that
// any node can forward a retry by (durable_forward.go) or take the call over from (durable_takeover.go).
type call struct {
	el    *Elicitor
	req   *mcp.CallToolRequest // the request that started it
	owner string
	pull  bool

	// Pull era only.
	id         string
	args       json.RawMessage // the arguments of the call that started it: a retry brings the same
	cancel     context.CancelCauseFunc
	signal     chan struct{} // a new event is queued; capacity 1
	replayable bool          // its handler may be replayed on another node (Replayable)
	pure       bool          // its handler acts on nothing outside its result (Pure)

	mu       sync.Mutex
	queue    []event // prompts and the handler's result, in order
	handed   int     // input requests handed out
	claimed  int     // the latest handed round whose requestState was used
	claimSum string  // the digest of the response that claimed it ("" until needed: sameClaim)
	claimRsp mcp.InputResponse
	slot     *claimSlot // what the claimed round returned, once known: an identical resend gets it
	unsaved  *pending   // what that round returns, not yet recorded in the store (it was unavailable)
	asking   elicitation.Prompt
	idle     *clock.Timer // forgets the call's result if the client does not come back for it
	killed   bool
	killedBy elicitation.Reason
	links    *links // the pages of the question asked now, if it may use them; set by its way
	how      string // how its last question ended
	// sleeping is set once c hibernates (durable_hibernate.go): its handler's end is dropped. It is
	// closed once c's sleeper stands in its place.
	sleeping chan struct{}
	question string // a call taken over: the id of the question it was asking, kept
	// A call whose record was closed (durable_hibernate.go): the question it was asking has ended,
	// and was reported; when the replay reaches it, it is ended again with closeReason.
	closedAt bool
	// heldHere: the question a replay reaches live was asleep on this node, which counts
	// it open already (tally).
	heldHere    bool
	closeReason elicitation.Reason

	durable // its record, with a store
}

// event is a prompt to hand out, or the handler's result (and the error recording it).
type event struct {
	prompt elicitation.Prompt
	end    *result
	saved  error
}

// result is what a handler returned (out only for typed handlers).
type result struct {
	res *mcp.CallToolResult
	out any
	err error
}

// own returns r with a result of its own: the SDK sets fields of a result as it sends it,
// and one result may answer several requests at once (an identical resend, waiting).
func (r result) own() result {
	if r.res != nil {
		res := *r.res
		r.res = &res
	}
	return r
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

// ToolOption is an option of a tool that asks (AddTool, Elicitor.Handler).
type ToolOption func(*toolOptions)

type toolOptions struct{ replayable, pure bool }

func toolOpts(opts []ToolOption) toolOptions {
	var o toolOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Replayable declares that the tool's handler may be replayed: run again from its start on
// another node (or after a restart), each Ask up to the last answered round answered from
// the call's recorded log. It must then ask the same questions given the same arguments
// and answers, and do what must not happen twice only after its last Ask (or idempotently).
// With a store (Options.Store), a replayable tool's 2026-07-28 calls continue on any node
// that shares it; another tool's end with the node that asked them.
func Replayable(o *toolOptions) { o.replayable = true }

// Pure declares that the tool's handler acts on nothing outside its result: two runs that
// get the same answers may both finish, and only one's result is sent. With a store, a
// pure tool's round is then claimed in the same compare-and-set that records what the
// round returns (its next question, or the result), one write instead of two: the answer
// goes to the handler before its claim is recorded, so another run may have taken the
// round meanwhile, and this one's result is then dropped. A round asked on elicitd's page
// is claimed on its own still. A tool that writes, sends or charges anything is not pure.
func Pure(o *toolOptions) { o.pure = true }

// AddTool is mcp.AddTool for a handler that asks: the handler may call Ask and the typed
// forms' Ask with its context, in either era, as straight-line code.
func AddTool[In, Out any](el *Elicitor, s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out], opts ...ToolOption) {
	o := toolOpts(opts)
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		r := el.run(ctx, req, o, func(ctx context.Context) result {
			res, out, err := h(ctx, req, in)
			return result{res, out, err}
		})
		out, ok := r.out.(Out)
		if raw, isRaw := r.out.(json.RawMessage); !ok && isRaw {
			_ = json.Unmarshal(raw, &out) // a result recorded or forwarded: Out as JSON
		}
		return r.res, out, r.err
	})
}

// Handler wraps a raw tool handler that asks, for Server.AddTool. An *Error it returns is
// sent as the error payload.
func (el *Elicitor) Handler(h mcp.ToolHandler, opts ...ToolOption) mcp.ToolHandler {
	o := toolOpts(opts)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := el.run(ctx, req, o, func(ctx context.Context) result {
			res, err := h(ctx, req)
			return result{res: res, err: err}
		})
		var e *Error
		if r.res == nil && errors.As(r.err, &e) {
			if e.Code == CodeInvalidRequestState && e.Reason == reasonForged {
				return nil, e.ProtocolError() // not this server's state: the request is refused
			}
			return e.Result(), nil
		}
		return r.res, r.err
	}
}

// handler starts a tool's handler with the context its Ask calls use.
type handler func(ctx context.Context) result

// run handles one tools/call: push era, the handler inline; pull era, a retry resumes its
// call and a first call starts the handler on its own goroutine.
func (el *Elicitor) run(ctx context.Context, req *mcp.CallToolRequest, o toolOptions, start handler) result {
	ctx, done := el.watch(ctx, req)
	defer done()
	if req.ProtocolVersion() < PullEra {
		c := &call{el: el, req: req, owner: el.Owner(req)}
		// The SDK's goroutine: asking takes it to 16 KiB before it waits, and here it is
		// half as deep as where it would grow.
		stack.Grow16K()
		return start(context.WithValue(ctx, callKey{}, c))
	}
	if el.stopping.Load() && (req.Params.RequestState == "" || el.store != nil) {
		// This node takes no new call, nor takes one over: another node (or this one,
		// started again) will, on the same request sent again. A retry without a store
		// goes on here: its call lived in this process only.
		return fail(errStopping)
	}
	if req.Params.RequestState != "" {
		// The SDK's goroutine: a retry that ends its call keeps the result (endedCall),
		// whose encoding takes it to 16 KiB twice as deep as here.
		stack.Grow16K()
		return el.resume(ctx, req, o, start)
	}
	id := el.idPrefix + strconv.FormatUint(el.callSeq.Add(1), 36)
	if fc, ok := ctx.Value(firstCallKey{}).(*firstCall); ok && el.store != nil {
		id = fc.id
		fc.replayable.Store(o.replayable)
	}
	c := el.newCall(req, el.Owner(req), id, o.replayable)
	c.pure = o.pure
	el.begin(ctx, c, start)
	return c.next(ctx)
}

// newCall returns a pull-era call.
func (el *Elicitor) newCall(req *mcp.CallToolRequest, owner, id string, replayable bool) *call {
	return &call{el: el, req: req, owner: owner, pull: true, id: id, args: slices.Clone(req.Params.Arguments),
		signal: make(chan struct{}, 1), replayable: replayable}
}

// begin makes c live and starts its handler on a goroutine of its own. The handler outlives
// the request: its context is not the request's, and ends when the call does (abandoned,
// cancelled, shut down).
func (el *Elicitor) begin(ctx context.Context, c *call, start handler) {
	hctx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), callKey{}, c))
	c.mu.Lock() // a call taken over may be among the node's calls already, where Close kills it
	c.cancel = cancel
	c.mu.Unlock()
	el.calls.add(c)
	if el.stopping.Load() {
		// Close, which sets stopping before it kills the live calls, may have missed this
		// one: it ends as the calls it killed do.
		c.kill(elicitation.Shutdown)
	}
	el.busy.begin()
	go func() {
		defer el.busy.end()
		// The handler's decoding and asking take it to 8 KiB before it waits.
		stack.Grow8K()
		r := start(hctx)
		cancel(nil)
		if c.asleep() {
			return // its record is the call now; the next round runs the handler again
		}
		if c.leftOpen(r) {
			// What every request waiting for it, and an identical resend, hears: never
			// reason shutdown, which would tell the client its question is over.
			r = fail(errStopping)
		}
		// Recorded as soon as the handler returns, whether or not a request waits for it:
		// a result nobody fetched (its client went away) must not be made again by a
		// replay on the resend.
		c.push(event{end: &r, saved: c.saveEnd(r)})
	}()
}

// Prompt queues a prompt for the call waiting, or the next retry.
func (c *call) Prompt(pr elicitation.Prompt) { c.push(event{prompt: pr}) }

func (c *call) push(ev event) {
	stopped := false // the handler's end is this node stopping, not the question's (end)
	if ev.end != nil {
		_, s := c.endState(*ev.end)
		stopped = s && c.recorded()
	}
	c.mu.Lock()
	c.queue = append(c.queue, ev)
	killed := c.killed
	keep := ev.end != nil && (!killed || ev.saved != nil)
	if keep {
		// Kept for the retry that comes for it, as long as a round waits for one (with no
		// idle expiry, as long as a question may wait): never for ever. A result of a call
		// whose client went away that could not be recorded is kept so too: an identical
		// resend records it, rather than have another node replay the handler.
		if killed {
			r := *ev.end
			c.unsaved = &pending{r: r, save: func(ctx context.Context) error { return c.recordEnd(ctx, r) }, end: true}
		}
		c.arm(cmp.Or(c.el.pullIdle, c.el.timeout), func() { c.el.forget(c, nil) })
	}
	if ev.end != nil && killed && !keep && c.slot != nil {
		if stopped {
			c.slot.fill(result{err: errStopping}) // as the request waiting hears (end)
		} else {
			c.slot.fill(*ev.end) // what the claimed round's identical resend gets
		}
	}
	c.mu.Unlock()
	switch {
	case ev.end != nil && !keep && stopped:
		c.el.forget(c, nil) // its record stays open for a resend elsewhere
	case ev.end != nil && !keep:
		c.el.forget(c, ev.end) // no retry can come for it; a call waiting still gets it
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
			return c.end(*ev.end, ev.saved)
		}
		pr := ev.prompt
		if _, over := pr.Elicitation.Outcome(); over || pr.Round != pr.Elicitation.Snapshot().Round {
			continue // superseded while queued, or ended: the handler says what follows
		}
		if c.closedAt && !c.replaying() {
			continue // the question it reaches has ended (durable_hibernate.go): nothing is handed out
		}
		if c.replaying() {
			if c.pageAgain(pr) {
				return c.hand(ctx, pr)
			}
			if r, stop := c.replayRound(pr); stop {
				return r
			}
			continue
		}
		return c.hand(ctx, pr)
	}
}

// end returns the handler's result r, recorded first with a store, and forgets the call.
func (c *call) end(r result, saved error) result {
	fenced, stopped := c.endState(r)
	if fenced {
		// Whatever this copy ended with (a question it logged as finished, say: a pure
		// call learns of the take-over only from the write of its result) is not the call's.
		c.el.log.Info("dropped a call another node took over", "id", c.id)
		c.el.forget(c, nil)
		return fail(storeError(errFenced))
	}
	if c.recorded() && stopped {
		// This node is stopping, not the question: its record stays as it was, open, for
		// another node (or this one, started again) to take over on the client's retry.
		c.el.forget(c, nil)
		return result{err: errStopping}
	}
	if saved != nil {
		return c.unrecorded(r, func(ctx context.Context) error { return c.recordEnd(ctx, r) }, true, saved)
	}
	c.el.forget(c, &r)
	return r
}

// endState says whether c has been taken over by another node (fenced), and whether its
// question, or the handler's work, was ended because this node is stopping (not by an
// answer, nor by the handler on its own) when it returned r: then the question is not over.
func (c *call) endState(r result) (fenced, stopped bool) {
	c.mu.Lock()
	// Its question ended for the stop; or the stop cut short the handler's work between
	// two questions (a call out to UPS, its context cancelled under it), and it failed.
	cut := c.killed && c.killedBy == elicitation.Shutdown && (r.err != nil || r.res != nil && r.res.IsError)
	stopped = c.el.stopping.Load() && (strings.HasSuffix(c.how, elicitation.Shutdown.String()) || cut)
	c.mu.Unlock()
	return c.isFenced(), stopped
}

// leftOpen reports whether c, whose handler returned r, ended because this node is stopping
// (endState) and may go on elsewhere: it has a record, which another node (or this one,
// started again) takes over on the client's next request, or it has handed out no round,
// and the client sends its first call again. Its requests then hear SERVER_STOPPING. A call
// handed out without a store ends with the process, and is told so.
func (c *call) leftOpen(r result) bool {
	if _, stopped := c.endState(r); !stopped {
		return false
	}
	c.mu.Lock()
	handed := c.handed
	c.mu.Unlock()
	return handed == 0 || c.recorded()
}

// saveEnd records the handler's result r, if c has a record and the call has really ended.
func (c *call) saveEnd(r result) error {
	c.wmu.Lock()
	over := c.over
	c.wmu.Unlock()
	if fenced, stopped := c.endState(r); fenced || stopped || over || !c.recorded() {
		return nil
	}
	// Encoding the record takes the handler's goroutine (begin), here two frames deep, to
	// 16 KiB some twenty frames down.
	stack.Grow16K()
	return c.recordEnd(context.Background(), r)
}

// stateLifetime bounds how long a pull-era requestState is honoured: the longest a
// question may live.
const stateLifetime = elicitation.DefaultMaxLifetime

// hand returns pr as the input requests of a new round, recorded first with a store (or
// as it goes out: recordHandBehind).
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
	behind := c.behind(pr, n)
	token := c.el.signer.sign(requestState{ID: c.id, Owner: c.owner, Tool: c.req.Params.Name, Round: n,
		Expires: c.el.clk.Now().Add(stateLifetime).Unix(), Behind: behind})
	r := result{res: &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputKey(n): params(pr)},
		RequestState:  token,
	}}
	if behind != nil {
		c.recordHandBehind(ctx, pr, n, behind)
		return r
	}
	if c.el.store != nil {
		if err := c.recordHand(ctx, pr, n, r); err != nil {
			return c.unrecorded(r, func(ctx context.Context) error { return c.recordHand(ctx, pr, n, r) }, false, err)
		}
		c.sleep(pr, n) // if the round was recorded asleep
	}
	return r
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

// claim marks the requestState of round as used by the response whose digest is sum,
// reporting false if it already was (or c hibernated): a state is good for one resume, so
// two calls sent together with it cannot both go on. prev undoes it (unclaim).
func (c *call) claim(round int, sum string, resp mcp.InputResponse) (prev int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if round <= c.claimed || c.sleeping != nil {
		// Claimed already; or hibernated since the retry found it awake (its first
		// round's write behind landed meanwhile): its handler is gone, and the record
		// wakes it.
		return 0, false
	}
	prev = c.claimed
	c.claimed, c.claimSum, c.claimRsp, c.slot, c.unsaved = round, sum, resp, newClaimSlot(), nil
	c.disarm()
	return prev, true
}

// claimSlot is what one claim of a round returned, for the identical resends waiting on it.
type claimSlot struct {
	done chan struct{} // closed once sent is set
	sent result
}

func newClaimSlot() *claimSlot { return &claimSlot{done: make(chan struct{})} }

// fill sets what the claim returned (c.mu held), unless it is set already.
func (s *claimSlot) fill(r result) {
	select {
	case <-s.done:
	default:
		s.sent = r.own() // the request that sends r may be sending it now
		close(s.done)
	}
}

// unclaim undoes claim, if round is still the last claimed: the claim could not be recorded
// (e). The resends waiting on it get e too; the next one claims again.
func (c *call) unclaim(round, prev int, e *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed == round {
		c.slot.fill(fail(e))
		c.claimed, c.claimSum, c.claimRsp, c.slot = prev, "", nil, nil
	}
}

// settle records what the claimed round returned, for an identical resend.
func (c *call) settle(round int, r result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed != round || c.slot == nil || c.unsaved != nil {
		return
	}
	c.slot.fill(r)
}

// again is an identical resend of the claimed round: it gets what the first one got, once
// known; what could not be recorded is tried again first. ok is false when the claim was
// undone (unclaim) since the resend saw it: the resend may claim the round itself.
func (c *call) again(ctx context.Context, round int) (r result, ok bool) {
	c.mu.Lock()
	slot, unsaved, undone := c.slot, c.unsaved, c.claimed < round
	c.mu.Unlock()
	if unsaved != nil {
		if r, ok := c.retryRecord(ctx, round); ok {
			return r, true
		}
	}
	switch {
	case slot == nil && undone:
		return result{}, false
	case slot == nil:
		return fail(errUsed), true
	}
	select {
	case <-slot.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return slot.sent.own(), true
	case <-ctx.Done():
		return result{err: ctx.Err()}, true
	}
}

// kill ends the call: the handler's context is cancelled with reason, which ends the
// question it is asking.
func (c *call) kill(r elicitation.Reason) {
	if !c.pull {
		return
	}
	c.mu.Lock()
	if !c.killed {
		c.killed, c.killedBy = true, r
	}
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil { // nil: a take-over whose write failed, before its handler began
		cancel(endReason{r})
	}
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

// forget drops the call from those a retry may resume, remembering how it ended and, if
// sent, what its last claimed round got (an identical resend gets it again).
func (el *Elicitor) forget(c *call, sent *result) {
	c.mu.Lock()
	c.disarm() // a call forgotten already has none armed
	e := endedCall{how: c.how}
	var resp mcp.InputResponse
	if sent != nil {
		e.round, e.sum, resp = c.claimed, c.claimSum, c.claimRsp
	}
	handed := c.handed
	c.mu.Unlock()
	if resp != nil && handed > 0 {
		c.wmu.Lock()
		enc := c.endSent
		c.wmu.Unlock()
		e.keep(resp, *sent, enc)
	}
	// Remembered only if a requestState names it: else no retry can ask.
	el.calls.end(c, e, handed > 0)
}

// inputKey names the input request of one round, so a response to an earlier round is
// recognised as such.
func inputKey(round int) string { return fmt.Sprintf("elicit-%d", round) }

func stateError(reason, format string, args ...any) *Error {
	return Errorf(CodeInvalidRequestState, reason, format, args...)
}

// fail is a result that sends e's payload, for typed handlers too.
func fail(e *Error) result { return result{err: e} }

// reasonForged is INVALID_REQUEST_STATE's reason for a state that fails its integrity check:
// Handler refuses such a request with a JSON-RPC error, not a tool result.
const reasonForged = "forged"

const otherCall = "the requestState belongs to another tool call (tool or arguments differ)"

var errUsed = stateError("used", "this requestState has already been used; a requestState is good for one call")

// resume is the pull era's second and later calls: it checks the requestState, hands the
// response to the question asked, and returns what the call returns next. A call this node
// does not hold is the store's to find (durable.go).
func (el *Elicitor) resume(ctx context.Context, req *mcp.CallToolRequest, o toolOptions, start handler) result {
	owner := el.Owner(req)
	st, e := el.openState(req.Params, owner)
	if e != nil {
		return fail(e)
	}
	resp, has := req.Params.InputResponses[inputKey(st.Round)]
	c, ended := el.calls.find(st.ID)
	if c != nil {
		if r, elsewhere := c.resume(ctx, st, req.Params.Arguments, resp, has); !elsewhere {
			return r
		}
		return el.resumeStored(ctx, owner, st, req, o, start)
	}
	if r, ok := ended.again(st.Round, resp, has); ok {
		return r // an identical resend of the call's last request
	}
	if el.store != nil {
		return el.resumeStored(ctx, owner, st, req, o, start)
	}
	how := ended.how
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

// openState checks a retry's requestState (its MAC, expiry, owner and tool) and returns it.
func (el *Elicitor) openState(p *mcp.CallToolParamsRaw, owner string) (requestState, *Error) {
	st, err := el.signer.open(p.RequestState)
	if err != nil {
		return st, stateError(reasonForged, "the requestState was not issued by this server or has been altered")
	}
	if st.expired(el.clk.Now()) {
		return st, stateError("expired", "the requestState has expired; call the tool again without it")
	}
	if st.Owner != owner {
		return st, stateError("foreign", "the requestState belongs to another client session")
	}
	if st.Tool != p.Name {
		return st, stateError("foreign", otherCall)
	}
	return st, nil
}

// resume hands resp, the response a retry brought to st's round, to the question asked,
// and returns what the call returns next. elsewhere: with a store, this node's copy of the
// call is not the one that decides (another node took it over, and may have handed out
// st's round): the store says what follows.
func (c *call) resume(ctx context.Context, st requestState, args json.RawMessage, resp mcp.InputResponse, has bool) (r result, elsewhere bool) {
	if !sameArgs(c.args, args) {
		return fail(stateError("foreign", otherCall)), false // not merely re-encoded: other arguments
	}
	durable := c.el.store != nil
	if durable && c.fellAsleep() {
		return result{}, true // it hibernated just now: the record wakes it
	}
	sum := ""
	if has && durable {
		sum = responseSum(resp) // the record keeps it, for any node to compare
	}
	c.mu.Lock()
	cur, claimed, pr := c.handed, c.claimed, c.asking
	resend := has && st.Round == claimed && c.claimRsp != nil && sameResponse(resp, c.claimRsp, &c.claimSum)
	c.mu.Unlock()
	switch {
	case durable && (c.isFenced() || st.Round > max(cur, claimed)):
		// A round past this copy's was handed out by the node that took the call over.
		c.standDown()
		return result{}, true
	case resend:
		r, ok := c.again(ctx, st.Round)
		if !ok {
			return c.resume(ctx, st, args, resp, has) // the claim was undone just now: claim again
		}
		if durable && c.isFenced() {
			// Taken over meanwhile (its result, or the one this node kept to record again,
			// lost to the other node's): what the round got is the store's to say.
			c.standDown()
			return result{}, true
		}
		return r, false
	case st.Round <= claimed:
		return fail(errUsed), false
	case cur != st.Round:
		return fail(stateError("stale_round", "the requestState is for question round %d, but round %d is current", st.Round, cur)), false
	case !has:
		return fail(stateError("missing_response", "inputResponses has no %q, the response to the current question", inputKey(st.Round))), false
	}
	prev, ok := c.claim(st.Round, sum, resp)
	if !ok {
		return c.resume(ctx, st, args, resp, has) // another retry claimed it just now
	}
	if c.recorded() && c.pure && !isPage(pr) {
		if e := c.deferClaim(pr, st.Round, sum, resp); e != nil {
			c.unclaim(st.Round, prev, e)
			return fail(e), false
		}
	} else if c.recorded() {
		if e := c.recordClaim(ctx, pr, st.Round, sum, resp); e != nil {
			c.unclaim(st.Round, prev, e)
			if c.isFenced() {
				return result{}, true
			}
			return fail(e), false
		}
	}
	r = c.answer(ctx, pr, st.Round, resp)
	if c.isFenced() {
		// Taken over before what the round returns could be recorded (a pure call's
		// claim with it; another's claim was, and an identical resend elsewhere took the
		// call over on it): this run's result is dropped, and the store says what follows.
		return result{}, true
	}
	if ctx.Err() == nil {
		// Not when this request's client went away: the round's real outcome, which the
		// call's end brings, is what a resend gets.
		c.settle(st.Round, r)
	}
	return r, false
}

// answer hands resp to pr's question and returns what follows.
func (c *call) answer(ctx context.Context, pr elicitation.Prompt, round int, resp mcp.InputResponse) result {
	var a elicitation.Answer
	if res, ok := resp.(*mcp.ElicitResult); ok && res.Action == "accept" && isPage(pr) {
		return c.awaitPage(ctx, pr) // the answer comes from the page
	} else if ok {
		a = toAnswer(pr.Round, res, nil)
	} else {
		a = elicitation.Answer{Round: pr.Round, Action: elicitation.Unusable,
			Err: fmt.Errorf("inputResponses[%q] is a %T, not an elicitation result", inputKey(round), resp)}
	}
	if err := pr.Elicitation.Answer(a); errors.Is(err, elicitation.ErrStaleRound) {
		return fail(stateError("stale_round", "that question round is no longer current"))
	}
	// Answered, or the question ended at that instant (its deadline): the handler says
	// what follows.
	return c.next(ctx)
}
