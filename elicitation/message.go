package elicitation

import (
	"errors"
	"time"

	"github.com/elicitd/elicitd/validator"
)

// Prompt is one request for the person to fill in a form, emitted by an elicitation to its
// Prompter. Round numbers the prompt, and is the number its answer must carry; Attempt
// counts the tries at a valid answer so far, which only invalid answers use (a follow-up
// is a new round, not a new attempt).
type Prompt struct {
	Elicitation *Elicitation
	Round       int // 1 for the first prompt, counting every prompt emitted
	Attempt     int // 1 plus the invalid answers so far; at most MaxAttempts
	MaxAttempts int
	Message     string // for a re-prompt, the field errors come first
	Form        CompiledForm
	Errors      []validator.FieldError // the previous answer's problems, for a re-prompt
}

// Prompter delivers prompts to a person: push (one request per prompt) or pull (the prompt is
// handed to the tool call that returns it). Prompt is called on the elicitation's goroutine,
// once per prompt, in order. It must return promptly and must not call the elicitation's
// methods itself (they wait on that same goroutine); it hands the prompt to another
// goroutine, which later calls Answer with the prompt's Round.
type Prompter interface {
	Prompt(p Prompt)
}

// PrompterFunc adapts a function to the Prompter interface.
type PrompterFunc func(Prompt)

// Prompt calls f(p).
func (f PrompterFunc) Prompt(p Prompt) { f(p) }

// Action is what the person (or the transport) did with a prompt.
type Action uint8

const (
	_       Action = iota
	Accept         // submitted the form: Content holds the values
	Decline        // explicitly declined to answer
	Cancel         // dismissed the prompt without choosing (MCP "cancel")
	Failed         // the prompt or its answer was lost in transport: Err says how
	// Unusable: the client replied, but not with an answer (an unknown action, say): Err
	// says what was wrong. The person is not asked again: the client is at fault.
	Unusable
)

var actionNames = [...]string{"invalid", "accept", "decline", "cancel", "failed", "unusable"}

// String returns the MCP name of the action: accept, decline, cancel; or failed, unusable.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "invalid"
}

// Answer is the response to the prompt numbered Round.
type Answer struct {
	Round   int
	Action  Action
	Content map[string]any // for Accept
	// Rejections, when not empty, marks an accepted answer as invalid without running the
	// form's check: the transport already found these problems (an answer too large to
	// carry, say). It earns a re-prompt like any invalid answer.
	Rejections []validator.FieldError
	Err        error // for Failed and Unusable

	// Set by Answer on the caller's goroutine: the form's verdict on Content.
	checked bool
	data    map[string]any
	retry   CompiledForm
}

// Outcome is how an elicitation ended. It is fixed once, before Done is closed.
type Outcome struct {
	ID     string
	Tool   string // the spec's Tool, for logs
	Title  string // the spec's Title
	State  State  // Completed, Cancelled or TimedOut
	Reason Reason // why, when Cancelled
	// Data is every valid answer of every round, merged (see Continuation), or what the
	// continuation made of them (Next.Data); nil when no answer was valid.
	Data     map[string]any
	Attempts int                    // attempts given: the first prompt and each re-prompt after an invalid answer
	Rounds   int                    // prompts emitted: attempts and follow-ups
	Errors   []validator.FieldError // the last invalid answer's problems, if the last answer was invalid
	Value    any                    // the continuation's Next.Value, when Completed
	Err      error                  // what went wrong, when Reason is TransportError, InvalidResponse or ToolError
	Created  time.Time
	Ended    time.Time
}

// Snapshot is a consistent-enough view of a live or finished elicitation, readable from any
// goroutine without waiting on the actor.
type Snapshot struct {
	ID          string
	Title       string
	Tool        string
	State       State
	Reason      Reason
	Round       int // prompts emitted so far: the current prompt's Round (0 while Pending)
	Attempt     int // the current prompt's Attempt: 1 plus the invalid answers so far (0 while Pending)
	MaxAttempts int
	MaxRounds   int
	Created     time.Time
	Deadline    time.Time // when it ends unless answered: the deadline, or Spec.Idle's expiry if earlier
}

// Errors returned by an elicitation's methods. They are sentinels to test with errors.Is.
var (
	// ErrFinished: the elicitation had already reached a terminal state (or reached one at
	// this instant because its deadline had passed). Nothing was changed.
	ErrFinished = errors.New("elicitation: elicitation has already finished")
	// ErrStaleRound: the answer names a prompt other than the current one. Nothing was changed.
	ErrStaleRound = errors.New("elicitation: answer is not for the current prompt")
	// ErrInvalidEvent: the answer's action, the cancel reason or the extension is not one
	// the elicitation accepts. Nothing was changed.
	ErrInvalidEvent = errors.New("elicitation: invalid event")
)
