package ask

// How a question goes to the person. A question's round goes one way, decided once, from what
// its form asks now (validator.Compiled.Asking), what the client declares it can show (form
// mode, URL mode) and whether this server serves elicitd's page: in form mode, on the page,
// or in form mode first and then on the page (a form with plain fields and secrets or
// files), in the call's era.

import (
	"context"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// way is one way to put a question to the person: a mode (form, or form and URL mode) in
// an era.
type way struct {
	page bool // some rounds go through elicitd's page (url.go)
	// prompter returns the question's Prompter, and what to do once it has ended; ctx is
	// the handler's.
	prompter func(ctx context.Context, c *call, q Question) (elicitation.Prompter, func())
}

var (
	// formPull hands each prompt out as the input requests of the call's result.
	formPull = way{prompter: func(_ context.Context, c *call, _ Question) (elicitation.Prompter, func()) {
		c.links = nil
		return c, func() {}
	}}
	// formPush sends each prompt as elicitation/create on the call's session.
	formPush = way{prompter: func(ctx context.Context, c *call, _ Question) (elicitation.Prompter, func()) {
		prompts, stop := pushContext(ctx)
		return pushPrompter{ss: c.req.Session, ctx: prompts}, stop
	}}
	// pagePull and pagePush also open elicitd's page for the rounds that need it.
	pagePull = way{page: true, prompter: func(_ context.Context, c *call, q Question) (elicitation.Prompter, func()) {
		c.links = newLinks(c.el, q.Title)
		return c, c.links.close
	}}
	pagePush = way{page: true, prompter: func(ctx context.Context, c *call, q Question) (elicitation.Prompter, func()) {
		prompts, stop := pushContext(ctx)
		ls := newLinks(c.el, q.Title)
		ls.ss, ls.ctx = c.req.Session, prompts
		return pushPrompter{ss: c.req.Session, ctx: prompts, links: ls}, func() { stop(); ls.close() }
	}}
)

// plan is how a question goes: its way, the form its first round asks, and what follows
// each valid answer: the rounds the form needs, then q.Then (nil: q.Then alone).
type plan struct {
	way  way
	form elicitation.CompiledForm
	then elicitation.Continuation
}

// planFor decides how q goes to the person behind c, whose client declares m; or says why it
// cannot (ELICITATION_UNSUPPORTED, naming what could not be asked).
func (el *Elicitor) planFor(c *call, q Question, m modes) (plan, *Error) {
	formWay, pageWay := formPush, pagePush
	if c.pull {
		formWay, pageWay = formPull, pagePull
	}
	if q.Wire != nil {
		// A schema sent as it is: form mode only.
		if !m.form {
			return plan{}, noForms(q, formMissing(q.Form))
		}
		return plan{way: formWay, form: q.Wire}, nil
	}
	a := q.Form.Asking()
	switch {
	case len(a.Page) == 0 && m.form:
		p := plan{way: formWay, form: keepForm{q.Form}}
		if q.Form.Conditional() {
			p.then = rounds(q.Form, q.Message, q.Then, true)
		}
		return p, nil
	case el.pages != nil && m.url:
		if a.Split != nil && m.form {
			// The plain fields in form mode, then the rest on the page.
			return plan{way: pageWay, form: keepForm{a.Split}, then: rounds(a.Split, q.Message, q.Then, true)}, nil
		}
		// Every field on the page: those that need it, and all of them for a client without forms.
		p := plan{way: pageWay, form: pageRound{keepForm{q.Form}}}
		if q.Form.Conditional() {
			p.then = rounds(q.Form, q.Message, q.Then, m.form)
		}
		return p, nil
	case len(a.Page) == 0:
		return plan{}, noForms(q, missingOf(q.Form.Fields()))
	}
	missing := missingOf(a.Page)
	if el.pages == nil {
		e := Errorf(CodeUnsupported, "no_page",
			"these fields can only be asked on elicitd's page (URL mode), which this server does not serve: %s", names(missing))
		e.Missing = missing
		return plan{}, e
	}
	e := Errorf(CodeUnsupported, "no_url_elicitation",
		"this client cannot open a link for the person (it declares no URL elicitation), and these fields can only be asked on elicitd's page: %s; secrets and files must not be asked in the chat", names(missing))
	e.Missing = missing
	return plan{}, e
}

// noForms is the error for a question that needs form mode, of a client without it.
func noForms(q Question, fields []Missing) *Error {
	e := Errorf(CodeUnsupported, "no_form_elicitation",
		"this client cannot show forms (it declares no form elicitation); ask the person for these in the chat instead")
	e.Missing = q.Missing
	if e.Missing == nil {
		e.Missing = fields
	}
	return e
}

// asked returns how a follow-up round of form is sent: on the page when it asks a field that
// needs it, or when the client has no forms.
func asked(form *validator.Compiled, forms bool) elicitation.CompiledForm {
	if !forms || form.NeedsPage() {
		return pageRound{keepForm{form}}
	}
	return keepForm{form}
}
