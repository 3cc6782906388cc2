package shipping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/validator"
)

// probeBodies are requests of every shape the rules tell apart: countries, services, form
// types, several packages and items, returns, a second charge.
func probeBodies(k Kind) []map[string]any {
	p := k.Prefix()
	var out []map[string]any
	for _, from := range []string{"", "US", "CA", "DE"} {
		for _, to := range []string{"", "US", "PR", "FR", "DE"} {
			for _, service := range []string{"", "03", "11", "14"} {
				for _, forms := range []any{nil, map[string]any{}, "01", []any{"03", "05"}, []any{"04", "06", "08", "09", "10", "11"}} {
					for _, several := range []bool{false, true} {
						body := map[string]any{}
						set := func(path string, v any) { _, _ = preflight.Set(body, path, v) }
						set(p+"Shipper.Address.CountryCode", from)
						set(p+"ShipTo.Address.CountryCode", to)
						set(p+"Service.Code", service)
						switch f := forms.(type) {
						case nil:
						case map[string]any:
							set(p+"ShipmentServiceOptions.InternationalForms.CurrencyCode", "USD")
						default:
							set(p+"ShipmentServiceOptions.InternationalForms.FormType", f)
						}
						if several {
							set(p+"Package", []any{map[string]any{"PackageWeight": map[string]any{"UnitOfMeasurement": map[string]any{"Code": "KGS"}}}, map[string]any{}})
							set(p+"ShipmentServiceOptions.InternationalForms.Product", []any{map[string]any{}, map[string]any{}, map[string]any{}})
							set(p+"ReturnService.Code", "9")
							set(p+"PaymentInformation.ShipmentCharge", []any{map[string]any{}, map[string]any{"Type": "02"}})
						}
						out = append(out, body)
					}
				}
			}
		}
	}
	return out
}

// Every field a shipping tool may ask is in its built-in template, under its generic name,
// as the tool asks it (the label aside: the tool adds the package's number and the weight's
// unit). A rule added to Required that the probes of catalogue miss fails here.
func TestTemplatesCoverEveryRule(t *testing.T) {
	for _, k := range []Kind{Create, Rate} {
		builtin := byName(builtinForm(k))
		options := []string{""}
		if k == Rate {
			options = RatingOptions
		}
		asked := map[string]bool{}
		for _, option := range options {
			for _, body := range probeBodies(k) {
				res, err := Check(body, k, option, Env{})
				require.NoError(t, err)
				for _, r := range res.Rules {
					if r.Structural {
						continue
					}
					name, _ := generic(r.FlatKey)
					asked[name] = true
					b, ok := builtin[name]
					if !assert.True(t, ok, "%s asks %s, which its template lacks", k.TemplateName(), r.FlatKey) {
						continue
					}
					f := r.Field()
					f.Name, f.Label, b.Label = name, "", ""
					assert.Equal(t, b, f, "%s's %s", k.TemplateName(), name)
				}
			}
		}
		for name := range builtin {
			assert.True(t, asked[name], "%s's template has %s, which no request asks", k.TemplateName(), name)
		}
	}
}

func TestBuiltinTemplates(t *testing.T) {
	set := templates.New()
	for _, b := range Templates() {
		require.NoError(t, set.AddBuiltin(b), b.Name)
		assert.Equal(t, b.Name, b.Tool, "each is its tool's own form")
		assert.NoError(t, b.Fits(b.Form), "the built-in fits itself")
	}
	assert.Equal(t, []string{"create_shipment", "rate_shipment"}, set.Names())
	create, _ := set.Get("create_shipment")
	assert.Equal(t, "UPS shipment creation", create.Form.Title())
	assert.Nil(t, wordingOf(Create, set).words, "a built-in not replaced: the built-in wording, as it always was")
	assert.Nil(t, wordingOf(Rate, nil).words)
}

func TestGenericNames(t *testing.T) {
	for key, want := range map[string][2]string{
		"package_12_weight":      {"package_n_weight", "12"},
		"product_3_unit_code":    {"product_n_unit_code", "3"},
		"shipper_name":           {"shipper_name", ""},
		"ship_to_address_line_1": {"ship_to_address_line_1", ""},
	} {
		name, n := generic(key)
		assert.Equal(t, want, [2]string{name, n}, key)
	}
}

// A reworded template changes the labels, help texts and option titles the tool asks with,
// keeping its own additions (a package's number, the weight's unit) unless the label places
// the number itself.
func TestRewordKeepsTheToolsAdditions(t *testing.T) {
	form := builtinForm(Create)
	for i := range form.Fields {
		f := &form.Fields[i]
		switch f.Name {
		case "package_n_weight":
			f.Label = "Colis {n} : poids"
		case "package_n_weight_unit":
			f.Label, f.Description = "Unité", "du colis {n}"
			for j := range f.Options {
				f.Options[j].Title = map[string]string{"LBS": "Livres", "KGS": "Kilogrammes"}[f.Options[j].Value]
			}
		case "product_n_description":
			f.Label, f.Placeholder = "Article {n} : description", "Livres"
		case "shipper_city":
			f.Label = "Ville de l'expéditeur"
		}
	}
	w := &wording{title: "Expédition", builtin: byName(builtinForm(Create)), words: byName(form)}
	rules := []preflight.Rule{
		{FlatKey: "package_2_weight", Prompt: "Package 2: Package weight (KGS)", Positive: true},
		{FlatKey: "package_1_weight_unit", Prompt: "Package 1: Weight unit", Options: WeightUnits},
		productRules[0].Item(1),
		{FlatKey: "shipper_city", Prompt: "Shipper city"},
		{FlatKey: "intl_forms_required", Prompt: "Add the forms", Structural: true},
	}
	got := w.reword(rules)
	assert.Equal(t, "Colis 2 : poids (KGS)", got[0].Prompt, "{n} in the label: the tool's number prefix goes, the unit stays")
	assert.Equal(t, "Package 1: Unité", got[1].Prompt, "no {n}: the tool's prefix stays")
	assert.Equal(t, "du colis 1", got[1].Description)
	assert.Equal(t, []validator.Option{{Value: "LBS", Title: "Livres"}, {Value: "KGS", Title: "Kilogrammes"}}, got[1].Options)
	assert.Equal(t, "Pounds", WeightUnits[0].Title, "the tool's own options are not changed")
	assert.Equal(t, "Article 2 : description", got[2].Prompt)
	assert.Equal(t, "Livres", got[2].Placeholder)
	assert.Equal(t, "Ville de l'expéditeur", got[3].Prompt)
	assert.Equal(t, rules[4], got[4], "a structural rule is the agent's to add: as it was")
	assert.Equal(t, "Package 2: Package weight (KGS)", rules[0].Prompt, "the rules given are not changed")
}
