package validator_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	v "github.com/elicitd/elicitd/validator"
)

// fuzzForm has a field of every type, constraints, a default and a custom check.
var fuzzForm = func() *v.Compiled {
	c, err := v.Compile(v.Form{MaxAnswerBytes: 4096, Fields: []v.Field{
		{Name: "t", Type: v.Text, Required: true, MinLength: v.Ptr(1), MaxLength: v.Ptr(20), Pattern: `^[a-z ]+$`, Case: v.LowerCase},
		{Name: "n", Type: v.Number, ExclusiveMinimum: v.Ptr(0.0), Maximum: v.Ptr(100.0)},
		{Name: "i", Type: v.Integer, Minimum: v.Ptr(-5.0), Default: 1.0},
		{Name: "b", Type: v.Boolean},
		{Name: "d", Type: v.Date},
		{Name: "dt", Type: v.DateTime},
		{Name: "e", Type: v.Email, Sensitive: true},
		{Name: "u", Type: v.URL},
		{Name: "s", Type: v.Select, Case: v.UpperCase, Options: []v.Option{{Value: "US", Title: "United States"}, {Value: "CA"}}},
		{Name: "m", Type: v.MultiSelect, MaxItems: v.Ptr(2), Options: []v.Option{{Value: "x"}, {Value: "y"}, {Value: "z", Title: "Zed"}}},
		{Name: "p", Type: v.Text, Check: func(val any, all map[string]any) error {
			if all["s"] == "US" && len(val.(string)) != 5 {
				return errors.New("must be 5 characters for the US")
			}
			return nil
		}},
	}})
	if err != nil {
		panic(err)
	}
	return c
}()

// sensitiveMessages are all the messages the sensitive field "e" can get: none depends on
// the value typed.
var sensitiveMessages = map[string]bool{
	"e: must be an email address":                       true, // not a string at all
	"e: must be an email address like name@example.com": true,
}

func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"t":"hello","n":5,"i":"3","b":"true","d":"2026-02-28","dt":"2026-11-22T10:00:00Z","e":"a@b.co","u":"https://example.com","s":"us","m":["x","Zed"],"p":"12345"}`,
		`{"t":"  ","n":"NaN","i":1.5,"b":"yes","d":"2026-02-30","dt":"now","e":"x","u":"http://127.0.0.1","s":"mx","m":["x","x","y"]}`,
		`{"t":123,"n":-1,"i":-6,"m":"x","s":["US"],"extra":{"deep":[1,2,3]}}`,
		`{"t":"` + strings.Repeat("a", 5000) + `"}`,
		`{"n":1e400,"i":9007199254740993,"d":"0000-00-00"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var content map[string]any
		if json.Unmarshal(raw, &content) != nil {
			return
		}
		data1, errs1 := fuzzForm.Validate(content)
		data2, errs2 := fuzzForm.Validate(content)
		if !reflect.DeepEqual(errs1, errs2) || !reflect.DeepEqual(data1, data2) {
			t.Fatalf("same input, different results:\n%v %v\n%v %v", data1, errs1, data2, errs2)
		}
		if (data1 == nil) == (len(errs1) == 0) {
			t.Fatalf("exactly one of data and errors expected: %v %v", data1, errs1)
		}
		names := map[string]bool{}
		for _, fd := range fuzzForm.Fields() {
			names[fd.Name] = true
		}
		for k := range data1 {
			if !names[k] {
				t.Fatalf("unknown key %q passed on", k)
			}
		}
		for _, fe := range errs1 {
			if fe.Field != "" && !names[fe.Field] || !strings.HasPrefix(fe.Message, fe.Label+": ") {
				t.Fatalf("malformed error %+v", fe)
			}
			if fe.Field == "e" && !sensitiveMessages[fe.Message] {
				t.Fatalf("a message about the sensitive field depends on its value: %q", fe.Message)
			}
		}
	})
}

func FuzzCompileJSON(f *testing.F) {
	for _, seed := range []string{
		`{"fields":[{"name":"a","type":"text"}]}`,
		`{"title":"T","fields":[{"name":"w","type":"number","required":true,"exclusive_minimum":0,"maximum":70,"default":5}]}`,
		`{"fields":[{"name":"s","type":"select","options":[{"value":"a","title":"A"}],"default":"a","case":"upper"}]}`,
		`{"fields":[{"name":"m","type":"multi_select","options":[{"value":"a"}],"min_items":1,"max_items":1,"default":["a"]}]}`,
		`{"fields":[{"name":"u","type":"url","url_schemes":["http"],"allow_private_hosts":true,"pattern":"^h"}]}`,
		`{"fields":[{"name":"x","type":"file"},{"name":"x","type":"colour"},{"type":"text","min_length":3,"max_length":1}]}`,
		`{"fields":[{"name":"d","type":"date","default":"2026-02-29"},{"name":"t","type":"text","pattern":"(("}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := v.CompileJSON(raw)
		if err != nil {
			var de *v.DefinitionError
			if !errors.As(err, &de) || len(de.Problems) == 0 {
				t.Fatalf("compile error of the wrong kind: %v", err)
			}
			return
		}
		if !json.Valid(c.WireSchema()) {
			t.Fatalf("invalid wire JSON: %s", c.WireSchema())
		}
		if strings.Contains(string(c.WireSchema()), "enumNames") {
			t.Fatal("enumNames sent out")
		}
		data, errs := c.Validate(map[string]any{})
		if data == nil && len(errs) == 0 {
			t.Fatal("no data and no errors")
		}
		// A compiled form accepts its own defaults.
		defaults := map[string]any{}
		for _, fd := range c.Fields() {
			if fd.Default != nil {
				defaults[fd.Name] = fd.Default
			}
		}
		_, errs = c.Validate(defaults)
		for _, fe := range errs {
			if fe.Constraint != "required" {
				t.Fatalf("a default was refused: %+v", fe)
			}
		}
	})
}

// hashResolver resolves any name to one or two addresses picked from a pool by a hash of the
// name, public and non-public alike, so the fuzzer can find names that resolve privately.
type hashResolver struct{}

var addressPool = []netip.Addr{
	netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("8.8.4.4"),
	netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("2606:4700::1111"), netip.MustParseAddr("::1"),
	netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::ffff:192.168.0.1"), netip.MustParseAddr("1.1.1.1"),
}

func (hashResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(host))
	n := h.Sum64()
	if n%11 == 0 {
		return nil, errors.New("no such host")
	}
	out := []netip.Addr{addressPool[n%uint64(len(addressPool))]}
	if n%3 == 0 {
		out = append(out, addressPool[(n/7)%uint64(len(addressPool))])
	}
	return out, nil
}

func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/", "https://127.0.0.1/", "https://[::ffff:127.0.0.1]/", "https://2130706433/",
		"https://0x7f.1/", "https://localhost./", "https://a.localhost/", "https://[fe80::1%25eth0]/",
		"http://example.com", "https://u:p@example.com", "https://[64:ff9b::a00:1]/", "https://xn--n3h.example/",
		"https://EXAMPLE.com:443/a?b#c", "javascript:alert(1)", "https://%31%32%37.0.0.1/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := v.CheckURL(context.Background(), raw, v.URLPolicy{Resolver: hashResolver{}, Schemes: []string{"https", "http"}})
		if err != nil {
			if !errors.Is(err, v.ErrUnsafeURL) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		host := strings.ToLower(u.Hostname())
		if a, err := netip.ParseAddr(host); err == nil {
			if !v.IsPublicAddr(a) {
				t.Fatalf("accepted the non-public literal %s in %q", a, raw)
			}
			return
		}
		addrs, err := hashResolver{}.LookupNetIP(context.Background(), "ip", host)
		if err != nil || len(addrs) == 0 {
			t.Fatalf("accepted %q whose host %q does not resolve", raw, host)
		}
		for _, a := range addrs {
			if !v.IsPublicAddr(a) {
				t.Fatalf("accepted %q whose host resolves to %s", raw, a)
			}
		}
	})
}
