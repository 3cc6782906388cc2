package ask

// The push era (2025-11-25 and earlier): each prompt is an elicitation/create request on
// the client's session.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/internal/stack"
	"github.com/elicitd/elicitd/validator"
)

// pushPrompter sends each prompt as an elicitation/create request on its own goroutine, under
// ctx, which is cancelled once the elicitation has ended.
//
// Elicit is called without a RequestedSchema, so the SDK hands back the client's answer as it
// came instead of checking it against the schema and returning only an error: every accepted
// answer reaches the form's own size check, normaliser and validator, exactly as in the pull
// era. attachWireSchema puts the schema on the request that goes out.
type pushPrompter struct {
	ss    *mcp.ServerSession
	ctx   context.Context
	links *links // the question's pages, when it may use them
}

func (p pushPrompter) Prompt(pr elicitation.Prompt) {
	if p.links != nil && isPage(pr) {
		go p.promptPage(pr)
		return
	}
	go func() {
		// Encoding the request takes it to 16 KiB before it waits for the reply.
		stack.Grow16K()
		ctx := context.WithValue(p.ctx, wireSchemaKey{}, pr.Form.WireSchema())
		params := elicitParams(pr)
		params.RequestedSchema = nil // attachWireSchema sends it; the SDK must not check the answer
		res, err := p.ss.Elicit(ctx, params)
		p.settle(pr, res, err)
	}()
}

// settle hands the client's reply to a prompt (or the error instead of one) to its question,
// unless the question has ended, which is why the request was cancelled.
func (p pushPrompter) settle(pr elicitation.Prompt, res *mcp.ElicitResult, err error) {
	switch {
	case p.ctx.Err() != nil:
	case clientGone(err):
		// The client went away with the question open. The tool call's wait sees its
		// context end for the same reason; whichever is first, the reason is the same.
		_ = pr.Elicitation.Cancel(elicitation.ClientGone)
	default:
		_ = pr.Elicitation.Answer(toAnswer(pr.Round, res, err))
	}
}

// clientGone reports whether err says the client has gone: the connection closed or ended,
// or a write to it found the pipe broken.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// FrameTooLarge is for authors of an MCP transport that limits the size of a message, as
// elicitd's own stdio transport does; a program that serves with the SDK's transports
// never needs it. Such a transport, when a push-era reply is too large to read, delivers
// in its place a JSON-RPC error response with this message (and the reply's id). Ask
// takes that error as an answer too large to check, which earns a re-prompt like any
// invalid answer, rather than as a failed transport, which would end the question.
const FrameTooLarge = "the message is larger than the frame limit"

// wireSchemaKey carries a push-era prompt's wire schema from pushPrompter to attachWireSchema.
type wireSchemaKey struct{}

// attachWireSchema is a sending middleware: an elicitation/create sent by pushPrompter goes
// out with its form's wire schema as requestedSchema. It sends a copy of the params, so the
// SDK's Elicit, which still holds the originals without a schema, does not check the answer.
func attachWireSchema(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if schema, ok := ctx.Value(wireSchemaKey{}).(json.RawMessage); ok && method == "elicitation/create" {
			ss, isServer := req.GetSession().(*mcp.ServerSession)
			if p, ok := req.GetParams().(*mcp.ElicitParams); ok && isServer && p.RequestedSchema == nil {
				params := *p
				params.RequestedSchema = schema
				req = &mcp.ServerRequest[*mcp.ElicitParams]{Session: ss, Params: &params}
			}
		}
		return next(ctx, method, req)
	}
}

func toAnswer(round int, res *mcp.ElicitResult, err error) elicitation.Answer {
	a := elicitation.Answer{Round: round}
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && we.Message == FrameTooLarge:
		a.Action = elicitation.Accept
		a.Rejections = []validator.FieldError{{Label: "Answer", Constraint: "size",
			Message: "Answer: is too large to receive (the limit is the transport's frame size)"}}
	case err != nil:
		a.Action, a.Err = elicitation.Failed, err
	case res == nil:
		a.Action, a.Err = elicitation.Failed, errors.New("empty elicitation result")
	case res.Action == "accept":
		a.Action, a.Content = elicitation.Accept, res.Content
		if a.Content == nil {
			a.Content = map[string]any{}
		}
	case res.Action == "decline":
		a.Action = elicitation.Decline
	case res.Action == "cancel":
		a.Action = elicitation.Cancel
	default:
		a.Action, a.Err = elicitation.Unusable, fmt.Errorf("the client answered with action %q; expected accept, decline or cancel", res.Action)
	}
	return a
}
