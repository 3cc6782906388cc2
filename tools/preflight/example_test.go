package preflight_test

import (
	"encoding/json"
	"fmt"

	"github.com/elicitd/elicitd/tools/preflight"
)

// Answers from a flat form land in the nested body by dot path, list items included.
func ExampleSet() {
	body := map[string]any{}
	_, _ = preflight.Set(body, "Shipment.Package[0].Weight", "2.5")
	_, _ = preflight.Set(body, "Shipment.ShipTo.Name", "Ada")
	out, _ := json.Marshal(body)
	fmt.Println(string(out))
	v, ok, _ := preflight.Get(body, "Shipment.Package[0].Weight")
	fmt.Println(v, ok)
	// Output:
	// {"Shipment":{"Package":[{"Weight":"2.5"}],"ShipTo":{"Name":"Ada"}}}
	// 2.5 true
}
