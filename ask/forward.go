package ask

// Forwarding. A retry that lands on a node that does not hold its call goes, through the
// store's Relay (core NATS request/reply), to the node whose goroutine does, as the record
// names it; that node answers it as one of its own and sends back the result. A node that
// is not running ("no responders"), or no longer holds the call, is the signal to take the
// call over (replay.go).

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/store"
)

// errNotHeld: the node a retry was forwarded to does not hold its call any more.
var errNotHeld = errors.New("ask: the node no longer holds the call")

// forwarded is a retry as the relay carries it: the caller's owner, as the receiving node
// judged it, and the call's parameters.
type forwarded struct {
	Owner  string                 `json:"owner"`
	Params *mcp.CallToolParamsRaw `json:"params,omitempty"`
	// Op, when set, is a management operation on the owner's question ID instead:
	// "cancel", or "extend" by Seconds (cluster.go); or "page", a request for a link this
	// node opened (pageforward.go).
	Op      string       `json:"op,omitempty"`
	ID      string       `json:"id,omitempty"`
	Seconds int          `json:"seconds,omitempty"`
	Page    *pageRequest `json:"page,omitempty"`
}

// serveRelay has the relay, if any (Options.Relay, or the store's own), bring this node
// the retries other nodes forward to it.
func (el *Elicitor) serveRelay(s store.Store) {
	if el.relay == nil {
		if r, ok := s.(store.Relay); ok {
			el.relay = r
		}
	}
	if el.relay == nil {
		return
	}
	stop, err := el.relay.Serve(el.node, el.serveForwarded)
	if err != nil {
		// Without it the other nodes take this node's calls over on their retries.
		el.log.Warn("cannot serve retries forwarded by other nodes", "node", el.node, "error", err.Error())
		return
	}
	el.stopRelay = stop
	el.routePages()
	el.startRoster()
}

// forward sends a retry to node and returns its result; store.ErrNoNode or errNotHeld when
// node cannot answer it.
func (el *Elicitor) forward(ctx context.Context, node, owner string, p *mcp.CallToolParamsRaw) (result, error) {
	msg, err := json.Marshal(forwarded{Owner: owner, Params: p})
	if err != nil {
		return result{}, err
	}
	// The node answers once the round's result is known: at once, unless the retry waits
	// for the page (Options.PageWait).
	ctx, cancel := context.WithTimeout(ctx, el.pageWait+30*time.Second)
	defer cancel()
	b, err := el.relay.Send(ctx, node, msg)
	if err != nil {
		return result{}, err
	}
	r, notHeld, err := decodeResult(b)
	switch {
	case err != nil:
		return result{}, err
	case notHeld:
		return result{}, errNotHeld
	}
	return r, nil
}

// serveForwarded answers a retry another node forwarded: checked again here as any retry
// is, and handed to the call this node holds.
func (el *Elicitor) serveForwarded(ctx context.Context, msg []byte) []byte {
	reply := func(r result) []byte {
		b, err := encodeResult(r)
		if err != nil {
			b, _ = encodeResult(fail(Errorf(CodeFailed, "unencodable", "the result does not encode: %v", err)))
		}
		return b
	}
	var f forwarded
	if err := json.Unmarshal(msg, &f); err != nil || (f.Params == nil && f.Op == "") {
		return reply(fail(Errorf(CodeFailed, "bad_forward", "a forwarded request does not decode")))
	}
	if f.Op == "ping" {
		return []byte(`{}`)
	}
	if f.Op == "page" && f.Page != nil {
		return el.servePage(ctx, f.Page)
	}
	if f.Op != "" {
		return el.serveOp(f)
	}
	st, e := el.openState(f.Params, f.Owner)
	if e != nil {
		return reply(fail(e))
	}
	c, _ := el.calls.find(st.ID)
	if c == nil {
		b, _ := json.Marshal(wireResult{NotHeld: true})
		return b
	}
	el.busy.begin()
	defer el.busy.end()
	resp, has := f.Params.InputResponses[inputKey(st.Round)]
	// Not bounded by the relay's context: its end (this node stopping) must not end the
	// call as if its client had cancelled it; Close ends it for the right reason.
	r, elsewhere := c.resume(context.WithoutCancel(ctx), st, f.Params.Arguments, resp, has)
	if elsewhere {
		b, _ := json.Marshal(wireResult{NotHeld: true})
		return b
	}
	return reply(r)
}
