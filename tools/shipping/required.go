package shipping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/validator"
)

func text(path, key, prompt string) preflight.Rule {
	return preflight.Rule{DotPath: path, FlatKey: key, Prompt: prompt}
}

func code(path, key, prompt, pattern string) preflight.Rule {
	return preflight.Rule{DotPath: path, FlatKey: key, Prompt: prompt, Pattern: pattern, Case: validator.UpperCase}
}

func choice(path, key, prompt string, options []validator.Option, def any) preflight.Rule {
	return preflight.Rule{DotPath: path, FlatKey: key, Prompt: prompt, Type: validator.Select, Options: options, Default: def}
}

func maxLen(r preflight.Rule, n int) preflight.Rule { r.MaxLength = n; return r }

// baseByKind caches baseRules: [kind][shop] (shop: a Shop rating option, no service code).
var baseByKind = [2][2][]preflight.Rule{
	{baseRules(Create, ""), baseRules(Create, "")},
	{baseRules(Rate, "Rate"), baseRules(Rate, "Shop")},
}

func cachedBase(k Kind, option string) []preflight.Rule {
	shop := 0
	if option == "Shop" || option == "Shoptimeintransit" {
		shop = 1
	}
	return baseByKind[k][shop]
}

// baseRules are required in every request of kind k (the payer's account aside).
func baseRules(k Kind, option string) []preflight.Rule {
	p := k.Prefix()
	var rules []preflight.Rule
	if k == Create {
		rules = append(rules, text("ShipmentRequest.Request.RequestOption", "request_option", "Request option"))
	}
	rules = append(rules,
		text(p+"Shipper.Name", "shipper_name", "Shipper name"),
		text(p+"Shipper.ShipperNumber", "shipper_number", "UPS account number"),
		text(p+"Shipper.Address.AddressLine[0]", "shipper_address_line_1", "Shipper street address"),
		text(p+"Shipper.Address.City", "shipper_city", "Shipper city"),
		code(p+"Shipper.Address.CountryCode", "shipper_country_code", "Shipper country code", twoLetters),
		text(p+"ShipTo.Name", "ship_to_name", "Recipient name"),
		text(p+"ShipTo.Address.AddressLine[0]", "ship_to_address_line_1", "Recipient street address"),
		text(p+"ShipTo.Address.City", "ship_to_city", "Recipient city"),
		code(p+"ShipTo.Address.CountryCode", "ship_to_country_code", "Recipient country code", twoLetters),
	)
	if !(k == Rate && (option == "Shop" || option == "Shoptimeintransit")) {
		rules = append(rules, choice(p+"Service.Code", "service_code", "UPS service type", ServiceCodes, nil))
	}
	rules = append(rules, choice(p+"PaymentInformation.ShipmentCharge[0].Type", "payment_charge_type", "Shipment charge type", ChargeTypes, "01"))
	return rules
}

// Required returns every rule that applies to body (canonical, defaults applied) as it
// stands: the base rules, the payer's account, the packages, and the rules its countries,
// service and forms call for. Call it again after writing answers back: an answered country
// can make the shipment international and require more.
func Required(body map[string]any, k Kind, option string) ([]preflight.Rule, error) {
	p := k.Prefix()
	rules := append(make([]preflight.Rule, 0, 64), cachedBase(k, option)...)

	who, err := payer(body, p, 0)
	if err != nil {
		return nil, err
	}
	rules = append(rules, text(fmt.Sprintf("%sPaymentInformation.ShipmentCharge[0].%s.AccountNumber", p, who), "payment_account_number", "Billing account number"))

	packages := max(countAt(body, p+"Package"), 1)
	for i := range packages {
		prefix := ""
		if packages > 1 {
			prefix = fmt.Sprintf("Package %d: ", i+1)
		}
		pp := fmt.Sprintf("%sPackage[%d].", p, i)
		n := fmt.Sprint(i + 1)
		weightPrompt := prefix + "Package weight"
		if u := strings.ToUpper(strings.TrimSpace(stringAt(body, pp+"PackageWeight.UnitOfMeasurement.Code"))); u != "" {
			weightPrompt += " (" + u + ")" // the unit the body already has: the person types in it
		}
		weight := preflight.Rule{DotPath: pp + "PackageWeight.Weight", FlatKey: "package_" + n + "_weight", Prompt: weightPrompt,
			Positive: true} // text on the wire and in the body, as UPS has it
		unit := choice(pp+"PackageWeight.UnitOfMeasurement.Code", "package_"+n+"_weight_unit", prefix+"Weight unit", WeightUnits, "LBS")
		unit.Case = validator.UpperCase
		rules = append(rules,
			choice(pp+"Packaging.Code", "package_"+n+"_packaging_code", prefix+"Packaging type code", PackagingCodes, "02"),
			unit, weight)
	}

	for _, role := range []struct{ node, key, prompt string }{{"Shipper", "shipper", "Shipper"}, {"ShipTo", "ship_to", "Recipient"}} {
		country := stringAt(body, p+role.node+".Address.CountryCode")
		if !slices.Contains(stateCountries, country) {
			continue
		}
		rules = append(rules,
			code(p+role.node+".Address.StateProvinceCode", role.key+"_state", role.prompt+" state or province code", twoLetters),
			postalRule(p, role.node, role.key, role.prompt))
	}

	origin := stringAt(body, p+"ShipFrom.Address.CountryCode")
	if origin == "" {
		origin = stringAt(body, p+"Shipper.Address.CountryCode")
	}
	dest := stringAt(body, p+"ShipTo.Address.CountryCode")
	service := stringAt(body, p+"Service.Code")
	international := origin != "" && dest != "" && origin != dest
	if international {
		rules = append(rules,
			maxLen(text(p+"Shipper.AttentionName", "shipper_attention_name", "Shipper contact name"), 35),
			maxLen(text(p+"Shipper.Phone.Number", "shipper_phone", "Shipper phone number"), 15))
	}
	if international || service == "14" {
		rules = append(rules,
			maxLen(text(p+"ShipTo.AttentionName", "ship_to_attention_name", "Recipient contact name"), 35),
			maxLen(text(p+"ShipTo.Phone.Number", "ship_to_phone", "Recipient phone number"), 15))
	}
	if !international {
		return rules, nil
	}
	exempt := allLetters(body, p, packages) || slices.Contains(eu27, origin) && slices.Contains(eu27, dest) && service == "11"
	if !exempt {
		rules = append(rules, maxLen(text(p+"Description", "shipment_description", "Shipment description"), 50))
	}
	ret := isReturn(body, p)
	if origin == "US" && (dest == "CA" || dest == "PR") && !ret {
		rules = append(rules,
			code(p+"InvoiceLineTotal.CurrencyCode", "invoice_currency_code", "Invoice currency code", threeLetters),
			preflight.Rule{DotPath: p + "InvoiceLineTotal.MonetaryValue", FlatKey: "invoice_monetary_value", Prompt: "Invoice total value", Pattern: moneyPattern})
	}
	if k == Create && !exempt {
		rules = append(rules, formRules(body, p, ret)...)
	}
	if countAt(body, p+"PaymentInformation.ShipmentCharge") > 1 && stringAt(body, p+"PaymentInformation.ShipmentCharge[1].Type") == "02" {
		if len(payersAt(body, p, 1)) == 0 {
			rules = append(rules, preflight.Rule{DotPath: p + "PaymentInformation.ShipmentCharge[1].BillReceiver", FlatKey: "duties_payer_required",
				Prompt: "Add a payer (BillShipper, BillReceiver or BillThirdParty with its AccountNumber) to the duties charge ShipmentCharge[1]", Structural: true})
		}
	}
	return rules, nil
}

func postalRule(p, node, key, prompt string) preflight.Rule {
	r := code(p+node+".Address.PostalCode", key+"_postal_code", prompt+" postal code", "")
	countryKey, countryPath := key+"_country_code", p+node+".Address.CountryCode"
	r.Check = func(v any, answers, body map[string]any) error {
		country, _ := answers[countryKey].(string)
		if country == "" {
			country = stringAt(body, countryPath)
		}
		s, _ := v.(string)
		switch strings.ToUpper(country) {
		case "US", "PR":
			if !usPostal.MatchString(s) {
				return errors.New("must be a ZIP code like 12345 or 12345-6789")
			}
		case "CA":
			if !caPostal.MatchString(s) {
				return errors.New("must be a Canadian postal code like K1A 0B1")
			}
		}
		return nil
	}
	return r
}

func allLetters(body map[string]any, p string, packages int) bool {
	for i := range packages {
		if stringAt(body, fmt.Sprintf("%sPackage[%d].Packaging.Code", p, i)) != "01" {
			return false
		}
	}
	return true
}

// isReturn: ReturnService is an object with a non-empty Code.
func isReturn(body map[string]any, p string) bool {
	return stringAt(body, p+"ReturnService.Code") != ""
}

func formRules(body map[string]any, p string, ret bool) []preflight.Rule {
	fp := p + "ShipmentServiceOptions.InternationalForms"
	if v, _, _ := preflight.Get(body, fp); preflight.IsMissing(v) {
		return []preflight.Rule{{DotPath: fp, FlatKey: "intl_forms_required", Structural: true,
			Prompt: `International shipments need ShipmentServiceOptions.InternationalForms, e.g. {"FormType": "01", "Product": [{"Description": "Books", "Unit": {"Number": "2", "Value": "10", "UnitOfMeasurement": {"Code": "PCS"}}, "OriginCountryCode": "US"}], "CurrencyCode": "USD", "ReasonForExport": "SALE", "InvoiceNumber": "INV-1", "InvoiceDate": "20261122"}`}}
	}
	var types []string
	switch ft := mustGet(body, fp+".FormType").(type) {
	case string:
		if strings.TrimSpace(ft) != "" {
			types = []string{strings.TrimSpace(ft)}
		}
	case []any:
		for _, t := range ft {
			if s, ok := t.(string); ok && strings.TrimSpace(s) != "" {
				types = append(types, strings.TrimSpace(s))
			}
		}
	}
	if len(types) == 0 {
		return []preflight.Rule{choice(fp+".FormType", "intl_forms_form_type", "International form type", FormTypes, nil)}
	}
	has := func(set []string) bool {
		return slices.ContainsFunc(types, func(t string) bool { return slices.Contains(set, t) })
	}
	var rules []preflight.Rule
	if has(productForms) {
		items := min(max(countAt(body, fp+".Product"), 1), preflight.MaxItems)
		for i := range items {
			for _, r := range productRules {
				rules = append(rules, r.Item(i))
			}
		}
	}
	if has(currencyForms) {
		rules = append(rules, code(fp+".CurrencyCode", "intl_forms_currency_code", "Forms currency code", threeLetters))
	}
	if slices.Contains(types, "01") {
		rules = append(rules,
			choice(fp+".ReasonForExport", "intl_forms_reason_for_export", "Reason for export", ExportReasons, nil),
			maxLen(text(fp+".InvoiceNumber", "intl_forms_invoice_number", "Invoice number"), 35))
		if !ret {
			rules = append(rules, preflight.Rule{DotPath: fp + ".InvoiceDate", FlatKey: "intl_forms_invoice_date", Prompt: "Invoice date (YYYYMMDD)", Pattern: invoiceDatePatt})
		}
	}
	if has(soldToForms) {
		sp := fp + ".Contacts.SoldTo."
		rules = append(rules,
			text(sp+"Name", "sold_to_name", "Sold-to name"),
			text(sp+"AttentionName", "sold_to_attention_name", "Sold-to contact name"),
			text(sp+"Phone.Number", "sold_to_phone", "Sold-to phone number"),
			text(sp+"Address.AddressLine[0]", "sold_to_address_line_1", "Sold-to street address"),
			text(sp+"Address.City", "sold_to_city", "Sold-to city"),
			code(sp+"Address.CountryCode", "sold_to_country_code", "Sold-to country code", twoLetters))
	}
	if slices.Contains(types, "11") {
		rules = append(rules, choice(fp+".EEIFilingOption.Code", "eei_filing_code", "EEI filing option", EEIFilingCodes, nil))
	}
	return rules
}

func mustGet(body map[string]any, path string) any {
	v, _, _ := preflight.Get(body, path)
	return v
}

// productRules are the per-item rules of International Forms products (index n).
var productRules = func() []preflight.Rule {
	pp := Create.Prefix() + "ShipmentServiceOptions.InternationalForms.Product[n]." // forms are create-only
	unit := choice(pp+"Unit.UnitOfMeasurement.Code", "product_n_unit_code", "Item {n}: unit", UnitCodes, "PCS")
	unit.Case = validator.UpperCase
	return []preflight.Rule{
		maxLen(text(pp+"Description", "product_n_description", "Item {n}: description"), 35),
		{DotPath: pp + "Unit.Number", FlatKey: "product_n_quantity", Prompt: "Item {n}: quantity", Positive: true, Whole: true},
		{DotPath: pp + "Unit.Value", FlatKey: "product_n_value", Prompt: "Item {n}: unit value", Positive: true},
		unit,
		code(pp+"OriginCountryCode", "product_n_origin_country", "Item {n}: country of origin", twoLetters),
	}
}()
