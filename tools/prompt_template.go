package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/validator"
)

// TemplatePrompt is a template served as an MCP prompt: a host lists it (a slash command,
// say), and getting it asks the person for the fields its arguments leave out, then returns
// the prompt filled in.
type TemplatePrompt struct {
	Name        string // the template's
	Title       string // the form's title
	Description string
	Arguments   []PromptArgument // the template's fields, in order
	// Fill returns the prompt's text for args (field name: value, as text), asking the
	// person (ask.Ask) for the fields missing or wrong, pre-filled with those given that
	// hold. It must run in a call that may ask (ask.Elicitor.Handler).
	Fill func(ctx context.Context, args map[string]string) (string, error)
}

// PromptArgument is one of a TemplatePrompt's arguments: a field of its template. None is
// required: a missing one is asked.
type PromptArgument struct {
	Name, Title, Description string
	// Options are the values a choice field (select, multi_select) takes, with their
	// titles, for completion; nil for another field.
	Options []validator.Option
}

// TemplatePrompts returns the templates ask_user asks (o.Templates, those no tool owns) as
// prompts, but for those with a field asked on elicitd's page: a secret or a file has no
// place in a prompt's text.
func TemplatePrompts(o AskUserOptions) []TemplatePrompt {
	t := &askUser{maxAnswerBytes: o.MaxAnswerBytes, forms: newFormCache(formCacheBudget, formCacheEntries),
		templates: askableTemplates(o.Templates, o.MaxAnswerBytes)}
	var out []TemplatePrompt
	for _, name := range t.templateNames() {
		a := t.templates[name]
		if a.form.NeedsPage() {
			continue
		}
		title := a.form.Title()
		if title == "" {
			title = name
		}
		p := TemplatePrompt{Name: name, Title: title,
			Description: fmt.Sprintf("%s: the form the operator defined as the template %q, filled in. Give what you know as arguments; the person is asked for the rest.", title, name)}
		for _, f := range a.def.Fields {
			p.Arguments = append(p.Arguments, PromptArgument{Name: f.Name, Title: cmp.Or(f.Label, f.Name), Description: f.Description,
				Options: slices.Clone(f.Options)})
		}
		p.Fill = func(ctx context.Context, args map[string]string) (string, error) {
			return t.fillPrompt(ctx, name, title, args)
		}
		out = append(out, p)
	}
	return out
}

// fillPrompt is TemplatePrompt.Fill for the template called name.
func (t *askUser) fillPrompt(ctx context.Context, name, title string, args map[string]string) (string, error) {
	a := t.templates[name]
	values := map[string]any{}
	for k, v := range args {
		if !slices.ContainsFunc(a.def.Fields, func(f validator.Field) bool { return f.Name == k }) {
			return "", ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "%q is not an argument of the prompt %q (its arguments: %s)",
				k, name, strings.Join(fieldNames(a.def), ", "))
		}
		values[k] = v
	}
	if !a.form.Conditional() {
		if data, errs := a.form.Validate(values); len(errs) == 0 {
			return promptText(title, a.def, data), nil // every field given, and right: nothing to ask
		}
	}
	// The arguments that hold pre-fill the form; the person answers the rest, and may change them.
	partial, _ := a.form.ValidatePartial(values)
	defaults := map[string]any{}
	for k := range args {
		if v, ok := partial[k]; ok {
			defaults[k] = v
		}
	}
	form := a.form
	if len(defaults) > 0 {
		if raw, err := json.Marshal(defaults); err == nil {
			if f, err := t.templateForm(name, raw); err == nil {
				form = f
			}
		}
	}
	data, err := ask.Ask(ctx, ask.Question{Title: title, Message: fmt.Sprintf("The prompt %q needs these details.", name),
		Form: form, Template: name})
	if err != nil {
		return "", err
	}
	return promptText(title, a.def, data), nil
}

// promptText is a filled-in template as a prompt's text: its title, then one line a field
// answered, in the template's order.
func promptText(title string, def validator.Form, data map[string]any) string {
	var b strings.Builder
	b.WriteString(title)
	b.WriteString("\n")
	for _, f := range def.Fields {
		v, ok := data[f.Name]
		if !ok || v == nil {
			continue
		}
		switch list := v.(type) {
		case []string:
			v = strings.Join(list, ", ")
		case []any: // read back from the store
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = fmt.Sprint(x)
			}
			v = strings.Join(parts, ", ")
		}
		fmt.Fprintf(&b, "\n%s: %v", cmp.Or(f.Label, f.Name), v)
	}
	return b.String()
}

func fieldNames(def validator.Form) []string {
	names := make([]string, len(def.Fields))
	for i, f := range def.Fields {
		names[i] = f.Name
	}
	return names
}
