package ask

// What the Elicitor tells Options.OnEnd when a question ends: enough for a webhook event,
// with the answers limited to what may leave.

import (
	"slices"
	"strconv"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/validator"
)

// Ending is one question's end, as Options.OnEnd hears it.
type Ending struct {
	// QuestionID is the question's id, as list_elicitations showed it.
	QuestionID string
	// Key names this end the same on every node and after a replay: a 2026-07-28 question
	// taken over by another node ends there with another QuestionID but the same Key. An
	// event made of it keeps one id however often it is made.
	Key      string
	Tool     string
	Template string // the template the form came from (Question.Template), if any
	// Owner is an opaque id of whoever asked (store.OwnerDigest): the same owner, the same id.
	Owner    string
	State    elicitation.State
	Reason   elicitation.Reason
	Attempts int
	Created  time.Time
	Ended    time.Time
	// Answers are the answers to the question's own form's fields, less those asked on
	// elicitd's page (secrets, passwords, files), which never appear here; nil if none.
	Answers map[string]any
	// Sensitive names the form's fields asked on the page, for a consumer that filters too.
	Sensitive []string
}

// reportEnd tells Options.OnEnd that the question e, asked as q in call c (its n-th ask), has
// ended with o; not when it has not ended for the person: a node that stops keeps a recorded
// question open for another, a call taken over ends on the node that took it, and a question
// that never went out was never the person's. It returns false if OnEndErr said that the
// end it was told may be lost.
func (el *Elicitor) reportEnd(c *call, q Question, e *elicitation.Elicitation, n int, o elicitation.Outcome) bool {
	if el.onEnd == nil {
		return true
	}
	key := e.ID()
	if c.pull {
		if c.isFenced() || c.recorded() && el.stopping.Load() && o.State == elicitation.Cancelled && o.Reason == elicitation.Shutdown {
			return true
		}
		if !c.wentOut() {
			// Never given to the client: its first write failed (the store refused a new
			// question), this node stopped, or the request was gone (its client gave up:
			// client_gone) before it went out. The client sends its first call again, and
			// gets a question of its own.
			return true
		}
		key = c.id + "_q" + strconv.Itoa(n)
	}
	end := Ending{QuestionID: e.ID(), Key: key, Tool: o.Tool, Template: q.Template, Owner: store.OwnerDigest(c.owner),
		State: o.State, Reason: o.Reason, Attempts: o.Attempts, Created: o.Created, Ended: o.Ended}
	end.Answers, end.Sensitive = leaving(q.Form, o.Data)
	if c.pull && el.store != nil {
		// The call's next write that records an outcome carries it: a node serving that
		// outcome to a resend reports it too (durable_ends.go).
		c.carryEnd(end)
	}
	if c.pull && c.endDue(end) {
		return true // told once the answer's claim is recorded: not if another node took the call over
	}
	return el.onEnd(end) == nil
}

// leaving returns the answers in data to form's fields not asked on the page, and the names
// of those that are. An answer to any other field (a follow-up's) is left out: only what the
// form says may leave does.
func leaving(form *validator.Compiled, data map[string]any) (answers map[string]any, sensitive []string) {
	if form == nil {
		return nil, nil
	}
	for _, f := range form.Fields() {
		if f.NeedsPage() {
			sensitive = append(sensitive, f.Name)
			continue
		}
		if v, ok := data[f.Name]; ok {
			if answers == nil {
				answers = map[string]any{}
			}
			answers[f.Name] = v
		}
	}
	slices.Sort(sensitive)
	return answers, sensitive
}
