package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jsonBody(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// partialDomestic lacks the shipper's city, the recipient's name and the package weight.
const partialDomestic = `{"ShipmentRequest":{"Shipment":{
	"Shipper":{"Name":"ACME","ShipperNumber":"A1","Address":{"AddressLine":"1 Main St","StateProvinceCode":"GA","PostalCode":"30301","CountryCode":"US"}},
	"ShipTo":{"Address":{"AddressLine":["2 Elm St"],"City":"Boston","StateProvinceCode":"MA","PostalCode":"02101","CountryCode":"US"}},
	"Service":{"Code":"03"},
	"PaymentInformation":{"ShipmentCharge":[{"Type":"01","BillShipper":{"AccountNumber":"A1"}}]},
	"Package":[{"Packaging":{"Code":"02"},"PackageWeight":{"UnitOfMeasurement":{"Code":"LBS"}}}]}}}`

// formKeys returns the property names of a requested schema (the Go client hands the schema
// over as a map, so their order is not known here).
func formKeys(t *testing.T, schema any) []string {
	t.Helper()
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	var root struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &root))
	var names []string
	for name := range root.Properties {
		names = append(names, name)
	}
	return names
}

type recorded struct {
	mu       sync.Mutex
	messages []string
	keys     [][]string
}

func (r *recorded) handler(t *testing.T, answers ...map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.messages = append(r.messages, req.Params.Message)
		r.keys = append(r.keys, formKeys(t, req.Params.RequestedSchema))
		n := len(r.messages) - 1
		if n >= len(answers) {
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: answers[n]}, nil
	}
}

func TestCreateShipmentDryRunFillsTheMissingFields(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "5"})})
			out, isErr := h.call(t, timeout(t), "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic), "dry_run": true})
			require.False(t, isErr, "%v", out)
			require.Len(t, rec.keys, 1, "one form")
			// Only the set: the order on the wire is the form's (validator golden tests).
			assert.ElementsMatch(t, []string{"shipper_city", "ship_to_name", "package_1_weight"}, rec.keys[0])
			assert.Equal(t, "Missing 3 required field(s) for shipment creation.", rec.messages[0])
			assert.Equal(t, "https://wwwcie.ups.com/api/shipments/v2409/ship", out["endpoint"])
			body := out["request_body"].(map[string]any)["ShipmentRequest"].(map[string]any)
			shipment := body["Shipment"].(map[string]any)
			assert.Equal(t, "Atlanta", shipment["Shipper"].(map[string]any)["Address"].(map[string]any)["City"])
			assert.Equal(t, "Bob", shipment["ShipTo"].(map[string]any)["Name"])
			pkg := shipment["Package"].([]any)[0].(map[string]any)
			assert.Equal(t, "5", pkg["PackageWeight"].(map[string]any)["Weight"])
			assert.Equal(t, "nonvalidate", body["Request"].(map[string]any)["RequestOption"], "built-in default")
		})
	}
}

func TestCreateShipmentTypoEarnsAReprompt(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "abc"},
				map[string]any{"package_1_weight": "5"})})
			out, isErr := h.call(t, timeout(t), "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic), "dry_run": true})
			require.False(t, isErr, "%v", out)
			require.Len(t, rec.messages, 2)
			assert.True(t, strings.HasPrefix(rec.messages[1], "Please correct the following:\n- Package weight (LBS): must be a positive, finite number"), rec.messages[1])
			assert.Equal(t, []string{"package_1_weight"}, rec.keys[1], "valid answers are kept; only the wrong one is asked again")
			assert.True(t, strings.HasSuffix(rec.messages[1], "\n\nMissing 1 required field(s) for shipment creation."), "the header counts what this round asks: %s", rec.messages[1])
		})
	}
}

func TestCountryAnswerMakesItInternational(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			body := strings.Replace(partialDomestic, `"City":"Boston","StateProvinceCode":"MA","PostalCode":"02101","CountryCode":"US"`, `"City":"London"`, 1)
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "5", "ship_to_country_code": "gb"})})
			out, isErr := h.call(t, timeout(t), "create_shipment", map[string]any{"request_body": jsonBody(t, body), "dry_run": true})
			require.True(t, isErr, "%v", out)
			assert.Equal(t, "STRUCTURAL_FIELDS_REQUIRED", out["code"], "now international, the forms must be added by the agent")
			assert.Equal(t, "intl_forms_required", out["missing"].([]any)[0].(map[string]any)["flat_key"])
		})
	}
}

func TestShippingRefusalsBeforeAnyQuestion(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t)})
			ctx := timeout(t)
			out, _ := h.call(t, ctx, "rate_shipment", map[string]any{"request_option": "cheapest", "request_body": map[string]any{}})
			assert.Equal(t, "MALFORMED_REQUEST", out["code"])
			assert.Equal(t, "invalid_request_option", out["reason"])
			out, _ = h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t, `{"ShipmentRequest":{"Shipment":{"Shipper":"ACME"}}}`), "dry_run": true})
			assert.Equal(t, "MALFORMED_REQUEST", out["code"])
			assert.Equal(t, "malformed_structure", out["reason"])
			out, _ = h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t,
				`{"ShipmentRequest":{"Shipment":{"PaymentInformation":{"ShipmentCharge":{"BillShipper":{},"BillThirdParty":{}}}}}}`), "dry_run": true})
			assert.Equal(t, "ambiguous_payer", out["reason"])
			intl := strings.Replace(partialDomestic, `"PostalCode":"02101","CountryCode":"US"`, `"PostalCode":"02101","CountryCode":"GB"`, 1)
			out, _ = h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t, intl), "dry_run": true})
			assert.Equal(t, "STRUCTURAL_FIELDS_REQUIRED", out["code"])
			out, _ = h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic)})
			assert.Equal(t, "UPS_NOT_CONFIGURED", out["code"])
			assert.Empty(t, rec.messages, "no question was asked")
		})
	}
}

// A UPS that speaks the documented contract, for the real calls.
func fakeUPS(t *testing.T) (*httptest.Server, *sync.Map) {
	seen := &sync.Map{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/security/v1/oauth/token" {
			_, _ = w.Write([]byte(`{"access_token":"tok","expires_in":"14399"}`))
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		seen.Store(r.URL.Path, string(body))
		_, _ = w.Write([]byte(`{"result":"` + r.URL.Path + `"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func TestRealCreateAndRateAgainstAFakeUPS(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv, seen := fakeUPS(t)
			env := []string{"UPS_BASE_URL=" + srv.URL, "UPS_CLIENT_ID=id", "UPS_CLIENT_SECRET=secret", "ELICITD_UPS_ALLOW_LOCAL=1"}
			rec := &recorded{}
			h := start(t, clientSetup{version: era.version, env: env, elicit: rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "5"})})
			ctx := timeout(t)
			out, isErr := h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic)})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, map[string]any{"result": "/api/shipments/v2409/ship"}, out)

			rate := strings.ReplaceAll(strings.Replace(partialDomestic, `"Address":{"AddressLine":"1 Main St"`, `"Address":{"City":"Atlanta","AddressLine":"1 Main St"`, 1), "ShipmentRequest", "RateRequest")
			rate = strings.Replace(rate, `"ShipTo":{`, `"ShipTo":{"Name":"Bob",`, 1)
			rate = strings.Replace(rate, `"UnitOfMeasurement":{"Code":"LBS"}}`, `"UnitOfMeasurement":{"Code":"LBS"},"Weight":"2"}`, 1)
			out, isErr = h.call(t, ctx, "rate_shipment", map[string]any{"request_option": "shop", "request_body": jsonBody(t, rate)})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, map[string]any{"result": "/api/rating/v2409/Shop"}, out)
			sent, ok := seen.Load("/api/rating/v2409/Shop")
			require.True(t, ok)
			assert.Contains(t, sent, `"PackagingType":{"Code":"02"}`, "renamed for rating")
			assert.NotContains(t, sent, `"Packaging":`)
		})
	}
}

func TestAnsweredCountryAsksAFollowUp(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			// The recipient's country is missing; answering CA makes state and postal code required.
			body := strings.Replace(partialDomestic, `"City":"Boston","StateProvinceCode":"MA","PostalCode":"02101","CountryCode":"US"`, `"City":"Ottawa"`, 1)
			body = strings.Replace(body, `"Service":{"Code":"03"}`, `"Service":{"Code":"11"},"Description":"Books"`, 1)
			body = strings.Replace(body, `"Shipper":{"Name":"ACME"`, `"Shipper":{"Name":"ACME","AttentionName":"Ann","Phone":{"Number":"555"}`, 1)
			body = strings.Replace(body, `"ShipTo":{`, `"ShipTo":{"AttentionName":"Bob","Phone":{"Number":"1"},`, 1)
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t,
				map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "package_1_weight": "5", "ship_to_country_code": "ca"},
				map[string]any{"ship_to_state": "on", "ship_to_postal_code": "k1a 0b1", "invoice_currency_code": "cad", "invoice_monetary_value": "10.50"})})
			out, isErr := h.call(t, timeout(t), "rate_shipment", map[string]any{"request_option": "Rate",
				"request_body": jsonBody(t, strings.ReplaceAll(body, "ShipmentRequest", "RateRequest")), "dry_run": true})
			require.False(t, isErr, "%v", out)
			require.Len(t, rec.messages, 2)
			assert.True(t, strings.HasPrefix(rec.messages[1], "Still missing after elicitation:"), rec.messages[1])
			assert.ElementsMatch(t, []string{"ship_to_state", "ship_to_postal_code", "invoice_currency_code", "invoice_monetary_value"}, rec.keys[1])
			assert.True(t, strings.HasSuffix(rec.messages[1], "Missing 4 required field(s) for rate request."), "the header counts what this round asks: %s", rec.messages[1])
			shipTo := out["request_body"].(map[string]any)["RateRequest"].(map[string]any)["Shipment"].(map[string]any)["ShipTo"].(map[string]any)
			addr := shipTo["Address"].(map[string]any)
			assert.Equal(t, "CA", addr["CountryCode"])
			assert.Equal(t, "K1A 0B1", addr["PostalCode"])
			assert.Equal(t, "ON", addr["StateProvinceCode"])
			assert.Equal(t, "https://wwwcie.ups.com/api/rating/v2409/Rate", out["endpoint"])
		})
	}
}

func TestInvoiceWithoutProductsAsksForThem(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			rec := &recorded{}
			body := strings.Replace(partialDomestic, `"City":"Boston","StateProvinceCode":"MA","PostalCode":"02101","CountryCode":"US"`, `"City":"London","CountryCode":"GB"`, 1)
			body = strings.Replace(body, `"Service":{"Code":"03"}`, `"Service":{"Code":"65"},"Description":"Books","ShipmentServiceOptions":{"InternationalForms":{"FormType":"01"}}`, 1)
			h := start(t, clientSetup{version: era.version, elicit: rec.handler(t)})
			out, isErr := h.call(t, timeout(t), "create_shipment", map[string]any{"request_body": jsonBody(t, body), "dry_run": true})
			require.True(t, isErr)
			assert.Equal(t, "ELICITATION_CANCELLED", out["code"], "the test's person cancels")
			require.Len(t, rec.keys, 1)
			for _, want := range []string{"product_1_description", "product_1_quantity", "product_1_value", "product_1_unit_code", "product_1_origin_country",
				"sold_to_name", "sold_to_country_code", "intl_forms_currency_code", "intl_forms_reason_for_export", "intl_forms_invoice_number",
				"intl_forms_invoice_date", "shipper_attention_name", "ship_to_phone"} {
				assert.Contains(t, rec.keys[0], want)
			}
		})
	}
}

func TestUnusableReplyIsAnInvalidResponse(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			asked := 0
			h := start(t, clientSetup{version: era.version, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: "ok", Content: map[string]any{"shipper_city": "Atlanta"}}, nil
			}})
			ctx := timeout(t)
			out, isErr := h.call(t, ctx, "create_shipment", map[string]any{"request_body": jsonBody(t, partialDomestic), "dry_run": true})
			require.True(t, isErr, "%v", out)
			assert.Equal(t, "ELICITATION_INVALID_RESPONSE", out["code"])
			assert.Equal(t, "invalid_response", out["reason"])
			assert.Contains(t, out["message"], `action "ok"`)
			assert.Equal(t, 1, asked, "the client is at fault: the person is not asked again")
			live, _ := h.call(t, ctx, "list_elicitations", map[string]any{})
			assert.Empty(t, live["elicitations"], "it ended")
		})
	}
}
