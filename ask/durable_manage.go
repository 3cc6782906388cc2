package ask

// Managing questions across nodes. list_elicitations, cancel_elicitation and
// extend_elicitation act on the caller's own questions on every node that shares the
// store: the node a call reaches lists the open 2026-07-28 questions the store holds for
// the caller beside its own, and forwards a cancel or an extend of a question another node
// holds to that node. When that node is gone, the record itself is changed, by
// compare-and-set with the next epoch (so a node that comes back cannot act on it): a
// cancel ends it, and the client's retry gets the cancellation; an extend moves its
// deadline, which the node that takes it over keeps.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/store"
)

// remoteRecords returns owner's open questions that the store holds and this node's
// registry does not (other nodes hold them, or held them and are gone).
func (el *Elicitor) remoteRecords(owner string) []store.Record {
	if el.store == nil {
		return nil
	}
	recs, err := el.store.List(context.Background(), owner)
	if err != nil {
		el.log.Warn("cannot list the questions other nodes hold", "error", err.Error())
		return nil
	}
	var out []store.Record
	for _, r := range recs {
		if r.State != "active" || r.Question == "" {
			continue
		}
		if o, ok := el.reg.Owner(r.Question); ok && o == owner {
			continue // this node's own: listed from its registry
		}
		out = append(out, r)
	}
	return out
}

// manageRemote does op on a question another node holds: there, or, if that node is gone,
// on its record.
func (el *Elicitor) manageRemote(owner string, op forwarded) (any, error) {
	ctx := context.Background()
	for range 5 {
		rec, found := el.findRemote(owner, op.ID)
		if !found {
			return nil, managed(registry.ErrNotFound, op.ID)
		}
		if el.relay != nil && rec.Node != el.node {
			msg, err := json.Marshal(op)
			if err != nil {
				return nil, err
			}
			// Answered at once by a node that runs; one that is frozen or cut off is
			// treated as gone (errSilent), as for a retry (durable_forward.go).
			b, err := el.sendWatched(ctx, rec.Node, msg, manageWait)
			if err == nil {
				var r opReply
				if err := json.Unmarshal(b, &r); err != nil {
					return nil, Errorf(CodeFailed, "bad_reply", "the node holding the question answered what does not decode")
				}
				if r.Err != nil {
					return nil, r.Err
				}
				return r.Out, nil
			}
			if !errors.Is(err, store.ErrNoNode) && !errors.Is(err, errSilent) {
				return nil, storeError(err)
			}
		}
		out, err := el.manageRecord(ctx, rec, op)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return out, err
	}
	return nil, Errorf(CodeStoreUnavailable, "contended", "the question is changing too fast; retry")
}

// manageWait bounds the wait for a node that answers its pings to do a cancel or an extend.
const manageWait = 30 * time.Second

// findRemote finds owner's open question id among the records other nodes hold. A read
// may be served by a replica a moment behind the write that made the record (a follower
// of a NATS cluster), so a question not found is looked for again for a little while
// before it is said not to exist.
func (el *Elicitor) findRemote(owner, id string) (store.Record, bool) {
	for try := range staleReads {
		for _, r := range el.remoteRecords(owner) {
			if r.Question == id {
				return r, true
			}
		}
		if try < staleReads-1 {
			time.Sleep(time.Duration(try+1) * 50 * time.Millisecond) // real time: a replica's lag
		}
	}
	return store.Record{}, false
}

// staleReads is how many times findRemote reads before it gives up (about 0.5 s in all).
const staleReads = 4

// extendDue moves rec's question's due time d later, to DefaultMaxLifetime after created at
// the most, and its Deadline the retention after that; false, changing nothing, if its due
// time has passed (the question has ended).
func (el *Elicitor) extendDue(rec *store.Record, created time.Time, d time.Duration) bool {
	if !rec.Due.After(el.clk.Now()) {
		return false
	}
	rec.Due = rec.Due.Add(d)
	if limit := created.Add(elicitation.DefaultMaxLifetime); rec.Due.After(limit) {
		rec.Due = limit
	}
	rec.Deadline = rec.Due.Add(el.retention())
	return true
}

// manageRecord does op on the record of a question whose node is gone.
func (el *Elicitor) manageRecord(ctx context.Context, rec store.Record, op forwarded) (any, error) {
	next := rec
	next.Node, next.Epoch = el.node, rec.Epoch+1
	var out any
	var end *Ending // the question's, when op ends it: its node is gone, and never reports it
	switch op.Op {
	case "cancel":
		ended, e, err := el.endRecord(rec, elicitation.Cancelled, elicitation.Operator)
		if err != nil {
			return nil, err
		}
		next, end = ended, &e
		out = map[string]any{"id": op.ID, "state": "cancelled"}
	case "extend":
		if !el.extendDue(&next, store.QuestionCreated(rec), time.Duration(op.Seconds)*time.Second) {
			return nil, Errorf(CodeNotFound, "finished", "question %q has already ended", op.ID)
		}
		out = map[string]any{"id": op.ID, "deadline": next.Due.UTC().Format(time.RFC3339)}
	default:
		return nil, Errorf(CodeFailed, "bad_op", "unknown operation %q", op.Op)
	}
	keepDeadline(&next)
	if _, err := el.store.Update(ctx, next); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		return nil, storeError(err)
	}
	if end != nil && el.onEnd != nil {
		el.onEnd(*end) // also carried by the record, for a write whose answer was lost
	}
	return out, nil
}

// opReply is a node's answer to a forwarded operation.
type opReply struct {
	Out any    `json:"out,omitempty"`
	Err *Error `json:"err,omitempty"`
}

// serveOp does a forwarded operation on a question this node holds.
func (el *Elicitor) serveOp(f forwarded) []byte {
	var out any
	var err error
	switch f.Op {
	case "cancel":
		if e := el.reg.Cancel(f.Owner, f.ID, elicitation.Operator); e != nil {
			err = managed(e, f.ID)
		} else {
			out = map[string]any{"id": f.ID, "state": "cancelled"}
		}
	case "woke":
		if el.dropSleeper(f.Owner, f.ID, f.Call) {
			el.tally.moved.Add(1) // woken on the node that told us
		}
		out = map[string]any{"id": f.ID}
	case "extend":
		if f.Seconds < 1 || f.Seconds > MaxExtendSeconds {
			err = Errorf(CodeInvalidArgument, "seconds_out_of_range", "seconds must be between 1 and %d, got %d", MaxExtendSeconds, f.Seconds)
			break
		}
		d, e := el.reg.Extend(f.Owner, f.ID, time.Duration(f.Seconds)*time.Second)
		if e != nil {
			err = managed(e, f.ID)
		} else {
			el.extendRecord(f.ID, d)
			out = map[string]any{"id": f.ID, "deadline": d.UTC().Format(time.RFC3339)}
		}
	default:
		err = Errorf(CodeFailed, "bad_op", "unknown operation %q", f.Op)
	}
	r := opReply{Out: out}
	if err != nil {
		r.Err = asError(err)
	}
	b, _ := json.Marshal(r)
	return b
}

// asError returns err as an *Error: itself, or ELICITATION_FAILED with its text.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(CodeFailed, "failed", "%s", err.Error())
}

// extendRecord moves the record of the call asking question id to deadline d, so that the
// record lives as long as its question.
func (el *Elicitor) extendRecord(id string, d time.Time) {
	if el.store == nil {
		return
	}
	el.calls.each(func(c *call) {
		c.mu.Lock()
		asking := c.asking.Elicitation != nil && c.asking.Elicitation.ID() == id
		c.mu.Unlock()
		if !asking || !c.recorded() {
			return
		}
		if err := c.write(context.Background(), func(r *store.Record) error {
			if d.After(r.Due) {
				r.Due, r.Deadline = d, d.Add(el.retention())
			}
			return nil
		}); err != nil {
			el.log.Warn("an extended question's record could not be moved", "id", id, "error", err.Error())
		}
	})
}
