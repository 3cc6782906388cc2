package shipping_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools/shipping"
	"github.com/elicitd/elicitd/tools/ups"
	"github.com/elicitd/elicitd/validator"
)

// rewordedSet is the built-in templates, with create_shipment replaced by a file that
// rewords some of its fields in French.
func rewordedSet(t *testing.T) *templates.Set {
	t.Helper()
	set := templates.New()
	var form validator.Form
	for _, b := range shipping.Templates() {
		require.NoError(t, set.AddBuiltin(b))
		if b.Name == shipping.CreateTemplate {
			form = b.Form
		}
	}
	form.Title = "Expédition UPS"
	labels := map[string]string{"shipper_city": "Ville de l'expéditeur", "ship_to_name": "Nom du destinataire",
		"ship_to_country_code": "Pays du destinataire", "ship_to_state": "État du destinataire", "package_n_weight": "Colis {n} : poids"}
	for i, f := range form.Fields {
		if l, ok := labels[f.Name]; ok {
			form.Fields[i].Label = l
		}
		if f.Name == "ship_to_state" {
			form.Fields[i].Description = "deux lettres"
		}
	}
	raw, err := json.MarshalIndent(form, "", "  ")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "create_shipment.json"), raw, 0o644))
	require.NoError(t, set.Load(dir))
	return set
}

// titles returns the title of each property of a prompt's schema.
func titles(t *testing.T, p *mcp.ElicitParams) map[string]any {
	t.Helper()
	raw, err := json.Marshal(p.RequestedSchema)
	require.NoError(t, err)
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	out := map[string]any{}
	for name, prop := range schema.Properties {
		out[name] = prop["title"]
	}
	return out
}

// A partial shipment of two packages, its recipient's name and country missing, and the
// shipper's city.
const twoPackages = `{"ShipmentRequest":{"Shipment":{
	"Shipper":{"Name":"ACME","ShipperNumber":"A1","Address":{"AddressLine":"1 Main St","StateProvinceCode":"GA","PostalCode":"30301","CountryCode":"US"}},
	"ShipTo":{"Address":{"AddressLine":["2 Elm St"],"City":"Boston"}},
	"Service":{"Code":"03"},
	"PaymentInformation":{"ShipmentCharge":[{"Type":"01","BillShipper":{"AccountNumber":"A1"}}]},
	"Package":[{"Packaging":{"Code":"02"},"PackageWeight":{"UnitOfMeasurement":{"Code":"LBS"}}},
	           {"Packaging":{"Code":"02"},"PackageWeight":{"UnitOfMeasurement":{"Code":"KGS"}}}]}}}`

// create_shipment asks with the operator's wording, in both eras, its follow-up round too;
// rate_shipment, not reworded, keeps the built-in's.
func TestARewordedTemplateWordsTheToolsForm(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "test"}, nil)
			el := ask.New(srv, ask.Options{})
			t.Cleanup(func() { _ = el.Close(context.Background(), elicitation.Shutdown) })
			el.Add(srv, shipping.ToolsWith(ups.Config{}, rewordedSet(t))...)
			u := elicittest.Connect(t, srv, era,
				elicittest.Accept(map[string]any{"shipper_city": "Atlanta", "ship_to_name": "Bob", "ship_to_country_code": "US",
					"package_1_weight": "5", "package_2_weight": "2"}),
				elicittest.Accept(map[string]any{"ship_to_state": "MA", "ship_to_postal_code": "02101"}))
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(twoPackages), &body))
			res := u.Call(context.Background(), "create_shipment", map[string]any{"request_body": body, "dry_run": true})
			require.False(t, res.IsError, "%v", res.StructuredContent)
			prompts := u.Prompts()
			require.Len(t, prompts, 2, "the form, then the follow-up for the state and postal code")
			assert.Equal(t, map[string]any{"shipper_city": "Ville de l'expéditeur", "ship_to_name": "Nom du destinataire",
				"ship_to_country_code": "Pays du destinataire", "package_1_weight": "Colis 1 : poids (LBS)",
				"package_2_weight": "Colis 2 : poids (KGS)"}, titles(t, prompts[0]))
			assert.Equal(t, map[string]any{"ship_to_state": "État du destinataire", "ship_to_postal_code": "Recipient postal code"},
				titles(t, prompts[1]), "a field the file does not reword keeps its wording")
			assert.Contains(t, prompts[1].Message, "- État du destinataire\n")

			u = elicittest.Connect(t, srv, era, elicittest.Decline())
			rate := map[string]any{"RateRequest": body["ShipmentRequest"]}
			res = u.Call(context.Background(), "rate_shipment", map[string]any{"request_option": "Rate", "request_body": rate, "dry_run": true})
			require.True(t, res.IsError)
			require.Len(t, u.Prompts(), 1)
			assert.Equal(t, "Package 2: Package weight (KGS)", titles(t, u.Prompts()[0])["package_2_weight"])
		})
	}
}
