package elicitation

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/internal/stack"
	"github.com/elicitd/elicitd/validator"
)

// Env is what an elicitation needs from whoever starts it. The zero Env runs on the real
// clock with no hooks.
type Env struct {
	// Clock drives the deadline. Tests pass clock.NewMock().
	Clock clock.Clock
	// OnEnd, if set, is called once on the actor's goroutine after the outcome is fixed and
	// before Done is closed, so whoever waits on Done sees its effects. It must not call the
	// elicitation's methods.
	OnEnd func(Outcome)
	// Group, if set, counts the actor goroutine: Add(1) in Start, Done as its last act.
	Group *sync.WaitGroup
}

// Elicitation is one question put to a person, run by its own goroutine (the actor).
//
// The actor alone changes the elicitation. Answer, Cancel and Extend send it a message and
// wait for its reply; Snapshot reads what it last published; Done and Outcome report the end.
// All methods are safe for concurrent use.
//
// # Rules
//
//   - Every prompt is a round, numbered from 1; an answer names the round it answers.
//   - An invalid answer uses an attempt: it earns a re-prompt (a new round and a new
//     attempt), whose message starts with the field errors, while attempts remain; an
//     invalid answer to the last attempt ends the elicitation as Cancelled with reason
//     MaxAttempts and the last errors. Nothing else uses an attempt.
//   - A valid answer is merged into the data so far and goes to the Continuation, which
//     completes the elicitation or asks a follow-up: a new round, not a new attempt.
//   - Spec.MaxRounds bounds the rounds: when a follow-up or a re-prompt would pass it, the
//     elicitation ends as Cancelled with reason TooManyRounds and the data so far.
//   - The outcome is fixed exactly once. After that every Answer, Cancel and Extend returns
//     ErrFinished and changes nothing.
//   - The deadline and an event that arrive together: the actor reads the injected clock as it
//     takes each event. An event taken at or after the deadline finds the elicitation
//     TimedOut, and gets ErrFinished; an answer counts only if the actor takes it strictly
//     before the deadline. Because Answer returns only after the actor has taken the answer,
//     an Answer call that returned nil was counted before the deadline.
type Elicitation struct {
	id          string
	title       string
	tool        string
	created     time.Time
	latest      time.Time // the latest deadline Extend may set
	maxAttempts int
	maxRounds   int
	prompter    Prompter
	cont        Continuation
	reprompt    func([]validator.FieldError, CompiledForm) string
	clk         clock.Clock
	onEnd       func(Outcome)
	group       *sync.WaitGroup

	inbox chan event
	done  chan struct{}

	// Published by the actor for Snapshot; read by anyone.
	status     atomic.Uint64 // state | reason<<8 | attempt<<16 | round<<32
	deadlineNs atomic.Int64
	asking     atomic.Pointer[asked] // the current prompt's round and form

	// Owned by the actor goroutine. outcome may be read by others once done is closed.
	timer    *clock.Timer // fires at ends()
	deadline time.Time
	idle     time.Duration // Spec.Idle
	idleAt   time.Time     // with idle: the unanswered prompt is abandoned then
	step     Step
	round    int            // prompts emitted
	attempt  int            // 1 + invalid answers that earned a re-prompt, once the first prompt is out
	data     map[string]any // the data so far: every valid answer, merged
	outcome  Outcome
}

// asked is a prompt's round and the form it asked, for Answer to check an answer against.
type asked struct {
	round int
	form  CompiledForm
}

type eventKind uint8

const (
	evAnswer eventKind = iota
	evCancel
	evExtend
	evTouch
)

type event struct {
	kind   eventKind
	reason Reason
	extend time.Duration
	answer Answer
	reply  chan reply
}

type reply struct {
	deadline time.Time
	err      error
}

// replies recycles the one-slot channels that carry the actor's replies. A channel goes back
// to the pool only after its single reply has been received, so it is always empty.
var replies = sync.Pool{New: func() any { return make(chan reply, 1) }}

// Start checks spec, starts the actor for it and returns at once. The first prompt is emitted
// from the actor's goroutine; the deadline timer starts now, on env.Clock.
func Start(id string, spec Spec, env Env) (*Elicitation, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	clk := env.Clock
	if clk == nil {
		clk = clock.New()
	}
	now := clk.Now()
	created := now
	if !spec.Created.IsZero() && spec.Created.Before(now) {
		created = spec.Created
	}
	e := &Elicitation{
		id:          id,
		title:       spec.Title,
		tool:        spec.Tool,
		created:     created,
		latest:      created.Add(spec.MaxLifetime),
		maxAttempts: spec.MaxAttempts,
		maxRounds:   spec.MaxRounds,
		prompter:    spec.Prompter,
		cont:        spec.Continue,
		reprompt:    spec.Reprompt,
		clk:         clk,
		onEnd:       env.OnEnd,
		group:       env.Group,
		inbox:       make(chan event),
		done:        make(chan struct{}),
		deadline:    now.Add(spec.Timeout),
		idle:        spec.Idle,
		step:        Step{Message: spec.Message, Form: spec.Form},
	}
	if e.idle > 0 {
		e.idleAt = now.Add(e.idle)
	}
	if !spec.Due.IsZero() && spec.Due.Before(e.deadline) {
		e.deadline = spec.Due
	}
	e.deadlineNs.Store(e.ends().UnixNano())
	e.publish(Pending, None)
	e.asking.Store(&asked{round: 1, form: spec.Form}) // an answer may come before the actor runs
	e.timer = clk.Timer(e.ends().Sub(now))
	if e.group != nil {
		e.group.Add(1)
	}
	go e.run()
	return e, nil
}

// ID returns the id the elicitation was started with.
func (e *Elicitation) ID() string { return e.id }

// Done returns a channel that is closed once the outcome is fixed.
func (e *Elicitation) Done() <-chan struct{} { return e.done }

// Outcome returns the outcome and true once Done is closed; before that, false.
func (e *Elicitation) Outcome() (Outcome, bool) {
	select {
	case <-e.done:
		return e.outcome, true
	default:
		return Outcome{}, false
	}
}

// Wait blocks until the outcome is fixed or ctx ends, whichever is first.
func (e *Elicitation) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-e.done:
		return e.outcome, nil
	case <-ctx.Done():
		return Outcome{}, context.Cause(ctx)
	}
}

// Snapshot returns what the actor last published. It never blocks.
func (e *Elicitation) Snapshot() Snapshot {
	st := e.status.Load()
	return Snapshot{
		ID:          e.id,
		Title:       e.title,
		Tool:        e.tool,
		State:       State(st & 0xff),
		Reason:      Reason(st >> 8 & 0xff),
		Attempt:     int(st >> 16 & 0xffff),
		Round:       int(st >> 32 & 0xffff),
		MaxAttempts: e.maxAttempts,
		MaxRounds:   e.maxRounds,
		Created:     e.created,
		Deadline:    time.Unix(0, e.deadlineNs.Load()),
	}
}

// Answer hands the actor the response to prompt a.Round and waits until it has been taken.
// It returns nil when the answer was counted (it may have earned a re-prompt or a follow-up),
// ErrStaleRound when a.Round is not the current prompt, ErrInvalidEvent for an unknown
// action, and ErrFinished once the elicitation has ended.
//
// An accepted answer is checked against the round's form here, on the caller's goroutine,
// before it is handed over: the actor never waits for a check, so the deadline, a cancel
// or a shutdown that comes meanwhile acts at once (and this call then gets ErrFinished).
func (e *Elicitation) Answer(a Answer) error {
	if a.Action == Accept && len(a.Rejections) == 0 {
		// An answer to another round is not checked: the actor refuses it as stale.
		if cur := e.asking.Load(); cur.round == a.Round {
			if k, ok := cur.form.(Keeper); ok {
				a.data, a.Rejections, a.retry = k.Keep(a.Content)
			} else {
				a.data, a.Rejections = cur.form.Validate(a.Content)
			}
			a.checked = true
		}
	}
	_, err := e.send(context.Background(), event{kind: evAnswer, answer: a})
	return err
}

// Cancel ends the elicitation as Cancelled with reason r (which must not be None) and
// returns once the outcome is fixed, or ErrFinished if it had already ended.
func (e *Elicitation) Cancel(r Reason) error { return e.CancelContext(context.Background(), r) }

// CancelContext is Cancel bounded by ctx: if the actor has not taken the cancel when ctx
// ends (a Prompter that breaks its promise not to block, say), it gives up with ctx's error.
func (e *Elicitation) CancelContext(ctx context.Context, r Reason) error {
	if r == None || int(r) >= NumReasons {
		return fmt.Errorf("%w: cancel needs a reason, got %d", ErrInvalidEvent, r)
	}
	_, err := e.send(ctx, event{kind: evCancel, reason: r})
	return err
}

// Extend moves the deadline d later, but never past start plus the spec's MaxLifetime, and
// returns the new deadline. d must be positive.
func (e *Elicitation) Extend(d time.Duration) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: an extension must be positive, got %s", ErrInvalidEvent, d)
	}
	r, err := e.send(context.Background(), event{kind: evExtend, extend: d})
	return r.deadline, err
}

// Touch restarts the idle expiry (Spec.Idle), as a new prompt does: the client is back and
// waiting on the person (on elicitd's page, say). It returns ErrFinished once the
// elicitation has ended; without an idle expiry it does nothing else.
func (e *Elicitation) Touch() error {
	_, err := e.send(context.Background(), event{kind: evTouch})
	return err
}

// send delivers ev to the actor and waits for its reply. If ctx ends before the actor has
// taken ev, it gives up with ctx's error; once taken, the reply comes at once.
func (e *Elicitation) send(ctx context.Context, ev event) (reply, error) {
	ch := replies.Get().(chan reply)
	ev.reply = ch
	select {
	case e.inbox <- ev:
	case <-e.done:
		replies.Put(ch)
		return reply{}, ErrFinished
	case <-ctx.Done():
		replies.Put(ch)
		return reply{}, ctx.Err()
	}
	r := <-ch
	replies.Put(ch)
	return r, r.err
}

// run is the actor: it alone touches the elicitation's owned fields.
func (e *Elicitation) run() {
	if e.group != nil {
		defer e.group.Done()
	}
	e.attempt = 1
	e.emit(nil, e.created)
	for {
		select {
		case ev := <-e.inbox:
			if e.handle(ev) {
				return
			}
		case <-e.timer.C:
			now := e.clk.Now()
			if now.Before(e.ends()) {
				continue // a fire from before the timer was re-armed (a mock clock's)
			}
			e.expire(now)
			return
		}
	}
}

// handle applies one event, replies to it, and reports whether the elicitation has ended.
func (e *Elicitation) handle(ev event) (ended bool) {
	now := e.clk.Now()
	if !now.Before(e.ends()) {
		e.expire(now)
		ev.reply <- reply{err: ErrFinished}
		return true
	}
	var r reply
	switch ev.kind {
	case evAnswer:
		r.err = e.answer(ev.answer, now)
	case evCancel:
		e.end(Cancelled, ev.reason, now)
	case evExtend:
		r.deadline = e.extend(ev.extend, now)
	case evTouch:
		e.touch(now)
	}
	ended = e.outcome.State.Terminal()
	ev.reply <- r
	return ended
}

func (e *Elicitation) answer(a Answer, now time.Time) error {
	if a.Round != e.round {
		return fmt.Errorf("%w: the answer is for prompt %d, the current prompt is %d", ErrStaleRound, a.Round, e.round)
	}
	switch a.Action {
	case Decline:
		e.end(Cancelled, Declined, now)
	case Cancel:
		e.end(Cancelled, UserCancelled, now)
	case Failed:
		e.outcome.Err = a.Err
		e.end(Cancelled, TransportError, now)
	case Unusable:
		e.outcome.Err = a.Err
		e.end(Cancelled, InvalidResponse, now)
	case Accept:
		if !a.checked && len(a.Rejections) == 0 {
			// Checked against another round's form: the round moved on meanwhile.
			return fmt.Errorf("%w: the answer was checked for prompt %d, the current prompt is %d", ErrStaleRound, a.Round, e.round)
		}
		e.accept(a, now)
	default:
		return fmt.Errorf("%w: unknown answer action %d", ErrInvalidEvent, a.Action)
	}
	return nil
}

// accept takes a checked answer: an invalid one uses an attempt and earns a re-prompt; a
// valid one is merged into the data so far, and the continuation says what follows.
func (e *Elicitation) accept(a Answer, now time.Time) {
	errs := a.Rejections
	e.outcome.Errors = errs
	if len(errs) > 0 {
		switch {
		case e.attempt >= e.maxAttempts:
			e.end(Cancelled, MaxAttempts, now)
		case e.round >= e.maxRounds:
			e.end(Cancelled, TooManyRounds, now)
		default:
			if a.retry != nil {
				e.step.Form = a.retry // the valid answers are kept: ask only for the rest
			}
			e.attempt++
			e.emit(errs, now)
		}
		return
	}
	e.data = merged(e.data, a.data)
	var next Next
	if e.cont != nil {
		next = e.cont(e.data)
	}
	if next.Err != nil {
		e.outcome.Err = next.Err
		e.end(Cancelled, ToolError, now)
		return
	}
	if next.Data != nil {
		e.data = next.Data
	}
	e.outcome.Data, e.outcome.Value = e.data, next.Value
	switch {
	case next.FollowUp == nil:
		e.end(Completed, None, now)
	case e.round >= e.maxRounds:
		e.end(Cancelled, TooManyRounds, now)
	default:
		e.step = *next.FollowUp
		e.emit(nil, now)
	}
}

// merged returns the data so far with a round's valid answer merged in: a new map, so a map
// handed out before (to a continuation, in an outcome) never changes.
func merged(sofar, answer map[string]any) map[string]any {
	if sofar == nil {
		return answer
	}
	out := maps.Clone(sofar)
	maps.Copy(out, answer)
	return out
}

// ends is when the elicitation ends unless answered: its deadline, or the idle expiry if
// that is earlier.
func (e *Elicitation) ends() time.Time {
	if e.idle > 0 && e.idleAt.Before(e.deadline) {
		return e.idleAt
	}
	return e.deadline
}

// expire ends the elicitation at ends(): TimedOut at the deadline, else abandoned.
func (e *Elicitation) expire(now time.Time) {
	if !now.Before(e.deadline) {
		e.end(TimedOut, None, now)
		return
	}
	e.end(Cancelled, Abandoned, now)
}

// rearm publishes ends() and sets the timer to it; now is before the old ends() (handle
// checked), so the timer has not fired, and a real clock's Stop leaves no stale fire.
func (e *Elicitation) rearm(now time.Time) {
	at := e.ends()
	e.deadlineNs.Store(at.UnixNano())
	e.timer.Stop()
	e.timer.Reset(at.Sub(now))
}

// extend moves the deadline, and the idle expiry with it, and returns the new ends(); now is
// before ends().
func (e *Elicitation) extend(d time.Duration, now time.Time) time.Time {
	next := e.deadline.Add(d)
	if next.After(e.latest) {
		next = e.latest
	}
	e.deadline = next
	if e.idle > 0 {
		e.idleAt = e.idleAt.Add(d)
	}
	e.rearm(now)
	return e.ends()
}

// touch restarts the idle expiry, if there is one.
func (e *Elicitation) touch(now time.Time) {
	if e.idle > 0 {
		e.idleAt = now.Add(e.idle)
		e.rearm(now)
	}
}

// emit starts the next round at now: it publishes the new round, restarts the idle expiry
// (the first round's started with the elicitation, in Start), and hands its prompt over.
func (e *Elicitation) emit(errs []validator.FieldError, now time.Time) {
	e.round++
	msg := e.step.Message
	switch {
	case len(errs) == 0:
	case e.reprompt != nil:
		msg = e.reprompt(errs, e.step.Form)
	default:
		msg = validator.JoinMessages(errs) + "\n\n" + msg
	}
	e.asking.Store(&asked{round: e.round, form: e.step.Form})
	if e.round > 1 {
		e.touch(now)
	}
	e.publish(Active, None)
	e.prompter.Prompt(Prompt{
		Elicitation: e,
		Round:       e.round,
		Attempt:     e.attempt,
		MaxAttempts: e.maxAttempts,
		Message:     msg,
		Form:        e.step.Form,
		Errors:      errs,
	})
}

// end fixes the outcome, runs the OnEnd hook and closes done: the one place an elicitation
// reaches a terminal state.
func (e *Elicitation) end(s State, r Reason, now time.Time) {
	// What the end runs (onEnd: the registry's bookkeeping, a log line) takes the goroutine
	// to 16 KiB, deep in those calls; here it is a few frames deep.
	stack.Grow16K()
	e.timer.Stop()
	e.outcome.ID = e.id
	e.outcome.Tool = e.tool
	e.outcome.Title = e.title
	e.outcome.State = s
	e.outcome.Reason = r
	if s != Completed {
		e.outcome.Value = nil // an earlier round's Next.Value: not a result
	}
	e.outcome.Attempts = e.attempt
	e.outcome.Rounds = e.round
	e.outcome.Created = e.created
	e.outcome.Ended = now
	e.publish(s, r)
	if e.onEnd != nil {
		e.onEnd(e.outcome)
	}
	close(e.done)
}

func (e *Elicitation) publish(s State, r Reason) {
	e.status.Store(uint64(s) | uint64(r)<<8 | uint64(e.attempt)<<16 | uint64(e.round)<<32)
}
