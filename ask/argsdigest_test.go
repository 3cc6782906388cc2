package ask

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// argsCorpus: arguments where RFC 8785 and encoding/json's re-encoding could part (escapes,
// HTML characters, non-ASCII, key order past the BMP, numbers of every spelling, negative
// zero, duplicate keys), and ordinary ones.
var argsCorpus = []string{
	``, `null`, `{}`, `[]`, `0`, `-0`, `-0.0`, `-1e-400`, `1e400`, `1.0`, `1e0`, `10e-1`, `0.1`, `1e21`, `1e20`, `1e-7`,
	`1E2`, `123456789012345678901234567890`, `12345678901234567890`, `9007199254740993`, `-12.5e3`,
	`{"message":"Who?","schema":{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0},"email":{"type":"string","format":"email"}},"required":["name","age","email"]}}`,
	` { "b" : [1.0, "x\u003cy"], "a" : 1e0 }`, `{"a":1,"b":[1,"x<y"]}`, `{"m":"Q&A > 2"}`, `{"m":"\u2028\u2029"}`,
	`{"m":"\b\f\n\r\t\u0001\u001f\u007f\"\\\/"}`, `{"m":"é","é":1,"e":2}`, `{"\ud83d\ude00":1,"\uffff":2,"\ue000":3}`,
	`{"a":1,"a":2}`, `{"a":"<","a":"<"}`, `{"s":"<\ud800"}`, `{"s":"\ud800"}`, `{"d":"2026-07-28","n":-0}`,
	`{"n":[true,false,null,-1,-0.5,3.14159,2.5e-8]}`, `"plain"`, `{"nested":{"z":{"y":{"x":[{}]}}}}`,
}

// A call's arguments digest is the one every node computes, this version or an older one:
// canonicalJSON's. Otherwise a retry that lands, during a rolling upgrade, on a node of the
// other version would be taken for another call's.
func TestArgsDigestIsCanonicalJSONs(t *testing.T) {
	fast := 0
	for _, a := range argsCorpus {
		raw := json.RawMessage(a)
		assert.Equal(t, digest(canonicalJSON(raw)), argsDigest(raw), "%s", a)
		if sameAsReencoded(raw) {
			fast++
		}
	}
	require.Greater(t, fast, 10, "the quick path is taken")
}

func FuzzArgsDigestIsCanonicalJSONs(f *testing.F) {
	for _, a := range argsCorpus {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if want := digest(canonicalJSON(b)); argsDigest(b) != want {
			t.Fatalf("%q: argsDigest is not canonicalJSON's", b)
		}
	})
}

// A call's arguments have one digest whatever their key order and spacing, and another for
// any other value.
func TestArgsDigestIsTheValues(t *testing.T) {
	d := argsDigest(json.RawMessage(`{"a":1,"b":[1,"x<y"],"c":{"e":null,"d":true}}`))
	assert.Equal(t, d, argsDigest(json.RawMessage(" { \"c\" : {\"d\":true, \"e\":null}, \"b\":[1.0, \"x\\u003cy\"], \"a\":1e0 }\n")))
	for _, other := range []string{`{"a":1,"b":[1,"x<y"],"c":{"e":null,"d":false}}`, `{"a":1,"b":["x<y",1],"c":{"e":null,"d":true}}`, `{}`, `null`, ``} {
		assert.NotEqual(t, d, argsDigest(json.RawMessage(other)), other)
	}
	assert.Equal(t, argsDigest(nil), argsDigest(json.RawMessage(`null`)), "absent arguments are null")
	assert.Equal(t, argsDigest(json.RawMessage(`{"a":2}`)), argsDigest(json.RawMessage(`{"a":1,"a":2}`)), "the last of duplicate keys counts, as for the tool")
}

func BenchmarkArgsDigest(b *testing.B) {
	args := json.RawMessage(argsCorpus[21])
	b.ReportAllocs()
	for b.Loop() {
		argsDigest(args)
	}
}
