package tools

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/validator"
)

// contactSet holds the template contact, and a template a tool owns.
func contactSet(t *testing.T) *templates.Set {
	t.Helper()
	set := templates.New()
	require.NoError(t, set.Add("contact", validator.Form{Title: "Contact", Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true, MinLength: validator.Ptr(2)},
		{Name: "email", Type: validator.Email, Label: "Email", Required: true},
		{Name: "country", Type: validator.Select, Label: "Country", Required: true,
			Options: []validator.Option{{Value: "CA", Title: "Canada"}, {Value: "US", Title: "United States"}}},
	}}))
	require.NoError(t, set.Add("login", validator.Form{Title: "Login", Fields: []validator.Field{
		{Name: "user", Type: validator.Text, Label: "User", Required: true},
		{Name: "api_key", Type: validator.Text, Label: "API key", Sensitive: true},
	}}))
	require.NoError(t, set.AddBuiltin(templates.Builtin{Name: "parcel", Tool: "ship", Form: validator.Form{Fields: []validator.Field{
		{Name: "weight", Type: validator.Number, Required: true}}}}))
	return set
}

// serverWith is an MCP server with ask_user asking set's templates.
func serverWith(t *testing.T, set *templates.Set) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "test"}, nil)
	el := ask.New(srv, ask.Options{})
	el.Add(srv, AskUser(AskUserOptions{Templates: set}))
	t.Cleanup(func() { _ = el.Close(context.Background(), elicitation.Shutdown) })
	return srv
}

// propertyOf returns a property of a prompt's requested schema.
func propertyOf(t *testing.T, p *mcp.ElicitParams, name string) map[string]any {
	t.Helper()
	raw, err := json.Marshal(p.RequestedSchema)
	require.NoError(t, err)
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	return schema.Properties[name]
}

// An agent asks a template by name, with defaults, in both eras: the person sees the
// template's form with the defaults filled in, and the answers are checked by its rules.
func TestAskUserAsksATemplateByName(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			srv := serverWith(t, contactSet(t))
			u := elicittest.Connect(t, srv, era,
				elicittest.Accept(map[string]any{"name": "A", "email": "ada@example.com", "country": "CA"}),
				elicittest.Accept(map[string]any{"name": "Ada"}))
			res := u.Call(context.Background(), "ask_user", map[string]any{"message": "Who are you?", "template": "contact",
				"defaults": map[string]any{"country": "canada", "email": "ada@example.com"}})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, "completed", p["status"], "%v", p)
			assert.Equal(t, map[string]any{"name": "Ada", "email": "ada@example.com", "country": "CA"}, p["data"])
			prompts := u.Prompts()
			require.Len(t, prompts, 2, "a name too short is asked again")
			assert.Equal(t, "Who are you?", prompts[0].Message)
			assert.Equal(t, "CA", propertyOf(t, prompts[0], "country")["default"], "the default, normalised by the field's rules")
			assert.Equal(t, "ada@example.com", propertyOf(t, prompts[0], "email")["default"])
			assert.Equal(t, "Email", propertyOf(t, prompts[0], "email")["title"])
			assert.Contains(t, prompts[1].Message, "Name: must be at least 2 characters")
		})
	}
}

func TestAskUserTemplateErrorsNameWhatIsWrong(t *testing.T) {
	srv := serverWith(t, contactSet(t))
	u := elicittest.Connect(t, srv, elicittest.Pull)
	for _, c := range []struct {
		args         map[string]any
		code, reason string
		message      string
	}{
		{map[string]any{"message": "m", "template": "contact", "form": nameForm}, "INVALID_FORM", "form_or_schema",
			`give exactly one of "form", "schema" and "template": "form" and "template" were given`},
		{map[string]any{"message": "m"}, "INVALID_FORM", "form_or_schema", `give one of "form", "schema" and "template": none was given`},
		{map[string]any{"message": "m", "template": ""}, "INVALID_ARGUMENT", "invalid_arguments", `"template" is empty: give the name of a template`},
		{map[string]any{"message": "m", "template": "", "form": nameForm}, "INVALID_ARGUMENT", "invalid_arguments", `"template" is empty`},
		{map[string]any{"message": "m", "template": "contacts"}, "INVALID_ARGUMENT", "unknown_template",
			`unknown template "contacts": the templates are contact, login`},
		{map[string]any{"message": "m", "template": "parcel"}, "INVALID_ARGUMENT", "unknown_template",
			`unknown template "parcel": the templates are contact, login`},
		{map[string]any{"message": "m", "form": nameForm, "defaults": map[string]any{"name": "Ada"}}, "INVALID_ARGUMENT", "invalid_arguments",
			`"defaults" goes with "template"`},
		{map[string]any{"message": "m", "template": "contact", "defaults": map[string]any{"email": "nope", "phone": "1", "country": "FR"}},
			"INVALID_ARGUMENT", "invalid_default",
			`"defaults" of template "contact": "phone" is not a field of the template; "email" must be an email address like name@example.com; "country" must be one of Canada (CA), United States (US) (its fields: name, email, country)`},
		{map[string]any{"message": "m", "template": "contact", "defaults": map[string]any{"name": " "}}, "INVALID_ARGUMENT", "invalid_default",
			`"name" has a blank default`},
		{map[string]any{"message": "m", "template": "login", "defaults": map[string]any{"api_key": "k"}}, "INVALID_ARGUMENT", "invalid_default",
			`"api_key" is asked on elicitd's page (a secret or a file), and takes no default`},
	} {
		res := u.Call(context.Background(), "ask_user", c.args)
		require.True(t, res.IsError, "%v", c.args)
		p, err := elicittest.Payload(res)
		require.NoError(t, err)
		assert.Equal(t, c.code, p["code"], "%v", c.args)
		assert.Equal(t, c.reason, p["reason"], "%v", c.args)
		assert.Contains(t, p["message"], c.message, "%v", c.args)
	}
	assert.Empty(t, u.Prompts(), "nothing was asked")

	u = elicittest.Connect(t, serverWith(t, nil), elicittest.Pull)
	p, err := elicittest.Payload(u.Call(context.Background(), "ask_user", map[string]any{"message": "m", "template": "contact"}))
	require.NoError(t, err)
	assert.Contains(t, p["message"], `unknown template "contact": this server defines no templates`)
}

// The input schema lists the templates ask_user asks as the enum of "template"; without
// templates, it has no "template" to guess at.
func TestAskUserSchemaListsTheTemplates(t *testing.T) {
	schemaOf := func(set *templates.Set) map[string]any {
		raw, _ := json.Marshal(listedAskUser(t, set).InputSchema)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(raw, &schema))
		return schema["properties"].(map[string]any)
	}
	set := contactSet(t)
	require.NoError(t, set.Add("booking", validator.Form{Fields: []validator.Field{{Name: "when", Type: validator.DateTime}}}))
	props := schemaOf(set)
	assert.Equal(t, []any{"booking", "contact", "login"}, props["template"].(map[string]any)["enum"], "the tool's own template is not offered")
	assert.Contains(t, props, "defaults")

	props = schemaOf(nil)
	assert.NotContains(t, props, "template")
	assert.NotContains(t, props, "defaults")
	assert.Contains(t, props, "form")
}

// ask_user takes its templates as they are when it is made: a template added later is
// another ask_user's.
func TestAskUserKeepsTheTemplatesItWasMadeWith(t *testing.T) {
	set := contactSet(t)
	srv := serverWith(t, set)
	require.NoError(t, set.Add("late", validator.Form{Fields: []validator.Field{{Name: "x", Type: validator.Text}}}))
	u := elicittest.Connect(t, srv, elicittest.Pull)
	p, err := elicittest.Payload(u.Call(context.Background(), "ask_user", map[string]any{"message": "m", "template": "late"}))
	require.NoError(t, err)
	assert.Equal(t, "unknown_template", p["reason"])
}

// A template is compiled with ask_user's answer size limit, as a form sent would be.
func TestAskUserTemplateHasTheAnswerLimit(t *testing.T) {
	tool := &askUser{forms: newFormCache(formCacheBudget, formCacheEntries), templates: askableTemplates(contactSet(t), 1024)}
	form, err := tool.templateForm("contact", nil)
	require.NoError(t, err)
	_, errs := form.Validate(map[string]any{"name": string(make([]byte, 2048)), "email": "a@b.co", "country": "CA"})
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Message, "1024")
	withDefaults, err := tool.templateForm("contact", json.RawMessage(`{"country":"US"}`))
	require.NoError(t, err)
	again, err := tool.templateForm("contact", json.RawMessage(`{"country":"US"}`))
	require.NoError(t, err)
	assert.Same(t, withDefaults, again, "the same defaults: compiled once")
}

var nameForm = map[string]any{"fields": []any{map[string]any{"name": "name", "type": "text"}}}

// rangeSet holds templates whose fields are checked against each other.
func rangeSet(t *testing.T) *templates.Set {
	t.Helper()
	set := templates.New()
	require.NoError(t, set.Add("range", validator.Form{Fields: []validator.Field{
		{Name: "lo", Type: validator.Number, Label: "Lo", Default: 3},
		{Name: "hi", Type: validator.Number, Label: "Hi", Compare: &validator.Comparison{Op: "gt", Field: "lo"}},
		{Name: "unit", Type: validator.Select, Label: "Unit", Default: "kg", Options: []validator.Option{{Value: "kg"}, {Value: "lb"}}},
		{Name: "note", Type: validator.Text, Label: "Note", RequiredWhen: &validator.Condition{Field: "unit", Equals: "lb"}},
		{Name: "extra", Type: validator.Number, Label: "Extra", When: &validator.Condition{Field: "lo", Present: true},
			Compare: &validator.Comparison{Op: "ge", Field: "lo"}},
	}}))
	require.NoError(t, set.Add("span", validator.Form{Fields: []validator.Field{
		{Name: "from", Type: validator.Date, Label: "From"},
		{Name: "to", Type: validator.Date, Label: "To", Default: "2030-01-10", Compare: &validator.Comparison{Op: "gt", Field: "from"}},
	}}))
	return set
}

// A null default would drop the template's own: it is refused, naming the field. Defaults
// are checked together, and with the template's own defaults, by the rules between fields;
// each problem names a field the agent gave.
func TestAskUserTemplateDefaultsAreCheckedTogether(t *testing.T) {
	tool := &askUser{forms: newFormCache(formCacheBudget, formCacheEntries), templates: askableTemplates(rangeSet(t), 0)}
	for _, c := range []struct {
		template, defaults string
		want               []validator.Problem
	}{
		{"range", `{"unit": null}`, []validator.Problem{{Field: "unit", Message: "is null; leave it out to keep the template's default, or give a value"}}},
		{"range", `{"lo": null, "hi": 5}`, []validator.Problem{{Field: "lo", Message: "is null; leave it out to keep the template's default, or give a value"}}},
		{"range", `{"lo": 10, "hi": 1}`, []validator.Problem{{Field: "hi", Message: "must be greater than Lo"}}},
		{"range", `{"hi": 1}`, []validator.Problem{{Field: "hi", Message: "must be greater than Lo"}}},
		{"range", `{"lo": 10, "hi": 1, "extra": 2}`, []validator.Problem{
			{Field: "hi", Message: "must be greater than Lo"}, {Field: "extra", Message: "must be at least Lo"}}},
		{"span", `{"from": "2030-02-01"}`, []validator.Problem{
			{Field: "from", Message: `is at odds with the template's default of "to", which must be after From`}}},
	} {
		_, err := tool.templateForm(c.template, json.RawMessage(c.defaults))
		var e *ask.Error
		if !assert.ErrorAs(t, err, &e, c.defaults) {
			continue
		}
		assert.Equal(t, "invalid_default", e.Reason, c.defaults)
		assert.Equal(t, map[string]any{"problems": c.want}, e.Details, c.defaults)
		for _, p := range c.want {
			assert.Contains(t, e.Message, strconv.Quote(p.Field)+" "+p.Message, c.defaults)
		}
	}

	for _, good := range []struct{ template, defaults string }{
		{"range", `{"lo": 1, "hi": 2, "extra": 1}`}, {"range", `{"unit": "lb"}`}, {"range", `{"hi": 4}`}, {"span", `{"from": "2030-01-01"}`},
	} {
		_, err := tool.templateForm(good.template, json.RawMessage(good.defaults))
		assert.NoError(t, err, "%s: a field the defaults make required is the person's to answer", good.defaults)
	}
	form, err := tool.templateForm("range", json.RawMessage(`{"hi": 4}`))
	require.NoError(t, err)
	data, errs := form.Validate(map[string]any{})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"lo": 3.0, "hi": 4.0, "unit": "kg"}, data, "the template's own defaults stay")
}

// ask_user's description suggests a template only when there are templates to ask, and
// then by a name there is.
func TestAskUserDescriptionMentionsTemplatesOnlyWhenThereAreSome(t *testing.T) {
	describe := func(set *templates.Set) (string, string) {
		tool := listedAskUser(t, set)
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema))
		return tool.Description, schema.Properties["form"].Description
	}
	for _, set := range []*templates.Set{nil, templates.New(), func() *templates.Set {
		s := templates.New()
		require.NoError(t, s.AddBuiltin(templates.Builtin{Name: "parcel", Tool: "ship", Form: validator.Form{Fields: []validator.Field{
			{Name: "weight", Type: validator.Number}}}}))
		return s
	}()} {
		desc, form := describe(set)
		assert.NotContains(t, desc, "template")
		assert.NotContains(t, desc, "defaults")
		assert.Contains(t, desc, `"schema"`)
		assert.NotContains(t, form, "template")
	}
	desc, form := describe(rangeSet(t))
	assert.Contains(t, desc, `{"message": "...", "template": "range"}`)
	assert.Contains(t, desc, "elicitd://templates/NAME")
	assert.Contains(t, desc, `"defaults"`)
	assert.NotContains(t, desc, `"contact"`)
	assert.Contains(t, form, "template")
}

// listedAskUser returns ask_user as a client's tools/list shows it, on a server whose
// ask_user asks set's templates.
func listedAskUser(t *testing.T, set *templates.Set) *mcp.Tool {
	t.Helper()
	srv := serverWith(t, set)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	return tools.Tools[0]
}
