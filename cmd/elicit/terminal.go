package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/validator"
)

// terminal asks the person at a terminal, with a form drawn on out (stderr, so that stdout
// stays the tool's result).
type terminal struct {
	in  *os.File
	out io.Writer
}

// run runs one form on its own handle to the terminal, closed when the form ends. A form
// that is left with Esc or Ctrl-C does not wait for its input reader to stop; on a shared
// handle that reader could take the first keys typed into the next form.
func (t *terminal) run(ctx context.Context, f *huh.Form) error {
	in := io.Reader(t.in)
	if tty, err := os.Open("/dev/tty"); err == nil {
		defer tty.Close()
		in = tty
	}
	return f.WithInput(in).RunWithContext(ctx)
}

// noAnswer is the option value of a select that the person leaves unanswered.
const noAnswer = "\x00none"

// entry is one field of the form on screen and the variable its widget writes.
type entry struct {
	field validator.Field
	text  string // text-like fields and selects; optional booleans ("yes", "no" or noAnswer)
	yes   bool   // a boolean shown as a Yes/No confirm
	// confirm: a required or defaulted boolean, which always has an answer, is a Yes/No
	// confirm; any other boolean is a select that can be left unanswered.
	confirm bool
	multi   []string // multi_select
}

// value is the entry's answer, or false when the person left it blank.
func (e *entry) value() (any, bool) {
	switch e.field.Type {
	case validator.Boolean:
		if e.confirm {
			return e.yes, true
		}
		if e.text == noAnswer {
			return nil, false
		}
		return e.text == "yes", true
	case validator.MultiSelect:
		if len(e.multi) == 0 && !e.field.Required {
			return nil, false
		}
		out := make([]any, len(e.multi))
		for i, v := range e.multi {
			out[i] = v
		}
		return out, true
	case validator.Select:
		if e.text == noAnswer || e.text == "" {
			return nil, false
		}
		return e.text, true
	}
	if strings.TrimSpace(e.text) == "" {
		return nil, false
	}
	return e.text, true
}

// answer shows the question and its form until the person sends a valid answer, declines or
// cancels.
func (t *terminal) answer(ctx context.Context, q question) (*mcp.ElicitResult, error) {
	entries := make([]*entry, 0, len(q.form.Fields()))
	for _, f := range q.form.Fields() {
		e := newEntry(f)
		e.field.Placeholder, e.field.Widget = q.hints[f.Name]["placeholder"], q.hints[f.Name]["widget"]
		entries = append(entries, e)
	}
	var problems []validator.FieldError
	for {
		esc := false
		err := t.run(ctx, t.form(q, entries, problems, &esc))
		switch {
		case ctx.Err() != nil:
			fmt.Fprintln(t.out, ended(ctx, q.deadline))
			return nil, ctx.Err()
		case errors.Is(err, huh.ErrUserAborted) && esc:
			action, err := t.declineOrCancel(ctx)
			if err != nil {
				return nil, err
			}
			if action != "" {
				return &mcp.ElicitResult{Action: action}, nil
			}
			continue // back to the form
		case errors.Is(err, huh.ErrUserAborted):
			fmt.Fprintln(t.out, "Cancelled.")
			return &mcp.ElicitResult{Action: "cancel"}, nil
		case err != nil:
			return nil, fmt.Errorf("showing the form: %w", err)
		}
		content := map[string]any{}
		for _, e := range entries {
			if v, ok := e.value(); ok {
				content[e.field.Name] = v
			}
		}
		data, errs := q.form.Validate(content)
		if len(errs) == 0 {
			fmt.Fprintln(t.out, "Sent.")
			return &mcp.ElicitResult{Action: "accept", Content: data}, nil
		}
		problems = errs // checks that need the whole answer: fix them in place
	}
}

// ended says, for a person, why a question ended while its form was open.
func ended(ctx context.Context, deadline time.Time) string {
	if errors.Is(context.Cause(ctx), errExpired) || !deadline.IsZero() && !time.Now().Before(deadline.Add(-expirySlack)) {
		return "Time is up: the question expired before it was answered."
	}
	return "The question was withdrawn before it was answered: the agent cancelled it, or elicit or the server stopped."
}

// timeLeft says how long the person has to answer, or "" if the server did not say.
func timeLeft(deadline time.Time) string {
	if deadline.IsZero() {
		return ""
	}
	left := max(time.Until(deadline).Round(time.Second), 0)
	return fmt.Sprintf("You have %s to answer (until %s).", left, deadline.Local().Format(time.TimeOnly))
}

// keys are the form's keys: Ctrl-C and Esc both leave the form; which one was pressed
// decides between cancelling and offering to decline.
func keys() *huh.KeyMap {
	km := huh.NewDefaultKeyMap()
	km.Quit = key.NewBinding(key.WithKeys("ctrl+c", "esc"))
	return km
}

func (t *terminal) form(q question, entries []*entry, problems []validator.FieldError, esc *bool) *huh.Form {
	desc := q.message
	if left := timeLeft(q.deadline); left != "" {
		desc += "\n\n" + left
	}
	if len(problems) > 0 {
		desc += "\n\nPlease fix: " + validator.JoinMessages(problems)
	}
	title := fmt.Sprintf("%s asks", q.server)
	if q.form.Title() != "" {
		title += ": " + q.form.Title()
	}
	var fields []huh.Field
	for _, e := range entries {
		fields = append(fields, widget(q.form, e))
	}
	// Who asks and what is the group's header, outside the part that scrolls: on a small
	// terminal the fields scroll under it and it stays in view.
	group := huh.NewGroup(fields...).Title(title).
		Description(desc + "\n\nEnter: next · Shift+Tab: back · Esc: decline or cancel · Ctrl-C: cancel\n")
	// WithProgramOptions replaces the program options, so it comes before WithInput and
	// WithOutput, which add theirs.
	return huh.NewForm(group).
		WithProgramOptions(tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if k, ok := msg.(tea.KeyPressMsg); ok && k.String() == "esc" {
				*esc = true
			}
			return msg
		})).
		WithOutput(t.out).WithKeyMap(keys()).WithShowHelp(false)
}

// declineOrCancel asks what the person wants after Esc: "" means back to the form.
func (t *terminal) declineOrCancel(ctx context.Context) (string, error) {
	choice := "back"
	err := t.run(ctx, huh.NewForm(huh.NewGroup(huh.NewSelect[string]().Title("Leave this question?").
		Options(huh.NewOption("No, back to the form", "back"), huh.NewOption("Decline to answer", "decline"),
			huh.NewOption("Cancel the question", "cancel")).Value(&choice))).
		WithOutput(t.out).WithShowHelp(false))
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, huh.ErrUserAborted):
		return "cancel", nil
	case err != nil:
		return "", err
	case choice == "back":
		return "", nil
	}
	fmt.Fprintf(t.out, "%s.\n", map[string]string{"decline": "Declined", "cancel": "Cancelled"}[choice])
	return choice, nil
}

func newEntry(f validator.Field) *entry {
	e := &entry{field: f}
	switch f.Type {
	case validator.Boolean:
		b, defaulted := f.Default.(bool)
		e.yes, e.confirm = b, defaulted || f.Required
		if !e.confirm {
			e.text = noAnswer
		}
	case validator.MultiSelect:
		if list, ok := f.Default.([]any); ok {
			for _, v := range list {
				e.multi = append(e.multi, fmt.Sprint(v))
			}
		}
	case validator.Select:
		e.text = noAnswer
		if f.Required && len(f.Options) > 0 {
			e.text = f.Options[0].Value
		}
		if f.Default != nil {
			e.text = fmt.Sprint(f.Default)
		}
	default:
		if f.Default != nil {
			e.text = formatDefault(f.Default)
		}
	}
	return e
}

func formatDefault(v any) string {
	if n, ok := v.(float64); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func label(f validator.Field) string {
	l := f.Label
	if l == "" {
		l = f.Name
	}
	if f.Required {
		l += " *"
	}
	return l
}

// hint says what a text-like field takes, under its description.
func hint(f validator.Field) string {
	var parts []string
	if f.Description != "" {
		parts = append(parts, f.Description)
	}
	switch f.Type {
	case validator.Number:
		parts = append(parts, "a number"+bounds(f))
	case validator.Integer:
		parts = append(parts, "a whole number"+bounds(f))
	case validator.Date:
		parts = append(parts, "a date, YYYY-MM-DD")
	case validator.DateTime:
		parts = append(parts, "a date and time, e.g. 2026-07-28T14:30:00Z")
	case validator.Email:
		parts = append(parts, "an email address")
	case validator.URL:
		parts = append(parts, "a URL")
	}
	if !f.Required {
		parts = append(parts, "optional")
	}
	return strings.Join(parts, " · ")
}

func bounds(f validator.Field) string {
	switch {
	case f.Minimum != nil && f.Maximum != nil:
		return fmt.Sprintf(" from %s to %s", formatDefault(*f.Minimum), formatDefault(*f.Maximum))
	case f.Minimum != nil:
		return " of at least " + formatDefault(*f.Minimum)
	case f.Maximum != nil:
		return " of at most " + formatDefault(*f.Maximum)
	}
	return ""
}

// check returns the field's own problem with v, as typed, or nil.
func check(form *validator.Compiled, f validator.Field, v any, blank bool) error {
	if blank {
		if f.Required {
			return errors.New("required")
		}
		return nil
	}
	_, errs := form.ValidatePartial(map[string]any{f.Name: v})
	for _, fe := range errs {
		if fe.Field == f.Name {
			return errors.New(strings.TrimPrefix(fe.Message, fe.Label+": "))
		}
	}
	return nil
}

// widget is the huh field for one form field, checked as the person types.
func widget(form *validator.Compiled, e *entry) huh.Field {
	f := e.field
	options := func() []huh.Option[string] {
		var out []huh.Option[string]
		for _, o := range f.Options {
			t := o.Title
			if t == "" {
				t = o.Value
			}
			out = append(out, huh.NewOption(t, o.Value).Selected(slices.Contains(e.multi, o.Value)))
		}
		return out
	}
	switch f.Type {
	case validator.Boolean:
		if e.confirm {
			return huh.NewConfirm().Title(label(f)).Description(f.Description).Affirmative("Yes").Negative("No").Value(&e.yes)
		}
		return huh.NewSelect[string]().Title(label(f)).Description(hint(f)).Value(&e.text).
			Options(huh.NewOption("(no answer)", noAnswer), huh.NewOption("Yes", "yes"), huh.NewOption("No", "no"))
	case validator.Select:
		opts := options()
		if !f.Required {
			opts = append([]huh.Option[string]{huh.NewOption("(no answer)", noAnswer)}, opts...)
		}
		return huh.NewSelect[string]().Title(label(f)).Description(hint(f)).Options(opts...).Value(&e.text)
	case validator.MultiSelect:
		desc := strings.TrimPrefix(hint(f)+" · Space or x: pick", " · ")
		opts := options()
		// Room for every option: huh counts the title and description against the height it
		// derives from the options, which would hide the last ones behind a scroll.
		m := huh.NewMultiSelect[string]().Title(label(f)).Description(desc).Options(opts...).Value(&e.multi).
			Height(len(opts) + 2 + strings.Count(desc, "\n")).
			Validate(func(picked []string) error {
				v, _ := e.value()
				return check(form, f, v, len(picked) == 0 && !f.Required)
			})
		if f.MaxItems != nil {
			m.Limit(*f.MaxItems)
		}
		return m
	}
	validate := func(s string) error { return check(form, f, s, strings.TrimSpace(s) == "") }
	if f.Widget == "multiline" && f.Type == validator.Text {
		return huh.NewText().Title(label(f)).Description(hint(f) + " · Alt+Enter or Ctrl+J: new line").Placeholder(f.Placeholder).
			Value(&e.text).Validate(validate)
	}
	in := huh.NewInput().Title(label(f)).Description(hint(f)).Placeholder(f.Placeholder).Value(&e.text).Validate(validate)
	if f.Widget == "password" {
		in.EchoMode(huh.EchoModePassword)
	}
	return in
}
