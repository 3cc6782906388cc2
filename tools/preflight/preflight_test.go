package preflight_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

func TestGetAndMissing(t *testing.T) {
	body := decode(t, `{"S":{"Shipper":{"Name":"  ","Number":0,"Flag":false,
		"Address":{"AddressLine":"1 Main St","City":"Springfield","Empty":{},"List":[]}},
		"Package":[{"Weight":5},{"Weight":null}]}}`)
	cases := []struct {
		path    string
		missing bool
	}{
		{"S.Shipper.Name", true},                    // whitespace only
		{"S.Shipper.Number", false},                 // 0 is present
		{"S.Shipper.Flag", false},                   // false is present
		{"S.Shipper.Address.AddressLine[0]", false}, // a string is its own first line
		{"S.Shipper.Address.AddressLine[1]", false}, // ...and only that: see the shape test
		{"S.Shipper.Address.City", false},
		{"S.Shipper.Address.Empty", true},
		{"S.Shipper.Address.List", true},
		{"S.Shipper.Address.Absent", true},
		{"S.Package[0].Weight", false},
		{"S.Package[1].Weight", true},
		{"S.Package[5].Weight", true},
		{"S.Nowhere.Deep.Path", true},
	}
	for _, c := range cases {
		v, _, err := preflight.Get(body, c.path)
		if c.path == "S.Shipper.Address.AddressLine[1]" {
			var se *preflight.ShapeError
			require.ErrorAs(t, err, &se, "a string has no second line")
			continue
		}
		require.NoError(t, err, c.path)
		assert.Equal(t, c.missing, preflight.IsMissing(v), c.path)
	}
}

func TestShapeConflictsNameThePath(t *testing.T) {
	body := decode(t, `{"S":{"Shipper":"ACME","Package":[{"Packaging":7}]}}`)
	_, _, err := preflight.Get(body, "S.Shipper.Address.City")
	var se *preflight.ShapeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "S.Shipper", se.Path)
	assert.Equal(t, "S.Shipper must be an object, not a string", err.Error())

	_, err = preflight.Missing(body, []preflight.Rule{{DotPath: "S.Package[0].Packaging.Code"}})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "S.Package[0].Packaging", se.Path)
	assert.Contains(t, err.Error(), "not a number")

	_, err = preflight.Set(body, "S.Shipper.Name", "x")
	require.ErrorAs(t, err, &se)
	_, _, err = preflight.Get(body, "S.Package.Weight")
	require.ErrorAs(t, err, &se, "a list where an object belongs")

	for _, bad := range []string{"", "a..b", "a[x]", "a[-1]", "[0]", "a[0"} {
		_, _, err := preflight.Get(body, bad)
		var pe *preflight.PathError
		assert.ErrorAs(t, err, &pe, bad)
	}
}

func TestSetCreatesAndNeverOverwrites(t *testing.T) {
	body := decode(t, `{"S":{"Shipper":{"Name":"ACME","Address":{"AddressLine":"1 Main St"}},"Package":{"Weight":0}}}`)
	wrote, err := preflight.Set(body, "S.ShipTo.Address.AddressLine[0]", "2 Elm St")
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = preflight.Set(body, "S.Shipper.Name", "Other")
	require.NoError(t, err)
	assert.False(t, wrote, "a present value is never replaced")
	wrote, err = preflight.Set(body, "S.Shipper.Address.AddressLine[0]", "9 Oak")
	require.NoError(t, err)
	assert.False(t, wrote, "a string first line is present")
	wrote, err = preflight.Set(body, "S.Items[2].Unit.Number", 4.0)
	require.NoError(t, err)
	assert.True(t, wrote)

	assert.Equal(t, decode(t, `{"S":{"Shipper":{"Name":"ACME","Address":{"AddressLine":"1 Main St"}},
		"ShipTo":{"Address":{"AddressLine":["2 Elm St"]}},
		"Items":[null,null,{"Unit":{"Number":4}}],
		"Package":{"Weight":0}}}`), body)

	// 0 and false are present.
	wrote, err = preflight.Set(body, "S.Package.Weight", 5.0)
	require.NoError(t, err)
	assert.False(t, wrote)
}

func TestDefaultsHaveThreeTiersAndLeaveTheBodyAlone(t *testing.T) {
	caller := decode(t, `{"R":{"Option":"validate"},"S":{"Shipper":{}}}`)
	before := preflight.Clone(caller)
	env := preflight.Defaults{"S.Shipper.ShipperNumber": "ENV123", "R.Option": "env-option"}
	builtin := preflight.Defaults{"R.Option": "nonvalidate", "S.Shipper.ShipperNumber": "BUILTIN", "S.Charge[0].Type": "01"}
	out, err := preflight.WithDefaults(caller, env, builtin)
	require.NoError(t, err)
	assert.Equal(t, before, caller, "the caller's body is untouched")
	v, _, _ := preflight.Get(out, "R.Option")
	assert.Equal(t, "validate", v, "the body wins")
	v, _, _ = preflight.Get(out, "S.Shipper.ShipperNumber")
	assert.Equal(t, "ENV123", v, "environment beats built-in")
	v, _, _ = preflight.Get(out, "S.Charge[0].Type")
	assert.Equal(t, "01", v, "built-in fills the rest")

	out["S"].(map[string]any)["Shipper"].(map[string]any)["Name"] = "changed"
	assert.Equal(t, before, caller, "the copy shares nothing with the caller's body")
}

var products = []preflight.Rule{
	{DotPath: "F.Product[n].Description", FlatKey: "product_n_description", Prompt: "Item {n}: description", MaxLength: 35},
	{DotPath: "F.Product[n].Unit.Number", FlatKey: "product_n_quantity", Prompt: "Item {n}: quantity", Type: validator.Integer, Positive: true},
}

func expand(rules []preflight.Rule, n int) []preflight.Rule {
	var out []preflight.Rule
	for i := range n {
		for _, r := range rules {
			out = append(out, r.Item(i))
		}
	}
	return out
}

func TestIndexedRulesLandAtTheirOwnIndex(t *testing.T) {
	body := decode(t, `{"F":{"Product":[{"Description":"Books","Unit":{"Number":2}},{"Unit":{"Number":1}}]}}`)
	assert.Contains(t, products[0].DotPath, "[n]", "a template for list items")
	rules := expand(products, 2)
	assert.Equal(t, "F.Product[1].Description", rules[2].DotPath)
	assert.Equal(t, "product_2_description", rules[2].FlatKey)
	assert.Equal(t, "Item 2: description", rules[2].Prompt)

	missing, err := preflight.Missing(body, rules)
	require.NoError(t, err)
	require.Len(t, missing, 1)
	assert.Equal(t, "product_2_description", missing[0].FlatKey)

	n, err := preflight.WriteBack(body, rules, map[string]any{"product_2_description": "Pens", "product_1_description": "ignored"})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "item 1 keeps its value")
	assert.Equal(t, decode(t, `{"F":{"Product":[{"Description":"Books","Unit":{"Number":2}},{"Description":"Pens","Unit":{"Number":1}}]}}`), body)
}

func TestFormFromMissingRules(t *testing.T) {
	country := preflight.Rule{DotPath: "S.Address.CountryCode", FlatKey: "country", Prompt: "Country code", Case: validator.UpperCase, Pattern: `^[A-Z]{2}$`}
	postal := preflight.Rule{DotPath: "S.Address.PostalCode", FlatKey: "postal_code", Prompt: "Postal code", Case: validator.UpperCase,
		Check: func(v any, answers, body map[string]any) error {
			c, _ := answers["country"].(string)
			if c == "" {
				got, _, _ := preflight.Get(body, "S.Address.CountryCode")
				c, _ = got.(string)
			}
			if strings.EqualFold(c, "US") && !regexp.MustCompile(`^\d{5}(-\d{4})?$`).MatchString(v.(string)) {
				return errors.New("must be a US ZIP code like 12345 or 12345-6789")
			}
			return nil
		}}
	weight := preflight.Rule{DotPath: "S.Weight", FlatKey: "weight", Prompt: "Package weight", Type: validator.Number, Positive: true}
	unit := preflight.Rule{DotPath: "S.Unit", FlatKey: "unit", Prompt: "Weight unit", Default: "LBS",
		Options: []validator.Option{{Value: "LBS", Title: "Pounds"}, {Value: "KGS", Title: "Kilograms"}}}
	structural := preflight.Rule{DotPath: "S.Forms", FlatKey: "forms_required", Prompt: "Add Forms", Structural: true}

	body := decode(t, `{"S":{"Address":{"CountryCode":"us"}}}`)
	form, err := preflight.Form("Shipment", []preflight.Rule{postal, weight, unit, structural}, body)
	require.NoError(t, err)
	var names []string
	for _, f := range form.Fields() {
		names = append(names, f.Name)
		assert.True(t, f.Required)
	}
	assert.Equal(t, []string{"postal_code", "weight", "unit"}, names, "structural rules are not asked")
	assert.Contains(t, string(form.WireSchema()), `"oneOf":[{"const":"LBS","title":"Pounds"}`)

	_, errs := form.Validate(map[string]any{"postal_code": "k1a0b1", "weight": "abc", "unit": "kilograms"})
	require.Len(t, errs, 2)
	assert.Equal(t, "Postal code: must be a US ZIP code like 12345 or 12345-6789", errs[0].Message, "checked against the body's country")
	assert.Equal(t, "Package weight: must be a positive, finite number", errs[1].Message)

	// With a country answered, the answer's country is used.
	form, err = preflight.Form("Shipment", []preflight.Rule{country, postal}, body)
	require.NoError(t, err)
	data, errs := form.Validate(map[string]any{"country": "ca", "postal_code": "k1a 0b1"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"country": "CA", "postal_code": "K1A 0B1"}, data)

	_, err = preflight.Form("x", []preflight.Rule{structural}, body)
	require.Error(t, err)
}

func FuzzFindMissing(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"S":"x"}`, `{"S":{"Product":{"Unit":3}}}`, `{"S":{"Product":[1,"a",null,{}]}}`,
		`{"S":{"Shipper":{"Address":{"AddressLine":["",null]}}}}`, `{"S":{"Product":[{"Description":["x"]}]}}`,
	} {
		f.Add([]byte(s))
	}
	rules := append(expand(products, 3), preflight.Rule{DotPath: "S.Shipper.Address.AddressLine[0]", FlatKey: "l1"},
		preflight.Rule{DotPath: "S.Product[0].Description", FlatKey: "d"}, preflight.Rule{DotPath: "S.Product[2].Unit.Number", FlatKey: "q"})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var body map[string]any
		if json.Unmarshal(raw, &body) != nil || body == nil {
			return
		}
		before := preflight.Clone(body)
		missing, err := preflight.Missing(body, rules)
		if err != nil {
			var se *preflight.ShapeError
			if !errors.As(err, &se) || se.Path == "" {
				t.Fatalf("not a shape error with a path: %v", err)
			}
			return
		}
		answers := map[string]any{}
		for i, r := range missing {
			answers[r.FlatKey] = fmt.Sprint("answer-", i)
		}
		if _, err := preflight.WriteBack(body, missing, answers); err != nil {
			var se *preflight.ShapeError
			if !errors.As(err, &se) {
				t.Fatalf("write-back failed without a shape error: %v", err)
			}
			return
		}
		still, err := preflight.Missing(body, rules)
		if err != nil || len(still) != 0 {
			t.Fatalf("still missing after writing every answer: %v %v (before %v)", still, err, before)
		}
	})
}

func TestNumbersTypedAsText(t *testing.T) {
	rules := []preflight.Rule{
		{DotPath: "W", FlatKey: "weight", Prompt: "Package weight", Positive: true},
		{DotPath: "Q", FlatKey: "qty", Prompt: "Quantity", Positive: true, Whole: true},
	}
	form, err := preflight.Form("t", rules, map[string]any{})
	require.NoError(t, err)
	assert.Contains(t, string(form.WireSchema()), `"weight":{"type":"string"`, "text on the wire, so a typo reaches the server")
	_, errs := form.Validate(map[string]any{"weight": "abc", "qty": "1.5"})
	require.Len(t, errs, 2)
	assert.Equal(t, "Package weight: must be a positive, finite number", errs[0].Message)
	assert.Equal(t, "Quantity: must be a positive whole number", errs[1].Message)
	for _, bad := range []string{"0", "-1", "NaN", "Inf", "0x10", "1e999"} {
		_, errs := form.Validate(map[string]any{"weight": bad, "qty": "2"})
		assert.Len(t, errs, 1, bad)
	}
	data, errs := form.Validate(map[string]any{"weight": " 5 ", "qty": 3.0})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"weight": "5", "qty": "3"}, data, "the numbers stay text, as UPS wants them")
}
