package ask

// The record as OnEnd's outbox. A pull-era question's end is told to OnEnd by the node that
// runs its call; with a store, the call's next write that records an outcome (its next
// round handed out, or its result) also carries that end (store.Record.Ends), at no cost of
// a write of its own. The node that writes it may never learn that it landed (a publish
// whose ack was lost), and may die before its OnEnd's event is queued; the client's
// identical resend then gets the recorded outcome on any node, and the node that serves it
// reports the ends the record carries. Told twice, an end keeps its Key (a webhook event,
// its id), and the outbox keeps one.

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
)

// wireEnding is an Ending as a record carries it.
type wireEnding struct {
	QuestionID string         `json:"id"`
	Key        string         `json:"key"`
	Tool       string         `json:"tool,omitempty"`
	Template   string         `json:"template,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	State      string         `json:"state"`
	Reason     string         `json:"reason,omitempty"`
	Attempts   int            `json:"attempts,omitempty"`
	Created    time.Time      `json:"created,omitzero"`
	Ended      time.Time      `json:"ended,omitzero"`
	Answers    map[string]any `json:"answers,omitempty"`
	Sensitive  []string       `json:"sensitive,omitempty"`
}

// encodeEnds is ends as a record carries them.
func encodeEnds(ends []Ending) (json.RawMessage, error) {
	w := make([]wireEnding, len(ends))
	for i, e := range ends {
		w[i] = wireEnding{QuestionID: e.QuestionID, Key: e.Key, Tool: e.Tool, Template: e.Template, Owner: e.Owner,
			State: e.State.String(), Reason: e.Reason.String(), Attempts: e.Attempts, Created: e.Created, Ended: e.Ended,
			Answers: e.Answers, Sensitive: e.Sensitive}
	}
	return json.Marshal(w)
}

// decodeEnds is the ends a record carries. Numbers in answers stay as written
// (json.Number): an integer past 2^53 is not rounded.
func decodeEnds(b json.RawMessage) ([]Ending, error) {
	var w []wireEnding
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&w); err != nil {
		return nil, err
	}
	ends := make([]Ending, len(w))
	for i, x := range w {
		ends[i] = Ending{QuestionID: x.QuestionID, Key: x.Key, Tool: x.Tool, Template: x.Template, Owner: x.Owner,
			State: parseState(x.State), Reason: parseReason(x.Reason), Attempts: x.Attempts, Created: x.Created,
			Ended: x.Ended, Answers: x.Answers, Sensitive: x.Sensitive}
	}
	return ends, nil
}

// parseState is the State named s (its String); Cancelled if none is.
func parseState(s string) elicitation.State {
	for i := range elicitation.NumStates {
		if st := elicitation.State(i); st.String() == s {
			return st
		}
	}
	return elicitation.Cancelled
}

// parseReason is the Reason named s (its String); None if none is.
func parseReason(s string) elicitation.Reason {
	for i := range elicitation.NumReasons {
		if r := elicitation.Reason(i); r.String() == s {
			return r
		}
	}
	return elicitation.None
}

// carryEnd keeps e, the end of one of c's questions, for c's next write that records an
// outcome.
func (c *call) carryEnd(e Ending) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.carry = append(c.carry, e)
}

// carried (c.wmu held: a write's change) is what a write that records out carries of the
// ends of c's questions (Record.Ends): those not carried yet. They are carried once the
// write lands (writeLocked); a write too large with them goes without (noEnds).
func (c *call) carried(out json.RawMessage) json.RawMessage {
	if out == nil || len(c.carry) == 0 || c.noEnds {
		return nil
	}
	b, err := encodeEnds(c.carry)
	if err != nil {
		c.el.log.Warn("a question's end does not encode for its record; its node alone reports it", "id", c.id, "error", err.Error())
		return nil
	}
	c.carrying = true
	return b
}

// reportRecorded tells OnEnd of the ends rec carries: this node serves rec's Outcome to
// a resend, and the node that recorded it may never have told them.
func (el *Elicitor) reportRecorded(rec store.Record) {
	if el.onEnd == nil || len(rec.Ends) == 0 {
		return
	}
	ends, err := decodeEnds(rec.Ends)
	if err != nil {
		el.log.Warn("the question ends a record carries do not decode", "id", rec.ID, "error", err.Error())
		return
	}
	for _, e := range ends {
		if e.Key != "" {
			el.onEnd(e)
		}
	}
}
