package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/page/pagetest"
)

// testBrowser is the person's browser when the test binary is $BROWSER: it opens the link
// and sends the page with fields (name=value&...). It returns the exit status.
func testBrowser(link, fields string) int {
	b := pagetest.New()
	_, page, err := b.Open(link)
	if err != nil || pagetest.CSRF(page) == "" {
		fmt.Fprintln(os.Stderr, "no form on the page:", err)
		return 1
	}
	values, _ := url.ParseQuery(fields)
	answers := map[string]string{}
	for k, v := range values {
		answers[k] = v[0]
	}
	status, _, err := b.Send(link, page, answers, nil)
	if err != nil || status != http.StatusOK {
		fmt.Fprintln(os.Stderr, "sending the page:", status, err)
		return 1
	}
	return 0
}

const pinArgs = `{"message": "Your PIN, please.", "form": {"fields": [
	{"name": "pin", "type": "text", "label": "PIN", "sensitive": true, "required": true, "pattern": "^[0-9]{6}$"}]}}`

func TestURLModeOpensTheLinkAndWaits(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("BROWSER", self)
	t.Setenv("ELICIT_TEST_BROWSER", "pin=123456")
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := runElicit(t, "--protocol", era, "--open", "call", "ask_user", "--args", pinArgs, "--", elicitdBin)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			// stdout: the result's text (the secret left out), then its structured content,
			// which has it: stdout is for the program that ran elicit.
			text, structured, _ := strings.Cut(r.stdout, "\n")
			assert.Equal(t, "completed", decodeOut(t, text)["status"])
			assert.NotContains(t, text, "123456")
			assert.Equal(t, "123456", decodeOut(t, structured)["data"].(map[string]any)["pin"])
			assert.Contains(t, r.stderr, "asks (question 1): Your PIN, please.\nAnswer it in your browser: http://127.0.0.1:")
			assert.NotContains(t, r.stderr, "123456", "the secret is never shown in the terminal")
			if era == "2025-11-25" {
				assert.Contains(t, r.stderr, "the page was sent")
			}
		})
	}
}

func TestURLModeRefusesALinkThatIsNotTheWeb(t *testing.T) {
	c := &client{stderr: &strings.Builder{}, server: "evil", inv: &invocation{open: true}}
	res, err := c.openLink(&mcp.ElicitParams{URL: "file:///etc/passwd"})
	require.NoError(t, err)
	assert.Equal(t, "decline", res.Action)
}
