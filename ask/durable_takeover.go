package ask

// Taking a call over. A pull-era handler is a Go stack blocked in Ask: it cannot move. When
// a retry comes for a call whose node is gone (it does not answer on the relay, or there is
// none) or no longer holds it, the node the retry reached takes the call over: one
// compare-and-set makes it the record's node with the next epoch (so every later write of
// the former node fails, and that node stands down), and claims the retry's round in the
// same write. It then runs the tool's handler again from its start, and answers each
// prompt up to the last claimed round from the recorded log, without handing it out: the
// same answers bring the same re-prompts, kept answers and attempt counts, and the first
// prompt past the log is handed out as the retry's result. A prompt whose digest differs
// from the log's ends the call with CodeReplayDiverged, rather than answer it from the
// wrong round. A round asked on elicitd's page has no recorded answer (its secrets and
// files are never written to the store): when it is the last round of the log it is asked
// again, on a new link; before other rounds, the replay cannot go on (CodeReplayDiverged).
// Only tools declared Replayable are taken over.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
)

// resumeStored is a retry for a call this node does not hold: the store says where it is
// and how far it got; the retry is answered from the record (an identical resend), by the
// node holding the call (forwarded), or by taking the call over.
func (el *Elicitor) resumeStored(ctx context.Context, owner string, st requestState, req *mcp.CallToolRequest, o toolOptions, start handler) result {
	replayable := o.replayable
	resp, has := req.Params.InputResponses[inputKey(st.Round)]
	sum := ""
	if has {
		sum = responseSum(resp)
	}
	args := argsDigest(req.Params.Arguments)
	latest := false // read from the leader: a read contradicted the state, or a write conflicted
	silent := ""    // a node that did not answer its pings while this retry waited for it
	for range 5 {
		rec, err := el.read(ctx, owner, st.ID, latest)
		if !latest && (errors.Is(err, store.ErrNotFound) || err == nil && st.Round > rec.Handed) {
			// st is signed for a round the record was written with before st went out: a
			// replica that has not applied that write yet answered. Read what it left.
			latest = true
			rec, err = el.read(ctx, owner, st.ID, true)
		}
		absent := false
		if errors.Is(err, store.ErrNotFound) && st.Behind != nil && el.clk.Now().UnixMilli() < st.Behind.Until {
			// A first round whose record, written behind its prompt, never landed (its node
			// was killed first): the requestState says what it was.
			rec, err, absent = st.Behind.record(st, owner, el), nil, true
		}
		if err != nil {
			return fail(storeError(err))
		}
		if rec.ArgsDigest != args || rec.Tool != req.Params.Name {
			return fail(stateError("foreign", otherCall))
		}
		resend := has && st.Round == rec.Claimed && sum == rec.ClaimSum
		switch {
		case resend && rec.Outcome != nil:
			r, _, err := decodeResult(rec.Outcome)
			if err != nil {
				return fail(Errorf(CodeFailed, "unreadable_record", "the recorded result does not decode: %v", err))
			}
			el.reportRecorded(rec) // its node may never have: its write's answer lost, or it died
			return r
		case !resend && st.Round <= rec.Claimed:
			return fail(errUsed)
		case !resend && st.Round != rec.Handed:
			return fail(stateError("stale_round", "the requestState is for question round %d, but round %d is current", st.Round, rec.Handed))
		case !has:
			return fail(stateError("missing_response", "inputResponses has no %q, the response to the current question", inputKey(st.Round)))
		case rec.State == "ended" && st.Round == rec.Handed && rec.Outcome != nil:
			// Ended while its round was out (cancelled on another node, say): the retry
			// gets how.
			r, _, err := decodeResult(rec.Outcome)
			if err != nil {
				return fail(Errorf(CodeFailed, "unreadable_record", "the recorded result does not decode: %v", err))
			}
			el.reportRecorded(rec)
			return r
		case rec.State == "ended":
			return fail(stateError("finished", "that question has already ended; call the tool again without requestState"))
		}
		var r result
		if rec.State == stateClosed {
			// Ended while it hibernated, and reported then: its result is made now, by
			// the tool's handler, replayed into a question that has ended (durable_hibernate.go).
			r, err = el.closeOut(ctx, rec, st, req, replayable, start)
		} else {
			if r, done := el.toHolder(ctx, rec, absent, &silent, owner, req); done {
				return r
			}
			if !replayable {
				return fail(stateError("finished", "the server that asked that question has stopped, and %s cannot be taken over (it is not replayable); call the tool again without requestState", req.Params.Name))
			}
			r, err = el.takeOver(ctx, rec, absent, st, req, resp, sum, resend, o.pure, start)
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			// Another node moved it first, or the compare-and-set failed and the store
			// said it is gone: look again, at what the leader has.
			latest = true
			continue
		}
		if err != nil {
			return fail(storeError(err))
		}
		return r
	}
	return fail(Errorf(CodeStoreUnavailable, "contended", "the question is changing too fast to take over; send the same request again"))
}

// toHolder forwards the retry req to the node holding rec's call, while it runs (the round is
// open, or claimed and its result lost with that node): done with the answer r. Not for a
// call asleep (no node holds it), one this node holds, or one not recorded (absent); nor to
// silent, a node that did not answer its pings while this retry waited for it. A node that
// is gone or silent (silent is then set) is for the caller to take the call over from.
func (el *Elicitor) toHolder(ctx context.Context, rec store.Record, absent bool, silent *string, owner string, req *mcp.CallToolRequest) (r result, done bool) {
	if absent || rec.Asleep || rec.Node == el.node || el.relay == nil || rec.Node == *silent {
		return result{}, false
	}
	r, err := el.forward(ctx, rec.Node, owner, req.Params)
	switch {
	case err == nil:
		el.tally.forwarded(ForwardAnswered)
		return r, true
	case errors.Is(err, errSilent):
		// Frozen or cut off: taken over as if gone. Should the take-over lose to a write
		// of that node's (it claimed the round just before it froze), the record is read
		// again, and not forwarded to it again.
		el.tally.forwarded(ForwardSilent)
		*silent = rec.Node
		return result{}, false
	case errors.Is(err, store.ErrNoNode) || errors.Is(err, errNotHeld):
		el.tally.forwarded(ForwardGone)
		return result{}, false
	}
	el.tally.forwarded(ForwardFailed)
	return fail(storeError(err)), true
}

// read reads owner's record id; latest: as the last acknowledged write left it, where the
// store's plain reads may come from a replica behind it (store.Replicated).
func (el *Elicitor) read(ctx context.Context, owner, id string, latest bool) (store.Record, error) {
	if r, ok := el.store.(store.Replicated); ok && latest {
		return r.GetLatest(ctx, owner, id)
	}
	return el.store.Get(ctx, owner, id)
}

// takeOver makes this node rec's, claiming st's round for resp (unless resend: it was
// claimed with it already), and replays the handler. absent: rec is not in the store (it
// was made from the requestState), and is created there; ErrConflict if it is there by now.
func (el *Elicitor) takeOver(ctx context.Context, rec store.Record, absent bool, st requestState, req *mcp.CallToolRequest, resp mcp.InputResponse, sum string, resend, pure bool, start handler) (result, error) {
	next := rec
	next.Node, next.Epoch, next.Asleep = el.node, rec.Epoch+1, false
	if !resend {
		raw, err := json.Marshal(resp)
		if err != nil {
			return fail(stateError("unreadable_response", "inputResponses[%q] does not encode: %v", inputKey(st.Round), err)), nil
		}
		next.Claimed, next.ClaimSum, next.Outcome, next.Ends = st.Round, sum, nil, nil
		next.Log = append(slices.Clip(rec.Log), store.Round{Prompt: rec.Prompt, Answers: raw, At: el.clk.Now()})
	}
	c := el.replayCall(req, rec, &next)
	c.claimed, c.claimSum, c.claimRsp, c.slot = st.Round, sum, resp, newClaimSlot()
	if r, held, err := el.holdReplay(ctx, c, st, req, resp, true); held {
		return r, err
	}
	c.pure = pure
	if pure && rec.Asleep && !resend && !absent {
		return el.wakePure(ctx, c, rec, st, start)
	}
	keepDeadline(&next)
	var rev uint64
	var err error
	if absent {
		rev, err = el.store.Create(context.WithoutCancel(ctx), next)
		if errors.Is(err, store.ErrExists) {
			err = fmt.Errorf("%w: %w", store.ErrConflict, err) // written meanwhile: read it
		}
	} else {
		rev, err = el.store.Update(context.WithoutCancel(ctx), next)
	}
	if err != nil {
		c.dropTakeOver()
		return result{}, err
	}
	c.rec.Revision = rev
	if rec.Asleep {
		c.heldHere = el.woke(rec) // before the replay asks its question again, under its id
	} else {
		from := rec.Node
		if absent {
			from = "(not recorded)"
		}
		el.tally.takeOvers.Add(1)
		el.log.Info("took a question over", "id", rec.ID, "from", from, "epoch", next.Epoch, "rounds", len(next.Log))
	}
	el.begin(ctx, c, start)
	r := c.next(ctx)
	c.settle(st.Round, r)
	return r, nil
}

// replayCall is the call of rec that this node is to run again from the log, writing next.
func (el *Elicitor) replayCall(req *mcp.CallToolRequest, rec store.Record, next *store.Record) *call {
	c := el.newCall(req, rec.Owner, rec.ID, true)
	c.rec, c.replay, c.until, c.liveAsk, c.question = next, next.Log, rec.Due, rec.Asks, rec.Question
	c.asked = store.QuestionCreated(rec)
	return c
}

// holdReplay holds c here before the compare-and-set that makes its record this node's: a
// resend that another node forwards here once the record names this node finds the call,
// and waits for its outcome, rather than take it over a second time. So does a request that
// reached this node with this one and is taking the call over too: the first to be held
// answers both (the other's round is claimed already: an identical resend waits for its
// outcome, another is a second use). held: a call of its id was held here already, and
// the request (st, resp) went to it, which answered r; or err, ErrConflict: look again.
func (el *Elicitor) holdReplay(ctx context.Context, c *call, st requestState, req *mcp.CallToolRequest, resp mcp.InputResponse, has bool) (r result, held bool, err error) {
	other, added := el.calls.addNew(c)
	if added {
		return result{}, false, nil
	}
	r, elsewhere := other.resume(ctx, st, req.Params.Arguments, resp, has)
	if elsewhere {
		return result{}, true, fmt.Errorf("%w: the call moved on", store.ErrConflict)
	}
	return r, true, nil
}

// dropTakeOver drops c, a take-over whose write failed (another node moved the call first,
// or the store did not answer), before its handler began. The requests that found it held
// and wait for its round (identical resends) look at the store again: the round is the
// store's to answer, not "moved".
func (c *call) dropTakeOver() {
	c.wmu.Lock()
	c.fenced = true
	c.wmu.Unlock()
	c.mu.Lock()
	if c.slot != nil { // a close-out (closeOut) claims nothing: none wait on it
		c.slot.fill(fail(storeError(errFenced)))
	}
	c.mu.Unlock()
	c.el.calls.end(c, endedCall{}, false)
}

// replaying reports whether c's next prompt is answered from its log.
func (c *call) replaying() bool { return c.replayed < len(c.replay) }

// pageAgain reports whether pr, the last round of the log, was asked on elicitd's page:
// the page's answers are not recorded (they are secrets and files), so the round is asked
// again, on a new link, as the next round. The log's entry for it is used up.
func (c *call) pageAgain(pr elicitation.Prompt) bool {
	if !isPage(pr) || c.replayed != len(c.replay)-1 || promptSum(pr) != c.replay[c.replayed].Prompt {
		return false
	}
	c.replayed++
	c.mu.Lock()
	c.handed++ // the round it was; hand numbers the new one
	c.mu.Unlock()
	return true
}

// replayRound answers pr from the log's next round; stop when the call ends instead, with
// r, because pr is not what the log says was asked.
func (c *call) replayRound(pr elicitation.Prompt) (r result, stop bool) {
	logged := c.replay[c.replayed]
	c.replayed++
	c.mu.Lock()
	c.handed++
	n := c.handed
	c.asking = pr
	c.mu.Unlock()
	var res mcp.ElicitResult
	switch {
	case isPage(pr):
		return c.diverged(n, "it was asked on the page, whose answers are not recorded, before other rounds"), true
	case promptSum(pr) != logged.Prompt:
		return c.diverged(n, "the tool asked something else"), true
	case json.Unmarshal(logged.Answers, &res) != nil:
		return c.diverged(n, "its recorded answer does not decode"), true
	}
	_ = pr.Elicitation.Answer(toAnswer(pr.Round, &res, nil))
	c.el.tally.replayedRounds.Add(1)
	return result{}, false
}

// diverged ends a replayed call whose round n is not what its log says.
func (c *call) diverged(n int, why string) result {
	c.el.tally.divergences.Add(1)
	r := fail(Errorf(CodeReplayDiverged, "replay_diverged",
		"the question was taken over by another node, and replaying it went another way at round %d (%s); call the tool again without requestState", n, why))
	if err := c.recordEnd(context.Background(), r); err != nil {
		c.el.log.Warn("a diverged call's end could not be recorded", "id", c.id, "error", err.Error())
	}
	c.wmu.Lock()
	c.over = true // the handler's own end, which the kill brings, is not its result
	c.wmu.Unlock()
	c.kill(elicitation.ToolError)
	c.el.forget(c, &r)
	return r
}

// record is the record of st's first round as the node that handed it out would have
// written it: what recordHandBehind writes, but for the question's id and title, which the
// replay writes with its next step (and Created, to the second: when st was signed).
func (f *firstRound) record(st requestState, owner string, el *Elicitor) store.Record {
	due := time.UnixMilli(f.Due)
	return store.Record{ID: st.ID, Owner: owner, Tool: st.Tool, ArgsDigest: digestString(f.Args), Era: "pull",
		Epoch: 1, Created: time.Unix(st.Expires, 0).Add(-stateLifetime), Due: due, Deadline: due.Add(el.retention()), Keep: f.keep(), Handed: 1,
		Prompt: digestString(f.Prompt), State: "active", Attempts: 1, Asks: 1}
}
