package validator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/wire")

var opts = []v.Option{{Value: "a"}, {Value: "b"}, {Value: "c"}}
var titled = []v.Option{{Value: "us", Title: "United States"}, {Value: "ca", Title: "Canada"}, {Value: "mx"}}

// wireCases holds one form per field type (and one with everything), with a valid answer
// for each that a client might send.
var wireCases = []struct {
	name    string
	fields  []v.Field
	content map[string]any
}{
	{"text", []v.Field{{Name: "name", Type: v.Text, Label: "Full name", Description: "As on your passport", Required: true,
		MinLength: v.Ptr(2), MaxLength: v.Ptr(40), Pattern: `^\p{L}`, Default: "Ada"}}, map[string]any{"name": "Grace"}},
	{"email", []v.Field{{Name: "email", Type: v.Email, Label: "Email", Required: true}}, map[string]any{"email": "ada@example.com"}},
	{"url", []v.Field{{Name: "site", Type: v.URL, Label: "Website", URLSchemes: []string{"https", "http"}}}, map[string]any{"site": "https://example.com"}},
	{"date", []v.Field{{Name: "day", Type: v.Date, Label: "Ship on", Default: "2026-12-01"}}, map[string]any{"day": "2026-11-22"}},
	{"date_time", []v.Field{{Name: "at", Type: v.DateTime, Label: "Pickup", Required: true}}, map[string]any{"at": "2026-11-22T10:00:00Z"}},
	{"number", []v.Field{{Name: "weight", Type: v.Number, Label: "Weight (kg)", Minimum: v.Ptr(0.1), Maximum: v.Ptr(70.0),
		ExclusiveMaximum: v.Ptr(80.0), Default: 1.5}}, map[string]any{"weight": 2.5}},
	{"integer", []v.Field{{Name: "qty", Type: v.Integer, Label: "Quantity", Minimum: v.Ptr(1.0), Maximum: v.Ptr(10.0), Default: 3.0}}, map[string]any{"qty": 4.0}},
	{"boolean", []v.Field{{Name: "sig", Type: v.Boolean, Label: "Signature", Default: false}}, map[string]any{"sig": true}},
	{"select_untitled", []v.Field{{Name: "size", Type: v.Select, Label: "Size", Options: opts, Default: "b", Required: true}}, map[string]any{"size": "a"}},
	{"select_titled", []v.Field{{Name: "country", Type: v.Select, Label: "Country", Options: titled}}, map[string]any{"country": "ca"}},
	{"multi_untitled", []v.Field{{Name: "tags", Type: v.MultiSelect, Label: "Tags", Options: opts, MinItems: v.Ptr(1), MaxItems: v.Ptr(2),
		Default: []any{"a"}}}, map[string]any{"tags": []any{"a", "c"}}},
	{"multi_titled", []v.Field{{Name: "countries", Type: v.MultiSelect, Label: "Countries", Options: titled}}, map[string]any{"countries": []any{"us"}}},
	{"mixed", []v.Field{
		{Name: "z_last_alphabetically", Type: v.Text, Required: true},
		{Name: "a_first_alphabetically", Type: v.Integer},
		{Name: "m", Type: v.Select, Options: titled, Required: true},
		{Name: "b", Type: v.Boolean},
	}, map[string]any{"z_last_alphabetically": "x", "a_first_alphabetically": 1.0, "m": "mx", "b": false}},
}

func TestWireSchemaGolden(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			c, err := v.Compile(v.Form{Fields: wc.fields})
			require.NoError(t, err)
			var got bytes.Buffer
			require.NoError(t, json.Indent(&got, c.WireSchema(), "", "  "))
			got.WriteByte('\n')
			path := filepath.Join("testdata", "wire", wc.name+".json")
			if *update {
				require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./validator -run Golden -update to create it")
			assert.Equal(t, string(want), got.String())
			checkWireSubset(t, c.WireSchema())
		})
	}
}

// checkWireSubset checks the rules of the 2025-11-25 subset on a wire schema.
func checkWireSubset(t *testing.T, wire json.RawMessage) {
	t.Helper()
	var root struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(wire, &root))
	assert.Equal(t, "object", root.Type)
	for name, p := range root.Properties {
		_, hasEnum := p["enum"]
		_, hasOneOf := p["oneOf"]
		assert.False(t, hasEnum && hasOneOf, "%s has enum and oneOf", name)
		for _, banned := range []string{"enumNames", "pattern", "exclusiveMinimum", "exclusiveMaximum", "properties"} {
			assert.NotContains(t, p, banned, name)
		}
		if items, ok := p["items"].(map[string]any); ok {
			assert.NotContains(t, items, "enumNames", name)
		}
		assert.Contains(t, []any{"string", "number", "integer", "boolean", "array"}, p["type"], name)
	}
	assert.NotContains(t, string(wire), "enumNames")
}

func TestWirePropertiesKeepFieldOrder(t *testing.T) {
	var fields []v.Field
	for _, n := range []string{"zeta", "alpha", "mu", "beta"} {
		fields = append(fields, v.Field{Name: n, Type: v.Text})
	}
	c, err := v.Compile(v.Form{Fields: fields})
	require.NoError(t, err)
	names, _ := propertyOrder(t, c.WireSchema())
	assert.Equal(t, []string{"zeta", "alpha", "mu", "beta"}, names)
}

func propertyOrder(t *testing.T, wire json.RawMessage) ([]string, error) {
	t.Helper()
	var root struct {
		Properties json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(wire, &root))
	dec := json.NewDecoder(bytes.NewReader(root.Properties))
	_, err := dec.Token()
	require.NoError(t, err)
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		names = append(names, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return names, nil
}

// Every wire schema goes through the go-sdk's own checks, as a real client and server apply
// them: the client checks the requested schema before its handler runs, and the server
// checks the accepted content against it. Then our validator accepts the same content.
func TestWireSchemasPassTheSDKsChecks(t *testing.T) {
	ctx := context.Background()
	answers := map[string]map[string]any{}
	for _, wc := range wireCases {
		answers[wc.name] = wc.content
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "wire-test", Version: "1"}, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "wire-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: answers[req.Params.Message]}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()

	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			c, err := v.Compile(v.Form{Fields: wc.fields})
			require.NoError(t, err)
			res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: wc.name, RequestedSchema: c.WireSchema()})
			require.NoError(t, err)
			require.Equal(t, "accept", res.Action)
			data, errs := c.Validate(res.Content)
			require.Empty(t, errs)
			for _, f := range wc.fields {
				if _, given := wc.content[f.Name]; given {
					assert.Contains(t, data, f.Name)
				}
			}
		})
	}

	// The SDK's check does find a mismatch: the adapter relies on it to turn such an answer
	// into a re-prompt.
	c, err := v.Compile(v.Form{Fields: []v.Field{{Name: "size", Type: v.Select, Options: opts}}})
	require.NoError(t, err)
	answers["bad"] = map[string]any{"size": "zzz"}
	_, err = ss.Elicit(ctx, &mcp.ElicitParams{Message: "bad", RequestedSchema: c.WireSchema()})
	require.ErrorContains(t, err, "does not match requested schema")
}

// A file field is never sent in form mode (it is asked on elicitd's page): the wire schema
// leaves it out, from the properties and from required, and stays a valid schema.
func TestAFileFieldIsNotOnTheWire(t *testing.T) {
	c, err := v.Compile(v.Form{Fields: []v.Field{
		{Name: "user", Type: v.Text, Label: "User", Required: true},
		{Name: "contract", Type: v.File, Label: "Contract", Required: true, Accept: []string{"application/pdf"}},
	}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"user":{"type":"string","title":"User"}},"required":["user"]}`, string(c.WireSchema()))
	checkWireSubset(t, c.WireSchema())

	only, err := v.Compile(v.Form{Fields: []v.Field{{Name: "photo", Type: v.File, Required: true}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(only.WireSchema()))
	assert.Equal(t, []string{"photo"}, names(only.AskedFields()), "it is still asked, on the page")
}
