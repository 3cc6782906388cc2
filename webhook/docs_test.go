package webhook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// snippetBetween returns the lines of text between the line begin and the line end.
func snippetBetween(t *testing.T, text, begin, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, begin+"\n")
	require.True(t, ok, "no line %q", begin)
	body, _, ok := strings.Cut(after, end)
	require.True(t, ok, "no %q after %q", end, begin)
	return strings.TrimSpace(body)
}

// The verification snippet published in docs/webhooks.md is, word for word, the one
// every test receiver here verifies with (snippet_test.go), and it imports the library
// the package signs with.
func TestDocsSnippetIsTheTestedOne(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "webhooks.md"))
	require.NoError(t, err)
	code, err := os.ReadFile("snippet_test.go")
	require.NoError(t, err)
	published := snippetBetween(t, string(doc), "<!-- verify-snippet: webhook/snippet_test.go -->\n```go", "```")
	tested := snippetBetween(t, string(code), "// snippet:begin", "// snippet:end")
	require.Equal(t, tested, published, "docs/webhooks.md's snippet differs from webhook/snippet_test.go's")
	require.Contains(t, published, "wh.Verify(body, r.Header)")
	require.Contains(t, string(doc), `standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"`)
	require.Contains(t, string(code), `standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"`)
}
