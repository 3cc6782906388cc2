package ask

// What a driver of the pull era that is not the person's client asks of a durable call:
// package tasks, which makes a tool's 2026-07-28 calls for a task's client and keeps the
// task in a record of its own. The call itself is the pull era's (pull.go), and its life
// in the store (durable*.go) is every pull-era call's: a task adds no second copy of it,
// only these few questions it cannot answer from the wire.
//
//   - FirstCall names the question a first call may ask, so that a node taking over a
//     task whose first call's node died can drop that question (DropUnseen) before it
//     makes the call again;
//   - QuestionEnded says whether the question a round answers has ended (its deadline,
//     or a cancel), which the person's own client would hear in its next round;
//   - Retryable tells a result that asks for the same request again (the store away,
//     the node stopping, the call moved) from the tool's own.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
)

type firstCallKey struct{}

// firstCall is a first call made under FirstCall.
type firstCall struct {
	id         string
	replayable atomic.Bool
}

// FirstCall returns ctx for a 2026-07-28 first call (without requestState) whose question,
// if it asks one, is to have the id question: a driver of the pull era that is not the
// person's client (package tasks) names it, so that should the node making the call be gone
// before its client hears of the question, another node can drop it (DropUnseen) and make
// the call again. The id must be new, unguessable and a valid store id; it is used with a
// store only. replayable reports, once the call has begun, whether its tool is Replayable
// and the Elicitor has a store: whether it may be made again on another node.
func (el *Elicitor) FirstCall(ctx context.Context, question string) (_ context.Context, replayable func() bool) {
	fc := &firstCall{id: question}
	return context.WithValue(ctx, firstCallKey{}, fc), fc.replayable.Load
}

// DropUnseen removes owner's question id, asked by a first call (FirstCall) whose client
// never heard of it: deleted if no round of it was claimed, whichever node holds it, or kept
// from being written later if it is not there. A store that does not answer is asked again,
// a little later each time, until it does. Without a store it does nothing.
func (el *Elicitor) DropUnseen(owner, id string) {
	if el.store == nil {
		return
	}
	(&call{el: el, owner: owner, id: id}).dropLanded()
}

// QuestionEnded reports whether the question that the round req's requestState answers has
// ended without its answer (timed out, or cancelled), so that the call's next request gets
// the tool's result for that end whatever it answers: for a driver of the pull era that is
// not the person's client (package tasks), which learns of an end only by asking. It reads
// the call's record, or, without a store, the call this process holds. A requestState it
// cannot use counts as ended: the next request hears why.
func (el *Elicitor) QuestionEnded(ctx context.Context, req *mcp.CallToolRequest) bool {
	owner := el.Owner(req)
	st, e := el.openState(req.Params, owner)
	if e != nil {
		return true
	}
	c, ended := el.calls.find(st.ID)
	if c != nil {
		c.mu.Lock()
		how := c.how
		c.mu.Unlock()
		if strings.HasPrefix(how, elicitation.TimedOut.String()) || strings.HasPrefix(how, elicitation.Cancelled.String()) {
			return true
		}
		if el.store == nil || !c.recorded() {
			return false
		}
	}
	if el.store == nil {
		return c == nil || ended.how != ""
	}
	rec, err := el.read(ctx, owner, st.ID, false)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return c == nil
	case err != nil:
		return false // the store did not answer: asked again later
	}
	return rec.State == stateClosed || rec.State == "ended"
}

// Retryable reports whether res, a tool call's result, is this package's answer to a
// request it could not serve now, whose question is not over: the store away, the node
// stopping, or the call moved to another node. The same request, sent again (here, or to
// another node), goes on. For a driver of the pull era that is not the client (package
// tasks), which resends it itself.
func Retryable(res *mcp.CallToolResult) bool {
	if res == nil || !res.IsError {
		return false
	}
	var p struct {
		Code   string `json:"code"`
		Reason string `json:"reason"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return false
	}
	return p.Code == CodeStoreUnavailable || p.Code == CodeStopping || p.Code == CodeInvalidRequestState && p.Reason == "moved"
}
