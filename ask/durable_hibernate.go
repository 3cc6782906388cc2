package ask

// Hibernation. A pull-era question spends nearly all its life waiting for a person, between
// two of its client's requests. With a store, a replayable tool's call does not wait as a
// Go stack: once a round is handed out and its record written (Record.Asleep), the call
// hibernates, as an Erlang process does with erlang:hibernate/3: the question's actor is
// ended without an outcome, the handler's context is cancelled so that its Ask returns
// and its goroutine ends, and what stays in the process is a sleeper, the question's
// registry entry (listed, cancelled and extended as the actor was) with its deadline in
// the node's timer heap (package timers: one clock timer for them all). The record is the
// question's state.
//
// The next round wakes it on whichever node the client's retry reaches: the take-over path
// (durable_takeover.go) runs the handler again, each earlier round answered from the record's log,
// in one compare-and-set that also claims the retry's round; no forwarding to the node
// that asked it. The woken question keeps its id. The node that held the sleeper drops it
// (told over the relay when another node woke it). A deadline reached while asleep is
// recorded by the sleeper's timer, on time, and reported (OnEnd, the webhook) then; a
// cancel too. The record is then "closed": the question has ended, and the call's result,
// the tool's own (its handler deciding what a timeout or a cancel returns), is made when
// the client comes back: the replay resumes the question already ended (closeOut). A question that cannot hibernate (a push-era session, a tool that is not
// replayable, a round asked on elicitd's page, no store) keeps its goroutines between
// rounds, as before.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/timers"
)

// errHibernated is what Ask returns to a handler whose call hibernates: the handler's
// goroutine is to end; whatever it returns is dropped.
var errHibernated = Errorf(CodeFailed, "hibernated", "ask: the call hibernates between rounds; its handler is run again when the next round comes")

// canSleep reports whether c, which hands out pr, hibernates once the round is recorded.
func (c *call) canSleep(pr elicitation.Prompt) bool {
	return c.el.hibernate && c.pull && c.replayable && c.el.store != nil && c.links == nil && !isPage(pr)
}

// asleep reports whether c hibernates (sleep): its handler's end is not the call's.
func (c *call) asleep() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleeping != nil
}

// fellAsleep reports whether c hibernates, once it has finished falling asleep: its sleeper
// holds its place here (a retry on this node wakes it from its record), and the
// node's calls hold c no more. A retry that found c awake a moment before it slept (its
// first round's write behind just landed) would otherwise find the call in neither place.
func (c *call) fellAsleep() bool {
	c.mu.Lock()
	sleeping := c.sleeping
	c.mu.Unlock()
	if sleeping != nil {
		<-sleeping
	}
	return sleeping != nil
}

// sleep hibernates c after round n, asking pr, was handed out and recorded asleep (the
// record's Asleep, set by canSleep when the round was written: nothing else asks canSleep
// again); not if a retry has claimed the round already, or the call has ended or moved
// meanwhile.
func (c *call) sleep(pr elicitation.Prompt, n int) {
	el := c.el
	c.wmu.Lock()
	if c.rec == nil || !c.rec.Asleep || c.fenced || c.over || c.pend != nil {
		c.wmu.Unlock()
		return
	}
	rec := *c.rec
	c.wmu.Unlock()
	e := pr.Elicitation
	snap := e.Snapshot()
	s := newSleeper(el, rec, snap)
	s.idle = el.pullIdle > 0 && !snap.Deadline.Before(el.clk.Now().Add(el.pullIdle-time.Second))
	c.mu.Lock()
	if c.killed || c.sleeping != nil || c.claimed >= n || c.handed != n || !el.reg.Hibernate(e, s) {
		c.mu.Unlock()
		return
	}
	slept := make(chan struct{})
	c.sleeping = slept
	c.disarm()
	c.mu.Unlock()
	el.holdSleeper(s)
	// From here a retry finds no call here, and takes the record over (wakes it).
	el.calls.end(c, endedCall{}, false)
	if sleepHook != nil {
		sleepHook(e.ID())
	}
	// Its end is not the question's: s takes its place. Unless something else ended it
	// first, from the registry's Hibernate on (a cancel, client_gone): s ends so then (below).
	ended := errors.Is(e.Cancel(elicitation.Operator), elicitation.ErrFinished)
	<-e.Done()
	s.arm(snap.Deadline) // a deadline that passed meanwhile: at once
	el.tally.slept.Add(1)
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(errHibernated) // Ask returns, and the handler's goroutine ends
	}
	close(slept)
	// Not when it was this node stopping (Close cancels the actors): a hibernating question
	// is left open then, its record for another node, as those already asleep are.
	if o, _ := e.Outcome(); ended && o.State == elicitation.Cancelled && !el.stopping.Load() {
		if err := s.Cancel(o.Reason); err != nil {
			el.log.Warn("a question cancelled as it fell asleep could not be closed; it ends at its deadline", "id", snap.ID, "error", err.Error())
		}
	}
}

// sleepHook, when set (by tests), runs as a call falls asleep: its sleeper is in the
// registry, and its actor has not ended yet.
var sleepHook func(questionID string)

// sleeper is a hibernating question in its node's registry: enough to list it, and its
// deadline's timer. Everything else is its record, in the store. It is what an open
// question costs a node (BenchmarkLiveQuestions, BenchmarkWaitingQuestions), so it keeps
// only what the registry lists of it (Snapshot) and its epoch.
type sleeper struct {
	el    *Elicitor
	call  string // the call's id: its record's
	owner string
	// What the record does not say of the question: its round (the record's Handed counts
	// the call's rounds) and its limits.
	round                  int32
	maxAttempts, maxRounds int32
	idle                   bool // its deadline is Options.PullIdle's expiry: it ends abandoned

	mu    sync.Mutex
	timer *timers.Timer[*sleeper] // in el.deadlines
	// What the registry lists of the question, from its record as this node last wrote it,
	// and the epoch s sleeps at: a record at another was woken or ended. Nothing else of
	// the record: a wake reads it from the store (it is what a waiting question costs a
	// node, and the record is most of it).
	question, title, tool string
	attempts              int32
	epoch                 uint64
	created, due          time.Time
}

// keep takes from rec, just written, what s keeps of its record (s.mu held).
func (s *sleeper) keep(rec store.Record) {
	s.question, s.title, s.tool = rec.Question, rec.Title, rec.Tool
	s.attempts = int32(min(rec.Attempts, math.MaxInt32))
	s.epoch, s.created, s.due = rec.Epoch, store.QuestionCreated(rec), rec.Due
}

var _ registry.Member = (*sleeper)(nil)

// newSleeper is the sleeper of the question snap shows, asleep in rec.
func newSleeper(el *Elicitor, rec store.Record, snap elicitation.Snapshot) *sleeper {
	s := &sleeper{el: el, call: rec.ID, owner: rec.Owner, round: int32(min(snap.Round, math.MaxInt32)),
		maxAttempts: int32(min(snap.MaxAttempts, math.MaxInt32)), maxRounds: int32(min(snap.MaxRounds, math.MaxInt32))}
	s.keep(rec)
	return s
}

func (s *sleeper) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.question
}

// Snapshot is the question as it went to sleep, with its deadline as extended since (its
// record's Due).
func (s *sleeper) Snapshot() elicitation.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

// snapshot is Snapshot, with s.mu held.
func (s *sleeper) snapshot() elicitation.Snapshot {
	return elicitation.Snapshot{ID: s.question, Title: s.title, Tool: s.tool, State: elicitation.Active,
		Round: int(s.round), Attempt: int(s.attempts), MaxAttempts: int(s.maxAttempts), MaxRounds: int(s.maxRounds),
		Created: s.created, Deadline: s.due}
}

// arm sets the timer that ends the question at at.
func (s *sleeper) arm(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		s.timer = s.el.deadlines.Start(s, at)
	} else {
		s.timer.Reset(at)
	}
}

// Release stops the timer: the registry dropped s (its node stops; the record stays for
// another node).
func (s *sleeper) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}

// expire ends the question at its deadline: timed out, or abandoned (Options.PullIdle).
// Should the store not answer, it tries again a little later.
func (s *sleeper) expire() {
	el := s.el
	if el.stopping.Load() {
		return
	}
	el.busy.begin()
	defer el.busy.end()
	state, reason := elicitation.TimedOut, elicitation.None
	if s.idle {
		state, reason = elicitation.Cancelled, elicitation.Abandoned
	}
	err := s.end(state, reason)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeStoreUnavailable {
		s.arm(el.clk.Now().Add(time.Second))
	}
}

// Cancel ends the question with reason, in its record. registry.ErrNotFound: it was woken
// meanwhile (on another node, say), where the cancel is to go.
func (s *sleeper) Cancel(reason elicitation.Reason) error {
	return s.end(elicitation.Cancelled, reason)
}

// moved reports whether rec is no longer the record s sleeps in (at epoch).
func (s *sleeper) moved(rec store.Record, epoch uint64) bool {
	return rec.State != "active" || !rec.Asleep || rec.Node != s.el.node || rec.Epoch != epoch || rec.Question != s.ID()
}

// change applies f to s's record, compare-and-set with the next epoch (so that a node
// waking the question meanwhile loses, or wins and f's write fails). A record that moved
// on drops s, with registry.ErrNotFound.
func (s *sleeper) change(f func(rec store.Record) (store.Record, error)) (store.Record, error) {
	el := s.el
	ctx := context.Background()
	latest := false
	for range 5 {
		s.mu.Lock()
		epoch := s.epoch
		s.mu.Unlock()
		rec, err := el.read(ctx, s.owner, s.call, latest)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return rec, storeError(err)
		}
		// This node's write at the next epoch: one of s's own, whose answer was lost?
		ours := err == nil && rec.Node == el.node && rec.Epoch == epoch+1
		if ours && rec.State == stateClosed {
			return rec, nil // its own write, whose answer was lost
		}
		if ours && rec.State == "active" && rec.Asleep && rec.Question == s.ID() && el.asleep.has(s.call, s) {
			// Its own write that landed though its answer was lost (an extend that failed
			// for its caller): s sleeps in it. Only a sleeper this node still holds writes
			// asleep at the next epoch; a wake here writes awake.
			s.mu.Lock()
			s.keep(rec)
			s.mu.Unlock()
			epoch = rec.Epoch
		}
		if err != nil || s.moved(rec, epoch) {
			if !latest {
				latest = true // a replica behind the write that put it to sleep?
				continue
			}
			if s.drop(nil) {
				el.tally.moved.Add(1) // woken or taken over elsewhere
			}
			return rec, registry.ErrNotFound
		}
		next, err := f(rec)
		if err != nil {
			return rec, err
		}
		next.Node, next.Epoch, next.Asleep = el.node, rec.Epoch+1, next.State == "active"
		keepDeadline(&next)
		rev, err := el.store.Update(ctx, next)
		if errors.Is(err, store.ErrConflict) {
			latest = true
			continue
		}
		if err != nil {
			return rec, storeError(err)
		}
		next.Revision = rev
		s.mu.Lock()
		s.keep(next)
		s.mu.Unlock()
		return next, nil
	}
	return store.Record{}, Errorf(CodeStoreUnavailable, "contended", "the question is changing too fast; retry")
}

// end ends the question in its record with state and reason (closed: the client's next
// request gets the tool's result for it), and reports it: the registry counts it, OnEnd
// hears it.
func (s *sleeper) end(state elicitation.State, reason elicitation.Reason) error {
	el := s.el
	now := el.clk.Now()
	rec, err := s.change(func(rec store.Record) (store.Record, error) {
		rec.State, rec.Reason = stateClosed, closedReason(state, reason)
		rec.Deadline = now.Add(el.retention()) // for the client's late request
		if state == elicitation.TimedOut && rec.Due.After(now) {
			rec.Due = now
		}
		return rec, nil
	})
	if err != nil {
		return err
	}
	created := store.QuestionCreated(rec)
	end := recordEnding(rec, state, reason, created, now)
	o := elicitation.Outcome{ID: rec.Question, Title: rec.Title, Tool: rec.Tool, State: state, Reason: reason,
		Attempts: rec.Attempts, Rounds: rec.Handed, Created: created, Ended: now}
	if s.drop(&o) {
		el.tally.end(rec.Tool, true, o)
	}
	if el.onEnd != nil {
		el.onEnd(end)
	}
	return nil
}

// holdSleeper puts s, just registered, among this node's sleepers (those Close leaves for
// another node); drop undoes it.
func (el *Elicitor) holdSleeper(s *sleeper) {
	el.asleep.store(s.call, s)
}

// index is a map under a mutex: the sleepers a node holds by call id (rather than a
// sync.Map, whose trie nodes cost an open question some 120 bytes more:
// BenchmarkLiveQuestions), and the calls whose first round is held back.
type index[K comparable, V comparable] struct {
	mu sync.Mutex
	m  map[K]V
}

func (x *index[K, V]) store(k K, v V) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[K]V{}
	}
	x.m[k] = v
}

// len is how many entries there are.
func (x *index[K, V]) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.m)
}

// has reports whether v is k's value.
func (x *index[K, V]) has(k K, v V) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.m[k] == v
}

// drop removes k, if v is still its value, and reports whether it did.
func (x *index[K, V]) drop(k K, v V) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m[k] != v {
		return false
	}
	delete(x.m, k)
	return true
}

// values are the values there are now.
func (x *index[K, V]) values() []V {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]V, 0, len(x.m))
	for _, v := range x.m {
		out = append(out, v)
	}
	return out
}

// drop takes s out of the registry (with o: its question ended so) and stops its timer. It
// reports whether s was still this node's sleeper: of two that drop it at once (its timer,
// a wake), one counts what became of its question.
func (s *sleeper) drop(o *elicitation.Outcome) bool {
	s.Release()
	held := s.el.asleep.drop(s.call, s)
	s.el.reg.Drop(s, o)
	return held
}

// Extend moves the question's deadline d later, within its lifetime, in its record.
func (s *sleeper) Extend(d time.Duration) (time.Time, error) {
	el := s.el
	rec, err := s.change(func(rec store.Record) (store.Record, error) {
		if !el.extendDue(&rec, store.QuestionCreated(rec), d) {
			return rec, elicitation.ErrFinished
		}
		return rec, nil
	})
	if err != nil {
		return time.Time{}, err
	}
	s.arm(rec.Due)
	return rec.Due, nil
}

// closedOutcome is how the question of c, a call whose record was closed (closeOut), ended:
// cancelled for c.closeReason, or timed out.
func (c *call) closedOutcome(spec elicitation.Spec) elicitation.Outcome {
	o := elicitation.Outcome{ID: c.question, Title: spec.Title, Tool: spec.Tool, State: elicitation.Cancelled, Reason: c.closeReason,
		Ended: c.el.clk.Now()}
	if c.closeReason == elicitation.None {
		o.State = elicitation.TimedOut
	}
	c.wmu.Lock()
	if c.rec != nil {
		o.Attempts, o.Rounds, o.Created = c.rec.Attempts, c.rec.Handed, store.QuestionCreated(*c.rec)
	}
	c.wmu.Unlock()
	return o
}

// stateClosed is the state of a record whose question ended while it hibernated (its deadline,
// a cancel): reported already, its call's result still to be made (closeOut). Record.Reason
// says how: closedReason.
const stateClosed = "closed"

// closedReason is how a question that ended with state and reason is written in a closed
// record's Reason: "timeout", or the cancel's reason.
func closedReason(state elicitation.State, reason elicitation.Reason) string {
	if state == elicitation.TimedOut {
		return "timeout"
	}
	return reason.String()
}

// endRecord is rec ended with state and reason by this node (the node that held it is gone), and
// the end to report: a retry for its round gets the outcome, on any node.
func (el *Elicitor) endRecord(rec store.Record, state elicitation.State, reason elicitation.Reason) (store.Record, Ending, error) {
	next := rec
	next.Node, next.Epoch, next.Asleep = el.node, rec.Epoch+1, false
	res, err := encodeResult(fail(OutcomeError(elicitation.Outcome{State: state, Reason: reason})))
	if err != nil {
		return rec, Ending{}, err
	}
	now := el.clk.Now()
	end := recordEnding(rec, state, reason, store.QuestionCreated(rec), now)
	ends, err := encodeEnds([]Ending{end})
	if err != nil {
		return rec, Ending{}, err
	}
	next.State, next.Outcome, next.Ends, next.Deadline = "ended", res, ends, now.Add(el.retention())
	keepDeadline(&next)
	return next, end, nil
}

// recordEnding is the end of the question rec asks, which ended with state and reason at
// ended, as a node that holds only its record reports it (the key a node running the call
// would give it: reportEnd).
func recordEnding(rec store.Record, state elicitation.State, reason elicitation.Reason, created, ended time.Time) Ending {
	return Ending{QuestionID: rec.Question, Key: rec.ID + "_q" + strconv.Itoa(max(rec.Asks, 1)), Tool: rec.Tool,
		Owner: store.OwnerDigest(rec.Owner), State: state, Reason: reason,
		Attempts: rec.Attempts, Created: created, Ended: ended}
}

// woke drops the sleeper of rec, a record that was asleep and that this node has just
// taken over (a retry woke it): here, or, on the node that held it, over the relay.
// It reports whether this node held the question asleep (and so counts it open already).
func (el *Elicitor) woke(rec store.Record) bool {
	if rec.Node == el.node {
		return el.dropSleeper(rec.Owner, rec.Question, rec.ID)
	}
	if el.relay == nil {
		return false
	}
	msg, err := json.Marshal(forwarded{Op: "woke", Owner: rec.Owner, ID: rec.Question, Call: rec.ID})
	if err != nil {
		return false
	}
	// Best effort, either way: a sleeper whose notice is lost finds its record moved when
	// its timer fires, and drops itself then. A notice is one message, with no answer.
	if n, ok := el.relay.(store.Notifier); ok {
		_ = n.Notify(rec.Node, msg)
		return false
	}
	el.busy.begin()
	go func() {
		defer el.busy.end()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = el.relay.Send(ctx, rec.Node, msg)
	}()
	return false
}

// dropSleeper drops owner's sleeper of question id, if it sleeps for call.
func (el *Elicitor) dropSleeper(owner, id, call string) bool {
	m, err := el.reg.Member(owner, id)
	if err != nil {
		return false
	}
	s, ok := m.(*sleeper)
	if !ok || s.call != call {
		return false
	}
	return s.drop(nil)
}

// closeOut answers a request for a call whose record is closed (its question ended while it
// hibernated): this node takes the record (the next epoch) and replays the handler, whose
// question ends again as it did (closeReason; a timeout at once, its deadline past),
// without being reported again; the handler's result is recorded and returned.
func (el *Elicitor) closeOut(ctx context.Context, rec store.Record, st requestState, req *mcp.CallToolRequest, replayable bool, start handler) (result, error) {
	// None for a timeout ("timeout" names no reason): its deadline has passed, it times out.
	state, reason := elicitation.Cancelled, parseReason(rec.Reason)
	if reason == elicitation.None {
		state = elicitation.TimedOut
	}
	if !replayable {
		return fail(OutcomeError(elicitation.Outcome{State: state, Reason: reason})), nil
	}
	next := rec
	next.Node, next.Epoch, next.Asleep = el.node, rec.Epoch+1, false
	c := el.replayCall(req, rec, &next)
	c.closedAt, c.closeReason = true, reason
	c.claimed, c.claimSum = rec.Claimed, rec.ClaimSum
	resp, has := req.Params.InputResponses[inputKey(st.Round)]
	if r, held, err := el.holdReplay(ctx, c, st, req, resp, has); held {
		return r, err
	}
	rev, err := el.store.Update(context.WithoutCancel(ctx), next)
	if err != nil {
		c.dropTakeOver()
		return result{}, err
	}
	c.rec.Revision = rev
	el.begin(ctx, c, start)
	return c.next(ctx), nil
}

// wakePure wakes c, a pure tool's hibernating call, for the retry that claims round st.Round
// (c holds the claim, and its replay the log with it): with no write of its own first. The
// claim and this node's epoch ride with the write that records what the round returns (the
// next question, or the result): one compare-and-set a round, as for a pure call awake. If
// another request wakes the call first, on another node, that write fails and this run's
// result is dropped; the store says what the retry gets.
func (el *Elicitor) wakePure(ctx context.Context, c *call, rec store.Record, st requestState, start handler) (result, error) {
	base := rec
	base.Node, base.Epoch, base.Asleep = el.node, rec.Epoch+1, false
	claim := c.replay[len(c.replay)-1]
	claim.Prompt, claim.Attempts = "", rec.Attempts // set by apply, from the record
	c.rec = &base
	c.pend = &pendingClaim{round: st.Round, sum: c.claimSum, log: claim}
	if rec.Node == el.node {
		c.heldHere = el.dropSleeper(rec.Owner, rec.Question, rec.ID) // before its question is asked again, under its id
	} else {
		c.wokeFrom = &rec // told once this node's write has landed
	}
	el.begin(ctx, c, start)
	r := c.next(ctx)
	if c.isFenced() {
		return result{}, fmt.Errorf("%w: woken elsewhere first", store.ErrConflict) // look again
	}
	c.settle(st.Round, r)
	return r, nil
}

// adoptAsleep takes over the timers of the questions that dead, a node that is gone, held
// asleep: each record is made this node's (the next epoch, still asleep), and a sleeper
// here ends it at its deadline, or at once if that has passed. Called by the survivor that
// swept dead's roster (durable_roster.go); it reads the whole store once. It reports whether it
// adopted them all: not when the store failed it, or this node began to stop.
func (el *Elicitor) adoptAsleep(ctx context.Context, dead string) bool {
	sc, ok := el.store.(store.Scanner)
	if !ok || !el.hibernate {
		return true
	}
	recs, err := sc.All(ctx)
	if err != nil {
		el.log.Warn("cannot read the questions a node that is gone held asleep; the next sweep tries again", "node", dead, "error", err.Error())
		return false
	}
	n, all := 0, true
	for _, rec := range recs {
		if rec.Era != "pull" || rec.State != "active" || !rec.Asleep || rec.Node != dead {
			continue
		}
		next := rec
		next.Node, next.Epoch = el.node, rec.Epoch+1
		s := newSleeper(el, rec, elicitation.Snapshot{Round: rec.Handed, MaxAttempts: el.maxAttempts, MaxRounds: el.maxRounds})
		// Held here before the record says so: a record made this node's that no sleeper
		// here held would wait for a retry to end it, not for its deadline.
		if el.reg.Adopt(rec.Owner, s) != nil {
			all = all && !el.stopping.Load()
			continue // this node is stopping, or holds the question already
		}
		el.holdSleeper(s)
		_, err := el.store.Update(ctx, next)
		if err != nil {
			s.drop(nil) // woken meanwhile, or the store is away (a retry still wakes it)
			all = all && (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound))
			continue
		}
		s.mu.Lock()
		s.keep(next)
		s.mu.Unlock()
		s.arm(rec.Due)
		el.tally.start(rec.Tool, true) // open here from now on
		n++
	}
	if n > 0 {
		el.log.Info("took over the questions a node that is gone held asleep", "node", dead, "questions", n)
	}
	return all && ctx.Err() == nil && !el.stopping.Load()
}
