package webhook

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/elicitd/elicitd/store"
)

// EventEnded is the type of the event sent when a question ends.
const EventEnded = "elicitation.ended"

// Outcome is how a question ended, as a webhook receiver sees it.
type Outcome string

// The outcomes. A question cancelled for a reason without an outcome of its own
// (user_cancelled, max_attempts, operator, ...) is OutcomeCancelled, its Reason saying why.
const (
	OutcomeCompleted  Outcome = "completed"
	OutcomeDeclined   Outcome = "declined"
	OutcomeCancelled  Outcome = "cancelled"
	OutcomeTimeout    Outcome = "timeout"
	OutcomeAbandoned  Outcome = "abandoned"
	OutcomeClientGone Outcome = "client_gone"
	OutcomeShutdown   Outcome = "shutdown"
)

// OutcomeOf maps an ended question's state and reason, as package elicitation names them
// (State.String, Reason.String), to its Outcome; an error for a state that is not an end.
func OutcomeOf(state, reason string) (Outcome, error) {
	switch state {
	case "completed":
		return OutcomeCompleted, nil
	case "timeout":
		return OutcomeTimeout, nil
	case "cancelled":
		switch reason {
		case "declined":
			return OutcomeDeclined, nil
		case "abandoned":
			return OutcomeAbandoned, nil
		case "client_gone":
			return OutcomeClientGone, nil
		case "shutdown":
			return OutcomeShutdown, nil
		}
		return OutcomeCancelled, nil
	}
	return "", fmt.Errorf("webhook: %q is not the state of an ended question (completed, cancelled or timeout)", state)
}

// Event is the JSON body of a webhook: one question's end. It is what a receiver decodes.
type Event struct {
	// ID is the event's id, also the webhook-id header: the same on every retry, so a
	// receiver deduplicates by it. "evt_<question id>_ended" (see EventID).
	ID   string `json:"id"`
	Type string `json:"type"` // EventEnded
	// QuestionID is the question's id, as list_elicitations shows it.
	QuestionID string `json:"question_id"`
	Tool       string `json:"tool"`
	Template   string `json:"template,omitempty"`
	// Owner is an opaque id of whoever asked: the same owner, the same id.
	Owner   string  `json:"owner"`
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"` // the reason in package elicitation's words, when cancelled
	// Attempts is the attempts the question took: its first prompt and each re-prompt
	// after an invalid answer.
	Attempts int       `json:"attempts"`
	Created  time.Time `json:"created"`
	Ended    time.Time `json:"ended"`
	// Answers are the question's answers, only when the deliverer sends answers
	// (Options.Answers), and never a sensitive field's.
	Answers map[string]any `json:"answers,omitempty"`
}

// Ending is what the server knows of a question when it ends: NewEvent makes an Event of
// it.
type Ending struct {
	QuestionID string
	// Key, when set, names this end the same on every node that may report it (a question
	// taken over by another node ends there under another QuestionID): the event's id is
	// EventID(Key), so a receiver sees one id however often the end is reported. Empty:
	// QuestionID.
	Key      string
	Tool     string
	Template string // the template the form came from, if any
	// Owner is an opaque id of the question's owner. Give a digest (store.OwnerDigest),
	// never a credential: receivers see it.
	Owner string
	// State and Reason are the outcome's, in package elicitation's words
	// (Outcome.State.String(), Outcome.Reason.String()).
	State, Reason  string
	Attempts       int
	Created, Ended time.Time
	// Answers are the answers by field name (elicitation's Outcome.Data), nil if none.
	Answers map[string]any
	// Sensitive names the fields whose answers never leave: those marked sensitive in the
	// form (validator.Field.Sensitive), and any other (a file) that must not. They are
	// dropped from every event, whatever Options.Answers says.
	Sensitive []string
}

// EventID is the id of the event of the end named key (Ending.Key, else its QuestionID).
func EventID(key string) string { return "evt_" + key + "_ended" }

// ErrInvalidEnding is matched (errors.Is) by the errors of NewEvent.
var ErrInvalidEnding = errors.New("webhook: invalid ending")

// NewEvent makes the event of e. With answers false it carries none; with answers true it
// carries e.Answers less every field named in e.Sensitive (and none at all if nothing is
// left). It fails for a question id an event id cannot hold, or a state that is not an end.
func NewEvent(e Ending, answers bool) (Event, error) {
	if !store.ValidID(e.QuestionID) {
		return Event{}, fmt.Errorf("%w: question id %q: want 1-128 letters, digits, '-', '_' or '='", ErrInvalidEnding, e.QuestionID)
	}
	key := e.QuestionID
	if e.Key != "" {
		if !store.ValidID(e.Key) {
			return Event{}, fmt.Errorf("%w: key %q: want 1-128 letters, digits, '-', '_' or '='", ErrInvalidEnding, e.Key)
		}
		key = e.Key
	}
	outcome, err := OutcomeOf(e.State, e.Reason)
	if err != nil {
		return Event{}, fmt.Errorf("%w: question %s: %w", ErrInvalidEnding, e.QuestionID, err)
	}
	ev := Event{
		ID: EventID(key), Type: EventEnded, QuestionID: e.QuestionID, Tool: e.Tool, Template: e.Template,
		Owner: e.Owner, Outcome: outcome, Attempts: e.Attempts, Created: e.Created.UTC(), Ended: e.Ended.UTC(),
	}
	if outcome != OutcomeCompleted && outcome != OutcomeTimeout {
		ev.Reason = e.Reason
	}
	if answers {
		for name, v := range e.Answers {
			if slices.Contains(e.Sensitive, name) {
				continue
			}
			if ev.Answers == nil {
				ev.Answers = map[string]any{}
			}
			ev.Answers[name] = v
		}
	}
	return ev, nil
}
