package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/chrome"
)

// chromium starts headless Chromium (Debian's package, which .ci/run installs; or the
// browser CHROME names) for the test and returns a browser context of it: a person's
// browser. Without a browser the test is skipped, saying what to install; under CI=true it
// fails instead (see package chrome).
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := chrome.Require(t)
	profile, err := os.MkdirTemp("", "elicitd-chromium")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, failsafe)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
		_ = os.RemoveAll(profile) // the browser may still be writing to it; what is left is in $TMPDIR
	})
	require.NoError(t, chromedp.Run(ctx)) // starts the browser
	return ctx
}

// The page in a real browser: the person opens the link, fills in the fields, sees a field's
// problem, fixes it, uploads a file and sends it; a second browser is refused, a submit
// without the CSRF token is refused, and a replay of the browser's own submit is refused.
func TestThePageInARealBrowser(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			person := chromium(t)
			contract := filepath.Join(t.TempDir(), "contract.pdf")
			require.NoError(t, os.WriteFile(contract, contractPDF, 0o600))
			replays := make(chan func() int, 1) // the handler may still run when the push-era call has returned
			h := start(t, clientSetup{version: era.version,
				// URL elicitation only: every field is asked on the page, the plain one too.
				caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
				elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if !assert.Equal(t, "url", req.Params.Mode) {
						return nil, errors.New("not a URL elicitation")
					}
					link := req.Params.URL
					// send clicks the page's button and returns the status of the page that came back.
					send := func(ctx context.Context) (int64, error) {
						res, err := chromedp.RunResponse(ctx, chromedp.Click("button[type=submit]", chromedp.ByQuery))
						if err != nil || res == nil {
							return 0, fmt.Errorf("submit: %v", err)
						}
						return res.Status, nil
					}
					var problem, passwordValue, html string
					if err := chromedp.Run(person,
						chromedp.Navigate(link),
						chromedp.WaitVisible("#f-user", chromedp.ByQuery),
						chromedp.SendKeys("#f-user", "Ada Lovelace", chromedp.ByQuery),
						chromedp.SendKeys("#f-password", "hunter2", chromedp.ByQuery),
						chromedp.SetUploadFiles("#f-contract", []string{contract}, chromedp.ByQuery),
					); !assert.NoError(t, err) {
						return nil, err
					}
					status, err := send(person)
					if !assert.NoError(t, err) {
						return nil, err
					}
					assert.EqualValues(t, http.StatusUnprocessableEntity, status)
					if err := chromedp.Run(person,
						chromedp.Text("#f-password-error", &problem, chromedp.ByQuery),
						chromedp.Value("#f-password", &passwordValue, chromedp.ByQuery),
						chromedp.OuterHTML("html", &html, chromedp.ByQuery),
					); !assert.NoError(t, err) {
						return nil, err
					}
					assert.Equal(t, "Password: must be at least 8 characters", problem, "the problem is shown next to its field")
					assert.Empty(t, passwordValue, "a secret is never filled in again")
					assert.NotContains(t, html, "hunter2")
					assert.Contains(t, html, `value="Ada Lovelace"`, "a valid value is kept")
					assert.Contains(t, html, `id="f-contract-kept"`, "the valid file is kept")

					// Another browser (its own cookies) is refused.
					other := chromium(t)
					var refusal string
					if err := chromedp.Run(other, chromedp.Navigate(link), chromedp.Text("#notice", &refusal, chromedp.ByQuery)); !assert.NoError(t, err) {
						return nil, err
					}
					assert.Contains(t, refusal, "opened in another browser first")

					// A submit without the CSRF token is refused.
					var notice string
					if err := chromedp.Run(person,
						chromedp.SendKeys("#f-password", "correct horse battery", chromedp.ByQuery),
						chromedp.Evaluate(`document.querySelector('input[name="_csrf"]').remove()`, nil),
					); !assert.NoError(t, err) {
						return nil, err
					}
					status, err = send(person)
					assert.NoError(t, err)
					assert.EqualValues(t, http.StatusForbidden, status)
					assert.NoError(t, chromedp.Run(person, chromedp.Text("#notice", &notice, chromedp.ByQuery)))
					assert.Contains(t, notice, "not sent from this page")

					// Fixed, from the page itself: sent.
					var token string
					var cookies []*network.Cookie
					if err := chromedp.Run(person,
						chromedp.Navigate(link),
						chromedp.SendKeys("#f-user", "Ada Lovelace", chromedp.ByQuery),
						chromedp.SendKeys("#f-password", "correct horse battery", chromedp.ByQuery),
						chromedp.Value(`input[name="_csrf"]`, &token, chromedp.ByQuery),
						chromedp.ActionFunc(func(ctx context.Context) (err error) {
							cookies, err = network.GetCookies().WithURLs([]string{link}).Do(ctx)
							return err
						}),
					); !assert.NoError(t, err) {
						return nil, err
					}
					status, err = send(person)
					assert.NoError(t, err)
					assert.EqualValues(t, http.StatusOK, status)
					assert.NoError(t, chromedp.Run(person, chromedp.Text("#notice", &notice, chromedp.ByQuery)))
					assert.Contains(t, notice, "Your answer has been sent")
					replays <- func() int {
						b := newBrowser(t)
						jar := b.Client.Jar
						for _, c := range cookies {
							jar.SetCookies(mustURL(t, link), []*http.Cookie{{Name: c.Name, Value: c.Value, Path: c.Path}})
						}
						status, _ := b.send(link, `name="_csrf" value="`+token+`"`, map[string]string{"user": "Eve", "password": "correct horse battery"}, nil)
						return status
					}
					return &mcp.ElicitResult{Action: "accept"}, nil
				}})
			res, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
				Arguments: map[string]any{"message": "Sign in and attach the signed contract.", "form": secretForm}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			out, _ := res.StructuredContent.(map[string]any)
			require.IsType(t, map[string]any{}, out["data"], "%v", res.Content)
			data := out["data"].(map[string]any)
			assert.Equal(t, "Ada Lovelace", data["user"], "the plain field too, through the page")
			assert.Equal(t, "correct horse battery", data["password"])
			assert.Equal(t, "application/pdf", data["contract"].(map[string]any)["type"])

			var replay func() int
			select {
			case replay = <-replays:
			case <-time.After(failsafe):
				t.Fatal("the person never finished")
			}
			assert.Equal(t, http.StatusNotFound, replay(), "a replay of the browser's submit finds the link gone with its question")
			logs := h.stderr.String()
			for _, typed := range []string{"hunter2", "correct horse", "Ada Lovelace"} {
				assert.NotContains(t, logs, typed, "nothing typed reaches the server's log")
			}
			assert.True(t, strings.Contains(logs, "page refused"), "the refusals are logged, by id")
		})
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
