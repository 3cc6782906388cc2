package templates_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var contact = validator.Form{Title: "Contact", Fields: []validator.Field{
	{Name: "name", Type: validator.Text, Label: "Name", Required: true},
	{Name: "email", Type: validator.Email, Label: "Email", Required: true},
}}

const contactJSON = `{"title": "Contact", "fields": [
  {"name": "name", "type": "text", "label": "Name", "required": true},
  {"name": "email", "type": "email", "label": "Email", "required": true}
]}`

// writeFiles makes a directory holding files (name -> content).
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// problemsOf returns err's problems, each as its String with the directory left out.
func problemsOf(t *testing.T, err error, dir string) []string {
	t.Helper()
	var te *templates.Error
	require.ErrorAs(t, err, &te)
	var out []string
	for _, p := range te.Problems {
		out = append(out, strings.TrimPrefix(p.String(), dir+string(filepath.Separator)))
	}
	return out
}

func TestAddCompilesTheFormAndRefusesWhatIsWrong(t *testing.T) {
	set := templates.New()
	require.NoError(t, set.Add("contact", contact))
	tmpl, ok := set.Get("contact")
	require.True(t, ok)
	assert.Equal(t, "Contact", tmpl.Form.Title())
	assert.Empty(t, tmpl.Source, "added in code")
	assert.False(t, tmpl.Builtin)
	var back validator.Form
	require.NoError(t, json.Unmarshal(tmpl.JSON, &back))
	assert.Equal(t, contact, back, "its JSON is the form's")

	err := set.Add("contact", contact)
	assert.ErrorIs(t, err, templates.ErrDuplicate)
	assert.EqualError(t, err, `template "contact": the name "contact" is taken by a template added in code`)

	for _, name := range []string{"", "Contact", "-x", "a b", "a.json", strings.Repeat("a", 65), "ünï"} {
		assert.ErrorIs(t, set.Add(name, contact), templates.ErrName, "%q", name)
	}
	for _, name := range []string{"a", "0", "contact_2", "ship-to", strings.Repeat("a", 64)} {
		assert.Regexp(t, templates.NamePattern, name)
	}

	err = set.Add("broken", validator.Form{Fields: []validator.Field{{Name: "a", Type: "colour"}, {Name: "b", Type: validator.Text, Minimum: validator.Ptr(1.0)}}})
	assert.ErrorIs(t, err, templates.ErrInvalid)
	assert.Equal(t, []string{
		`template "broken": field "a": has unknown type "colour"; expected one of text, number, integer, boolean, date, date_time, email, url, select, multi_select, file`,
		`template "broken": field "b": has a numeric bound, but bounds apply only to number and integer fields`,
	}, problemsOf(t, err, ""), "every problem at once")
	assert.Equal(t, []string{"contact"}, set.Names(), "nothing bad was added")
}

func TestDefinitionIsACopy(t *testing.T) {
	set := templates.New()
	form := validator.Form{Fields: []validator.Field{{Name: "c", Type: validator.Select, Options: []validator.Option{{Value: "a"}}}}}
	require.NoError(t, set.Add("pick", form))
	form.Fields[0].Options[0].Value = "changed"
	tmpl, _ := set.Get("pick")
	def := tmpl.Definition()
	assert.Equal(t, "a", def.Fields[0].Options[0].Value, "the caller's later changes do not reach it")
	def.Fields[0].Options[0].Value = "mine"
	assert.Equal(t, "a", tmpl.Definition().Fields[0].Options[0].Value, "nor do a reader's")
}

func TestLoadReadsEveryJSONFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"contact.json":   contactJSON,
		"README.md":      "not a template",
		".contact.json":  "{an editor's temporary file",
		"notes.json.bak": "{",
	})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.json"), 0o755))
	set := templates.New()
	require.NoError(t, set.Load(dir))
	assert.Equal(t, []string{"contact"}, set.Names())
	tmpl, _ := set.Get("contact")
	assert.Equal(t, filepath.Join(dir, "contact.json"), tmpl.Source)
	assert.Equal(t, contactJSON, string(tmpl.JSON), "the file as written")
	assert.Equal(t, "Email", tmpl.Form.Fields()[1].Label)
}

// A directory with something wrong anywhere adds nothing, and says everything wrong at once:
// the file, the field (or the line and column of bad JSON), and what is wrong.
func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good.json":     contactJSON,
		"Contact.json":  contactJSON,
		"types.json":    `{"fields": [{"name": "when", "type": "time"}, {"name": "n", "type": "text", "maximum": 3}]}`,
		"syntax.json":   "{\"title\": \"T\",\n \"fields\": [\n  {\"name\": \"x\", \"type\": \"text\",}\n]}",
		"key.json":      "{\"fields\": [\n  {\"name\": \"x\", \"type\": \"text\", \"lable\": \"X\"}]}",
		"kind.json":     `{"fields": [{"name": "x", "type": "text", "required": "yes"}]}`,
		"trailing.json": `{"fields": [{"name": "x", "type": "text"}]} {}`,
		"short.json":    `{"fields": [`,
		"empty.json":    `{"title": "Nothing"}`,
	})
	set := templates.New()
	err := set.Load(dir)
	assert.ErrorIs(t, err, templates.ErrName)
	assert.ErrorIs(t, err, templates.ErrInvalid)
	assert.Equal(t, []string{
		`Contact.json: the name "Contact" (the file's name without .json) is not allowed: a name is 1 to 64 lower-case letters, digits, '_' and '-', starting with a letter or a digit`,
		`empty.json: form: has no fields; a form needs at least one`,
		`key.json: line 2, column 33: unknown key "lable": the form language has no such key (see docs/forms.md)`,
		`kind.json: line 1, column 60: a field's "required" must be true or false, not a string`,
		`short.json: line 1, column 13: the JSON ends before the form does`,
		`syntax.json: line 3, column 32: the JSON does not parse: invalid character '}' looking for beginning of object key string`,
		`trailing.json: line 1, column 45: has more after the form's closing brace; a file holds one form`,
		`types.json: field "when": has unknown type "time"; expected one of text, number, integer, boolean, date, date_time, email, url, select, multi_select, file`,
		`types.json: field "n": has a numeric bound, but bounds apply only to number and integer fields`,
	}, problemsOf(t, err, dir))
	assert.Empty(t, set.Names(), "good.json too waits until every file is good")
	assert.Contains(t, err.Error(), "9 problems:\n  "+filepath.Join(dir, "Contact.json"))
}

func TestLoadRefusesATooLargeFileAndAMissingDirectory(t *testing.T) {
	dir := writeFiles(t, map[string]string{"big.json": `{"title": "` + strings.Repeat("x", validator.MaxFormBytes) + `", "fields": []}`})
	set := templates.New()
	assert.Equal(t, []string{"big.json: is over 65536 bytes; a form's JSON is at most 65536"}, problemsOf(t, set.Load(dir), dir))
	missing := filepath.Join(dir, "nope")
	assert.EqualError(t, set.Load(missing), missing+": cannot read the directory: no such file or directory")
}

func TestDuplicateNames(t *testing.T) {
	one := writeFiles(t, map[string]string{"contact.json": contactJSON})
	two := writeFiles(t, map[string]string{"contact.json": contactJSON, "other.json": contactJSON})

	set := templates.New()
	err := set.Load(one, two)
	assert.ErrorIs(t, err, templates.ErrDuplicate)
	assert.EqualError(t, err, filepath.Join(two, "contact.json")+`: the name "contact" is taken: `+filepath.Join(one, "contact.json")+" defines it too")
	assert.Empty(t, set.Names())

	require.NoError(t, set.Load(one))
	err = set.Load(two)
	assert.ErrorIs(t, err, templates.ErrDuplicate, "a later Load meets the earlier one's names")
	assert.Equal(t, []string{"contact"}, set.Names())

	set = templates.New()
	require.NoError(t, set.Add("contact", contact))
	err = set.Load(one)
	assert.EqualError(t, err, filepath.Join(one, "contact.json")+`: the name "contact" is taken by a template added in code`)
}

// A file replaces a builtin of its name, if the builtin's check accepts it; the builtin's
// name is not free for another Add.
func TestAFileRewordsABuiltin(t *testing.T) {
	builtin := validator.Form{Title: "Parcel", Fields: []validator.Field{
		{Name: "weight", Type: validator.Text, Label: "Weight", Required: true, Pattern: "^[0-9]+$"},
		{Name: "unit", Type: validator.Select, Label: "Unit", Required: true,
			Options: []validator.Option{{Value: "KGS", Title: "Kilograms"}, {Value: "LBS", Title: "Pounds"}}},
	}}
	newSet := func() *templates.Set {
		set := templates.New()
		require.NoError(t, set.AddBuiltin(templates.Builtin{Name: "parcel", Form: builtin, Tool: "ship", Fits: templates.WordingOnly(builtin)}))
		return set
	}
	set := newSet()
	tmpl, _ := set.Get("parcel")
	assert.True(t, tmpl.Builtin)
	assert.Equal(t, "ship", tmpl.Tool)
	assert.Empty(t, tmpl.Source)
	assert.ErrorIs(t, set.Add("parcel", contact), templates.ErrDuplicate, "only a file replaces a builtin")

	reworded := `{"title": "Colis", "fields": [
	  {"name": "unit", "type": "select", "label": "Unité", "required": true, "description": "du poids",
	   "options": [{"value": "LBS", "title": "Livres"}, {"value": "KGS", "title": "Kilos"}]},
	  {"name": "weight", "type": "text", "label": "Poids", "placeholder": "12", "required": true, "pattern": "^[0-9]+$"}]}`
	dir := writeFiles(t, map[string]string{"parcel.json": reworded})
	require.NoError(t, set.Load(dir))
	tmpl, _ = set.Get("parcel")
	assert.Equal(t, filepath.Join(dir, "parcel.json"), tmpl.Source)
	assert.True(t, tmpl.Builtin, "still the builtin, reworded")
	assert.Equal(t, "ship", tmpl.Tool)
	assert.Equal(t, "Colis", tmpl.Form.Title())
	assert.Equal(t, reworded, string(tmpl.JSON))
	assert.ErrorIs(t, set.Load(writeFiles(t, map[string]string{"parcel.json": reworded})), templates.ErrDuplicate,
		"a second file for the builtin is a duplicate")

	bad := `{"title": "Colis", "fields": [
	  {"name": "weight", "type": "number", "label": "Poids", "required": true},
	  {"name": "unit", "type": "select", "label": "Unité", "required": true, "options": [{"value": "G"}]},
	  {"name": "extra", "type": "text"}]}`
	dir = writeFiles(t, map[string]string{"parcel.json": bad})
	set = newSet()
	err := set.Load(dir)
	assert.ErrorIs(t, err, templates.ErrInvalid)
	assert.Equal(t, []string{
		`parcel.json: field "weight": must keep "pattern" as the built-in has it, "^[0-9]+$"; an override changes only wording (title, label, description, placeholder, option titles)`,
		`parcel.json: field "weight": must keep "type" as the built-in has it, "text"; an override changes only wording (title, label, description, placeholder, option titles)`,
		`parcel.json: field "unit": its options must have the built-in's values, KGS, LBS (only their titles may change)`,
		`parcel.json: field "extra": is not a field of the built-in form; an override may only reword the built-in's fields, and adds none`,
	}, problemsOf(t, err, dir))
	tmpl, _ = set.Get("parcel")
	assert.Empty(t, tmpl.Source, "the builtin stays")

	dir = writeFiles(t, map[string]string{"parcel.json": `{"fields": [{"name": "extra", "type": "text"}]}`})
	assert.Equal(t, []string{
		`parcel.json: field "extra": is not a field of the built-in form; an override may only reword the built-in's fields, and adds none`,
		`parcel.json: form: lacks 2 of the built-in form's fields, which the tool asks for: weight, unit; an override keeps every field and changes only wording`,
	}, problemsOf(t, newSet().Load(dir), dir))
}

func TestABuiltinWithoutFitsTakesAnyForm(t *testing.T) {
	set := templates.New()
	require.NoError(t, set.AddBuiltin(templates.Builtin{Name: "contact", Form: contact}))
	dir := writeFiles(t, map[string]string{"contact.json": `{"fields": [{"name": "phone", "type": "text"}]}`})
	require.NoError(t, set.Load(dir))
	tmpl, _ := set.Get("contact")
	assert.Equal(t, "phone", tmpl.Form.Fields()[0].Name)
}

func TestURI(t *testing.T) {
	assert.Equal(t, "elicitd://templates/contact", templates.URI("contact"))
}

func TestErrorWording(t *testing.T) {
	one := &templates.Error{Problems: []templates.Problem{{File: "/t/a.json", Name: "a", Field: "x", Message: "is wrong"}}}
	assert.EqualError(t, one, `/t/a.json: field "x": is wrong`)
	assert.False(t, errors.Is(one, templates.ErrDuplicate))
	two := &templates.Error{Problems: []templates.Problem{
		{File: "/t/a.json", Name: "a", Field: "form", Message: "has no fields"},
		{File: "/t/b.json", Name: "b", Line: 2, Column: 3, Message: "bad JSON"},
	}}
	assert.EqualError(t, two, "2 problems:\n  /t/a.json: form: has no fields\n  /t/b.json: line 2, column 3: bad JSON")
}

// Definition is a deep copy: changing what the returned form's pointers, lists, rules and
// defaults hold does not change the template.
func TestDefinitionIsADeepCopy(t *testing.T) {
	set := templates.New()
	require.NoError(t, set.Add("deep", validator.Form{Fields: []validator.Field{
		{Name: "n", Type: validator.Text, MinLength: validator.Ptr(1), MaxLength: validator.Ptr(9)},
		{Name: "lo", Type: validator.Number, Minimum: validator.Ptr(0.0), Maximum: validator.Ptr(10.0),
			ExclusiveMinimum: validator.Ptr(-1.0), ExclusiveMaximum: validator.Ptr(11.0)},
		{Name: "hi", Type: validator.Number, Compare: &validator.Comparison{Op: "gt", Field: "lo"},
			RequiredWhen: &validator.Condition{Field: "n", OneOf: []any{"a", "b"}}},
		{Name: "tags", Type: validator.MultiSelect, MinItems: validator.Ptr(1), MaxItems: validator.Ptr(2), Default: []string{"x"},
			Options: []validator.Option{{Value: "x"}, {Value: "y"}}, When: &validator.Condition{Field: "n", Equals: "a"}},
	}}))
	tmpl, _ := set.Get("deep")
	before, err := json.Marshal(tmpl.Definition())
	require.NoError(t, err)

	def := tmpl.Definition()
	*def.Fields[0].MinLength, *def.Fields[0].MaxLength = 5, 6
	*def.Fields[1].Minimum, *def.Fields[1].Maximum = 5, 6
	*def.Fields[1].ExclusiveMinimum, *def.Fields[1].ExclusiveMaximum = 5, 6
	def.Fields[2].Compare.Op, def.Fields[2].RequiredWhen.Field = "lt", "x"
	def.Fields[2].RequiredWhen.OneOf[0] = "z"
	*def.Fields[3].MinItems, *def.Fields[3].MaxItems = 5, 6
	def.Fields[3].When.Equals = "b"
	switch l := def.Fields[3].Default.(type) {
	case []string:
		l[0] = "y"
	case []any:
		l[0] = "y"
	default:
		t.Fatalf("a list default is %T", l)
	}
	after, err := json.Marshal(tmpl.Definition())
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the template is as it was")
}

// A default on a field asked on elicitd's page would be served to every client in
// resources/read, and pre-filled nowhere: it is a template problem, naming the field.
func TestADefaultOnAPageFieldIsRefused(t *testing.T) {
	set := templates.New()
	err := set.Add("login", validator.Form{Fields: []validator.Field{
		{Name: "user", Type: validator.Text, Default: "ada"},
		{Name: "api_key", Type: validator.Text, Sensitive: true, Default: "k-123"},
		{Name: "password", Type: validator.Text, Widget: "password", Default: "hunter2"},
	}})
	assert.ErrorIs(t, err, templates.ErrInvalid)
	assert.Equal(t, []string{
		`template "login": field "api_key": is asked on elicitd's page (a secret or a file), and takes no default: a template's default is shown to every client that reads it`,
		`template "login": field "password": is asked on elicitd's page (a secret or a file), and takes no default: a template's default is shown to every client that reads it`,
	}, problemsOf(t, err, ""))
	assert.Empty(t, set.Names())

	dir := writeFiles(t, map[string]string{
		"login.json": `{"fields": [{"name": "api_key", "type": "text", "sensitive": true, "default": "k-123"}]}`,
		"cv.json":    `{"fields": [{"name": "cv", "type": "file", "default": "x"}]}`,
	})
	assert.Equal(t, []string{
		`cv.json: field "cv": is a file field with a default; a file cannot have one`,
		`login.json: field "api_key": is asked on elicitd's page (a secret or a file), and takes no default: a template's default is shown to every client that reads it`,
	}, problemsOf(t, set.Load(dir), dir))
	assert.Empty(t, set.Names())
}

// A directory given twice is loaded once: its files are not duplicates of themselves.
func TestLoadTakesADirectoryOnce(t *testing.T) {
	dir := writeFiles(t, map[string]string{"contact.json": contactJSON})
	set := templates.New()
	require.NoError(t, set.Load(dir, dir+string(filepath.Separator), filepath.Join(dir, ".")))
	assert.Equal(t, []string{"contact"}, set.Names())
}
