package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/validator"
)

// question is one elicitation as the person sees it.
type question struct {
	server   string // who asks
	n        int    // 1 for the first question of this run
	message  string
	form     *validator.Compiled
	hints    map[string]map[string]string // by field: "placeholder", "widget" (ask.HintsKey)
	schema   json.RawMessage              // the requested schema, as the server sent it
	deadline time.Time                    // when the question ends unanswered; zero if not said
}

// hintsOf reads a prompt's rendering hints from its _meta, ignoring what does not fit.
func hintsOf(meta mcp.Meta) map[string]map[string]string {
	raw, ok := meta[ask.HintsKey].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]map[string]string{}
	for field, v := range raw {
		h, ok := v.(map[string]any)
		if !ok {
			continue
		}
		out[field] = map[string]string{}
		for k, s := range h {
			if s, ok := s.(string); ok {
				out[field][k] = s
			}
		}
	}
	return out
}

// answerer answers questions: the person at a terminal, a script, or nobody.
type answerer interface {
	answer(ctx context.Context, q question) (*mcp.ElicitResult, error)
}

// elicit is the client's elicitation handler, for both protocol eras.
func (c *client) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c.mu.Lock() // one question at a time: there is one person and one terminal
	defer c.mu.Unlock()
	if c.lines != nil {
		defer c.lines.hold()()
	}
	c.asked++
	p := req.Params
	if p.Mode == "url" {
		return c.openLink(p)
	}
	if p.Mode != "" && p.Mode != "form" {
		fmt.Fprintf(c.stderr, "%s asked for a %s-mode elicitation, which elicit does not support; cancelling it\n", c.server, p.Mode)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	raw, form, err := c.compile(p.RequestedSchema)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s asked with a form elicit cannot show (%v); cancelling it\n", c.server, err)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	q := question{server: c.server, n: c.asked, message: p.Message, form: form, hints: hintsOf(p.Meta), schema: raw,
		deadline: deadlineOf(p.Meta)}
	// The question's own context: ended when the call is over (see client.call), and in the
	// pull era at the deadline, which the client would otherwise never hear of.
	call := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.pull && !q.deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, q.deadline, errExpired)
		defer stop()
	}
	c.openMu.Lock()
	c.cancelOpen = cancel
	c.openMu.Unlock()
	res, err := c.answerer.answer(ctx, q)
	if c.pull && errors.Is(context.Cause(ctx), errExpired) {
		// Answer only once the server's own deadline has surely passed: its reply to the
		// retry is then the question's real outcome (timeout), not a cancel by the person.
		wait := time.NewTimer(time.Until(q.deadline.Add(expirySlack)))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-call.Done():
			return nil, call.Err()
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return res, err
}

// errExpired is the cause of a question's context at its deadline.
var errExpired = errors.New("the question expired")

// expirySlack is how long after a question's deadline elicit answers for a form it closed
// then: the server's clock and timer decide, a little later.
const expirySlack = time.Second

// deadlineOf reads the deadline elicitd puts on a prompt (ask.DeadlineKey); zero if none.
func deadlineOf(meta mcp.Meta) time.Time {
	s, _ := meta[ask.DeadlineKey].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// compile turns a requested schema, in the order the server sent it, into a form; it returns
// the schema as sent too.
func (c *client) compile(schema any) (json.RawMessage, *validator.Compiled, error) {
	raw, err := c.schemas.original(schema)
	if err != nil {
		return nil, nil, err
	}
	form, err := validator.CompileMCPSchema(raw)
	return raw, form, err
}

// noAnswers cancels every question, saying why: with no terminal and no script, waiting
// would hang.
type noAnswers struct{ w io.Writer }

func (n noAnswers) answer(_ context.Context, q question) (*mcp.ElicitResult, error) {
	fmt.Fprintf(n.w, "%s asks: %s\nelicit: stdin is not a terminal and no --answers file was given, so nobody can answer; cancelling the question\n",
		q.server, q.message)
	return &mcp.ElicitResult{Action: "cancel"}, nil
}

// scriptEntry is one scripted answer.
type scriptEntry struct {
	action  string // accept, decline or cancel
	content map[string]any
}

// script answers questions from an --answers file, in order.
type script struct {
	entries []scriptEntry
	next    int
	w       io.Writer
	misfits int // answers not sent because they do not fit their form
}

// loadScript reads an --answers file: a JSON list whose entries are either the field
// values to accept, or {"action": "decline"} / {"action": "cancel"}.
func loadScript(name string, w io.Writer) (*script, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("--answers: cannot read %s: %v", name, err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, usagef("--answers file %s must be a JSON list of objects, one per prompt (%v)", name, err)
	}
	s := &script{w: w}
	for i, entry := range raw {
		if entry == nil {
			return nil, usagef("--answers file %s: entry %d is null; give the field values or {\"action\": \"decline\"}", name, i+1)
		}
		action, isAction := entry["action"].(string)
		if len(entry) == 1 && isAction {
			if !slices.Contains([]string{"decline", "cancel"}, action) {
				return nil, usagef("--answers file %s: entry %d has action %q; use decline or cancel (or give the field values to accept)", name, i+1, action)
			}
			s.entries = append(s.entries, scriptEntry{action: action})
			continue
		}
		s.entries = append(s.entries, scriptEntry{action: "accept", content: entry})
	}
	return s, nil
}

// answer sends the next scripted entry; when the script has run out, it cancels. Values are
// normalised as a person's typing would be ("5" for a number is 5). They are checked only as
// far as the client's SDK checks them before sending (type, options, bounds of the wire
// schema), so a script can exercise the server's own checks; an entry that fails there is
// not sent, and elicit says why, cancels the question and exits 1.
func (s *script) answer(_ context.Context, q question) (*mcp.ElicitResult, error) {
	fmt.Fprintf(s.w, "%s asks (question %d): %s\n", q.server, q.n, q.message)
	if s.next >= len(s.entries) {
		fmt.Fprintf(s.w, "  the --answers file has no entry %d; cancelling\n", s.next+1)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	e := s.entries[s.next]
	s.next++
	if e.action != "accept" {
		fmt.Fprintf(s.w, "  scripted answer %d: %s\n", s.next, e.action)
		return &mcp.ElicitResult{Action: e.action}, nil
	}
	keys := make([]string, 0, len(e.content))
	for k := range e.content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if extra := notAsked(q.form, keys); len(extra) > 0 {
		// Sent, the server would drop them without a word (a re-prompt asks only the fields at
		// fault, keeping the rest): the script is wrong, so say so instead.
		s.misfits++
		fmt.Fprintf(s.w, "elicit: scripted answer %d gives %s, which question %d does not ask (it asks %s), so it was not sent; cancelling the question\n",
			s.next, strings.Join(extra, ", "), q.n, strings.Join(asked(q.form), ", "))
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	fmt.Fprintf(s.w, "  scripted answer %d: accept (%s)\n", s.next, strings.Join(keys, ", "))
	content := maps.Clone(e.content)
	for _, f := range q.form.Fields() {
		if v, ok := content[f.Name].(string); ok && f.Type == validator.Boolean {
			content[f.Name] = yesNo(v)
		}
	}
	valid, _ := q.form.ValidatePartial(content)
	for k := range content {
		if v, ok := valid[k]; ok {
			content[k] = v
		}
	}
	if err := fitsWire(q.schema, content); err != nil {
		// The SDK would refuse to send it and fail the call in its own words (or, in the
		// push era, leave the server with a transport error): say what is wrong instead.
		why := err.Error()
		if _, errs := q.form.Validate(content); len(errs) > 0 {
			why = validator.JoinMessages(errs)
		}
		s.misfits++
		fmt.Fprintf(s.w, "elicit: scripted answer %d does not fit the form, so it was not sent (%s); cancelling the question\n", s.next, why)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// asked lists the names of form's fields.
func asked(form *validator.Compiled) []string {
	var names []string
	for _, f := range form.Fields() {
		names = append(names, f.Name)
	}
	return names
}

// notAsked returns the keys that are not fields of form.
func notAsked(form *validator.Compiled, keys []string) []string {
	names := asked(form)
	var out []string
	for _, k := range keys {
		if !slices.Contains(names, k) {
			out = append(out, k)
		}
	}
	return out
}

// fitsWire checks content against the requested schema as the client's SDK does before it
// sends an answer.
func fitsWire(schema json.RawMessage, content map[string]any) error {
	if schema == nil {
		return nil
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(schema, &js); err != nil {
		return err
	}
	resolved, err := js.Resolve(nil)
	if err != nil {
		return err
	}
	return resolved.Validate(content)
}

// yesNo reads a scripted boolean as a person would mean it: yes/no and y/n (any case) are
// true and false; anything else is left for the server to judge.
func yesNo(v string) any {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "y":
		return true
	case "no", "n":
		return false
	}
	return v
}
