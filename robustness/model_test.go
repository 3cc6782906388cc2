package robustness

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The model of one pull-era question, as its client sees it: rounds are handed out one at
// a time; each is claimed once, by the first response that reaches it; the claim's result
// is recorded with it, and every identical resend (same round, same response) gets that
// result again; a different response to a claimed round is told "used". A request whose
// outcome the client never learned (a dropped connection, a timeout, a transient error) may
// or may not have taken effect: the model follows both.

// kinds of output.
const (
	outNext    = "next"    // a round handed out (Round, Digest: the fields asked)
	outFinal   = "final"   // the question's outcome (Digest: status, data, attempts)
	outError   = "error"   // a definite refusal (Digest: code/reason)
	outUnknown = "unknown" // the client never learned what became of the request
)

// opInput is a request of one question: the response (digest) to round Round.
type opInput struct {
	Round int
	Resp  string
	Node  int // the node it was sent to; not part of the model
}

// opOutput is what the client got back.
type opOutput struct {
	Kind   string
	Round  int
	Digest string
}

func (o opOutput) String() string {
	switch o.Kind {
	case outNext:
		return fmt.Sprintf("round %d %s", o.Round, o.Digest)
	case outUnknown:
		return "?"
	}
	return o.Kind + " " + o.Digest
}

// claim is a round claimed by a response, and its result (nil: not known yet).
type claim struct {
	Round  int
	Resp   string
	Result *opOutput
}

// qstate is the state of a question. Treated as immutable: Step returns new ones.
type qstate struct {
	Handed int    // the round handed out last
	Final  string // the outcome, once there is one
	Claims []claim
}

func (s qstate) claim(round int) (claim, int) {
	for i, c := range s.Claims {
		if c.Round == round {
			return c, i
		}
	}
	return claim{}, -1
}

// apply is s once the claim of in's round has result out.
func (s qstate) apply(in opInput, out opOutput) qstate {
	n := qstate{Handed: s.Handed, Final: s.Final, Claims: slices.Clone(s.Claims)}
	r := out
	c, i := n.claim(in.Round)
	if i < 0 {
		n.Claims = append(n.Claims, claim{Round: in.Round, Resp: in.Resp, Result: &r})
	} else {
		c.Result = &r
		n.Claims[i] = c
	}
	switch out.Kind {
	case outNext:
		n.Handed = out.Round
	case outFinal:
		n.Final = out.Digest
	}
	return n
}

// step lists the states a question in s may be in after a request in answered out; none
// if it may not answer so.
func step(s qstate, in opInput, out opOutput) []qstate {
	c, i := s.claim(in.Round)
	switch {
	case i >= 0 && c.Resp != in.Resp:
		// A second use, with another response.
		if out.Kind == outUnknown || out.Kind == outError && out.Digest == "INVALID_REQUEST_STATE/used" {
			return []qstate{s}
		}
		return nil
	case i >= 0 && c.Result == nil:
		// An identical resend of a claim whose result no one learned: this one tells it.
		if out.Kind == outUnknown {
			return []qstate{s}
		}
		if !resultFits(in, out) {
			return nil
		}
		return []qstate{s.apply(in, out)}
	case i >= 0:
		// An identical resend: the recorded result again.
		if out.Kind == outUnknown || reflect.DeepEqual(*c.Result, out) {
			return []qstate{s}
		}
		return nil
	}
	// Not claimed yet: only the round handed out, of a question not over, and not
	// while an earlier claim's result is unknown (the client knows no later round then).
	open := s.Final == "" && in.Round == s.Handed && !s.pending()
	switch {
	case out.Kind == outUnknown && open:
		return []qstate{s, {Handed: -1, Final: s.Final, Claims: append(slices.Clone(s.Claims), claim{Round: in.Round, Resp: in.Resp})}}
	case out.Kind == outUnknown:
		return []qstate{s}
	case open && resultFits(in, out):
		return []qstate{s.apply(in, out)}
	}
	return nil
}

// pending reports whether a claim's result is unknown.
func (s qstate) pending() bool {
	return slices.ContainsFunc(s.Claims, func(c claim) bool { return c.Result == nil })
}

// resultFits reports whether out can be what answering in's round gives: the next round,
// or an outcome. A refusal of an open round's first response is never right.
func resultFits(in opInput, out opOutput) bool {
	return out.Kind == outNext && out.Round == in.Round+1 || out.Kind == outFinal
}

// questionModel is the porcupine model of one question; a history is one question's.
var questionModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{qstate{Handed: 1}} },
	Step: func(state, input, output any) []any {
		var out []any
		for _, s := range step(state.(qstate), input.(opInput), output.(opOutput)) {
			out = append(out, s)
		}
		return out
	},
	Equal: func(a, b any) bool { return reflect.DeepEqual(a, b) },
	DescribeOperation: func(input, output any) string {
		in := input.(opInput)
		return fmt.Sprintf("answer round %d (%s) on node %d -> %v", in.Round, in.Resp, in.Node, output)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state) },
}

// never is the return time of a request whose outcome the client never learned: the
// server may act on it at any time after it was sent.
const never = math.MaxInt64

// checkLinearizable judges one question's history; the empty string when it is
// linearizable, else why not.
func checkLinearizable(history []porcupine.Operation) string {
	res, info := porcupine.CheckOperationsVerbose(questionModel.ToModel(), history, time.Minute)
	switch res {
	case porcupine.Ok:
		return ""
	case porcupine.Unknown:
		return "the checker timed out"
	}
	var b strings.Builder
	b.WriteString("not linearizable; the longest linearizable prefix:\n")
	for _, part := range info.PartialLinearizationsOperations() {
		longest := []porcupine.Operation{}
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		for _, op := range longest {
			fmt.Fprintf(&b, "  %s\n", questionModel.DescribeOperation(op.Input, op.Output))
		}
	}
	b.WriteString("the whole history:\n")
	for _, op := range history {
		ret := "never"
		if op.Return != never {
			ret = fmt.Sprint(op.Return)
		}
		fmt.Fprintf(&b, "  [%d, %s] %s\n", op.Call, ret, questionModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
