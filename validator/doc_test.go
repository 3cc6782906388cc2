package validator

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The package doc lists every field type and every key of the form language, so what an
// agent reads there is what Compile takes.
func TestPackageDocListsEveryTypeAndKey(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	doc := string(raw)
	types, keys, ok := strings.Cut(doc, "// # Keys")
	require.True(t, ok, "the doc has a Keys section")
	_, types, ok = strings.Cut(types, "// # Field types")
	require.True(t, ok, "the doc has a Field types section")
	keys, _, _ = strings.Cut(keys, "// # ")

	var missing []string
	for _, typ := range allTypes {
		if !hasWord(types, string(typ)) {
			missing = append(missing, "type "+string(typ))
		}
	}
	for _, v := range []any{Form{}, Field{}, Option{}, Condition{}, Comparison{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if key != "" && key != "-" && !hasWord(keys, key) {
				missing = append(missing, rt.Name()+" key "+key)
			}
		}
	}
	assert.Empty(t, missing, "not in the package doc")
}

func hasWord(text, word string) bool {
	return regexp.MustCompile(`(^|[^a-z_])` + regexp.QuoteMeta(word) + `($|[^a-z_])`).MatchString(text)
}
