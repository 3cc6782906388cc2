package shipping_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/tools/shipping"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// missingKeys runs the whole preflight: canonical shape, defaults, rules, missing.
func missingKeys(t *testing.T, body string, k shipping.Kind, option string, env shipping.Env) []string {
	t.Helper()
	res, err := shipping.Check(decode(t, body), k, option, env)
	require.NoError(t, err)
	return keysOf(res.Missing)
}

const domestic = `{"ShipmentRequest":{"Shipment":{
	"Shipper":{"Name":"ACME","ShipperNumber":"A1","Address":{"AddressLine":"1 Main St","City":"Atlanta","StateProvinceCode":"ga","PostalCode":"30301","CountryCode":"us"}},
	"ShipTo":{"Name":"Bob","Address":{"AddressLine":["2 Elm St"],"City":"Boston","StateProvinceCode":"MA","PostalCode":"02101","CountryCode":"US"}},
	"Service":{"Code":"03"},
	"PaymentInformation":{"ShipmentCharge":{"Type":"01","BillShipper":{"AccountNumber":"A1"}}},
	"Package":{"Packaging":{"Code":"02"},"PackageWeight":{"UnitOfMeasurement":{"Code":"lbs"},"Weight":"5"}}}}}`

func TestCompleteDomesticBodyMissesNothing(t *testing.T) {
	assert.Empty(t, missingKeys(t, domestic, shipping.Create, "", shipping.Env{}))
}

func TestEmptyCreateBodyAsksForTheBasics(t *testing.T) {
	keys := missingKeys(t, `{}`, shipping.Create, "", shipping.Env{})
	assert.Equal(t, []string{"shipper_name", "shipper_number", "shipper_address_line_1", "shipper_city", "shipper_country_code",
		"ship_to_name", "ship_to_address_line_1", "ship_to_city", "ship_to_country_code", "service_code",
		"payment_account_number", "package_1_packaging_code", "package_1_weight_unit", "package_1_weight"}, keys,
		"request option and charge type come from defaults; packaging and unit are asked with theirs pre-filled")
	res, err := shipping.Check(map[string]any{}, shipping.Create, "", shipping.Env{})
	require.NoError(t, err)
	defaults := map[string]any{}
	for _, r := range res.Missing {
		if r.Default != nil {
			defaults[r.FlatKey] = r.Default
		}
	}
	assert.Equal(t, map[string]any{"package_1_packaging_code": "02", "package_1_weight_unit": "LBS"}, defaults)
}

func TestEnvironmentAccountFillsShipperAndPayer(t *testing.T) {
	keys := missingKeys(t, `{}`, shipping.Create, "", shipping.Env{AccountNumber: "ENV1"})
	assert.NotContains(t, keys, "shipper_number")
	assert.NotContains(t, keys, "payment_account_number")

	// A payer object already there is not given the environment's account.
	keys = missingKeys(t, `{"ShipmentRequest":{"Shipment":{"PaymentInformation":{"ShipmentCharge":[{"BillReceiver":{}}]}}}}`,
		shipping.Create, "", shipping.Env{AccountNumber: "ENV1"})
	assert.Contains(t, keys, "payment_account_number")
}

func TestRatingDifferences(t *testing.T) {
	rate := strings.ReplaceAll(domestic, "ShipmentRequest", "RateRequest")
	assert.Empty(t, missingKeys(t, rate, shipping.Rate, "Rate", shipping.Env{}))
	noService := strings.Replace(rate, `"Service":{"Code":"03"},`, "", 1)
	assert.Equal(t, []string{"service_code"}, missingKeys(t, noService, shipping.Rate, "Rate", shipping.Env{}))
	assert.Empty(t, missingKeys(t, noService, shipping.Rate, "Shop", shipping.Env{}), "Shop rates every service")
	assert.NotContains(t, missingKeys(t, `{}`, shipping.Rate, "Rate", shipping.Env{}), "request_option")

	opt, err := shipping.CanonicalOption(" shoptimeintransit ")
	require.NoError(t, err)
	assert.Equal(t, "Shoptimeintransit", opt)
	_, err = shipping.CanonicalOption("cheapest")
	require.ErrorIs(t, err, shipping.ErrBadOption)
}

func TestUSStateAndPostalCode(t *testing.T) {
	body := strings.Replace(strings.Replace(domestic, `"StateProvinceCode":"MA","PostalCode":"02101",`, "", 1), `"StateProvinceCode":"ga",`, "", 1)
	keys := missingKeys(t, body, shipping.Create, "", shipping.Env{})
	assert.Equal(t, []string{"shipper_state", "ship_to_state", "ship_to_postal_code"}, keys)
	// Not for other countries.
	gb := strings.ReplaceAll(body, `"CountryCode":"US"`, `"CountryCode":"GB"`)
	assert.NotContains(t, missingKeys(t, gb, shipping.Create, "", shipping.Env{}), "ship_to_state")
}

func TestPostalCodeIsCheckedAgainstTheCountry(t *testing.T) {
	res, err := shipping.Check(decode(t, `{"ShipmentRequest":{"Shipment":{"ShipTo":{"Address":{"CountryCode":"ca"}}}}}`), shipping.Create, "", shipping.Env{})
	require.NoError(t, err)
	form, err := preflight.Form("t", res.Missing, res.Body)
	require.NoError(t, err)

	answers := func(extra map[string]any) map[string]any {
		a := map[string]any{"shipper_name": "A", "shipper_number": "1", "shipper_address_line_1": "x", "shipper_city": "c",
			"shipper_country_code": "CA", "ship_to_name": "B", "ship_to_address_line_1": "y", "ship_to_city": "d",
			"service_code": "11", "payment_account_number": "1", "package_1_weight": 2.0, "ship_to_state": "on",
			"payment_charge_type": "01", "package_1_packaging_code": "02", "package_1_weight_unit": "kgs", "request_option": "nonvalidate"}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	// The body's country (CA, upper-cased) decides, and the answer is upper-cased first.
	data, errs := form.Validate(answers(map[string]any{"ship_to_postal_code": "k1a 0b1"}))
	require.Empty(t, errs)
	assert.Equal(t, "K1A 0B1", data["ship_to_postal_code"])
	assert.Equal(t, "ON", data["ship_to_state"])
	assert.Equal(t, "KGS", data["package_1_weight_unit"])
	_, errs = form.Validate(answers(map[string]any{"ship_to_postal_code": "12345"}))
	require.Len(t, errs, 1)
	assert.Equal(t, "Recipient postal code: must be a Canadian postal code like K1A 0B1", errs[0].Message)
}

const international = `{"ShipmentRequest":{"Shipment":{
	"Shipper":{"Name":"ACME","ShipperNumber":"A1","AttentionName":"Ann","Phone":{"Number":"555"},"Address":{"AddressLine":"1 Main St","City":"Atlanta","StateProvinceCode":"GA","PostalCode":"30301","CountryCode":"US"}},
	"ShipTo":{"Name":"Bob","AttentionName":"Bob","Phone":{"Number":"44"},"Address":{"AddressLine":"2 High St","City":"London","CountryCode":"gb"}},
	"Service":{"Code":"65"},"Description":"Books",
	"PaymentInformation":{"ShipmentCharge":[{"Type":"01","BillShipper":{"AccountNumber":"A1"}}]},
	"Package":[{"Packaging":{"Code":"02"},"PackageWeight":{"UnitOfMeasurement":{"Code":"LBS"},"Weight":"5"}}]
	FORMS}}}`

func TestInternationalFormsStructuralThenFields(t *testing.T) {
	noForms := strings.Replace(international, "FORMS", "", 1)
	assert.Equal(t, []string{"intl_forms_required"}, missingKeys(t, noForms, shipping.Create, "", shipping.Env{}))
	assert.Empty(t, missingKeys(t, strings.ReplaceAll(noForms, "ShipmentRequest", "RateRequest"), shipping.Rate, "Rate", shipping.Env{}),
		"rating asks for no forms")

	invoice := strings.Replace(international, "FORMS", `,"ShipmentServiceOptions":{"InternationalForms":{"FormType":"01"}}`, 1)
	keys := missingKeys(t, invoice, shipping.Create, "", shipping.Env{})
	assert.Equal(t, []string{"product_1_description", "product_1_quantity", "product_1_value", "product_1_unit_code", "product_1_origin_country",
		"intl_forms_currency_code", "intl_forms_reason_for_export", "intl_forms_invoice_number", "intl_forms_invoice_date",
		"sold_to_name", "sold_to_attention_name", "sold_to_phone", "sold_to_address_line_1", "sold_to_city", "sold_to_country_code"}, keys,
		"everything an invoice needs")

	noType := strings.Replace(international, "FORMS", `,"ShipmentServiceOptions":{"InternationalForms":{"Product":[{}]}}`, 1)
	assert.Equal(t, []string{"intl_forms_form_type"}, missingKeys(t, noType, shipping.Create, "", shipping.Env{}))

	eei := strings.Replace(international, "FORMS", `,"ShipmentServiceOptions":{"InternationalForms":{"FormType":["11"],
		"Product":{"Description":"A","Unit":{"Number":"1","Value":"2","UnitOfMeasurement":{"Code":"pcs"}},"OriginCountryCode":"us"}}}`, 1)
	assert.Equal(t, []string{"eei_filing_code"}, missingKeys(t, eei, shipping.Create, "", shipping.Env{}),
		"a single product object counts, and its origin is upper-cased")
}

func TestExemptionsAndReturns(t *testing.T) {
	letter := strings.Replace(strings.Replace(international, "FORMS", "", 1), `"Packaging":{"Code":"02"}`, `"Packaging":{"Code":"01"}`, 1)
	letter = strings.Replace(letter, `"Description":"Books",`, "", 1)
	assert.Empty(t, missingKeys(t, letter, shipping.Create, "", shipping.Env{}), "UPS Letters need no description or forms")

	eu := strings.NewReplacer(`"CountryCode":"US"`, `"CountryCode":"DE"`, `"CountryCode":"gb"`, `"CountryCode":"FR"`,
		`"Service":{"Code":"65"}`, `"Service":{"Code":"11"}`, `"Description":"Books",`, "", `"StateProvinceCode":"GA",`, "",
		`"PostalCode":"30301",`, "", "FORMS", "").Replace(international)
	assert.Empty(t, missingKeys(t, eu, shipping.Create, "", shipping.Env{}), "EU-to-EU UPS Standard is exempt")

	toCA := strings.NewReplacer(`"CountryCode":"gb"`, `"CountryCode":"CA","StateProvinceCode":"ON","PostalCode":"K1A0B1"`,
		"FORMS", `,"ShipmentServiceOptions":{"InternationalForms":{"FormType":"03"}}`).Replace(international)
	keys := missingKeys(t, toCA, shipping.Create, "", shipping.Env{})
	assert.Contains(t, keys, "invoice_currency_code")
	assert.Contains(t, keys, "invoice_monetary_value")

	for _, forward := range []string{`""`, `{}`, `{"Code":""}`} {
		body := strings.Replace(toCA, `"Description":"Books"`, `"Description":"Books","ReturnService":`+forward, 1)
		assert.Contains(t, missingKeys(t, body, shipping.Create, "", shipping.Env{}), "invoice_currency_code", "forward: %s", forward)
	}
	ret := strings.Replace(toCA, `"Description":"Books"`, `"Description":"Books","ReturnService":{"Code":"9"}`, 1)
	assert.NotContains(t, missingKeys(t, ret, shipping.Create, "", shipping.Env{}), "invoice_currency_code")
}

func TestPackagesArePromptedByNumberWhenSeveral(t *testing.T) {
	body := `{"ShipmentRequest":{"Shipment":{"Package":[{"PackageWeight":{"Weight":"1"}},{}]}}}`
	res, err := shipping.Check(decode(t, body), shipping.Create, "", shipping.Env{})
	require.NoError(t, err)
	missing := res.Missing
	i := slices.IndexFunc(missing, func(r preflight.Rule) bool { return r.FlatKey == "package_2_weight" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "Package 2: Package weight", missing[i].Prompt)
	assert.NotContains(t, keysOf(missing), "package_1_weight")
}

// A weight is asked in the unit the body already gives ("Package weight (KGS)"); without
// one, the unit is asked beside it.
func TestWeightPromptSaysTheUnit(t *testing.T) {
	prompt := func(body string) string {
		res, err := shipping.Check(decode(t, body), shipping.Create, "", shipping.Env{})
		require.NoError(t, err)
		i := slices.IndexFunc(res.Missing, func(r preflight.Rule) bool { return r.FlatKey == "package_1_weight" })
		require.GreaterOrEqual(t, i, 0)
		return res.Missing[i].Prompt
	}
	assert.Equal(t, "Package weight (KGS)", prompt(`{"ShipmentRequest":{"Shipment":{"Package":{"PackageWeight":{"UnitOfMeasurement":{"Code":"kgs"}}}}}}`))
	assert.Equal(t, "Package weight", prompt(`{"ShipmentRequest":{"Shipment":{"Package":{}}}}`))
}

func keysOf(rules []preflight.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.FlatKey)
	}
	return out
}

func TestMalformedBodies(t *testing.T) {
	cases := map[string]struct{ body, reason, path string }{
		"shipper is a string":   {`{"ShipmentRequest":{"Shipment":{"Shipper":"ACME"}}}`, "malformed_structure", "ShipmentRequest.Shipment.Shipper"},
		"packaging is a number": {`{"ShipmentRequest":{"Shipment":{"Package":[{"Packaging":3}]}}}`, "malformed_structure", "ShipmentRequest.Shipment.Package[0].Packaging"},
		"package is a string":   {`{"ShipmentRequest":{"Shipment":{"Package":"box"}}}`, "malformed_structure", "ShipmentRequest.Shipment.Package"},
		"ambiguous payer": {`{"ShipmentRequest":{"Shipment":{"PaymentInformation":{"ShipmentCharge":{"BillShipper":{},"BillReceiver":{}}}}}}`,
			"ambiguous_payer", "ShipmentRequest.Shipment.PaymentInformation.ShipmentCharge[0]"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := shipping.Check(decode(t, c.body), shipping.Create, "", shipping.Env{})
			var m *shipping.Malformed
			require.True(t, errors.As(err, &m), "%v", err)
			assert.Equal(t, c.reason, m.Reason)
			assert.Equal(t, c.path, m.Path)
		})
	}
}

func TestCanonicalDoesNotTouchTheCallersBody(t *testing.T) {
	body := decode(t, domestic)
	before := preflight.Clone(body)
	canon, err := shipping.Canonical(body, shipping.Create)
	require.NoError(t, err)
	assert.Equal(t, before, body)
	v, _, _ := preflight.Get(canon, "ShipmentRequest.Shipment.Package[0].PackageWeight.UnitOfMeasurement.Code")
	assert.Equal(t, "LBS", v)
	v, _, _ = preflight.Get(canon, "ShipmentRequest.Shipment.Shipper.Address.CountryCode")
	assert.Equal(t, "US", v)
	_, ok := mustList(canon, "ShipmentRequest.Shipment.PaymentInformation.ShipmentCharge")
	assert.True(t, ok, "a single charge object becomes a list")
}

func mustList(body map[string]any, path string) ([]any, bool) {
	v, _, _ := preflight.Get(body, path)
	l, ok := v.([]any)
	return l, ok
}
