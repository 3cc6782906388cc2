package elicitation

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/elicitd/elicitd/validator"
)

// Defaults applied by Start to a Spec that leaves a limit at zero.
const (
	DefaultMaxAttempts = 3                // prompts in total, the first included
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
	// Data is the result so far. When FollowUp is nil it becomes the outcome's data;
	// when Data is nil the validated answer is used instead.
	Data map[string]any
	// Value, when FollowUp is nil, becomes the outcome's Value: a result of the tool's own
	// type (a completed request body, say), where Data holds the answers.
	Value any
	// Err, when set, ends the elicitation at once as Cancelled with reason ToolError and
	// Err in its outcome: the tool could not go on with the answer (an upstream call
	// failed, say). It is not counted as completed.
	Err error
	// FollowUp, when set, is asked next. It counts as an attempt, unless Free.
	FollowUp *Step
	// Free marks a follow-up that is a new round of the same question (fields that
	// depend on this answer), not a second try: the attempts allowed grow by one for it.
	Free bool
}

// Continuation decides what follows each valid answer: finish with data, or ask a follow-up.
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

	MaxAttempts int           // prompts in total; 0 means DefaultMaxAttempts
	Timeout     time.Duration // time until the deadline; 0 means DefaultTimeout
	MaxLifetime time.Duration // the latest deadline Extend may set, from start; 0 means DefaultMaxLifetime
	// Idle, when positive, also ends the elicitation (Cancelled, reason Abandoned) when a
	// prompt is left unanswered this long: each prompt restarts it, and so does Touch.
	// Extend moves it as it moves the deadline, and Snapshot's Deadline is the earlier of
	// the two, so whoever shows the time left shows the one that applies. 0: none.
	Idle time.Duration
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
	case s.MaxAttempts < 0 || s.MaxAttempts > maxAttemptsLimit:
		return s, &SpecError{"MaxAttempts", fmt.Sprintf("must be between 1 and %d (0 for the default), got %d", maxAttemptsLimit, s.MaxAttempts)}
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

// maxAttemptsLimit keeps the attempt count inside the bits the published status gives it.
const maxAttemptsLimit = 1 << 15
