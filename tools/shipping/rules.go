// Package shipping knows what a UPS create-shipment or rate request needs (see
// docs/shipping.md): it canonicalises a partial body, applies defaults, and derives
// the rules for every field still required, including those that depend on the body's own
// values (countries, services, forms, packages).
package shipping

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/validator"
)

// Kind is the request being completed.
type Kind int

const (
	Create Kind = iota // ShipmentRequest for /api/shipments/{version}/ship
	Rate               // RateRequest for /api/rating/{version}/{option}
)

// Prefix returns the dot path of the Shipment node.
func (k Kind) Prefix() string {
	if k == Rate {
		return "RateRequest.Shipment."
	}
	return "ShipmentRequest.Shipment."
}

// RatingOptions are the rating request options in their canonical case.
var RatingOptions = []string{"Rate", "Shop", "Ratetimeintransit", "Shoptimeintransit"}

// ErrBadOption is matched by an unknown rating request option.
var ErrBadOption = errors.New("shipping: unknown rating request option")

// CanonicalOption returns the canonical case of a rating request option, given in any case.
func CanonicalOption(s string) (string, error) {
	for _, o := range RatingOptions {
		if strings.EqualFold(strings.TrimSpace(s), o) {
			return o, nil
		}
	}
	return "", fmt.Errorf("%w %q: expected one of %s", ErrBadOption, s, strings.Join(RatingOptions, ", "))
}

func opts(pairs ...string) []validator.Option {
	out := make([]validator.Option, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, validator.Option{Value: pairs[i], Title: pairs[i+1]})
	}
	return out
}

// Option lists from docs/shipping.md.
var (
	ServiceCodes = opts("01", "Next Day Air", "02", "2nd Day Air", "03", "Ground", "07", "Express", "08", "Expedited",
		"11", "UPS Standard", "12", "3 Day Select", "13", "Next Day Air Saver", "14", "Next Day Air Early",
		"17", "Worldwide Economy DDU", "54", "Express Plus", "59", "2nd Day Air A.M.", "65", "UPS Saver",
		"72", "Worldwide Economy DDP", "74", "UPS Express 12:00")
	ChargeTypes    = opts("01", "Transportation", "02", "Duties and Taxes", "03", "Broker of Choice")
	PackagingCodes = opts("02", "Customer Supplied Package", "01", "UPS Letter", "03", "Tube", "04", "PAK",
		"21", "UPS Express Box", "24", "UPS 25KG Box", "25", "UPS 10KG Box")
	WeightUnits = opts("LBS", "Pounds", "KGS", "Kilograms")
	FormTypes   = opts("01", "Invoice", "03", "CO", "04", "USMCA", "05", "Partial Invoice", "06", "Packing List",
		"07", "Customer Generated Forms", "08", "Air Freight Packing List", "09", "CN22", "10", "UPS Premium Care Form", "11", "EEI")
	UnitCodes       = opts("PCS", "Pieces", "BOX", "Box", "DZ", "Dozen", "EA", "Each", "KG", "Kilogram", "LB", "Pound", "PR", "Pair")
	ExportReasons   = opts("SALE", "Sale", "GIFT", "Gift", "SAMPLE", "Sample", "RETURN", "Return", "REPAIR", "Repair", "INTERCOMPANYDATA", "Intercompany data")
	EEIFilingCodes  = opts("1", "Shipper Filed", "2", "AES Direct", "3", "UPS Filed")
	payers          = []string{"BillShipper", "BillReceiver", "BillThirdParty"}
	stateCountries  = []string{"US", "CA", "PR"}
	productForms    = []string{"01", "03", "04", "05", "06", "08", "11"}
	currencyForms   = []string{"01", "05"}
	soldToForms     = []string{"01", "04"}
	eu27            = []string{"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT", "LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE"}
	usPostal        = regexp.MustCompile(`^\d{5}(-\d{4})?$`)
	caPostal        = regexp.MustCompile(`^[A-Z]\d[A-Z] ?\d[A-Z]\d$`)
	twoLetters      = `^[A-Z]{2}$`
	threeLetters    = `^[A-Z]{3}$`
	moneyPattern    = `^\d+(\.\d{1,2})?$`
	invoiceDatePatt = `^\d{8}$`
)

// Malformed is a body that cannot be completed by asking: a node of the wrong kind, or an
// ambiguous payer. Reason is malformed_structure or ambiguous_payer.
type Malformed struct {
	Reason string
	Path   string
	Err    error
}

func (m *Malformed) Error() string { return m.Err.Error() }
func (m *Malformed) Unwrap() error { return m.Err }

// Canonical returns a copy of body in canonical shape: Package and ShipmentCharge as lists
// (an object becomes a one-item list, an empty list [{}], a non-object item {}), and the
// country, state, currency, weight-unit and origin codes upper-cased. A node of the wrong
// kind is *Malformed.
func Canonical(body map[string]any, k Kind) (map[string]any, error) {
	out, _ := preflight.Clone(body).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	p := k.Prefix()
	for _, path := range []string{p + "Package", p + "PaymentInformation.ShipmentCharge"} {
		if err := listify(out, path); err != nil {
			return nil, err
		}
	}
	if err := listify(out, p+"ShipmentServiceOptions.InternationalForms.Product"); err != nil {
		return nil, err
	}
	upper := []string{"Shipper.Address.CountryCode", "ShipTo.Address.CountryCode", "ShipFrom.Address.CountryCode",
		"Shipper.Address.StateProvinceCode", "ShipTo.Address.StateProvinceCode", "InvoiceLineTotal.CurrencyCode",
		"ShipmentServiceOptions.InternationalForms.CurrencyCode"}
	for _, u := range upper {
		if err := upperAt(out, p+u); err != nil {
			return nil, err
		}
	}
	for i := range countAt(out, p+"Package") {
		if err := upperAt(out, fmt.Sprintf("%sPackage[%d].PackageWeight.UnitOfMeasurement.Code", p, i)); err != nil {
			return nil, err
		}
	}
	for i := range countAt(out, p+"ShipmentServiceOptions.InternationalForms.Product") {
		if err := upperAt(out, fmt.Sprintf("%sShipmentServiceOptions.InternationalForms.Product[%d].OriginCountryCode", p, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func malformed(err error) error {
	var se *preflight.ShapeError
	if errors.As(err, &se) {
		return &Malformed{Reason: "malformed_structure", Path: se.Path, Err: err}
	}
	return err
}

func listify(body map[string]any, path string) error {
	v, _, err := preflight.Get(body, path)
	if err != nil {
		return malformed(err)
	}
	var list []any
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		list = []any{x}
	case []any:
		list = x
		if len(list) == 0 {
			list = []any{map[string]any{}}
		}
	default:
		return &Malformed{Reason: "malformed_structure", Path: path,
			Err: fmt.Errorf("%s must be an object or a list of objects, not %T", path, v)}
	}
	for i, item := range list {
		if _, ok := item.(map[string]any); !ok {
			list[i] = map[string]any{}
		}
	}
	replaceAt(body, path, list)
	return nil
}

// replaceAt replaces the value at path, whose parent object exists (its value was just read).
func replaceAt(body map[string]any, path string, v any) {
	dot := strings.LastIndexByte(path, '.')
	parent, _, _ := preflight.Get(body, path[:dot])
	parent.(map[string]any)[path[dot+1:]] = v
}

func upperAt(body map[string]any, path string) error {
	v, _, err := preflight.Get(body, path)
	if err != nil {
		return malformed(err)
	}
	s, ok := v.(string)
	if !ok || s == strings.ToUpper(strings.TrimSpace(s)) {
		return nil
	}
	replaceAt(body, path, strings.ToUpper(strings.TrimSpace(s)))
	return nil
}

func countAt(body map[string]any, path string) int {
	v, _, _ := preflight.Get(body, path)
	l, _ := v.([]any)
	return len(l)
}

func stringAt(body map[string]any, path string) string {
	v, _, _ := preflight.Get(body, path)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// Env is what the environment supplies.
type Env struct {
	AccountNumber string // UPS_ACCOUNT_NUMBER
}

// applyDefaults fills defaults into body (canonical, a private copy): built-in < environment
// < body. The environment's account number fills Shipper.ShipperNumber and, only when charge
// 0 has no payer object, ShipmentCharge[0].BillShipper.AccountNumber.
func applyDefaults(body map[string]any, k Kind, env Env) error {
	p := k.Prefix()
	builtin := preflight.Defaults{p + "PaymentInformation.ShipmentCharge[0].Type": "01"}
	if k == Create {
		builtin["ShipmentRequest.Request.RequestOption"] = "nonvalidate"
	}
	envTier := preflight.Defaults{}
	if env.AccountNumber != "" {
		envTier[p+"Shipper.ShipperNumber"] = env.AccountNumber
		if len(payersAt(body, p, 0)) == 0 {
			envTier[p+"PaymentInformation.ShipmentCharge[0].BillShipper.AccountNumber"] = env.AccountNumber
		}
	}
	if err := preflight.ApplyDefaults(body, envTier, builtin); err != nil {
		return malformed(err)
	}
	return nil
}

// payer returns the payer object of charge i: the one present, BillShipper if none, or
// *Malformed (ambiguous_payer) if two or more are present.
func payer(body map[string]any, p string, i int) (string, error) {
	found := payersAt(body, p, i)
	switch len(found) {
	case 0:
		return "BillShipper", nil
	case 1:
		return found[0], nil
	}
	path := fmt.Sprintf("%sPaymentInformation.ShipmentCharge[%d]", p, i)
	return "", &Malformed{Reason: "ambiguous_payer", Path: path,
		Err: fmt.Errorf("%s names more than one payer (%s); keep exactly one", path, strings.Join(found, ", "))}
}

// Check is the whole preflight of a request body: canonical shape, defaults, the rules that
// apply, and which of them the body misses. The caller's body is not changed; Body is the
// completed copy to write answers into (then Check it again). A body that cannot be
// completed by asking is *Malformed.
func Check(body map[string]any, k Kind, option string, env Env) (Result, error) {
	canon, err := Canonical(body, k)
	if err != nil {
		return Result{}, err
	}
	if err := applyDefaults(canon, k, env); err != nil { // canon is already a private copy
		return Result{}, err
	}
	full := canon
	rules, err := Required(full, k, option)
	if err != nil {
		return Result{}, err
	}
	missing, err := preflight.Missing(full, rules)
	if err != nil {
		return Result{}, malformed(err)
	}
	return Result{Body: full, Rules: rules, Missing: missing}, nil
}

// Result is what Check found.
type Result struct {
	Body    map[string]any   // canonical, defaults applied
	Rules   []preflight.Rule // every rule that applies
	Missing []preflight.Rule // the rules Body misses, in order
}

// Structural returns the missing rules no form can ask for.
func (r Result) Structural() []preflight.Rule {
	var out []preflight.Rule
	for _, m := range r.Missing {
		if m.Structural {
			out = append(out, m)
		}
	}
	return out
}

// RenamePackaging renames Packaging to PackagingType in every package of a rate body, as
// the Rating API wants, just before the call.
func RenamePackaging(body map[string]any) {
	pkgs, _, _ := preflight.Get(body, Rate.Prefix()+"Package")
	list, _ := pkgs.([]any)
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			if v, has := m["Packaging"]; has {
				if _, taken := m["PackagingType"]; !taken {
					m["PackagingType"] = v
				}
				delete(m, "Packaging")
			}
		}
	}
}

// payersAt returns the payer objects present on charge i, in the order of payers.
func payersAt(body map[string]any, p string, i int) []string {
	var found []string
	for _, name := range payers {
		if v, _, _ := preflight.Get(body, fmt.Sprintf("%sPaymentInformation.ShipmentCharge[%d].%s", p, i, name)); v != nil {
			found = append(found, name)
		}
	}
	return found
}
