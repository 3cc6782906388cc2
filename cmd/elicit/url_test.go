package main

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testBrowser is the person's browser when the test binary is $BROWSER: it opens the link
// and sends the page with fields (name=value&...). It returns the exit status.
func testBrowser(link, fields string) int {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(link)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		fmt.Fprintf(os.Stderr, "no form on the page (%d)\n", res.StatusCode)
		return 1
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("_csrf", string(m[1]))
	values, _ := url.ParseQuery(fields)
	for k, v := range values {
		_ = mw.WriteField("f."+k, v[0])
	}
	_ = mw.Close()
	res, err = c.Post(link, mw.FormDataContentType(), &body)
	if err != nil || res.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "sending the page:", err, res.Status)
		return 1
	}
	res.Body.Close()
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
