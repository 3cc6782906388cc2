package ask

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A call's arguments have one digest whatever their key order and spacing, and another for
// any other value, also where they have no canonical form.
func TestArgsDigestIsTheValues(t *testing.T) {
	d := argsDigest(json.RawMessage(`{"a":1,"b":[1,"x<y"],"c":{"e":null,"d":true}}`))
	assert.Equal(t, d, argsDigest(json.RawMessage(" { \"c\" : {\"d\":true, \"e\":null}, \"b\":[1.0, \"x\\u003cy\"], \"a\":1e0 }\n")))
	for _, other := range []string{`{"a":1,"b":[1,"x<y"],"c":{"e":null,"d":false}}`, `{"a":1,"b":["x<y",1],"c":{"e":null,"d":true}}`, `{}`, `null`, ``} {
		assert.NotEqual(t, d, argsDigest(json.RawMessage(other)), other)
	}
	assert.Equal(t, argsDigest(nil), argsDigest(json.RawMessage(`null`)), "absent arguments are null")

	// A duplicate key has no canonical form: the last one counts, as it does for the tool.
	dup := argsDigest(json.RawMessage(`{"a":1,"a":2}`))
	assert.Equal(t, argsDigest(json.RawMessage(`{"a":2}`)), dup)
	assert.NotEqual(t, dup, argsDigest(json.RawMessage(`{"a":1,"a":3}`)))
	// Invalid UTF-8 reads as U+FFFD, as encoding/json reads it for the tool.
	assert.Equal(t, argsDigest(json.RawMessage(`{"a":"\ufffd"}`)), argsDigest(json.RawMessage("{\"a\":\"\xff\"}")))
	assert.NotEqual(t, argsDigest(json.RawMessage(`null`)), argsDigest(json.RawMessage("{\"a\":\"\xff\"}")))
}

// A record whose digest an older elicitd computed (canonicalJSON's) still matches its call's
// arguments on a node that computes the canonical form, and no other call's.
func TestArgsMatchAnOlderNodesDigest(t *testing.T) {
	args := json.RawMessage(`{"message":"Is 2 < 3 & 4 > 1?","n":1}`)
	older := digest(canonicalJSON(args))
	sum := argsDigest(args)
	assert.NotEqual(t, older, sum, "the two forms differ here (HTML escapes): the case is real")
	assert.True(t, argsMatch(sum, args, sum))
	assert.True(t, argsMatch(older, args, sum))
	other := json.RawMessage(`{"message":"Is 2 < 3 & 4 > 1?","n":2}`)
	assert.False(t, argsMatch(older, other, argsDigest(other)))
	assert.False(t, argsMatch(sum, other, argsDigest(other)))
}

func BenchmarkArgsDigest(b *testing.B) {
	args := json.RawMessage(`{"message":"Who?","schema":{"type":"object","properties":{"name":{"type":"string","minLength":1},` +
		`"age":{"type":"integer","minimum":0},"email":{"type":"string","format":"email"}},"required":["name","age","email"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		argsDigest(args)
	}
}
