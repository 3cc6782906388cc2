package elicitation_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/validator"
)

type fixture struct {
	clk     *clock.Mock
	form    *elicitationtest.NameForm
	prompts elicitationtest.Prompts
	ends    atomic.Int64
}

func newFixture() *fixture {
	return &fixture{clk: clock.NewMock(), form: &elicitationtest.NameForm{}, prompts: elicitationtest.NewPrompts(64)}
}

func (f *fixture) spec() elicitation.Spec {
	return elicitation.Spec{Title: "Your name", Tool: "ask_user", Message: "What is your name?", Form: f.form, Prompter: f.prompts}
}

func (f *fixture) start(t *testing.T, spec elicitation.Spec) *elicitation.Elicitation {
	t.Helper()
	e, err := elicitation.Start("e1", spec, elicitation.Env{Clock: f.clk, OnEnd: func(elicitation.Outcome) { f.ends.Add(1) }})
	require.NoError(t, err)
	return e
}

// askedForAMinute starts an elicitation with a one-minute timeout and takes its first prompt.
func (f *fixture) askedForAMinute(t *testing.T) *elicitation.Elicitation {
	t.Helper()
	spec := f.spec()
	spec.Timeout = time.Minute
	e := f.start(t, spec)
	f.prompts.Next(t)
	return e
}

func TestStateAndReasonNames(t *testing.T) {
	assert.Equal(t, "pending", elicitation.Pending.String())
	assert.Equal(t, "active", elicitation.Active.String())
	assert.Equal(t, "completed", elicitation.Completed.String())
	assert.Equal(t, "cancelled", elicitation.Cancelled.String())
	assert.Equal(t, "timeout", elicitation.TimedOut.String())
	assert.Equal(t, "unknown", elicitation.State(99).String())
	for s := range elicitation.NumStates {
		st := elicitation.State(s)
		assert.Equal(t, st == elicitation.Completed || st == elicitation.Cancelled || st == elicitation.TimedOut, st.Terminal(), st.String())
	}
	seen := map[string]bool{}
	for r := 1; r < elicitation.NumReasons; r++ {
		name := elicitation.Reason(r).String()
		assert.NotEmpty(t, name)
		assert.False(t, seen[name], "reason name %q used twice", name)
		seen[name] = true
	}
	assert.Equal(t, "client_gone", elicitation.ClientGone.String())
	assert.Equal(t, "", elicitation.None.String())
	assert.Equal(t, "cancel", elicitation.Cancel.String())
}

func TestStartRejectsBadSpec(t *testing.T) {
	f := newFixture()
	cases := []struct {
		field string
		edit  func(*elicitation.Spec)
	}{
		{"Form", func(s *elicitation.Spec) { s.Form = nil }},
		{"Prompter", func(s *elicitation.Spec) { s.Prompter = nil }},
		{"Message", func(s *elicitation.Spec) { s.Message = "" }},
		{"MaxAttempts", func(s *elicitation.Spec) { s.MaxAttempts = -1 }},
		{"MaxRounds", func(s *elicitation.Spec) { s.MaxRounds = -1 }},
		{"MaxRounds", func(s *elicitation.Spec) { s.MaxRounds = 1 << 20 }},
		{"Timeout", func(s *elicitation.Spec) { s.Timeout = -time.Second }},
		{"MaxLifetime", func(s *elicitation.Spec) { s.MaxLifetime = -time.Second }},
		{"Idle", func(s *elicitation.Spec) { s.Idle = -time.Second }},
		{"Timeout", func(s *elicitation.Spec) { s.Timeout = time.Hour; s.MaxLifetime = time.Minute }},
	}
	for _, c := range cases {
		spec := f.spec()
		c.edit(&spec)
		e, err := elicitation.Start("x", spec, elicitation.Env{Clock: f.clk})
		assert.Nil(t, e)
		var se *elicitation.SpecError
		require.ErrorAs(t, err, &se, c.field)
		assert.Equal(t, c.field, se.Field)
		assert.Contains(t, err.Error(), c.field)
	}
}

func TestValidAnswerCompletes(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	p := f.prompts.Next(t)
	assert.Equal(t, 1, p.Round)
	assert.Equal(t, 3, p.MaxAttempts)
	assert.Equal(t, "What is your name?", p.Message)
	assert.Same(t, e, p.Elicitation)
	snap := e.Snapshot()
	assert.Equal(t, elicitation.Active, snap.State)
	assert.Equal(t, 1, snap.Attempt)
	assert.Equal(t, "Your name", snap.Title)
	assert.Equal(t, "ask_user", snap.Tool)
	assert.True(t, snap.Deadline.Equal(f.clk.Now().Add(elicitation.DefaultTimeout)))

	f.clk.Add(time.Minute)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "  Ada ")))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, elicitation.None, o.Reason)
	assert.Equal(t, map[string]any{"name": "Ada"}, o.Data)
	assert.Equal(t, 1, o.Attempts)
	assert.Equal(t, "e1", o.ID)
	assert.True(t, o.Ended.Sub(o.Created) == time.Minute)
	assert.Equal(t, elicitation.Completed, e.Snapshot().State)
	assert.EqualValues(t, 1, f.ends.Load())
	assert.True(t, f.prompts.Empty())
}

func TestEveryEventAfterTheEndIsRefused(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	f.prompts.Next(t)
	require.NoError(t, e.Cancel(elicitation.Operator))
	before, _ := e.Outcome()

	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(1, "Ada")), elicitation.ErrFinished)
	assert.ErrorIs(t, e.Cancel(elicitation.Shutdown), elicitation.ErrFinished)
	_, err := e.Extend(time.Minute)
	assert.ErrorIs(t, err, elicitation.ErrFinished)
	f.clk.Add(elicitation.DefaultTimeout)

	after, _ := e.Outcome()
	assert.Equal(t, before, after)
	assert.Equal(t, elicitation.Cancelled, after.State)
	assert.Equal(t, elicitation.Operator, after.Reason)
	assert.EqualValues(t, 1, f.ends.Load())
}

func TestInvalidAnswerRepromptsWithErrorsFirst(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "   ")))
	p := f.prompts.Next(t)
	assert.Equal(t, 2, p.Round)
	assert.True(t, strings.HasPrefix(p.Message, "Name: is required\n"), p.Message)
	assert.True(t, strings.HasSuffix(p.Message, "What is your name?"), p.Message)
	require.Len(t, p.Errors, 1)
	assert.Equal(t, "name", p.Errors[0].Field)
	assert.Equal(t, 2, e.Snapshot().Attempt)

	require.NoError(t, e.Answer(elicitationtest.Accept(2, "Grace")))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, 2, o.Attempts)
	assert.Empty(t, o.Errors)
	assert.Equal(t, "Grace", o.Data["name"])
}

func TestMaxAttemptsCancelsWithLastErrors(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	for round := 1; round <= 3; round++ {
		p := f.prompts.Next(t)
		require.Equal(t, round, p.Round)
		require.NoError(t, e.Answer(elicitationtest.Accept(round, "")))
	}
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Cancelled, o.State)
	assert.Equal(t, elicitation.MaxAttempts, o.Reason)
	assert.Equal(t, 3, o.Attempts)
	require.Len(t, o.Errors, 1)
	assert.Equal(t, "required", o.Errors[0].Constraint)
	assert.True(t, f.prompts.Empty(), "no fourth prompt")
}

func TestMaxAttemptsOfOne(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.MaxAttempts = 1
	e := f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "")))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.MaxAttempts, o.Reason)
	assert.Equal(t, 1, o.Attempts)
}

func TestPersonEndsIt(t *testing.T) {
	boom := errors.New("stdio closed")
	cases := []struct {
		answer elicitation.Answer
		reason elicitation.Reason
		err    error
	}{
		{elicitation.Answer{Round: 1, Action: elicitation.Decline}, elicitation.Declined, nil},
		{elicitation.Answer{Round: 1, Action: elicitation.Cancel}, elicitation.UserCancelled, nil},
		{elicitation.Answer{Round: 1, Action: elicitation.Failed, Err: boom}, elicitation.TransportError, boom},
		{elicitation.Answer{Round: 1, Action: elicitation.Unusable, Err: boom}, elicitation.InvalidResponse, boom},
	}
	for _, c := range cases {
		t.Run(c.reason.String(), func(t *testing.T) {
			f := newFixture()
			e := f.start(t, f.spec())
			f.prompts.Next(t)
			require.NoError(t, e.Answer(c.answer))
			o := elicitationtest.WaitDone(t, e)
			assert.Equal(t, elicitation.Cancelled, o.State)
			assert.Equal(t, c.reason, o.Reason)
			assert.Equal(t, c.err, o.Err)
			assert.Nil(t, o.Data)
			assert.EqualValues(t, 0, f.form.Calls.Load(), "a decline or cancel is not validated")
		})
	}
}

func TestRejectionsSkipTheFormCheck(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	f.prompts.Next(t)
	rej := []validator.FieldError{{Field: "name", Constraint: "schema", Message: "content does not match requested schema: name"}}
	require.NoError(t, e.Answer(elicitation.Answer{Round: 1, Action: elicitation.Accept, Content: map[string]any{"name": "Ada"}, Rejections: rej}))
	p := f.prompts.Next(t)
	assert.Equal(t, 2, p.Round)
	assert.True(t, strings.HasPrefix(p.Message, rej[0].Message))
	assert.EqualValues(t, 0, f.form.Calls.Load())
	require.NoError(t, e.Cancel(elicitation.Operator))
}

func TestStaleAndInvalidEventsChangeNothing(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	f.prompts.Next(t)
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(2, "Ada")), elicitation.ErrStaleRound)
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(0, "Ada")), elicitation.ErrStaleRound)
	assert.ErrorIs(t, e.Answer(elicitation.Answer{Round: 1}), elicitation.ErrInvalidEvent)
	assert.ErrorIs(t, e.Answer(elicitation.Answer{Round: 1, Action: 77}), elicitation.ErrInvalidEvent)
	assert.ErrorIs(t, e.Cancel(elicitation.None), elicitation.ErrInvalidEvent)
	assert.ErrorIs(t, e.Cancel(elicitation.Reason(200)), elicitation.ErrInvalidEvent)
	_, err := e.Extend(0)
	assert.ErrorIs(t, err, elicitation.ErrInvalidEvent)
	_, err = e.Extend(-time.Second)
	assert.ErrorIs(t, err, elicitation.ErrInvalidEvent)

	snap := e.Snapshot()
	assert.Equal(t, elicitation.Active, snap.State)
	assert.Equal(t, 1, snap.Attempt)

	require.NoError(t, e.Answer(elicitationtest.Accept(1, "")))
	f.prompts.Next(t)
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(1, "Ada")), elicitation.ErrStaleRound, "an answer to an earlier round")
	require.NoError(t, e.Answer(elicitationtest.Accept(2, "Ada")))
	assert.Equal(t, elicitation.Completed, elicitationtest.WaitDone(t, e).State)
}

func TestDeadlineTimesOut(t *testing.T) {
	f := newFixture()
	e := f.askedForAMinute(t)
	start := f.clk.Now()

	f.clk.Add(time.Minute - time.Nanosecond)
	// A round trip through the actor proves it is still live just before the deadline.
	_, err := e.Extend(time.Nanosecond)
	require.NoError(t, err)
	f.clk.Add(2 * time.Nanosecond)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
	assert.Equal(t, elicitation.None, o.Reason)
	assert.True(t, o.Ended.Equal(start.Add(time.Minute+time.Nanosecond)), "ended %v", o.Ended)
	assert.Equal(t, 1, o.Attempts)
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(1, "Ada")), elicitation.ErrFinished)
	assert.EqualValues(t, 1, f.ends.Load())
}

// The rule for an answer and the deadline arriving together: the answer counts only if the
// actor takes it strictly before the deadline on the injected clock.
func TestAnswerAtTheDeadlineLoses(t *testing.T) {
	f := newFixture()
	timers := clock.NewMock() // never moved: the timer cannot fire, only the rule decides
	spec := f.spec()
	spec.Timeout = time.Minute
	e, err := elicitation.Start("e1", spec, elicitation.Env{Clock: elicitationtest.FrozenTimers{Mock: f.clk, Timers: timers}})
	require.NoError(t, err)
	f.prompts.Next(t)
	f.clk.Add(time.Minute - time.Nanosecond)
	_, err = e.Extend(time.Nanosecond) // a round trip: live one nanosecond before
	require.NoError(t, err)
	f.clk.Add(2 * time.Nanosecond) // exactly at the extended deadline
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(1, "Ada")), elicitation.ErrFinished)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
	assert.True(t, o.Ended.Equal(o.Created.Add(time.Minute+time.Nanosecond)))
	assert.Nil(t, o.Data)
}

// The same rule when the timer has fired too: whichever the actor takes first, the answer
// does not count.
func TestAnswerAtTheDeadlineLosesToAFiredTimer(t *testing.T) {
	f := newFixture()
	e := f.askedForAMinute(t)
	f.clk.Add(time.Minute) // the timer fires now; the actor may or may not have taken it yet
	assert.ErrorIs(t, e.Answer(elicitationtest.Accept(1, "Ada")), elicitation.ErrFinished)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
	assert.Nil(t, o.Data)
}

func TestAnswerJustBeforeTheDeadlineWins(t *testing.T) {
	f := newFixture()
	e := f.askedForAMinute(t)
	f.clk.Add(time.Minute - time.Nanosecond)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	f.clk.Add(time.Hour)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
}

// A deadline that has passed on the clock ends the elicitation at the next event, even if
// the timer's fire has not been taken yet: every kind of event sees it.
func TestAnyEventAfterTheDeadlineTimesOut(t *testing.T) {
	events := map[string]func(*elicitation.Elicitation) error{
		"cancel": func(e *elicitation.Elicitation) error { return e.Cancel(elicitation.Operator) },
		"extend": func(e *elicitation.Elicitation) error { _, err := e.Extend(time.Hour); return err },
		"answer": func(e *elicitation.Elicitation) error { return e.Answer(elicitationtest.Accept(1, "Ada")) },
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			e := f.askedForAMinute(t)
			f.clk.Add(2 * time.Minute)
			assert.ErrorIs(t, ev(e), elicitation.ErrFinished)
			assert.Equal(t, elicitation.TimedOut, elicitationtest.WaitDone(t, e).State)
		})
	}
}

func TestExtendMovesTheDeadlineWithinTheLifetime(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.Timeout = time.Minute
	spec.MaxLifetime = 10 * time.Minute
	e := f.start(t, spec)
	f.prompts.Next(t)
	start := f.clk.Now()

	d, err := e.Extend(4 * time.Minute)
	require.NoError(t, err)
	assert.True(t, d.Equal(start.Add(5*time.Minute)))
	assert.True(t, e.Snapshot().Deadline.Equal(d))

	f.clk.Add(time.Minute) // the original deadline passes: nothing happens
	_, err = e.Extend(time.Hour)
	require.NoError(t, err, "still live after the original deadline")
	assert.True(t, e.Snapshot().Deadline.Equal(start.Add(10*time.Minute)), "capped at the lifetime")

	d, err = e.Extend(time.Minute)
	require.NoError(t, err)
	assert.True(t, d.Equal(start.Add(10*time.Minute)), "no further than the lifetime")

	f.clk.Add(9*time.Minute - time.Nanosecond)
	require.Equal(t, elicitation.Active, e.Snapshot().State)
	f.clk.Add(time.Nanosecond)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
	assert.True(t, o.Ended.Equal(start.Add(10*time.Minute)))
}

// Each extension re-arms the one timer: the old deadline passing must not end it.
func TestExtendRearmsTheTimer(t *testing.T) {
	f := newFixture()
	e := f.askedForAMinute(t)
	for range 50 {
		_, err := e.Extend(time.Minute)
		require.NoError(t, err)
		f.clk.Add(time.Minute) // reaches the deadline before the extension
		_, err = e.Extend(time.Nanosecond)
		require.NoError(t, err, "still live at the deadline it had before extending")
	}
	require.NoError(t, e.Cancel(elicitation.Operator))
}

// An idle expiry ends an unanswered prompt as abandoned before the deadline; the snapshot
// shows the earlier of the two, every prompt and Touch restart it, and Extend moves it.
func TestIdleExpiry(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.Timeout = 10 * time.Minute
	spec.Idle = 2 * time.Minute
	e := f.start(t, spec)
	f.prompts.Next(t)
	start := f.clk.Now()
	assert.True(t, e.Snapshot().Deadline.Equal(start.Add(2*time.Minute)), "the idle expiry applies: %v", e.Snapshot().Deadline)

	f.clk.Add(90 * time.Second)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "")), "an invalid answer: a new prompt")
	f.prompts.Next(t)
	assert.True(t, e.Snapshot().Deadline.Equal(start.Add(90*time.Second+2*time.Minute)), "the new prompt restarts it")

	f.clk.Add(time.Minute)
	require.NoError(t, e.Touch())
	assert.True(t, e.Snapshot().Deadline.Equal(f.clk.Now().Add(2*time.Minute)), "Touch restarts it")

	d, err := e.Extend(time.Minute)
	require.NoError(t, err)
	assert.True(t, d.Equal(f.clk.Now().Add(3*time.Minute)), "Extend moves it: %v", d)
	assert.True(t, e.Snapshot().Deadline.Equal(d))

	f.clk.Add(3*time.Minute - time.Nanosecond)
	_, err = e.Extend(time.Nanosecond) // a round trip: live just before
	require.NoError(t, err)
	f.clk.Add(2 * time.Nanosecond)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Cancelled, o.State)
	assert.Equal(t, elicitation.Abandoned, o.Reason)
	assert.ErrorIs(t, e.Touch(), elicitation.ErrFinished)
}

// The deadline still applies when it comes before the idle expiry, and an extension cannot
// make the shown time pass the deadline.
func TestIdleExpiryNeverOutlivesTheDeadline(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.Timeout = time.Minute
	spec.MaxLifetime = time.Minute
	spec.Idle = 50 * time.Second
	e := f.start(t, spec)
	f.prompts.Next(t)
	start := f.clk.Now()
	f.clk.Add(40 * time.Second)
	require.NoError(t, e.Touch())
	assert.True(t, e.Snapshot().Deadline.Equal(start.Add(time.Minute)), "the deadline is earlier")
	d, err := e.Extend(time.Hour)
	require.NoError(t, err)
	assert.True(t, d.Equal(start.Add(time.Minute)), "capped at the lifetime")
	f.clk.Add(20 * time.Second)
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.TimedOut, o.State)
}

// Without an idle expiry Touch changes nothing.
func TestTouchWithoutIdleIsANoOp(t *testing.T) {
	f := newFixture()
	e := f.askedForAMinute(t)
	before := e.Snapshot().Deadline
	f.clk.Add(30 * time.Second)
	require.NoError(t, e.Touch())
	assert.True(t, e.Snapshot().Deadline.Equal(before))
	require.NoError(t, e.Cancel(elicitation.Operator))
}

// A follow-up is a new round on a new form; a re-prompt of it repeats the follow-up. The
// continuation's Data replaces the data so far.
func TestFollowUpIsANewRound(t *testing.T) {
	f := newFixture()
	second := &elicitationtest.NameForm{}
	spec := f.spec()
	var calls int
	spec.Continue = func(data map[string]any) elicitation.Next {
		calls++
		if calls == 1 {
			return elicitation.Next{Data: map[string]any{"first": data["name"]}, FollowUp: &elicitation.Step{Message: "And your friend?", Form: second}}
		}
		return elicitation.Next{Data: map[string]any{"first": data["first"], "second": data["name"]}}
	}
	e := f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	p := f.prompts.Next(t)
	assert.Equal(t, 2, p.Round)
	assert.Equal(t, 1, p.Attempt, "a follow-up is not an attempt")
	assert.Equal(t, "And your friend?", p.Message)
	assert.Same(t, second, p.Form)

	require.NoError(t, e.Answer(elicitationtest.Accept(2, " ")))
	p = f.prompts.Next(t)
	assert.Equal(t, 3, p.Round)
	assert.Equal(t, 2, p.Attempt, "the invalid answer used one")
	assert.True(t, strings.HasPrefix(p.Message, "Name: is required"))
	assert.True(t, strings.HasSuffix(p.Message, "And your friend?"), "a re-prompt repeats the follow-up, not the first step")

	require.NoError(t, e.Answer(elicitationtest.Accept(3, "Bob")))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, map[string]any{"first": "Ada", "second": "Bob"}, o.Data)
	assert.Equal(t, 2, o.Attempts)
	assert.Equal(t, 3, o.Rounds)
	assert.EqualValues(t, 2, second.Calls.Load())
}

// A continuation's typed result becomes the outcome's Value; its error ends the
// elicitation as cancelled with reason tool_error, not as completed.
func TestContinuationEndsWithAValueOrAnError(t *testing.T) {
	type body struct{ Name string }
	f := newFixture()
	spec := f.spec()
	spec.Continue = func(data map[string]any) elicitation.Next {
		return elicitation.Next{Value: body{data["name"].(string)}}
	}
	e := f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, body{"Ada"}, o.Value)

	failed := errors.New("upstream refused the body")
	spec.Continue = func(map[string]any) elicitation.Next { return elicitation.Next{Err: failed, Value: body{"x"}} }
	e = f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	o = elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Cancelled, o.State)
	assert.Equal(t, elicitation.ToolError, o.Reason)
	assert.Equal(t, "tool_error", o.Reason.String())
	assert.Same(t, failed, o.Err)
	assert.Nil(t, o.Value, "a failed continuation's value is not a result")
}

// Reprompt words the message after an invalid answer, seeing the problems and the form
// asked next.
func TestRepromptWordsTheRetry(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	var sawForm elicitation.CompiledForm
	spec.Reprompt = func(errs []validator.FieldError, next elicitation.CompiledForm) string {
		sawForm = next
		return fmt.Sprintf("fix %d: %s", len(errs), errs[0].Field)
	}
	e := f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, " ")))
	p := f.prompts.Next(t)
	assert.Equal(t, "fix 1: name", p.Message)
	assert.Same(t, p.Form, sawForm)
	require.NoError(t, e.Cancel(elicitation.Operator))
	elicitationtest.WaitDone(t, e)
}

func TestOnEndRunsBeforeDoneCloses(t *testing.T) {
	f := newFixture()
	var e *elicitation.Elicitation
	var sawOpen atomic.Bool
	started := make(chan struct{})
	e, err := elicitation.Start("e2", f.spec(), elicitation.Env{Clock: f.clk, OnEnd: func(o elicitation.Outcome) {
		<-started
		select {
		case <-e.Done():
		default:
			sawOpen.Store(o.State == elicitation.Cancelled && o.ID == "e2")
		}
	}})
	require.NoError(t, err)
	close(started)
	f.prompts.Next(t)
	require.NoError(t, e.Cancel(elicitation.ClientGone))
	assert.True(t, sawOpen.Load())
}

func TestWaitHonoursTheContext(t *testing.T) {
	f := newFixture()
	e := f.start(t, f.spec())
	f.prompts.Next(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Wait(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	_, ok := e.Outcome()
	assert.False(t, ok)

	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	o, err := e.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, elicitation.Completed, o.State)
}

func TestSnapshotOfAFreshElicitationIsConsistent(t *testing.T) {
	f := newFixture()
	block := make(chan struct{})
	spec := f.spec()
	spec.Prompter = elicitation.PrompterFunc(func(p elicitation.Prompt) { <-block; f.prompts <- p })
	e := f.start(t, spec)
	s := e.Snapshot()
	// The actor may not have run yet (pending, attempt 0) or be emitting (active, attempt 1).
	if s.State == elicitation.Pending {
		assert.Equal(t, 0, s.Attempt)
	} else {
		assert.Equal(t, elicitation.Active, s.State)
		assert.Equal(t, 1, s.Attempt)
	}
	close(block)
	f.prompts.Next(t)
	assert.Equal(t, elicitation.Active, e.Snapshot().State)
	require.NoError(t, e.Cancel(elicitation.Shutdown))
}

// A question resumed from its record (Spec.Created) keeps its age, and its lifetime still
// counts from when it was first asked: waking it does not buy it a new lifetime.
func TestAResumedQuestionKeepsItsAgeAndLifetime(t *testing.T) {
	f := newFixture()
	asked := f.clk.Now()
	f.clk.Add(8 * time.Minute) // it slept, and is resumed now
	spec := f.spec()
	spec.Timeout = time.Minute
	spec.MaxLifetime = 10 * time.Minute
	spec.Created = asked
	e := f.start(t, spec)
	f.prompts.Next(t)
	assert.True(t, e.Snapshot().Created.Equal(asked), "created %v, want %v", e.Snapshot().Created, asked)

	d, err := e.Extend(time.Hour)
	require.NoError(t, err)
	assert.True(t, d.Equal(asked.Add(10*time.Minute)), "capped at the lifetime from when it was asked: %v", d)
	require.NoError(t, e.Cancel(elicitation.Operator))
	o := elicitationtest.WaitDone(t, e)
	assert.True(t, o.Created.Equal(asked), "the outcome says when it was asked")

	// A Created in the future is no creation time: the start is.
	spec.Created = f.clk.Now().Add(time.Hour)
	later := f.start(t, spec)
	f.prompts.Next(t)
	assert.True(t, later.Snapshot().Created.Equal(f.clk.Now()))
	require.NoError(t, later.Cancel(elicitation.Operator))
	elicitationtest.WaitDone(t, later)
}
