package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"

	"github.com/elicitd/elicitd/validator"
)

// NamePattern is what a template's name may be: 1 to 64 characters, lower-case letters,
// digits, '_' and '-', starting with a letter or a digit. A file's name is the template's
// name with ".json" after it.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// URIPrefix starts the URI of a template as an MCP resource: elicitd serves each
// template as URIPrefix+NAME (elicitd://templates/contact), its form's JSON.
const URIPrefix = "elicitd://templates/"

// URI returns the resource URI of the template called name.
func URI(name string) string { return URIPrefix + name }

// Template is one named form. It is immutable: do not modify what its fields hold.
type Template struct {
	Name string
	// Form is the compiled form, ready to ask (ask.Question's Form).
	Form *validator.Compiled
	// JSON is the form in the JSON form language: a file's bytes as read, or the
	// definition of a template added in code, encoded.
	JSON json.RawMessage
	// Source is the file the template was read from; empty for one added in code.
	Source string
	// Builtin is set for a template added with AddBuiltin, also when a file has replaced
	// it (Source then names the file).
	Builtin bool
	// Tool is, for a builtin, the tool whose own form it is (Builtin.Tool); empty for a
	// form any tool may ask.
	Tool string

	// The definition, kept as JSON so that each Definition is a copy of its own, and what
	// JSON does not carry: the answer size limit and the fields' Go checks.
	def            json.RawMessage
	maxAnswerBytes int
	checks         []func(value any, answers map[string]any) error
}

// Definition returns a deep copy of the template's form definition, for a caller that
// compiles it again with more set (defaults, an answer size limit): nothing the caller
// changes in it, pointers and lists included, reaches the template. Its values are as JSON
// decodes them, as a file's are (a number is a float64, a list a []any); a field's Check
// and the form's MaxAnswerBytes are the ones given. Compiling it unchanged gives the
// template's Form.
func (t *Template) Definition() validator.Form {
	var f validator.Form
	if err := json.Unmarshal(t.def, &f); err != nil || len(f.Fields) != len(t.checks) {
		panic(fmt.Sprintf("templates: the definition of %q does not decode: %v", t.Name, err)) // compile encoded it
	}
	f.MaxAnswerBytes = t.maxAnswerBytes
	for i := range f.Fields {
		f.Fields[i].Check = t.checks[i]
	}
	return f
}

// Builtin is a template a program ships, which an operator's file of the same name may
// replace (see AddBuiltin).
type Builtin struct {
	Name string
	Form validator.Form
	// Tool, when set, makes the template that tool's own form (a tool that words its
	// questions from it, as create_shipment does): ask_user does not offer it.
	Tool string
	// Fits checks a file that replaces the builtin, once the file's form has compiled; its
	// error refuses the file. A *validator.DefinitionError is reported problem by problem,
	// each naming its field. Nil lets any valid form replace the builtin; WordingOnly lets
	// only wording change.
	Fits func(override validator.Form) error
}

// Set is a set of templates by name. The zero value is not usable: make one with New. A
// Set is safe for concurrent use; its templates never change once added.
type Set struct {
	mu       sync.RWMutex
	byName   map[string]*Template
	builtins map[string]Builtin
}

// New returns an empty Set.
func New() *Set {
	return &Set{byName: map[string]*Template{}, builtins: map[string]Builtin{}}
}

// Add compiles form and adds it as the template called name. It returns an *Error (and
// adds nothing) when the name is not allowed (ErrName), already taken (ErrDuplicate), or
// the form does not compile (ErrInvalid, one problem for each of validator.Compile's) or
// gives a default to a field asked on elicitd's page (ErrInvalid, naming the field: a
// template's JSON is shown to every client that reads it).
func (s *Set) Add(name string, form validator.Form) error {
	t, ps := compile(name, "", form)
	if ps.err() != nil {
		return ps.err()
	}
	t.JSON, _ = json.Marshal(form) // a form that compiled has only JSON values in it
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.free(name, ""); err != nil {
		return err
	}
	s.byName[name] = t
	return nil
}

// AddBuiltin adds b as a template that a file of the same name, in a directory loaded
// later, may replace, if b.Fits accepts the file. It fails as Add does.
func (s *Set) AddBuiltin(b Builtin) error {
	t, ps := compile(b.Name, "", b.Form)
	if ps.err() != nil {
		return ps.err()
	}
	t.JSON, _ = json.MarshalIndent(b.Form, "", "  ")
	t.Builtin, t.Tool = true, b.Tool
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.free(b.Name, ""); err != nil {
		return err
	}
	s.byName[b.Name] = t
	s.builtins[b.Name] = b
	return nil
}

// free reports, with s.mu held, whether name may be taken by a template from file (empty
// for code): it may if no template has it, or if a builtin, not yet replaced, has it and
// the newcomer is a file.
func (s *Set) free(name, file string) error {
	old, taken := s.byName[name]
	if !taken || file != "" && old.Builtin && old.Source == "" {
		return nil
	}
	var ps problems
	switch {
	case old.Source != "":
		ps.add(ErrDuplicate, file, name, "", "the name %q is taken: %s defines it too", name, old.Source)
	case old.Builtin:
		ps.add(ErrDuplicate, file, name, "", "the name %q is taken by a built-in template; only a file may replace it", name)
	default:
		ps.add(ErrDuplicate, file, name, "", "the name %q is taken by a template added in code", name)
	}
	return ps.err()
}

// Get returns the template called name.
func (s *Set) Get(name string) (*Template, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byName[name]
	return t, ok
}

// Names returns the templates' names, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.byName))
}

// All returns every template, sorted by name.
func (s *Set) All() []*Template {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Template, 0, len(s.byName))
	for _, name := range slices.Sorted(maps.Keys(s.byName)) {
		out = append(out, s.byName[name])
	}
	return out
}

// compile checks a template's name and compiles its form, reporting every problem; a default
// on a field asked on elicitd's page (a secret, a password) is one.
func compile(name, file string, form validator.Form) (*Template, problems) {
	var ps problems
	if !NamePattern.MatchString(name) {
		ps.add(ErrName, file, name, "", "the name %q is not allowed: a name is 1 to 64 lower-case letters, digits, '_' and '-', starting with a letter or a digit", name)
		return nil, ps
	}
	c, err := validator.Compile(form)
	var de *validator.DefinitionError
	switch {
	case errors.As(err, &de):
		for _, p := range de.Problems {
			ps.add(ErrInvalid, file, name, p.Field, "%s", p.Message)
		}
		return nil, ps
	case err != nil:
		ps.add(ErrInvalid, file, name, "form", "%v", err)
		return nil, ps
	}
	for _, f := range form.Fields {
		if f.NeedsPage() && f.Type != validator.File && f.Default != nil { // a file's default is Compile's problem
			ps.add(ErrInvalid, file, name, f.Name, "is asked on elicitd's page (a secret or a file), and takes no default: a template's default is shown to every client that reads it")
		}
	}
	def, err := json.Marshal(form) // a copy: later changes to form do not reach it
	if err != nil {
		ps.add(ErrInvalid, file, name, "form", "cannot be written as JSON: %v", err)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	t := &Template{Name: name, Form: c, Source: file, def: def, maxAnswerBytes: form.MaxAnswerBytes}
	for _, f := range form.Fields {
		t.checks = append(t.checks, f.Check)
	}
	return t, nil
}
