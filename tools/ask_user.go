package tools

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/validator"
)

// AskUserInput is the ask_user tool's input.
type AskUserInput struct {
	Message        string         `json:"message" jsonschema:"what to ask, shown to the person above the form"`
	Form           map[string]any `json:"form,omitempty" jsonschema:"the form: {title, fields: [{name, type, label, required, options, ...}]}; give form, schema or template"`
	Schema         map[string]any `json:"schema,omitempty" jsonschema:"instead of form: a raw MCP requestedSchema (flat object of primitive properties)"`
	Template       string         `json:"template,omitempty" jsonschema:"instead of form: the name of a form the operator defined (a template); read elicitd://templates/NAME to see it"`
	Defaults       map[string]any `json:"defaults,omitempty" jsonschema:"with template: answers to pre-fill, by field name; each must be a valid answer to its field"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the person; capped by the server"`
	MaxAttempts    int            `json:"max_attempts,omitempty" jsonschema:"how many times to ask when answers are invalid; capped by the server"`
}

// AskUserResult is ask_user's result.
type AskUserResult struct {
	Status   string                 `json:"status"`           // completed, declined, cancelled or timeout
	Reason   string                 `json:"reason,omitempty"` // why, when cancelled
	Data     map[string]any         `json:"data,omitempty"`   // the answers, when completed
	Attempts int                    `json:"attempts"`
	Errors   []validator.FieldError `json:"errors,omitempty"` // the last answer's problems, when it ran out of attempts
}

// askUserDescription is ask_user's description when there are no templates to ask;
// describeAskUser adds how to ask one when there are.
const askUserDescription = `Ask the person using this client a structured question and wait for the answer (MCP form elicitation).

Give "message" (what you ask and why) and "form": a title and fields in order. Each field has
"name" (the key in the answer), "type" (text, number, integer, boolean, date, date_time, email,
url, select, multi_select), and optionally "label", "description", "required", "default",
"options" ([{"value": "US", "title": "United States"}], for select and multi_select),
"min_length", "max_length", "pattern", "minimum", "maximum", "exclusive_minimum",
"exclusive_maximum", "min_items", "max_items", "case" ("upper" or "lower"), "placeholder",
"widget" ("multiline"). Rules across fields: "when" asks a field only once an earlier answer
matches ({"field": "country", "equals": "US"}, or "one_of": [...], or "present": true), in a
follow-up round; "required_when" (same shape) makes a field required only when another answer
matches; "compare" ({"op": "gt", "field": "check_in"}; lt, le, gt, ge, eq, ne) checks it
against another field.

Example: {"message": "Where should the parcel go?", "form": {"title": "Delivery", "fields": [
 {"name": "city", "type": "text", "label": "City", "required": true},
 {"name": "country", "type": "select", "label": "Country", "required": true,
  "options": [{"value": "US", "title": "United States"}, {"value": "CA", "title": "Canada"}]},
 {"name": "weight_kg", "type": "number", "label": "Weight (kg)", "exclusive_minimum": 0}]}}

Answers are checked, and when one is invalid the person is asked again, with the problems
listed, for only the fields that were wrong (the valid answers are kept). The result's
"status" is completed (with "data"), declined, cancelled or timeout.
Secrets and files: mark a field "sensitive": true (a password, an API key), or give it type
"file" (with "accept": ["application/pdf", "image/*"] and "max_bytes"). Those fields are never
asked in the chat or in the client's form: the person answers them on elicitd's own page,
whose link the client shows (URL mode), and the plain fields of the same form are asked in the
client's form first. A file comes back as {"name", "type" (sniffed from its bytes), "size",
"sha256", "base64"}; in the result's text a secret and a file's bytes are left out (they are in
the structured content). A client without URL mode gets ELICITATION_UNSUPPORTED naming them.
Instead of "form" you may pass an MCP requestedSchema as "schema".`

// AskUserOptions configure ask_user. Zero values take the defaults noted.
type AskUserOptions struct {
	MaxAnswerBytes int // the largest answer accepted; validator's default (1 MiB) when 0
	// Templates are the forms ask_user asks by name ("template"), as they are when AskUser
	// is called: a template a tool owns (templates.Template.Tool) is not among them. Their
	// names are the enum of the input schema's "template". Nil: none. After changing the
	// set, add a new ask_user (the SDK tells the clients the tool list changed); questions
	// already asked keep their forms.
	Templates *templates.Set
}

// AskUser returns the ask_user tool. It decodes its own arguments rather than through
// ask.NewTool: the form or schema is kept as the JSON it came as, which names the compiled
// form in a cache (agents tend to ask the same question again), and bad arguments get the
// error payload naming the argument at fault.
func AskUser(o AskUserOptions) ask.Tool {
	t := &askUser{maxAnswerBytes: o.MaxAnswerBytes, forms: newFormCache(formCacheBudget, formCacheEntries),
		templates: askableTemplates(o.Templates, o.MaxAnswerBytes)}
	names := t.templateNames()
	tool := ask.RawTool[AskUserInput]("ask_user", "Ask the user", describeAskUser(names), t.call).
		WithInputSchema(askUserSchema(names))
	// It asks what its arguments say and returns the answers, acting on nothing: it may be
	// replayed on another node, or after a restart, and two runs given the same answers
	// harm nothing.
	tool.Replayable, tool.Pure = true, true
	tool.Tasks = "optional" // a call that waits for the person may be a task
	return tool
}

// askUser is the ask_user tool's state: the templates it asks by name, and the forms it
// compiled last.
type askUser struct {
	maxAnswerBytes int
	forms          *formCache
	templates      map[string]askable
}

func (t *askUser) call(ctx context.Context, raw json.RawMessage) (any, error) {
	in, err := decodeAskUser(raw)
	if err != nil {
		return nil, err
	}
	// Refused now, a call compiles nothing: a flood of forms costs no memory.
	if err := ask.Admits(ctx); err != nil {
		return nil, err
	}
	form, err := t.compile(in)
	if err != nil {
		return nil, err
	}
	o, err := ask.Outcome(ctx, ask.Question{Title: form.Title(), Message: in.Message, Form: form, Template: in.Template,
		Timeout: time.Duration(in.TimeoutSeconds) * time.Second, MaxAttempts: in.MaxAttempts})
	if err != nil {
		return nil, err
	}
	return askUserPrivate(askUserResult(o), form), nil
}

// askUserPrivate keeps secrets and files' bytes out of the result's text, which hosts may
// show the model or log: there a secret reads as given, and a file as its metadata. The
// structured content has them.
func askUserPrivate(r AskUserResult, form *validator.Compiled) any {
	var text map[string]any
	for _, f := range form.Fields() {
		v, ok := r.Data[f.Name]
		if !ok || !f.NeedsPage() {
			continue
		}
		if text == nil {
			text = maps.Clone(r.Data)
		}
		if u, ok := v.(*validator.Upload); ok {
			text[f.Name] = map[string]any{"name": u.Name, "type": u.Type, "size": u.Size, "sha256": u.SHA256,
				"base64": "(in the structured content)"}
		} else {
			text[f.Name] = "(a secret, given on elicitd's page: in the structured content only)"
		}
	}
	if text == nil {
		return r
	}
	shown := r
	shown.Data = text
	return ask.Private{Structured: r, Text: shown}
}

// askUserArgs is AskUserInput as decoded: the form, schema or defaults kept as the JSON
// they came as.
type askUserArgs struct {
	Message        string
	Form, Schema   json.RawMessage // absent or null: nil
	Template       string
	Defaults       json.RawMessage // absent or null: nil
	TimeoutSeconds int
	MaxAttempts    int
}

// askUserArgNames are ask_user's arguments, in the order they are checked.
var askUserArgNames = []string{"message", "form", "schema", "template", "defaults", "timeout_seconds", "max_attempts"}

// decodeAskUser reads ask_user's arguments as its input schema describes them, naming the
// argument at fault and what it must be.
func decodeAskUser(raw json.RawMessage) (askUserArgs, error) {
	bad := func(format string, args ...any) (askUserArgs, error) {
		return askUserArgs{}, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", format, args...)
	}
	var fields map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return bad("the arguments must be a JSON object with message and form or schema")
		}
	}
	var unknown []string
	for name := range fields {
		if !slices.Contains(askUserArgNames, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bad("unknown argument %q: ask_user takes %s", unknown[0], strings.Join(askUserArgNames, ", "))
	}
	var in askUserArgs
	for _, arg := range []struct {
		name string
		dst  *string
	}{{"message", &in.Message}, {"template", &in.Template}} {
		if v, ok := fields[arg.name]; ok && string(v) != "null" && json.Unmarshal(v, arg.dst) != nil {
			return bad("%q must be a string, got %s", arg.name, v)
		}
	}
	if v, ok := fields["template"]; ok && string(v) != "null" && in.Template == "" {
		return bad(`"template" is empty: give the name of a template, or leave "template" out`)
	}
	for _, arg := range []struct {
		name string
		dst  *json.RawMessage
	}{{"form", &in.Form}, {"schema", &in.Schema}, {"defaults", &in.Defaults}} {
		name := arg.name
		switch v := fields[name]; {
		case v == nil || string(v) == "null":
		case v[0] != '{':
			return bad("%q must be an object, got %s", name, v)
		default:
			*arg.dst = v
		}
	}
	for _, arg := range []struct {
		name string
		dst  *int
	}{{"timeout_seconds", &in.TimeoutSeconds}, {"max_attempts", &in.MaxAttempts}} {
		name := arg.name
		v, ok := fields[name]
		if !ok {
			continue
		}
		var n float64
		if json.Unmarshal(v, &n) != nil || n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return bad("%q must be a whole number, got %s", name, v)
		}
		*arg.dst = int(n)
	}
	return in, nil
}

func askUserResult(o elicitation.Outcome) AskUserResult {
	r := AskUserResult{Status: ask.Status(o), Attempts: o.Attempts}
	switch r.Status {
	case "completed":
		r.Data = o.Data
	case "cancelled":
		r.Reason = o.Reason.String()
		if o.Reason == elicitation.MaxAttempts {
			r.Errors = o.Errors
		}
	}
	return r
}

// compile compiles the form or schema of an ask_user call, or finds its template, refusing
// what form mode must not carry. Its size is checked before anything else, and the limits
// of the form language (validator.MaxFields and the rest) before anything in it is
// compiled.
func (t *askUser) compile(in askUserArgs) (*validator.Compiled, error) {
	if in.Message == "" {
		return nil, ask.Errorf(ask.CodeInvalidForm, "no_message", `"message" is required: say what you are asking and why`)
	}
	var given []string
	for _, arg := range []struct {
		name  string
		given bool
	}{{"form", in.Form != nil}, {"schema", in.Schema != nil}, {"template", in.Template != ""}} {
		if arg.given {
			given = append(given, strconv.Quote(arg.name))
		}
	}
	switch {
	case len(given) == 0:
		return nil, ask.Errorf(ask.CodeInvalidForm, "form_or_schema", `give one of "form", "schema" and "template": none was given`)
	case len(given) > 1:
		return nil, ask.Errorf(ask.CodeInvalidForm, "form_or_schema", `give exactly one of "form", "schema" and "template": %s were given`, strings.Join(given, " and "))
	case in.Defaults != nil && in.Template == "":
		return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", `"defaults" goes with "template"; in a form, give a field its "default"`)
	case in.Template != "":
		return t.templateForm(in.Template, in.Defaults)
	}
	raw, kind, name := in.Form, byte('f'), "form"
	if raw == nil {
		raw, kind, name = in.Schema, 's', "schema"
	}
	if len(raw) > validator.MaxFormBytes {
		return nil, ask.Errorf(ask.CodeInvalidForm, "form_too_large", "%q is %d bytes of JSON; the limit is %d", name, len(raw), validator.MaxFormBytes)
	}
	var key formKey
	h := sha256.New()
	h.Write([]byte{kind})
	h.Write(raw)
	h.Sum(key[:0])
	if c, ok := t.forms.get(key); ok {
		return c, nil
	}
	var f validator.Form
	var err error
	if kind == 'f' {
		f, err = validator.ParseForm(raw)
	} else {
		f, err = validator.FromMCPSchema(raw)
	}
	if err == nil {
		f.MaxAnswerBytes = t.maxAnswerBytes
		var c *validator.Compiled
		if c, err = validator.Compile(f); err == nil {
			t.forms.add(key, c)
			return c, nil
		}
	}
	e := ask.Errorf(ask.CodeInvalidForm, "invalid_definition", "%s", err.Error())
	var de *validator.DefinitionError
	if errors.As(err, &de) {
		e.Details = map[string]any{"problems": de.Problems}
	}
	return nil, e
}
