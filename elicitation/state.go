package elicitation

// State is where an elicitation is in its life. The zero value is Pending.
//
//	Pending ──first prompt emitted──▶ Active ──valid answer, nothing more to ask──▶ Completed
//	   │                                │ ▲
//	   │                                │ └─ invalid answer (re-prompt) or follow-up: next round
//	   │                                └──────────────────────────────────────▶ Cancelled (with a Reason)
//	   └─────────────── deadline on the injected clock ────────────────────────▶ TimedOut
//
// Completed, Cancelled and TimedOut are terminal: nothing leaves them.
type State uint8

const (
	// Pending: started, no prompt emitted yet.
	Pending State = iota
	// Active: a prompt has been emitted and the elicitation waits for its answer.
	Active
	// Completed: a valid answer arrived and the continuation asked for nothing more.
	// The outcome carries the data.
	Completed
	// Cancelled: ended before completion; the outcome's Reason says why.
	Cancelled
	// TimedOut: the deadline passed before a valid final answer arrived.
	TimedOut
)

var stateNames = [...]string{
	Pending:   "pending",
	Active:    "active",
	Completed: "completed",
	Cancelled: "cancelled",
	TimedOut:  "timeout",
}

// String returns the state's wire name: pending, active, completed, cancelled or timeout.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Terminal reports whether s is a final state.
func (s State) Terminal() bool { return s == Completed || s == Cancelled || s == TimedOut }

// NumStates is the number of states, for arrays indexed by State.
const NumStates = int(TimedOut) + 1

// Reason says why an elicitation was cancelled. The zero value, None, belongs to every
// outcome that is not Cancelled.
type Reason uint8

const (
	None              Reason = iota
	Declined                 // the person declined to answer
	UserCancelled            // the person dismissed the prompt
	ClientGone               // the client session that owns it ended
	ToolCallCancelled        // the client cancelled the tool call waiting on it
	MaxAttempts              // every attempt allowed (Spec.MaxAttempts) was answered invalidly
	TransportError           // delivering a prompt or receiving its answer failed
	Shutdown                 // the server is shutting down
	Operator                 // an operator or a tool cancelled it explicitly
	InvalidResponse          // the client replied with something that is not an answer
	Abandoned                // a prompt was left unanswered for Spec.Idle (a pull-era client did not come back in time)
	ToolError                // the tool's continuation ended it with an error (Next.Err)
	TooManyRounds            // one more round (a follow-up or a re-prompt) would pass Spec.MaxRounds
)

var reasonNames = [...]string{
	None:              "",
	Declined:          "declined",
	UserCancelled:     "user_cancelled",
	ClientGone:        "client_gone",
	ToolCallCancelled: "tool_call_cancelled",
	MaxAttempts:       "max_attempts",
	TransportError:    "transport_error",
	Shutdown:          "shutdown",
	Operator:          "operator",
	InvalidResponse:   "invalid_response",
	Abandoned:         "abandoned",
	ToolError:         "tool_error",
	TooManyRounds:     "too_many_rounds",
}

// String returns the reason's wire name, such as "client_gone"; None is "".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// NumReasons is the number of reasons (None included), for arrays indexed by Reason.
const NumReasons = int(TooManyRounds) + 1
