package elicitation

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/elicitd/elicitd/validator"
)

// Defaults applied by Start to a Spec that leaves a limit at zero.
const (
	DefaultMaxAttempts = 3                // attempts: the first prompt and the re-prompts after invalid answers
	DefaultMaxRounds   = 20               // rounds: every prompt, follow-ups and re-prompts included
	DefaultTimeout     = 10 * time.Minute // from start to deadline
	DefaultMaxLifetime = 24 * time.Hour   // how far Extend may push the deadline, from start
)

// CompiledForm is what an elicitation needs of a compiled form: the schema sent with each prompt and a
// check of each answer. The validator package's compiled forms satisfy it. Implementations
// must be safe for concurrent use: Validate runs on the goroutine that calls Answer, never on
// the actor's, so a slow check can delay only its own answer, never the deadline, a cancel
// or a shutdown.
type CompiledForm interface {
	// WireSchema returns the JSON object sent to the client as the prompt's requested schema.
	WireSchema() json.RawMessage
	// Validate normalises content and checks it. It returns the data to keep when the answer
	// is valid, or every problem found, in field order.
	Validate(content map[string]any) (data map[string]any, errs []validator.FieldError)
}

// The validator's compiled forms are the forms elicitd's tools use.
var _ CompiledForm = (*validator.Compiled)(nil)

// Keeper is a CompiledForm that keeps the valid part of an invalid answer: the re-prompt asks only
// for the fields at fault, and the values kept are part of the data once the rest is valid.
// Like Validate, Keep runs on the goroutine that calls Answer.
type Keeper interface {
	CompiledForm
	// Keep checks content as Validate does. When it is invalid, retry is the form for the
	// re-prompt; nil asks the same form again.
	Keep(content map[string]any) (data map[string]any, errs []validator.FieldError, retry CompiledForm)
}

// Step is one thing to ask: the message shown to the person and the form they fill in.
type Step struct {
	Message string
	Form    CompiledForm
}

// Next is what a Continuation decides after a valid answer.
type Next struct {
	// Data, when set, replaces the data so far (every valid answer, merged: see
	// Continuation): later rounds' answers are merged into it, and the outcome's Data is
	// the data so far when the elicitation ends. Nil keeps the data so far as it is.
	Data map[string]any
	// Value, when FollowUp is nil, becomes the outcome's Value: a result of the tool's own
	// type (a completed request body, say), where Data holds the answers.
	Value any
	// Err, when set, ends the elicitation at once as Cancelled with reason ToolError and
	// Err in its outcome: the tool could not go on with the answer (an upstream call
	// failed, say). It is not counted as completed.
	Err error
	// FollowUp, when set, is asked next, as a new round. A follow-up is not an attempt:
	// only invalid answers use attempts. Spec.MaxRounds bounds the rounds.
	FollowUp *Step
}

// Continuation decides what follows each valid answer: finish with data, or ask a follow-up.
// data is the data so far: every valid answer of every round, merged in order (a later
// answer to a field replaces an earlier one), or, once a continuation returned Next.Data,
// that with the later rounds' answers merged in. It is the elicitation's own map, which
// the outcome carries; a continuation that wants to change it returns Next.Data instead.
// It runs on the actor's goroutine and must not call the elicitation's methods.
type Continuation func(data map[string]any) Next

// Spec describes one elicitation. Message, Form and Prompter are required.
type Spec struct {
	Title string // a short name shown in listings; never an answer value
	Tool  string // the tool that started it, for listings and logs

	Message string       // the first prompt's message
	Form    CompiledForm // the first prompt's form

	// Prompter receives every prompt the elicitation emits.
	Prompter Prompter
	// Continue decides what follows a valid answer. Nil means: complete with the answer.
	Continue Continuation
	// Reprompt, when set, words the message of the prompt that follows an invalid answer,
	// from the problems found and the form asked next (with a Keeper, only the fields at
	// fault). Nil: the problems, a blank line, then the step's message. It runs on the
	// actor's goroutine.
	Reprompt func(errs []validator.FieldError, next CompiledForm) string

	// MaxAttempts bounds the attempts: the first prompt, and each re-prompt that follows
	// an invalid answer. An invalid answer to the last attempt ends the elicitation
	// (reason MaxAttempts). Follow-up rounds are not attempts. 0 means DefaultMaxAttempts.
	MaxAttempts int
	// MaxRounds bounds the rounds: every prompt, the first, re-prompts and follow-ups
	// included. When one more would pass it, the elicitation ends (reason TooManyRounds),
	// so a continuation that keeps asking cannot keep a person answering for ever.
	// 0 means DefaultMaxRounds.
	MaxRounds   int
	Timeout     time.Duration // time until the deadline; 0 means DefaultTimeout
	MaxLifetime time.Duration // the latest deadline Extend may set, from start; 0 means DefaultMaxLifetime
	// Idle, when positive, also ends the elicitation (Cancelled, reason Abandoned) when a
	// prompt is left unanswered this long: each prompt restarts it, and so does Touch.
	// Extend moves it as it moves the deadline, and Snapshot's Deadline is the earlier of
	// the two, so whoever shows the time left shows the one that applies. 0: none.
	Idle time.Duration
	// Due, when set and earlier than the start plus Timeout, is the deadline instead: a
	// question taken over from another node keeps the deadline it had there, even one that
	// has passed, which ends it as TimedOut at the first event it takes.
	Due time.Time
	// Created, when set and earlier than the start, is when the question was first asked: a
	// question resumed from its record (taken over, or woken from hibernation) keeps its
	// age, and MaxLifetime still counts from then.
	Created time.Time
}

// SpecError reports a Spec that Start refuses, naming the field and what it expects.
type SpecError struct {
	Field   string
	Problem string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("elicitation: spec field %s %s", e.Field, e.Problem)
}

// Check reports the first problem that would make Start refuse s, as a *SpecError.
func (s Spec) Check() error {
	_, err := s.withDefaults()
	return err
}

// withDefaults checks s and fills its zero limits.
func (s Spec) withDefaults() (Spec, error) {
	switch {
	case s.Form == nil:
		return s, &SpecError{"Form", "is required"}
	case s.Prompter == nil:
		return s, &SpecError{"Prompter", "is required"}
	case s.Message == "":
		return s, &SpecError{"Message", "is required"}
	case s.MaxAttempts < 0 || s.MaxAttempts > maxCount:
		return s, &SpecError{"MaxAttempts", fmt.Sprintf("must be between 1 and %d (0 for the default), got %d", maxCount, s.MaxAttempts)}
	case s.MaxRounds < 0 || s.MaxRounds > maxCount:
		return s, &SpecError{"MaxRounds", fmt.Sprintf("must be between 1 and %d (0 for the default), got %d", maxCount, s.MaxRounds)}
	case s.Timeout < 0:
		return s, &SpecError{"Timeout", fmt.Sprintf("must be positive (0 for the default), got %s", s.Timeout)}
	case s.MaxLifetime < 0:
		return s, &SpecError{"MaxLifetime", fmt.Sprintf("must be positive (0 for the default), got %s", s.MaxLifetime)}
	case s.Idle < 0:
		return s, &SpecError{"Idle", fmt.Sprintf("must be positive (0 for none), got %s", s.Idle)}
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	if s.MaxRounds == 0 {
		s.MaxRounds = DefaultMaxRounds
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxLifetime == 0 {
		s.MaxLifetime = max(DefaultMaxLifetime, s.Timeout)
	}
	if s.Timeout > s.MaxLifetime {
		return s, &SpecError{"Timeout", fmt.Sprintf("must not exceed MaxLifetime %s, got %s", s.MaxLifetime, s.Timeout)}
	}
	return s, nil
}

// maxCount keeps the attempt and round counts inside the bits the published status gives
// each.
const maxCount = 1 << 15
