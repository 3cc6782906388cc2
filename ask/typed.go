package ask

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// Form is a form derived from the exported fields of a struct type T; its Ask returns the
// answer as a T. Build it once, when the tool is registered, with NewForm or MustForm: a
// field of an unsupported type or a bad tag fails there, never at call time.
//
// Each field is one question, named by its json tag (or its Go name); "-" leaves it out.
// Supported types: string, bool, the integer and float types, []string (a multi-select,
// with options), time.Time (a date-time, or a date with format=date), validator.Upload (a
// file), and pointers to these (nil when the person leaves the field blank). Tags:
//
//	label:"Country"                    shown to the person (default: the name)
//	description:"Where it ships to"    help text under the field
//	placeholder:"e.g. DE"              sample text in an empty input (a hint)
//	pattern:"^[0-9]{5}$"               RE2, checked server-side
//	options:"US=United States;DE=Germany"   a select (string) or multi-select ([]string)
//	when:"country=US"                  asked only when country is US (in a follow-up round);
//	                                   "country=US|CA" one of, "company" answered
//	required_when:"country=DE"         required only when country is DE
//	compare:"gt check_in"              lt, le, gt, ge, eq or ne another field
//	form:"required,min=1,max=10,minlen=2,maxlen=40,min_items=1,max_items=3,
//	      exclusive_min=0,exclusive_max=100,format=email|url|date|date-time,
//	      case=upper|lower,multiline,private_hosts,default=US"
//	form:"sensitive"                   a secret (an API key): never echoed, logged or quoted
//	form:"password"                    a secret shown as a password input
//	form:"accept=application/pdf|image/*,max_bytes=1048576"   a file's media types and size
//
// Secrets and files are never asked in form mode (the MCP spec forbids secrets there, and
// a form has no file type): they are asked on elicitd's page, in URL mode, after the other
// fields, and the answer is still one T. That needs an Elicitor with Options.Pages and a
// client that declares URL elicitation; without them Ask fails with
// ELICITATION_UNSUPPORTED, naming the fields. A tool's result text may be shown to the
// model or logged: keep secrets and files' bytes out of it (see Private).
type Form[T any] struct {
	compiled *validator.Compiled
	fields   []typedField
}

// typedField ties a question to the struct field its answer goes in.
type typedField struct {
	name  string
	index []int
	typ   reflect.Type
}

// FormError is a struct type NewForm cannot turn into a form, naming the Go field at fault.
type FormError struct {
	Type    string // the struct type
	Field   string // the Go field, or "" for the whole type
	Problem string
}

func (e *FormError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("ask: form of %s: %s", e.Type, e.Problem)
	}
	return fmt.Sprintf("ask: form of %s: field %s: %s", e.Type, e.Field, e.Problem)
}

// NewForm derives the form of T, titled title, and compiles it.
func NewForm[T any](title string) (*Form[T], error) {
	rt := reflect.TypeFor[T]()
	typeName := rt.String()
	if rt.Kind() != reflect.Struct {
		return nil, &FormError{Type: typeName, Problem: "is not a struct"}
	}
	f := &Form[T]{}
	def := validator.Form{Title: title}
	for _, sf := range reflect.VisibleFields(rt) {
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		fd, skip, err := fieldOf(sf)
		if err != nil {
			return nil, &FormError{Type: typeName, Field: sf.Name, Problem: err.Error()}
		}
		if skip {
			continue
		}
		def.Fields = append(def.Fields, fd)
		f.fields = append(f.fields, typedField{name: fd.Name, index: sf.Index, typ: sf.Type})
	}
	c, err := validator.Compile(def)
	if err != nil {
		return nil, &FormError{Type: typeName, Problem: err.Error()}
	}
	f.compiled = c
	return f, nil
}

// MustForm is NewForm that panics on an error: for package-level forms, which are built
// when the program starts.
func MustForm[T any](title string) *Form[T] {
	f, err := NewForm[T](title)
	if err != nil {
		panic(err)
	}
	return f
}

// Compiled returns the compiled form, for Question.Form or for elicittest.
func (f *Form[T]) Compiled() *validator.Compiled { return f.compiled }

// Ask asks the form with message (see the package's Ask) and returns the answer as a T.
func (f *Form[T]) Ask(ctx context.Context, message string) (T, error) {
	data, err := Ask(ctx, Question{Title: f.compiled.Title(), Message: message, Form: f.compiled})
	if err != nil {
		var zero T
		return zero, err
	}
	return f.Decode(data)
}

// AskThen asks the form with message, as Ask does, in one question with the follow-up
// rounds then asks: after each valid answer, then gets the form's answer as a T and every
// answer so far (data, the follow-ups' included) and decides what follows, as
// Question.Then does: finish (elicitation.Next{}), ask a follow-up (another form's
// FollowUp, or the package's FollowUp), or end with an error (Next.Err, which AskThen
// returns). Follow-ups are rounds, not attempts.
//
// It returns every round's answers: the form's as a T, and all of them as data, from which
// each follow-up form's Decode reads its own.
func (f *Form[T]) AskThen(ctx context.Context, message string, then func(answer T, data map[string]any) elicitation.Next) (T, map[string]any, error) {
	var zero T
	if then == nil {
		then = func(T, map[string]any) elicitation.Next { return elicitation.Next{} }
	}
	data, err := Ask(ctx, Question{Title: f.compiled.Title(), Message: message, Form: f.compiled,
		Then: func(data map[string]any) elicitation.Next {
			v, err := f.Decode(data)
			if err != nil {
				return elicitation.Next{Err: err}
			}
			return then(v, data)
		}})
	if err != nil {
		return zero, nil, err
	}
	v, err := f.Decode(data)
	if err != nil {
		return zero, nil, err
	}
	return v, data, nil
}

// FollowUp asks the form as a follow-up round of another question, for a Then (or an
// AskThen) to return in elicitation.Next.FollowUp; like the package's FollowUp, it keeps
// the valid answers of an invalid one. Its answers join the question's data, beside the
// earlier rounds': Decode reads them back as a T.
func (f *Form[T]) FollowUp(message string) *elicitation.Step { return FollowUp(message, f.compiled) }

// Decode turns a validated answer to the form into a T. Keys of other forms (the other
// rounds of a question) are ignored.
func (f *Form[T]) Decode(data map[string]any) (T, error) {
	var out T
	rv := reflect.ValueOf(&out).Elem()
	for _, tf := range f.fields {
		v, ok := data[tf.name]
		if !ok || v == nil {
			continue
		}
		dst := rv.FieldByIndex(tf.index)
		if dst.Kind() == reflect.Pointer {
			p := reflect.New(dst.Type().Elem())
			dst.Set(p)
			dst = p.Elem()
		}
		if err := assign(dst, v); err != nil {
			return out, fmt.Errorf("ask: answer to %q: %w", tf.name, err)
		}
	}
	return out, nil
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	uploadType = reflect.TypeFor[validator.Upload]()
)

func assign(dst reflect.Value, v any) error {
	if dst.Type() == uploadType {
		u, ok := v.(*validator.Upload)
		if !ok || u == nil {
			return fmt.Errorf("is a %T, not a file", v)
		}
		dst.Set(reflect.ValueOf(*u))
		return nil
	}
	if dst.Type() == timeType {
		s, _ := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, s); err != nil {
				return err
			}
		}
		dst.Set(reflect.ValueOf(t))
		return nil
	}
	switch dst.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("is a %T, not text", v)
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("is a %T, not a boolean", v)
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		x, ok := asNumber(v)
		if !ok {
			return fmt.Errorf("is a %T, not a number", v)
		}
		switch dst.Kind() {
		case reflect.Float32, reflect.Float64:
			dst.SetFloat(x)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			dst.SetUint(uint64(x))
		default:
			dst.SetInt(int64(x))
		}
	case reflect.Slice:
		l, ok := v.([]string)
		if !ok {
			return fmt.Errorf("is a %T, not a list of choices", v)
		}
		dst.Set(reflect.ValueOf(append([]string(nil), l...)))
	default:
		return fmt.Errorf("cannot go in a %s", dst.Type())
	}
	return nil
}

func asNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// fieldOf derives one question from a struct field.
func fieldOf(sf reflect.StructField) (fd validator.Field, skip bool, err error) {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if name == "-" || sf.Tag.Get("form") == "-" {
		return fd, true, nil
	}
	if name == "" {
		name = sf.Name
	}
	fd = validator.Field{Name: name, Label: sf.Tag.Get("label"), Description: sf.Tag.Get("description"),
		Placeholder: sf.Tag.Get("placeholder"), Pattern: sf.Tag.Get("pattern")}
	t := sf.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var format string
	for _, o := range parseFormTag(sf.Tag.Get("form")) {
		if err := o.apply(&fd, &format); err != nil {
			return fd, false, err
		}
	}
	if raw, ok := sf.Tag.Lookup("options"); ok {
		for _, part := range strings.Split(raw, ";") {
			value, title, _ := strings.Cut(strings.TrimSpace(part), "=")
			fd.Options = append(fd.Options, validator.Option{Value: value, Title: title})
		}
	}
	for _, c := range []struct {
		tag string
		dst **validator.Condition
	}{{"when", &fd.When}, {"required_when", &fd.RequiredWhen}} {
		if raw, ok := sf.Tag.Lookup(c.tag); ok {
			*c.dst = parseCondition(raw)
		}
	}
	if raw, ok := sf.Tag.Lookup("compare"); ok {
		op, other, found := strings.Cut(strings.TrimSpace(raw), " ")
		if !found {
			return fd, false, fmt.Errorf(`compare tag %q: expected "op field", e.g. "gt check_in"`, raw)
		}
		fd.Compare = &validator.Comparison{Op: op, Field: strings.TrimSpace(other)}
	}
	switch {
	case t == uploadType:
		if format != "" {
			return fd, false, fmt.Errorf("format %q does not apply to a file", format)
		}
		fd.Type = validator.File
		return fd, false, nil
	case t == timeType:
		fd.Type = validator.DateTime
		if format == "date" {
			fd.Type = validator.Date
		} else if format != "" && format != "date-time" {
			return fd, false, fmt.Errorf("format %q does not apply to a time.Time; use date or date-time", format)
		}
		return fd, false, nil
	case format != "" && t.Kind() != reflect.String:
		return fd, false, fmt.Errorf("format %q applies only to string fields", format)
	}
	switch t.Kind() {
	case reflect.String:
		fd.Type = validator.Text
		switch {
		case len(fd.Options) > 0:
			fd.Type = validator.Select
		case format != "":
			ft, ok := map[string]validator.Type{"email": validator.Email, "url": validator.URL, "date": validator.Date, "date-time": validator.DateTime}[format]
			if !ok {
				return fd, false, fmt.Errorf("format %q: expected email, url, date or date-time", format)
			}
			fd.Type = ft
		}
	case reflect.Bool:
		fd.Type = validator.Boolean
	case reflect.Float32, reflect.Float64:
		fd.Type = validator.Number
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		fd.Type = validator.Integer
		lo, hi := intRange(t)
		if fd.Minimum == nil && fd.ExclusiveMinimum == nil {
			fd.Minimum = lo
		}
		if fd.Maximum == nil && fd.ExclusiveMaximum == nil {
			fd.Maximum = hi
		}
	case reflect.Slice:
		if t.Elem().Kind() != reflect.String || sf.Type.Kind() == reflect.Pointer {
			return fd, false, fmt.Errorf("has type %s; a list must be []string, with options", sf.Type)
		}
		fd.Type = validator.MultiSelect
	default:
		return fd, false, fmt.Errorf("has type %s, which a form cannot ask; use string, bool, a number, []string with options, time.Time, validator.Upload or a pointer to one", sf.Type)
	}
	if fd.Type != validator.Select && fd.Type != validator.MultiSelect && len(fd.Options) > 0 {
		return fd, false, fmt.Errorf("has options, but only a string or []string field takes them")
	}
	if fd.Default != nil {
		if fd.Default, err = typedDefault(fd.Type, fd.Default.(string)); err != nil {
			return fd, false, err
		}
	}
	return fd, false, nil
}

// intRange bounds an integer field by its Go type, where the type is narrower than what a
// JSON number carries exactly.
func intRange(t reflect.Type) (lo, hi *float64) {
	bits := t.Bits()
	unsigned := t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64
	switch {
	case unsigned && bits < 53:
		return validator.Ptr(0.0), validator.Ptr(float64(uint64(1)<<bits - 1))
	case unsigned:
		return validator.Ptr(0.0), nil
	case bits < 53:
		return validator.Ptr(-math.Ldexp(1, bits-1)), validator.Ptr(math.Ldexp(1, bits-1) - 1)
	}
	return nil, nil
}

func typedDefault(t validator.Type, s string) (any, error) {
	switch t {
	case validator.Boolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("default %q is not true or false", s)
		}
		return b, nil
	case validator.Number, validator.Integer:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("default %q is not a number", s)
		}
		return x, nil
	case validator.MultiSelect:
		return strings.Split(s, "|"), nil
	}
	return s, nil
}

// parseCondition reads "field=value", "field=a|b" or "field".
func parseCondition(raw string) *validator.Condition {
	field, value, eq := strings.Cut(strings.TrimSpace(raw), "=")
	c := &validator.Condition{Field: strings.TrimSpace(field)}
	switch {
	case !eq:
		c.Present = true
	case strings.Contains(value, "|"):
		for _, v := range strings.Split(value, "|") {
			c.OneOf = append(c.OneOf, v)
		}
	default:
		c.Equals = value
	}
	return c
}

// formOption is one comma-separated entry of a form tag: key or key=value.
type formOption struct{ key, value string }

func parseFormTag(tag string) []formOption {
	if strings.TrimSpace(tag) == "" {
		return nil
	}
	var out []formOption
	rest := tag
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		if key == "default" { // the default is the rest of the tag, commas and all
			if rest != "" {
				value += "," + rest
			}
			rest = ""
		}
		out = append(out, formOption{key: key, value: value})
	}
	return out
}

func (o formOption) apply(fd *validator.Field, format *string) error {
	num := func(dst **float64) error {
		x, err := strconv.ParseFloat(o.value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("form tag %s=%q: expected a finite number", o.key, o.value)
		}
		*dst = &x
		return nil
	}
	whole := func(dst **int) error {
		n, err := strconv.Atoi(o.value)
		if err != nil || n < 0 {
			return fmt.Errorf("form tag %s=%q: expected a whole number of at least 0", o.key, o.value)
		}
		*dst = &n
		return nil
	}
	switch o.key {
	case "required":
		fd.Required = true
	case "multiline":
		fd.Widget = "multiline"
	case "password":
		fd.Widget = "password"
	case "sensitive":
		fd.Sensitive = true
	case "private_hosts":
		fd.AllowPrivateHosts = true
	case "min":
		return num(&fd.Minimum)
	case "max":
		return num(&fd.Maximum)
	case "exclusive_min":
		return num(&fd.ExclusiveMinimum)
	case "exclusive_max":
		return num(&fd.ExclusiveMaximum)
	case "minlen":
		return whole(&fd.MinLength)
	case "maxlen":
		return whole(&fd.MaxLength)
	case "min_items":
		return whole(&fd.MinItems)
	case "max_items":
		return whole(&fd.MaxItems)
	case "accept":
		fd.Accept = strings.Split(o.value, "|")
	case "max_bytes":
		n, err := strconv.ParseInt(o.value, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("form tag max_bytes=%q: expected a whole number of bytes, at least 1", o.value)
		}
		fd.MaxBytes = n
	case "format":
		*format = o.value
	case "case":
		fd.Case = validator.Case(o.value)
	case "default":
		fd.Default = o.value
	default:
		return fmt.Errorf("form tag has unknown option %q; expected required, min, max, exclusive_min, exclusive_max, minlen, maxlen, min_items, max_items, format, case, multiline, password, sensitive, private_hosts, accept, max_bytes or default", o.key)
	}
	return nil
}
