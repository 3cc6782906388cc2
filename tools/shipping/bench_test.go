package shipping_test

import (
	"strings"
	"testing"

	"github.com/elicitd/elicitd/tools/shipping"
)

// completeInternational is a complete US -> GB create body with an invoice and two products.
const completeInternational = `,"ShipmentServiceOptions":{"InternationalForms":{"FormType":"01","CurrencyCode":"usd",
	"ReasonForExport":"SALE","InvoiceNumber":"INV-1","InvoiceDate":"20261122",
	"Product":[{"Description":"Books","Unit":{"Number":"2","Value":"10","UnitOfMeasurement":{"Code":"PCS"}},"OriginCountryCode":"us"},
	           {"Description":"Pens","Unit":{"Number":"5","Value":"1.5","UnitOfMeasurement":{"Code":"PCS"}},"OriginCountryCode":"US"}],
	"Contacts":{"SoldTo":{"Name":"Bob","AttentionName":"Bob","Phone":{"Number":"44"},"Address":{"AddressLine":"2 High St","City":"London","CountryCode":"GB"}}}}}`

func BenchmarkPreflightInternational(b *testing.B) {
	body := decode(b, strings.Replace(international, "FORMS", completeInternational, 1))
	res, err := shipping.Check(body, shipping.Create, "", shipping.Env{AccountNumber: "A1"})
	if err != nil || len(res.Missing) != 0 {
		b.Fatalf("not complete: %v %v", err, keysOf(res.Missing))
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := shipping.Check(body, shipping.Create, "", shipping.Env{AccountNumber: "A1"})
		if err != nil || len(res.Missing) != 0 {
			b.Fatal(err, res.Missing)
		}
	}
}
