package tools

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/validator"
)

// askable is a template ask_user asks: its definition, to compile again with defaults, and
// its form compiled with ask_user's answer size limit.
type askable struct {
	def  validator.Form
	form *validator.Compiled
}

// askableTemplates returns the templates of set that ask_user asks (those no tool owns),
// compiled with its answer size limit.
func askableTemplates(set *templates.Set, maxAnswerBytes int) map[string]askable {
	out := map[string]askable{}
	if set == nil {
		return out
	}
	for _, t := range set.All() {
		if t.Tool != "" {
			continue
		}
		a := askable{def: t.Definition(), form: t.Form}
		if maxAnswerBytes > 0 {
			a.def.MaxAnswerBytes = maxAnswerBytes
			if c, err := validator.Compile(a.def); err == nil { // it compiled with the default limit: it does
				a.form = c
			}
		}
		out[t.Name] = a
	}
	return out
}

// templateNames returns the names of the templates ask_user asks, sorted.
func (t *askUser) templateNames() []string {
	return slices.Sorted(maps.Keys(t.templates))
}

// askUserSchema is ask_user's input schema: AskUserInput's, with the template names as the
// enum of "template"; without templates, "template" and "defaults" are left out, and "form"
// does not mention them, so an agent is not led to guess a name.
func askUserSchema(names []string) *jsonschema.Schema {
	schema := ask.InputSchema[AskUserInput]()
	if len(names) == 0 {
		delete(schema.Properties, "template")
		delete(schema.Properties, "defaults")
		if form := schema.Properties["form"]; form != nil {
			form.Description = strings.Replace(form.Description, "give form, schema or template", "give form or schema", 1)
		}
		return schema
	}
	tmpl := schema.Properties["template"]
	for _, n := range names {
		tmpl.Enum = append(tmpl.Enum, n)
	}
	return schema
}

// describeAskUser is ask_user's description: with templates to ask, it ends with how to ask
// one, by a name there is (names, sorted); without, it does not mention them.
func describeAskUser(names []string) string {
	if len(names) == 0 {
		return askUserDescription
	}
	return askUserDescription + fmt.Sprintf(`
Or ask a form the operator defined once, by name: {"message": "...", "template": %q}; the
names are the values "template" takes, and each is the resource elicitd://templates/NAME,
which shows its fields. "defaults" pre-fills fields by name ({"FIELD": value}): each must be
a valid answer to its field, and they must hold together by the template's rules.`, names[0])
}

// templateForm returns the form of the template called name, with defaults (a JSON object
// by field name, or nil) as its fields' defaults, each checked against its field's rules,
// then all of them together, with the template's own defaults, against the rules between
// fields (compare, the fields' checks). A null default is refused: it would drop the
// template's own default without a word.
func (t *askUser) templateForm(name string, defaults json.RawMessage) (*validator.Compiled, error) {
	a, ok := t.templates[name]
	if !ok {
		return nil, t.unknownTemplate(name)
	}
	if defaults == nil {
		return a.form, nil
	}
	if len(defaults) > validator.MaxFormBytes {
		return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_default", `"defaults" is %d bytes of JSON; the limit is %d`, len(defaults), validator.MaxFormBytes)
	}
	var key formKey
	h := sha256.New()
	h.Write([]byte{'t'})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(defaults)
	h.Sum(key[:0])
	if c, ok := t.forms.get(key); ok {
		return c, nil
	}
	var values map[string]any
	if err := json.Unmarshal(defaults, &values); err != nil {
		return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", `"defaults" must be an object of answers by field name`)
	}
	def := a.def
	def.Fields = slices.Clone(def.Fields)
	index := map[string]int{}
	for i, f := range def.Fields {
		index[f.Name] = i
	}
	var problems []validator.Problem
	for _, name := range slices.Sorted(maps.Keys(values)) {
		i, ok := index[name]
		switch {
		case !ok:
			problems = append(problems, validator.Problem{Field: name, Message: "is not a field of the template"})
		case values[name] == nil:
			problems = append(problems, validator.Problem{Field: name, Message: "is null; leave it out to keep the template's default, or give a value"})
		case def.Fields[i].NeedsPage():
			problems = append(problems, validator.Problem{Field: name, Message: "is asked on elicitd's page (a secret or a file), and takes no default"})
		default:
			def.Fields[i].Default = values[name]
		}
	}
	c, err := validator.Compile(def)
	if err == nil && len(problems) == 0 {
		if problems = defaultsTogether(def, values); len(problems) == 0 {
			t.forms.add(key, c)
			return c, nil
		}
		return nil, defaultsError(name, problems, a.def)
	}
	var de *validator.DefinitionError
	if err != nil && !errors.As(err, &de) {
		return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_default", "%s", err.Error())
	}
	if de != nil {
		for _, p := range de.Problems {
			if _, given := values[p.Field]; given { // the template compiled without them: every problem is a default's
				msg, _ := strings.CutPrefix(p.Message, "has a default that is not a valid answer: ")
				problems = append(problems, validator.Problem{Field: p.Field, Message: msg})
			}
		}
	}
	if len(problems) == 0 {
		return nil, ask.Errorf(ask.CodeInvalidArgument, "invalid_default", "%s", err.Error())
	}
	return nil, defaultsError(name, problems, a.def)
}

// defaultsTogether checks the defaults of def, each a valid answer to its field, against
// each other: every field, the conditional ones too, is given its default (the agent's, in
// given, or the template's) and the whole is checked as one answer. A problem is reported on
// a field the agent gave: a field of its own that breaks a rule, or the field a template's
// default is compared with.
func defaultsTogether(def validator.Form, given map[string]any) []validator.Problem {
	flat := def
	flat.Fields = slices.Clone(def.Fields)
	compared := map[string]string{} // field -> the field its compare names
	for i := range flat.Fields {
		f := &flat.Fields[i]
		f.When, f.Required = nil, false // all asked at once; a blank field takes its default
		if f.Compare != nil {
			compared[f.Name] = f.Compare.Field
		}
	}
	c, err := validator.Compile(flat)
	if err != nil {
		return nil // def compiled: the rules left are sound, and nothing to check here
	}
	_, errs := c.ValidatePartial(map[string]any{})
	var problems []validator.Problem
	for _, fe := range errs {
		msg := strings.TrimPrefix(fe.Message, fe.Label+": ")
		_, givenHere := given[fe.Field]
		other := compared[fe.Field]
		_, givenThere := given[other]
		switch {
		case givenHere:
			problems = append(problems, validator.Problem{Field: fe.Field, Message: msg})
		case fe.Constraint == "compare" && givenThere:
			problems = append(problems, validator.Problem{Field: other,
				Message: fmt.Sprintf("is at odds with the template's default of %q, which %s", fe.Field, msg)})
		}
		// Else a field the agent did not give: required, say, which the person answers.
	}
	return problems
}

// defaultsError words the defaults' problems, naming each field.
func defaultsError(template string, problems []validator.Problem, def validator.Form) error {
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = fmt.Sprintf("%q %s", p.Field, p.Message)
	}
	fields := make([]string, len(def.Fields))
	for i, f := range def.Fields {
		fields[i] = f.Name
	}
	e := ask.Errorf(ask.CodeInvalidArgument, "invalid_default", `"defaults" of template %q: %s (its fields: %s)`,
		template, strings.Join(parts, "; "), strings.Join(fields, ", "))
	e.Details = map[string]any{"problems": problems}
	return e
}

// unknownTemplate is the error for a template name ask_user does not know, listing those it
// does.
func (t *askUser) unknownTemplate(name string) error {
	names := t.templateNames()
	var e *ask.Error
	if len(names) == 0 {
		e = ask.Errorf(ask.CodeInvalidArgument, "unknown_template", "unknown template %q: this server defines no templates; give a \"form\"", name)
	} else {
		e = ask.Errorf(ask.CodeInvalidArgument, "unknown_template", "unknown template %q: the templates are %s", name, strings.Join(names, ", "))
	}
	e.Details = map[string]any{"templates": names}
	return e
}
