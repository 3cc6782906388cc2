package ask

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// Error codes. They are stable API.
const (
	CodeUnsupported = "ELICITATION_UNSUPPORTED"
	CodeDeclined    = "ELICITATION_DECLINED"
	CodeCancelled   = "ELICITATION_CANCELLED"
	CodeTimeout     = "ELICITATION_TIMEOUT"
	CodeMaxRetries  = "ELICITATION_MAX_RETRIES"
	// CodeTooManyRounds: the question took Options.MaxRounds rounds and its tool still
	// asked for more (a Then that kept asking follow-ups), so it was ended. Reason
	// "too_many_rounds"; the answers are not a result.
	CodeTooManyRounds       = "ELICITATION_TOO_MANY_ROUNDS"
	CodeFailed              = "ELICITATION_FAILED"
	CodeInvalidResponse     = "ELICITATION_INVALID_RESPONSE"
	CodeInvalidForm         = "INVALID_FORM"
	CodeInvalidRequestState = "INVALID_REQUEST_STATE"
	CodeRateLimited         = "RATE_LIMITED"
	CodeTooMany             = "TOO_MANY_ELICITATIONS"
	CodeNotFound            = "NOT_FOUND"
	// CodeInvalidArgument: a tool's arguments break its input schema, or a value is out of range.
	CodeInvalidArgument = "INVALID_ARGUMENT"
)

// Missing names one thing a tool still needs from the person.
type Missing struct {
	DotPath string `json:"dot_path"`
	FlatKey string `json:"flat_key"`
	Prompt  string `json:"prompt"`
}

// Error is the payload of every tool failure.
type Error struct {
	Code    string                 `json:"code"`
	Message string                 `json:"message"`
	Reason  string                 `json:"reason"`
	Missing []Missing              `json:"missing"`
	Errors  []validator.FieldError `json:"errors,omitempty"`  // the last answer's problems, when there were some
	Details any                    `json:"details,omitempty"` // more, for some codes (e.g. retry_after_seconds)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is reports whether target is the sentinel of e's code (ErrDeclined and the others), so a
// handler can test an outcome with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is: how a question that did not complete ended. The error Ask
// returns is an *Error with the full payload; these carry only its code.
var (
	ErrUnsupported = &Error{Code: CodeUnsupported} // the client declares no form elicitation
	ErrDeclined    = &Error{Code: CodeDeclined}    // the person declined
	ErrCancelled   = &Error{Code: CodeCancelled}   // cancelled: by the person, the agent, shutdown, a vanished client
	ErrTimeout     = &Error{Code: CodeTimeout}     // the deadline passed
	ErrMaxAttempts = &Error{Code: CodeMaxRetries}  // no valid answer within the attempts allowed
	// ErrTooManyRounds: the tool kept asking past the rounds allowed (Options.MaxRounds).
	ErrTooManyRounds = &Error{Code: CodeTooManyRounds}
)

// Errorf returns an Error with code, reason and a formatted message.
func Errorf(code, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Result turns the error into the tool result the client sees.
func (e *Error) Result() *mcp.CallToolResult {
	if e.Missing == nil {
		p := *e // the sentinels are shared: a copy lists none as []
		p.Missing = []Missing{}
		return JSONResult(&p, true)
	}
	return JSONResult(e, true)
}

// ProtocolError returns e as a JSON-RPC error: invalid params (-32602), the message
// "CODE: message", the data e's payload (as Result's structured content). It is how a
// request elicitd cannot take at all is refused: a requestState that fails its integrity
// check (reason forged), which SEP-2322 has a server reject, and prompts/get, which has no
// error result.
func (e *Error) ProtocolError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Code + ": " + e.Message,
		Data: e.Result().StructuredContent.(json.RawMessage)}
}

// JSONResult returns v as a tool result: structured content and the same JSON as text.
func JSONResult(v any, isError bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil { // our own payload types always marshal
		b = []byte(fmt.Sprintf(`{"code":%q,"message":%q,"reason":"","missing":[]}`, CodeFailed, err.Error()))
	}
	return &mcp.CallToolResult{
		IsError:           isError,
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}
}

// Status words how a question ended for a tool's result: completed, declined, cancelled
// (any other reason) or timeout. It is the one mapping from outcome to status.
func Status(o elicitation.Outcome) string {
	switch {
	case o.State == elicitation.Completed:
		return "completed"
	case o.State == elicitation.TimedOut:
		return "timeout"
	case o.Reason == elicitation.Declined:
		return "declined"
	}
	return "cancelled"
}

// OutcomeError is the tool error for an elicitation that did not complete, for tools that
// cannot go on without the answer. A question its Then ended with an error (reason
// tool_error) gives that error's payload.
func OutcomeError(o elicitation.Outcome) *Error {
	e := &Error{Reason: o.Reason.String(), Errors: o.Errors}
	var own *Error
	switch status := Status(o); {
	case o.Reason == elicitation.ToolError && errors.As(o.Err, &own):
		return own
	case status == "timeout":
		e.Code, e.Reason, e.Message = CodeTimeout, "timeout", "the person did not answer in time"
	case status == "declined":
		e.Code, e.Message = CodeDeclined, "the person declined to answer"
	case o.Reason == elicitation.MaxAttempts:
		e.Code, e.Message = CodeMaxRetries, fmt.Sprintf("no valid answer after %d attempts", o.Attempts)
	case o.Reason == elicitation.TooManyRounds:
		e.Code, e.Message = CodeTooManyRounds, fmt.Sprintf("the question was ended after %d rounds, the most one question may take; the tool kept asking for more", o.Rounds)
	case o.Reason == elicitation.TransportError:
		e.Code, e.Message = CodeFailed, "the question could not be delivered or answered"
		if o.Err != nil {
			e.Message += ": " + o.Err.Error()
		}
	case o.Reason == elicitation.ToolError:
		e.Code, e.Message = CodeFailed, "the tool could not go on with the answer"
		if o.Err != nil {
			e.Message += ": " + o.Err.Error()
		}
	case o.Reason == elicitation.InvalidResponse:
		e.Code, e.Message = CodeInvalidResponse, "the client's reply was not an answer to the question"
		if o.Err != nil {
			e.Message += ": " + o.Err.Error()
		}
	default:
		e.Code, e.Message = CodeCancelled, "the question was cancelled ("+o.Reason.String()+")"
	}
	return e
}
