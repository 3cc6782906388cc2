package shipping_test

import (
	"fmt"
	"strings"

	"github.com/elicitd/elicitd/tools/shipping"
)

// Check finds what a partial rate request still needs, as the rules of docs/shipping.md
// derive it from the body's own values.
func ExampleCheck() {
	body := map[string]any{"RateRequest": map[string]any{"Shipment": map[string]any{
		"Shipper":  map[string]any{"Address": map[string]any{"CountryCode": "US", "PostalCode": "10001"}},
		"ShipTo":   map[string]any{"Address": map[string]any{"CountryCode": "US"}},
		"ShipFrom": map[string]any{"Address": map[string]any{"CountryCode": "US", "PostalCode": "10001"}},
	}}}
	res, err := shipping.Check(body, shipping.Rate, "Rate", shipping.Env{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(res.Missing), "fields missing; for the recipient:")
	for _, r := range res.Missing {
		if strings.HasPrefix(r.DotPath, "RateRequest.Shipment.ShipTo.") {
			fmt.Printf("%s (%s)\n", r.DotPath, r.Prompt)
		}
	}
	// Output:
	// 15 fields missing; for the recipient:
	// RateRequest.Shipment.ShipTo.Name (Recipient name)
	// RateRequest.Shipment.ShipTo.Address.AddressLine[0] (Recipient street address)
	// RateRequest.Shipment.ShipTo.Address.City (Recipient city)
	// RateRequest.Shipment.ShipTo.Address.StateProvinceCode (Recipient state or province code)
	// RateRequest.Shipment.ShipTo.Address.PostalCode (Recipient postal code)
}
