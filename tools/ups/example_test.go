package ups_test

import (
	"fmt"
	"net/url"

	"github.com/elicitd/elicitd/tools/ups"
)

// Where a call goes: the environment's base URL, the versioned path and the query.
func ExampleClient_Endpoint() {
	c := ups.New(ups.Config{Environment: "production"})
	fmt.Println(c.Endpoint(ups.ShipPath("v2409"), url.Values{"additionaladdressvalidation": {"city"}}))
	// Output:
	// https://onlinetools.ups.com/api/shipments/v2409/ship?additionaladdressvalidation=city
}
