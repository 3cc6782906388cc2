package preflight

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/elicitd/elicitd/validator"
)

// Rule is one required value of a request body.
type Rule struct {
	DotPath string // where it lives; an indexed rule uses [n] for its item index
	FlatKey string // the form field's name; an indexed rule uses _n_ for its item number
	Prompt  string // the field's label; an indexed rule may use {n} for the item number
	// Description and Placeholder, when set, are the field's help text and sample text.
	Description, Placeholder string
	// Structural marks a value a flat form cannot ask for (an object the agent must add).
	Structural bool

	Type      validator.Type // Text when empty
	Options   []validator.Option
	Default   any
	MaxLength int
	Pattern   string
	Positive  bool // greater than zero and finite; on a text rule the number stays text (UPS sends "5")
	Whole     bool // with Positive on a text rule: a whole number
	Case      validator.Case
	// Check, if set, checks an answer against the other answers and the body (a postal code
	// against the country, say). It returns what the answer "must be", or nil.
	Check func(value any, answers map[string]any, body map[string]any) error
}

// MaxItems bounds how many items an indexed rule expands to.
const MaxItems = 10

// Item returns an indexed rule for item i (0-based): [n] becomes [i], _n_ and {n} become the
// item number i+1.
func (r Rule) Item(i int) Rule {
	n := strconv.Itoa(i + 1)
	r.DotPath = strings.ReplaceAll(r.DotPath, "[n]", "["+strconv.Itoa(i)+"]")
	r.FlatKey = strings.ReplaceAll(r.FlatKey, "_n_", "_"+n+"_")
	r.Prompt = strings.ReplaceAll(r.Prompt, "{n}", n)
	return r
}

// Missing returns, in rule order, the rules whose values body lacks. A shape conflict on the
// way to a value is returned as a *ShapeError naming its path.
func Missing(body map[string]any, rules []Rule) ([]Rule, error) {
	var out []Rule
	for _, r := range rules {
		v, _, err := Get(body, r.DotPath)
		if err != nil {
			return nil, err
		}
		if IsMissing(v) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Defaults is one tier of default values by dot path.
type Defaults map[string]any

// WithDefaults returns a copy of body with defaults filled where body has no value. Tiers go
// from highest precedence to lowest (for example environment, then built-in); the body's own
// values always win. The caller's body is not changed.
func WithDefaults(body map[string]any, tiers ...Defaults) (map[string]any, error) {
	out, _ := Clone(body).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, ApplyDefaults(out, tiers...)
}

// ApplyDefaults is WithDefaults on body itself, for a body that is already a private copy.
func ApplyDefaults(out map[string]any, tiers ...Defaults) error {
	for _, tier := range tiers {
		for path, v := range tier {
			if _, err := Set(out, path, Clone(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Form builds the flat form for the missing elicitable rules: one required field per rule,
// in order, with each rule's context check bound to body.
func Form(title string, missing []Rule, body map[string]any) (*validator.Compiled, error) {
	f := validator.Form{Title: title}
	for _, r := range missing {
		if r.Structural {
			continue
		}
		fd := r.Field()
		var checks []func(any, map[string]any) error
		if r.Positive && fd.Type == validator.Text {
			checks = append(checks, positiveText(r.Whole))
		}
		if check := r.Check; check != nil {
			checks = append(checks, func(v any, answers map[string]any) error { return check(v, answers, body) })
		}
		if len(checks) > 0 {
			fd.Check = func(v any, answers map[string]any) error {
				for _, c := range checks {
					if err := c(v, answers); err != nil {
						return err
					}
				}
				return nil
			}
		}
		f.Fields = append(f.Fields, fd)
	}
	if len(f.Fields) == 0 {
		return nil, errors.New("preflight: nothing to ask")
	}
	return validator.Compile(f)
}

// Field returns the form field that asks for r: required, named by its flat key, labelled
// by its prompt, with options of its own (a copy of the rule's). A text rule with options is
// a select. The checks that need the answers or
// the body (Check, and Positive on a text rule) are Form's to add: the field has none.
func (r Rule) Field() validator.Field {
	fd := validator.Field{Name: r.FlatKey, Label: r.Prompt, Description: r.Description, Placeholder: r.Placeholder,
		Type: r.Type, Required: true, Options: slices.Clone(r.Options), Default: r.Default, Pattern: r.Pattern, Case: r.Case}
	if fd.Type == "" {
		fd.Type = validator.Text
	}
	if len(r.Options) > 0 && fd.Type == validator.Text {
		fd.Type = validator.Select
	}
	if r.MaxLength > 0 {
		fd.MaxLength = validator.Ptr(r.MaxLength)
	}
	if r.Positive && fd.Type != validator.Text {
		fd.ExclusiveMinimum = validator.Ptr(0.0)
	}
	return fd
}

// positiveText checks a number typed as text: "5", " 2.5 ". It stays text.
func positiveText(whole bool) func(any, map[string]any) error {
	return func(v any, _ map[string]any) error {
		s, _ := v.(string)
		x, err := strconv.ParseFloat(s, 64)
		switch {
		case whole && (err != nil || x <= 0 || x != math.Trunc(x) || strings.ContainsAny(s, "eExXpP_")):
			return errors.New("must be a positive whole number")
		case err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || strings.ContainsAny(s, "xXpP_"):
			return errors.New("must be a positive, finite number")
		}
		return nil
	}
}

// WriteBack writes each answer to its rule's path in body (never over a present value) and
// returns how many it wrote.
func WriteBack(body map[string]any, rules []Rule, answers map[string]any) (int, error) {
	n := 0
	for _, r := range rules {
		v, ok := answers[r.FlatKey]
		if !ok {
			continue
		}
		wrote, err := Set(body, r.DotPath, v)
		if err != nil {
			return n, fmt.Errorf("writing %s: %w", r.FlatKey, err)
		}
		if wrote {
			n++
		}
	}
	return n, nil
}
