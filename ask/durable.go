package ask

// Durable calls. With a store (Options.Store), a pull-era call is also a record in it, so
// that a retry landing on any node sharing the store finds the call, and a restart loses
// nothing. The call's goroutine (on the node named in the record) stays the one that
// answers it; the record is written through on every step that the client can see:
//
//   - a round handed out: Handed, the prompt's digest, the deadline, and what the round's
//     request got (Outcome), which is also the answer to an identical resend;
//   - a round claimed: Claimed and the response's digest, with the response itself added to
//     the log, compare-and-set, so that of any number of retries carrying one requestState,
//     on any nodes, exactly one goes on. A pure tool's claim (Pure) is not written on its
//     own: it goes with the write that records what the round returns;
//   - the handler's result: the record is ended, and keeps that result for a while.
//
// Every write is a compare-and-set on the revision this node last wrote. One that loses to
// another node's take-over (the record's node or epoch moved) finds the call fenced: it
// stops, writes nothing more, and its goroutine ends without an outcome (durable_takeover.go).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
)

// Error codes of the store.
const (
	// CodeStoreUnavailable: the question store cannot be reached. Nothing already answered is
	// lost: send the same request again later.
	CodeStoreUnavailable = "STORE_UNAVAILABLE"
	// CodeStoreFull: the question store holds as much as it may; it refuses new questions
	// rather than lose open ones.
	CodeStoreFull = "STORE_FULL"
	// CodeStopping: the node serving the request is stopping. The question is not over:
	// send the same request again, and another node (or this one, started again) goes on
	// with it.
	CodeStopping = "SERVER_STOPPING"
	// CodeReplayDiverged: a call taken over by another node was replayed, and its handler
	// asked something other than what the recorded log says it asked: the call ends
	// rather than answer a question from the wrong round.
	CodeReplayDiverged = "REPLAY_DIVERGED"
)

var errStopping = Errorf(CodeStopping, "stopping",
	"this server is stopping; the question is not over: send the same request again")

// errFenced: another node has taken the call over; this node's copy stands down.
var errFenced = errors.New("ask: the call was taken over by another node")

// errAlready: a write found the record already as it would have made it (its own earlier
// write, whose answer was lost, had landed).
var errAlready = errors.New("ask: already written")

// durable is a call's part in the store.
type durable struct {
	wmu    sync.Mutex    // one write at a time
	rec    *store.Record // as last written; nil until the call's first prompt is recorded
	fenced bool          // another node took the call over
	over   bool          // its end is recorded: nothing more is written

	// A call taken over: the rounds answered from its log, and its deadline.
	replay   []store.Round
	replayed int
	until    time.Time
	liveAsk  int       // the number of the question it was asking (1 for the first Ask)
	asked    time.Time // when that question was first asked (store.QuestionCreated)

	asks int // the questions the call has asked (Ask calls), this one included

	// A pure call's claim not yet recorded: the next write records it with what the
	// claimed round returns (deferClaim).
	pend *pendingClaim
	// What OnEnd hears of a question a pure call's pending claim answered: told once that
	// claim is recorded, and never if the call is fenced first (another node took it over,
	// and reports the end it gets).
	endsDue []Ending
	// The first round handed out, written behind its prompt (recordHandBehind) by a write
	// that failed: the next write records it.
	first func(*store.Record) error
	// held: the first round's write behind, held back for Options.Linger (first is the
	// change it writes); nil once it is written, or due.
	held *heldFirst
	// argsSum is argsDigest(args), once computed.
	argsSum string
	// The ends of the call's questions (reported, or due: endsDue) that no write has
	// carried yet: the next write that records an outcome carries them (durable_ends.go).
	carry []Ending
	// carrying: the write being made carries them; noEnds: it goes without them (it was
	// too large with them).
	carrying, noEnds bool
	// The result recordEnd recorded, encoded: what the call's memory keeps for a resend
	// (forget), without encoding it again.
	endSent []byte
	// The record of a hibernating call another node held, as this node woke it (wakePure):
	// that node is told once this node's first write has landed.
	wokeFrom *store.Record
}

// pendingClaim is a round claimed for a response, as the record keeps it: written on its own
// (recordClaim), or with the write that follows it (deferClaim).
type pendingClaim struct {
	round int
	sum   string
	log   store.Round
}

// apply claims p's round in rec.
func (p *pendingClaim) apply(rec *store.Record) error {
	switch {
	case rec.Claimed >= p.round && rec.ClaimSum == p.sum:
		return errAlready // this node's own claim, whose answer was lost
	case rec.Claimed >= p.round:
		return errUsed
	}
	l := p.log
	l.Prompt = rec.Prompt // what the claimed round asked
	rec.Claimed, rec.ClaimSum, rec.Outcome, rec.Ends = p.round, p.sum, nil, nil
	rec.Log = append(rec.Log, l)
	return nil
}

// recorded reports whether c has a record, or one its next write makes (its first round,
// written behind its prompt, whose write failed). It waits for a write in flight.
func (c *call) recorded() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.rec != nil || c.first != nil
}

// wentOut reports whether a round of c has gone to its client. With a store, a round goes
// out with its record (or, written behind, with a state that carries it): c is recorded.
// Without one (a single process's memory), a round goes out as it is handed to the request
// waiting for it: no record ever marks it, and recorded is always false.
func (c *call) wentOut() bool {
	if c.el.store != nil {
		return c.recorded()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handed > 0
}

// isFenced reports whether another node has taken c over.
func (c *call) isFenced() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.fenced
}

// standDown drops this node's copy of a call another node has taken over: its handler's
// context ends, and nothing more is written or sent for it.
func (c *call) standDown() {
	c.wmu.Lock()
	c.fenced = true
	c.unhold()
	c.wmu.Unlock()
	c.kill(elicitation.Operator)
	c.el.forget(c, nil)
}

// pending is what a round returns that could not be recorded, and how to record it.
type pending struct {
	r    result
	save func(context.Context) error
	end  bool
}

// write changes c's record with change and writes it, compare-and-set on the revision c
// last wrote (Create for the first write). On a conflict it re-reads the record: if
// another node has taken it over, c is fenced (errFenced); else change is applied to the
// fresh record and written again. change returning errAlready ends the write as done.
func (c *call) write(ctx context.Context, change func(r *store.Record) error) error {
	c.wmu.Lock()
	err := c.writeLocked(ctx, change)
	var woke *store.Record
	if err == nil {
		woke, c.wokeFrom = c.wokeFrom, nil
	}
	var due []Ending
	switch {
	case c.fenced:
		c.endsDue, c.carry = nil, nil
	case c.pend == nil:
		due, c.endsDue = c.endsDue, nil
	}
	c.wmu.Unlock()
	if woke != nil {
		c.el.woke(*woke)
	}
	for _, e := range due {
		c.el.onEnd(e)
	}
	return err
}

// endDue keeps e, the end of a question that the response of a pure call's pending claim
// ended, until that claim is recorded (write): reports whether it did.
func (c *call) endDue(e Ending) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.pend == nil {
		return false
	}
	c.endsDue = append(c.endsDue, e)
	return true
}

// writeLocked is write, c.wmu held. A first write (a Create) that finds the record there
// already reads it: one this node wrote (a write reported failed that landed all the same)
// is c's; another node's means that node wrote it from the requestState of the first round
// and took the call over (durable_takeover.go): c is fenced.
func (c *call) writeLocked(ctx context.Context, change func(r *store.Record) error) error {
	if c.fenced {
		return errFenced
	}
	ctx = context.WithoutCancel(ctx) // a write half done is worse than one the client did not wait for
	defer func() { c.carrying, c.noEnds = false, false }()
	for try := 0; ; try++ {
		c.carrying = false
		var r store.Record
		if c.rec != nil {
			r = *c.rec
			r.Log = slices.Clip(r.Log)
		} else {
			r = c.newRecord()
			if c.first != nil {
				if err := c.first(&r); err != nil {
					return err
				}
			}
		}
		r.Asleep = false // a write that hands out a round to sleep on says so (handChange)
		claims := false
		if c.pend != nil {
			switch err := c.pend.apply(&r); {
			case err == nil:
				claims = true
			case errors.Is(err, errAlready):
				c.pend = nil // in the record already
			case errors.Is(err, errUsed):
				// Another run claimed the round first with another response. On this node
				// too: a second wake of one asleep record, by a retry that read it before
				// the first wake's write (the same node, the same next epoch, so the re-read
				// below cannot tell that write from this copy's own). This copy is not the
				// call: it stands down as one fenced by another node does, and leaves
				// nothing that would answer the winner's resend "used".
				c.fenced = true
				return errFenced
			default:
				return err
			}
		}
		switch err := change(&r); {
		case errors.Is(err, errAlready) && !claims:
			return nil
		case errors.Is(err, errAlready):
			// Nothing of its own to write; the claim it carries still is.
		case err != nil:
			return err
		}
		keepDeadline(&r)
		var rev uint64
		var err error
		if r.Revision == 0 {
			rev, err = c.el.store.Create(ctx, r)
		} else {
			rev, err = c.el.store.Update(ctx, r)
		}
		if err == nil {
			r.Revision = rev
			c.rec, c.pend, c.first = &r, nil, nil
			c.unhold() // recorded with this write
			if c.carrying || c.noEnds {
				c.carry = nil
			}
			return nil
		}
		if errors.Is(err, store.ErrTooLarge) && c.carrying {
			// The ends' answers make the record too large: it goes without them, and the
			// ends are this node's alone to report.
			c.el.log.Warn("a record is too large to carry its questions' ends; its node alone reports them", "id", c.id)
			c.noEnds = true
			continue
		}
		if errors.Is(err, store.ErrExists) && c.rec == nil && try < 4 {
			cur, gerr := c.el.read(ctx, c.owner, c.id, true)
			if gerr != nil {
				return gerr
			}
			if cur.Node != c.el.node || cur.Epoch != 1 {
				c.fenced = true
				return errFenced
			}
			c.rec, c.first = &cur, nil // in the record already, with what it recorded
			continue
		}
		if !errors.Is(err, store.ErrConflict) || c.rec == nil || try == 4 {
			return err
		}
		cur, err := c.el.read(ctx, c.owner, c.id, true) // what moved it, not a replica's older copy
		if err != nil {
			return err
		}
		if cur.Node != c.el.node || cur.Epoch != c.rec.Epoch || cur.State == stateClosed {
			// Taken over; or, its question ended while it hibernated (its deadline, a
			// cancel), and this node's wake lost to that (durable_hibernate.go).
			c.fenced = true
			return errFenced
		}
		c.rec = &cur
	}
}

// newRecord is c's record before its first write.
func (c *call) newRecord() store.Record {
	return store.Record{ID: c.id, Owner: c.owner, Tool: c.req.Params.Name, ArgsDigest: c.argsDigest(), Era: "pull",
		Node: c.el.node, Epoch: 1, Created: c.el.clk.Now(), State: "active"}
}

// argsDigest is argsDigest(c.args), computed once (c.wmu held, or before c's handler runs).
func (c *call) argsDigest() string {
	if c.argsSum == "" {
		c.argsSum = argsDigest(c.args)
	}
	return c.argsSum
}

// recordHand records round n handed out as r, asking pr. The first round's r is not kept:
// it answers the call that started the question, which carries no requestState, so no
// resend can ask for it again.
func (c *call) recordHand(ctx context.Context, pr elicitation.Prompt, n int, r result) error {
	var out json.RawMessage
	if c.claimed > 0 {
		var err error
		if out, err = encodeResult(r); err != nil {
			return err
		}
	}
	err := c.write(ctx, c.handChange(pr, promptSum(pr), n, out))
	if err == nil && n == 1 {
		// The store takes new records again (an update of another would not show it: a
		// full store refuses new records, not changes): first rounds may go behind again.
		c.el.syncFirst.Store(false)
	}
	return err
}

// handChange is the change to c's record that round n, asking pr (digest sum), makes, out
// what the round's request got (nil for the first).
func (c *call) handChange(pr elicitation.Prompt, sum string, n int, out json.RawMessage) func(*store.Record) error {
	snap, asks, sleeps := pr.Elicitation.Snapshot(), c.asks, c.canSleep(pr)
	return func(rec *store.Record) error {
		rec.Handed, rec.Prompt, rec.Outcome, rec.Ends, rec.Asleep = n, sum, out, c.carried(out), sleeps
		rec.Due, rec.Deadline = snap.Deadline, snap.Deadline.Add(c.el.retention())
		rec.Question, rec.Title, rec.Attempts, rec.Asks, rec.Asked = snap.ID, snap.Title, pr.Attempt, asks, snap.Created
		return nil
	}
}

// behind reports whether c's round n, asking pr, goes out before its record is written
// (Options.RecordBehind), and if so returns what its requestState carries for that, with
// c.wmu held for recordHandBehind (nothing else writes first). Only a call's first round,
// of a replayable call, in form mode (a page round's link lives in the record) and while
// the store takes writes (syncFirst).
func (c *call) behind(pr elicitation.Prompt, n int) *firstRound {
	el := c.el
	if !el.recordBehind || el.store == nil || n != 1 || !c.replayable || isPage(pr) || pr.Attempt != 1 || c.asks != 1 ||
		el.syncFirst.Load() {
		return nil
	}
	c.wmu.Lock()
	args, ok1 := rawDigest(c.argsDigest())
	prompt, ok2 := rawDigest(promptSum(pr))
	if c.rec != nil || c.first != nil || c.fenced || !ok1 || !ok2 {
		c.wmu.Unlock()
		return nil
	}
	f := &firstRound{}
	f.Args, f.Prompt = args, prompt
	due := pr.Elicitation.Snapshot().Deadline
	f.Due = due.UnixMilli()
	f.Until = min(f.Due, el.clk.Now().Add(el.retention()).UnixMilli()) - clockMargin.Milliseconds()
	return f
}

// clockMargin is how far apart the clocks of the nodes sharing a store may be, for a
// requestState that can write its record again (firstRound.Until): the record is kept
// (Record.Keep) this long past the state's last moment, and the state honoured this long
// less than the record is kept for.
const clockMargin = time.Second

// keep is how long a record written for f must be kept at the least (Record.Keep).
func (f *firstRound) keep() time.Time { return time.UnixMilli(f.Until).Add(2 * clockMargin) }

// keepDeadline moves r's Deadline to r.Keep if it is earlier: a node whose retention is
// shorter than the one that asked the question (a restart with other settings) ends it.
func keepDeadline(r *store.Record) {
	if r.Deadline.Before(r.Keep) {
		r.Deadline = r.Keep
	}
}

// recordHandBehind records round 1, asking pr, as recordHand does, but on a goroutine of its
// own: the prompt goes out without waiting for the write, which lands while the client
// asks the person. c.wmu, taken by behind, is held until the write is done, so every later
// write of the call, and every question about its record (recorded, isFenced), waits for
// it: a retry's claim is never written before the round it claims. A write that fails
// loses nothing: the call's next write records the round with its own (first), a node that
// finds no record writes it from the requestState (durable_takeover.go), and until a first round is
// recorded again, the Elicitor records the next calls' first rounds before their prompts
// go out (so a store that fails refuses new questions, rather than ask them).
//
// With Options.Linger the write waits that long first, the call awake: a retry that comes
// meanwhile finds the call as it was (no hibernation, no replay), and the write that records
// what it returns records the round too (first), so that the round costs one write, not two.
func (c *call) recordHandBehind(ctx context.Context, pr elicitation.Prompt, n int, f *firstRound) {
	hand, keep := c.handChange(pr, digestString(f.Prompt), n, nil), f.keep()
	change := func(r *store.Record) error {
		r.Keep = keep
		return hand(r)
	}
	c.el.busy.begin() // ended by firstWritten, or writeHeld
	if d := c.el.linger; d > 0 && !c.el.stopping.Load() {
		c.first = change
		h := &heldFirst{write: func() { c.writeHeld(ctx, pr, n) }}
		c.held = h
		c.el.held.store(c, c)
		h.timer = c.el.clk.AfterFunc(d, h.write)
		c.wmu.Unlock()
		if c.el.stopping.Load() {
			// Close may have gathered the held rounds before this one was added.
			if write := c.hurried(); write != nil {
				write()
			}
		}
		return
	}
	go func() {
		err := c.writeLocked(ctx, change)
		c.firstWritten(pr, n, change, err)
	}()
}

// heldFirst is a call's first round, its write held back (Options.Linger): write writes
// it, when timer fires, or at once if Close stops timer first (Elicitor.hurry).
type heldFirst struct {
	timer *clock.Timer
	write func()
}

// writeHeld writes c's first round, held back for Options.Linger, unless a write since has
// recorded it, or is about to (a pure call's claim waiting for what its round returns), or
// the call has moved or ended.
func (c *call) writeHeld(ctx context.Context, pr elicitation.Prompt, n int) {
	c.wmu.Lock()
	c.held = nil
	c.el.held.drop(c, c)
	change := c.first
	_, ended := pr.Elicitation.Outcome()
	// A pure call's claim waiting for what its round returns is written with it, unless the
	// node is stopping: that write may never come then (the call is left for another node).
	pending := c.pend != nil && !c.el.stopping.Load()
	// A question already ended is not written open and asleep: a write of its end that
	// failed keeps first for the resend that records that end.
	if change == nil || c.rec != nil || pending || ended || c.fenced || c.over {
		c.wmu.Unlock()
		c.el.busy.end()
		return
	}
	c.first = nil // change is the write's own, not applied again as its first
	err := c.writeLocked(ctx, change)
	c.firstWritten(pr, n, change, err)
}

// hurried returns the write of c's held first round, its timer stopped, if it was still to
// come (Close: the node is stopping, and writes it now).
func (c *call) hurried() func() {
	c.wmu.Lock()
	h := c.held
	c.wmu.Unlock()
	if h != nil && h.timer.Stop() {
		return h.write
	}
	return nil
}

// unhold (c.wmu held) drops c's held first round, recorded by another write or never to be
// (the call moved to another node): its timer is stopped, and Close waits for it no more.
func (c *call) unhold() {
	if h := c.held; h != nil {
		c.held = nil
		c.el.held.drop(c, c)
		if h.timer.Stop() {
			c.el.busy.end()
		}
	}
}

// hurry writes every held first round now (el.held), at once, and returns once they are written (their
// calls hibernated), or ctx ends.
func (el *Elicitor) hurry(ctx context.Context) {
	var writing inflight
	for _, c := range el.held.values() {
		if write := c.hurried(); write != nil {
			writing.begin()
			go func() {
				defer writing.end()
				write()
			}()
		}
	}
	select {
	case <-writing.none():
	case <-ctx.Done():
	}
}

// firstWritten ends the write of c's first round behind its prompt (change), which
// returned err: c.wmu, held for it, is released, and the round hibernates if it was recorded
// asleep.
func (c *call) firstWritten(pr elicitation.Prompt, n int, change func(*store.Record) error, err error) {
	defer c.el.busy.end()
	fenced := errors.Is(err, errFenced)
	if err != nil && !fenced {
		// Set before the lock goes: whatever waited for this write sees them.
		c.first = change
		c.el.syncFirst.Store(true)
	}
	c.wmu.Unlock()
	switch {
	case fenced:
		// Another node wrote the record from the requestState and took the call over.
		c.standDown()
	case err != nil:
		c.el.log.Warn("a question's first round could not be recorded; its next step records it", "id", c.id, "error", err.Error())
	default:
		c.sleep(pr, n) // if the round was recorded asleep
	}
}

// newClaim is round claimed for the response resp (digest sum), to be added to the log.
func (c *call) newClaim(pr elicitation.Prompt, round int, sum string, resp mcp.InputResponse) (*pendingClaim, *Error) {
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, stateError("unreadable_response", "inputResponses[%q] does not encode: %v", inputKey(round), err)
	}
	return &pendingClaim{round: round, sum: sum, log: store.Round{Answers: raw, Attempts: pr.Attempt, At: c.el.clk.Now()}}, nil
}

// recordClaim claims round for the response resp (digest sum), adding it to the log.
func (c *call) recordClaim(ctx context.Context, pr elicitation.Prompt, round int, sum string, resp mcp.InputResponse) *Error {
	p, e := c.newClaim(pr, round, sum, resp)
	if e != nil {
		return e
	}
	return storeError(c.write(ctx, p.apply))
}

// deferClaim claims round for the response resp (digest sum) in the call's next write,
// which records what the round returns: a pure call's (see Pure).
func (c *call) deferClaim(pr elicitation.Prompt, round int, sum string, resp mcp.InputResponse) *Error {
	p, e := c.newClaim(pr, round, sum, resp)
	if e != nil {
		return e
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.pend = p
	return nil
}

// retention is how long an ended call's record keeps its result for a late or repeated
// retry: as long as the call's own memory keeps it (see push).
func (el *Elicitor) retention() time.Duration {
	if el.pullIdle > 0 {
		return el.pullIdle
	}
	return el.timeout
}

// recordEnd records the handler's result r: the call has ended. A result too large for a
// record (a file's bytes, say) is not kept: the call is recorded as ended, and a resend is
// told to call again.
func (c *call) recordEnd(ctx context.Context, r result) error {
	out, err := encodeResult(r)
	if err != nil {
		return err
	}
	until := c.el.clk.Now().Add(c.el.retention())
	end := func(out json.RawMessage) error {
		return c.write(ctx, func(rec *store.Record) error {
			rec.State, rec.Outcome, rec.Ends, rec.Deadline = "ended", out, c.carried(out), until
			return nil
		})
	}
	err = end(out)
	if err == nil {
		c.wmu.Lock()
		c.endSent = out
		c.wmu.Unlock()
	}
	if errors.Is(err, store.ErrTooLarge) {
		out, _ = encodeResult(fail(Errorf(CodeFailed, "result_not_kept",
			"the question completed, but its result was too large to keep for a resend; call the tool again without requestState")))
		err = end(out)
	}
	return err
}

// unrecorded is the result of a round whose outcome r could not be recorded (err): r is
// kept, and an identical resend records it again before it gets it. The resends already
// waiting for the claimed round's outcome hear the store error this request hears (they came
// before the write failed, and would otherwise wait for ever: a pure call's claim fails with
// the write of its result). A call fenced stands down; one whose first prompt could not be
// recorded ends (it is a new question the store refused).
func (c *call) unrecorded(r result, save func(context.Context) error, end bool, err error) result {
	failed := fail(storeError(err))
	c.mu.Lock()
	c.unsaved = &pending{r: r, save: save, end: end}
	if c.slot != nil {
		c.slot.fill(failed)
		c.slot = newClaimSlot() // filled by the resend that records r
	}
	c.mu.Unlock()
	switch {
	case errors.Is(err, errFenced):
		c.kill(elicitation.Operator)
		c.el.forget(c, nil)
	case !c.recorded():
		c.kill(elicitation.TransportError)
		c.dropLanded()
	}
	c.el.log.Warn("a question's step could not be recorded", "id", c.id, "error", err.Error())
	return failed
}

// dropLanded deletes c's record if its first write, reported failed, landed all the same
// (its answer was lost): the question it would list was refused. A store that does not
// answer now is asked again, a little later each time, until it does, the record could no
// longer be there, or this node stops (one last try then): a record left asleep would be
// adopted by a survivor once this node is gone, and end at its deadline, telling an end
// for a question no one was asked.
func (c *call) dropLanded() {
	el, owner, id := c.el, c.owner, c.id
	if el.dropLanded(owner, id) {
		return
	}
	until := el.clk.Now().Add(el.timeout + el.retention())
	el.busy.begin()
	go func() {
		defer el.busy.end()
		wait := time.Second
		for el.clk.Now().Before(until) {
			select {
			case <-el.clk.After(wait):
			case <-el.quit:
				el.dropLanded(owner, id)
				return
			}
			if el.dropLanded(owner, id) {
				return
			}
			wait = min(2*wait, 30*time.Second)
		}
	}()
}

// dropLanded deletes owner's record id if no one can answer it (active, and this node's or
// never claimed), and reports whether that is settled: deleted, answered elsewhere, or kept
// from landing. A write reported failed may still
// land later (a proposal JetStream commits once its quorum is back: a 10-minute robustness
// run saw one land after two reads had not found it), so a record not there is kept out by
// an ended one of the same id, which the late write, a create, cannot replace.
func (el *Elicitor) dropLanded(owner, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := el.store.Get(ctx, owner, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		now := el.clk.Now()
		_, err := el.store.Create(ctx, store.Record{ID: id, Owner: owner, Node: el.node, Era: "pull", State: "ended",
			Created: now, Deadline: now.Add(el.timeout + el.retention())})
		return err == nil // ErrExists: it landed meanwhile, and is deleted at the next look
	case err != nil:
		return false
	case r.State != "active" || r.Node != el.node && r.Claimed > 0:
		// Ended, or a round of it claimed: a call someone answers, not the one refused.
		return true
	}
	// Active, this node's or another's: a survivor may have adopted it, taking this node
	// for dead while the write's answer was lost (a 10-minute robustness run saw one cut
	// off from the store so). No round of it was claimed, and no client holds its
	// requestState (the call was refused): no one can answer it.
	err = el.store.Delete(ctx, owner, id, r.Revision)
	return err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict)
}

// retryRecord records what the claimed round returns, which could not be recorded before,
// and returns it.
func (c *call) retryRecord(ctx context.Context, round int) (result, bool) {
	c.mu.Lock()
	p := c.unsaved
	c.mu.Unlock()
	if p == nil {
		return result{}, false
	}
	if err := p.save(ctx); err != nil {
		return fail(storeError(err)), true
	}
	c.mu.Lock()
	if c.unsaved == p {
		c.unsaved = nil
	}
	c.mu.Unlock()
	if p.end {
		c.el.forget(c, &p.r)
	} else {
		c.sleepAgain()
	}
	c.settle(round, p.r)
	return p.r.own(), true
}

// sleepAgain hibernates c, whose round handed out is now recorded after all.
func (c *call) sleepAgain() {
	c.mu.Lock()
	pr, n := c.asking, c.handed
	c.mu.Unlock()
	if pr.Elicitation != nil {
		c.sleep(pr, n)
	}
}

// storeError is the tool error for a failed store step.
func storeError(err error) *Error {
	var e *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, errFenced):
		return stateError("moved", "another node has taken this question over; send the same request again")
	case errors.Is(err, store.ErrNotFound):
		return stateError("finished", "that question has ended, or passed its deadline; call the tool again without requestState")
	case errors.Is(err, store.ErrFull):
		return Errorf(CodeStoreFull, "store_full", "the question store is full; retry later")
	case errors.Is(err, store.ErrTooLarge):
		return Errorf(CodeFailed, "record_too_large", "the question with its answers is too large to keep: %v", err)
	}
	return Errorf(CodeStoreUnavailable, "store_unavailable",
		"the question store cannot be reached; nothing answered is lost: send the same request again later")
}

// wireResult is a result as the store records it and the relay carries it.
type wireResult struct {
	Res     *mcp.CallToolResult `json:"res,omitempty"`
	Out     json.RawMessage     `json:"out,omitempty"`
	Err     *Error              `json:"err,omitempty"`
	Fail    string              `json:"fail,omitempty"` // another error's text
	NotHeld bool                `json:"notHeld,omitempty"`
}

func encodeResult(r result) (json.RawMessage, error) {
	w := wireResult{Res: r.res}
	if r.out != nil {
		b, err := json.Marshal(r.out)
		if err != nil {
			return nil, err
		}
		w.Out = b
	}
	if r.err != nil {
		if !errors.As(r.err, &w.Err) {
			w.Fail = r.err.Error()
		}
	}
	return json.Marshal(w)
}

func decodeResult(b []byte) (result, bool, error) {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return result{}, false, err
	}
	r := result{res: w.Res}
	if w.Out != nil {
		r.out = w.Out
	}
	switch {
	case w.Err != nil:
		r.err = w.Err
	case w.Fail != "":
		r.err = errors.New(w.Fail)
	}
	return r, w.NotHeld, nil
}

// digest is 128 bits of SHA-256 of parts, each ended by a 0 byte, as base64url.
func digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:digestBytes])
}

// rawDigest is the bytes of a digest (digest's form); false if s is not one.
func rawDigest(s string) (b [digestBytes]byte, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != digestBytes {
		return b, false
	}
	copy(b[:], raw)
	return b, true
}

// digestString is the digest whose bytes are b (rawDigest's inverse).
func digestString(b [digestBytes]byte) string { return base64.RawURLEncoding.EncodeToString(b[:]) }

// promptSum is the digest of what a prompt asks: its message and its wire schema.
func promptSum(pr elicitation.Prompt) string {
	return digest([]byte(pr.Message), pr.Form.WireSchema())
}

// sameResponse reports whether a is the response whose digest *bsum is (b's, computed into
// *bsum if it is ""): a retry that brings it again is an identical resend.
func sameResponse(a, b mcp.InputResponse, bsum *string) bool {
	if *bsum == "" {
		*bsum = responseSum(b)
	}
	return responseSum(a) == *bsum
}

// responseSum is the digest of a response to a round.
func responseSum(resp mcp.InputResponse) string {
	b, err := json.Marshal(resp)
	if err != nil {
		return ""
	}
	return digest(b)
}

// argsDigest is the digest of a call's arguments, whatever their key order and spacing: the
// digest of canonicalJSON's form, which every node of a cluster, of any version, computes
// alike. A store's every pull-era call computes it, and canonicalJSON decodes to values and
// encodes again (89 allocations for ask_user's arguments); so where the canonical form of RFC
// 8785 (jsontext's, a quarter of the time, one allocation) is the same bytes, that is used.
// It is, but for what sameAsReencoded rules out.
func argsDigest(args json.RawMessage) string {
	if len(args) > 0 && sameAsReencoded(args) {
		v := jsontext.Value(bytes.Clone(args))
		if v.Canonicalize() == nil && sameAsReencoded(v) {
			return digest(v)
		}
	}
	return digest(canonicalJSON(args))
}

// sameAsReencoded reports whether JSON text v, as given and in canonical form, holds nothing
// that canonicalJSON spells otherwise than RFC 8785: it is ASCII (UTF-16 and UTF-8 order keys
// alike below U+E000, and encoding/json escapes U+2028 and U+2029), with no '<', '>' or '&'
// (encoding/json escapes them), no "-0" (encoding/json keeps a negative zero's sign) and no
// exponent (the two spell some large and small numbers apart). It may say false of text they
// spell alike (a date in a string has "-0"): that costs time, not a wrong digest.
// TestArgsDigestIsCanonicalJSONs and FuzzArgsDigestIsCanonicalJSONs check it.
func sameAsReencoded(v []byte) bool {
	for i, c := range v {
		switch {
		case c >= 0x80, c == '<', c == '>', c == '&':
			return false
		case (c == 'e' || c == 'E') && i > 0 && v[i-1] >= '0' && v[i-1] <= '9':
			return false
		case c == '-' && i+1 < len(v) && v[i+1] == '0':
			return false
		}
	}
	return true
}
