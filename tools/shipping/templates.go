package shipping

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/validator"
)

// The names of the shipping tools' templates: each tool words its form from the template of
// its own name.
const (
	CreateTemplate = "create_shipment"
	RateTemplate   = "rate_shipment"
)

// TemplateName returns the name of kind k's template.
func (k Kind) TemplateName() string {
	if k == Rate {
		return RateTemplate
	}
	return CreateTemplate
}

// title is the built-in title of kind k's form.
func (k Kind) title() string {
	if k == Rate {
		return "UPS rate request"
	}
	return "UPS shipment creation"
}

// Templates returns the built-in templates of create_shipment and rate_shipment: each holds
// every field its tool may ask, worded as the tool words it, and the tool asks those a
// request lacks. A field asked once per package or per item is named with _n_ for the
// number (package_n_weight), and its label may use {n} for it.
//
// A template file of the same name replaces a built-in's wording: its title, and each
// field's label, description, placeholder and option titles (templates.WordingOnly checks
// that nothing else changed, and that no field is missing). A package field's label without
// {n} gets "Package 2: " before it when a request has several packages, as the built-in
// label does; the weight's label gets the unit after it.
func Templates() []templates.Builtin {
	var out []templates.Builtin
	for _, k := range []Kind{Create, Rate} {
		form := builtinForm(k)
		out = append(out, templates.Builtin{Name: k.TemplateName(), Form: form, Tool: k.TemplateName(), Fits: templates.WordingOnly(form)})
	}
	return out
}

// builtinForm is kind k's built-in template.
func builtinForm(k Kind) validator.Form {
	f := validator.Form{Title: k.title()}
	for _, r := range catalogue(k) {
		f.Fields = append(f.Fields, r.Field())
	}
	return f
}

// indexedKey matches the number in a per-package or per-item field's name.
var indexedKey = regexp.MustCompile(`^(package|product)_(\d+)_`)

// generic returns a field's name with its package or item number as _n_, and the number
// ("" for a field asked once).
func generic(key string) (name, n string) {
	m := indexedKey.FindStringSubmatch(key)
	if m == nil {
		return key, ""
	}
	return m[1] + "_n_" + key[len(m[0]):], m[2]
}

// catalogue returns every elicitable rule kind k may ask, each once, with its generic name:
// the rules Required gives for requests that call for all of them (international, with
// states, the service that asks for the recipient's contact, every form type).
// TestTemplatesCoverEveryRule checks that nothing Required asks is left out.
func catalogue(k Kind) []preflight.Rule {
	p := k.Prefix()
	option := ""
	if k == Rate {
		option = "Rate"
	}
	probe := func(paths map[string]any) []preflight.Rule {
		body := map[string]any{}
		for path, v := range paths {
			if _, err := preflight.Set(body, path, v); err != nil {
				panic(fmt.Sprintf("shipping: probe %s: %v", path, err)) // fixed paths: any test catches it
			}
		}
		res, err := Check(body, k, option, Env{})
		if err != nil {
			panic(fmt.Sprintf("shipping: probe: %v", err))
		}
		return res.Rules
	}
	base := map[string]any{p + "Shipper.Address.CountryCode": "US", p + "ShipTo.Address.CountryCode": "CA", p + "Service.Code": "14"}
	every := map[string]any{p + "ShipmentServiceOptions.InternationalForms.FormType": []any{"01", "04", "11"}}
	noType := map[string]any{p + "ShipmentServiceOptions.InternationalForms.CurrencyCode": "USD"}
	for path, v := range base {
		every[path], noType[path] = v, v
	}
	rules := append(probe(every), probe(noType)...)
	var out []preflight.Rule
	seen := map[string]bool{}
	for _, r := range rules {
		name, _ := generic(r.FlatKey)
		if r.Structural || seen[name] {
			continue
		}
		seen[name] = true
		if i := slices.IndexFunc(productRules, func(pr preflight.Rule) bool { return pr.FlatKey == name }); i >= 0 {
			r = productRules[i] // its prompt has {n}
		}
		r.FlatKey = name
		out = append(out, r)
	}
	return out
}

// wording is how a shipping tool words its form: its title, and, when a template file has
// replaced the built-in, the file's fields with the built-in's, by generic name, to reword
// each rule asked.
type wording struct {
	title          string
	builtin, words map[string]validator.Field // nil: the built-in wording
}

// wordingOf returns kind k's wording from set: the built-in's, unless a file has replaced
// its template.
func wordingOf(k Kind, set *templates.Set) *wording {
	w := &wording{title: k.title()}
	if set == nil {
		return w
	}
	t, ok := set.Get(k.TemplateName())
	if !ok || t.Source == "" {
		return w
	}
	def := t.Definition()
	w.title = cmp.Or(def.Title, w.title)
	w.builtin, w.words = byName(builtinForm(k)), byName(def)
	return w
}

func byName(f validator.Form) map[string]validator.Field {
	m := make(map[string]validator.Field, len(f.Fields))
	for _, fd := range f.Fields {
		m[fd.Name] = fd
	}
	return m
}

// reword returns rules worded as the template says. The tool's own additions to a label
// (the package's number when there are several, the weight's unit) are kept around the new
// label; a package label with {n} replaces the number's prefix.
func (w *wording) reword(rules []preflight.Rule) []preflight.Rule {
	if w.words == nil {
		return rules
	}
	out := slices.Clone(rules)
	for i := range out {
		r := &out[i]
		name, n := generic(r.FlatKey)
		b, inBuiltin := w.builtin[name]
		o, inFile := w.words[name]
		if r.Structural || !inBuiltin || !inFile {
			continue
		}
		number := func(s string) string { return strings.ReplaceAll(s, "{n}", n) }
		if o.Label != "" {
			builtinLabel := number(b.Label)
			prefix, suffix := "", ""
			if at := strings.Index(r.Prompt, builtinLabel); at >= 0 {
				prefix, suffix = r.Prompt[:at], r.Prompt[at+len(builtinLabel):]
			}
			if strings.Contains(o.Label, "{n}") && !strings.Contains(b.Label, "{n}") {
				prefix = ""
			}
			r.Prompt = prefix + number(o.Label) + suffix
		}
		r.Description, r.Placeholder = number(o.Description), number(o.Placeholder)
		if len(r.Options) > 0 {
			titles := map[string]string{}
			for _, opt := range o.Options {
				titles[opt.Value] = opt.Title
			}
			r.Options = slices.Clone(r.Options)
			for j := range r.Options {
				if t, ok := titles[r.Options[j].Value]; ok {
					r.Options[j].Title = t
				}
			}
		}
	}
	return out
}
