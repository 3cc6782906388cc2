package ask

// Forwarding. A retry that lands on a node that does not hold its call goes, through the
// store's Relay (core NATS request/reply), to the node whose goroutine does, as the record
// names it; that node answers it as one of its own and sends back the result. A node that
// is not running ("no responders"), or no longer holds the call, is the signal to take the
// call over (durable_takeover.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// "cancel", or "extend" by Seconds (durable_manage.go); or "page", a request for a link this
	// node opened (durable_pages.go).
	Op      string       `json:"op,omitempty"`
	ID      string       `json:"id,omitempty"`
	Seconds int          `json:"seconds,omitempty"`
	Page    *pageRequest `json:"page,omitempty"`
	// Call is the call whose question ID woke on the sending node ("woke": the sleeper
	// here is dropped; durable_hibernate.go).
	Call string `json:"call,omitempty"`
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

// forward sends a retry to node and returns its result; store.ErrNoNode, errSilent or
// errNotHeld when node cannot answer it.
func (el *Elicitor) forward(ctx context.Context, node, owner string, p *mcp.CallToolParamsRaw) (result, error) {
	msg, err := json.Marshal(forwarded{Owner: owner, Params: p})
	if err != nil {
		return result{}, err
	}
	// The node answers once the round's result is known: at once, unless the retry waits
	// for the page (Options.PageWait), or the tool works on (calls UPS, say).
	b, err := el.sendWatched(ctx, node, msg, el.pageWait+30*time.Second)
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

// DefaultPingEvery and DefaultPingWait are Options.PingEvery and Options.PingWait's
// defaults: a frozen node's call is taken over about 2.5 s into the forward's wait.
const (
	DefaultPingEvery = time.Second
	DefaultPingWait  = 1500 * time.Millisecond
)

// errSilent: the node a request was sent to did not answer a ping within
// Options.PingWait. It holds its subscription, so it is not gone ("no responders"), but it
// is frozen (SIGSTOP), or cut off from NATS with its connection still open (which NATS
// notices only after minutes): it is taken for gone, and fencing stops it if it comes back.
var errSilent = errors.New("ask: the node does not answer")

// sendWatched sends msg to node over the relay and returns its answer, waiting at most
// wait. While it waits it pings node every el.pingEvery (the relay serves each request on
// a goroutine of its own, so a node answers pings while a request of its own works on): a
// ping that gets no answer in el.pingWait ends the wait with errSilent, one that hears
// there is no such node with store.ErrNoNode. A slow node that answers its pings is waited
// for, up to wait.
func (el *Elicitor) sendWatched(ctx context.Context, node string, msg []byte, wait time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel() // ends the send and the ping still out, if any
	// The ticker is made before the request goes out: a test on a mock clock that sees
	// the request arrive can move the clock to the first ping.
	tick := el.clk.Ticker(el.pingEvery)
	defer tick.Stop()
	type answer struct {
		b   []byte
		err error
	}
	sent := make(chan answer, 1)
	go func() {
		b, err := el.relay.Send(ctx, node, msg)
		sent <- answer{b, err}
	}()
	var pinged chan error // the ping out, if any: one at a time
	for {
		select {
		case a := <-sent:
			return a.b, a.err
		case <-tick.C:
			if pinged == nil {
				pinged = make(chan error, 1)
				go func() { pinged <- el.ping(ctx, node) }()
			}
		case err := <-pinged:
			pinged = nil
			if err == nil {
				continue
			}
			select {
			case a := <-sent: // answered meanwhile after all
				return a.b, a.err
			default:
			}
			if errors.Is(err, errSilent) {
				el.log.Warn("a node does not answer; taking its call over", "node", node, "waited", el.pingWait.String())
			}
			return nil, err
		}
	}
}

// ping asks node whether it runs: nil if it answers within el.pingWait, errSilent if it
// does not, store.ErrNoNode if no process serves it, ctx's error if ctx ends first.
func (el *Elicitor) ping(ctx context.Context, node string) error {
	pctx, cancel := el.clk.WithTimeout(ctx, el.pingWait)
	defer cancel()
	_, err := el.relay.Send(pctx, node, pingMessage)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case pctx.Err() != nil:
		return fmt.Errorf("%w: %s, for %s", errSilent, node, el.pingWait)
	}
	return err
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
