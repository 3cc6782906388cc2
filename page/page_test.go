package page_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/page/pagetest"
	"github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var pdf = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")

// fixture is a page Server behind httptest, and one open link whose answers are recorded.
type fixture struct {
	srv  *httptest.Server
	ps   *page.Server
	link *page.Link
	logs *bytes.Buffer

	read atomic.Int64 // bytes the server read from its connections

	mu     sync.Mutex
	got    []map[string]any
	refuse error // what Submit returns
}

func newFixture(t *testing.T, fields ...validator.Field) *fixture {
	t.Helper()
	return newFixtureWith(t, page.Options{}, fields...)
}

// newFixtureWith is newFixture with the Server's options o (its Base and Logger are the
// fixture's).
func newFixtureWith(t *testing.T, o page.Options, fields ...validator.Field) *fixture {
	t.Helper()
	if fields == nil {
		fields = []validator.Field{
			{Name: "user", Type: validator.Text, Label: "User name", Required: true},
			{Name: "password", Type: validator.Text, Label: "Password", Sensitive: true, Required: true, MinLength: validator.Ptr(8)},
			{Name: "contract", Type: validator.File, Label: "Contract", Accept: []string{"application/pdf"}},
		}
	}
	form, err := validator.Compile(validator.Form{Title: "Sign in", Fields: fields})
	require.NoError(t, err)
	f := &fixture{logs: &bytes.Buffer{}}
	var base string
	o.Base = func() (string, error) { return base, nil }
	o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&f.mu, f.logs}, nil))
	f.ps = page.New(o)
	f.srv = httptest.NewUnstartedServer(f.ps)
	f.srv.Listener = countingListener{f.srv.Listener, &f.read}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	base = f.srv.URL
	f.link, err = f.ps.Open(page.Question{Message: "To reach your account.", Form: form, Submit: func(_ *page.Link, c map[string]any) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.refuse != nil {
			return f.refuse
		}
		f.got = append(f.got, c)
		return nil
	}})
	require.NoError(t, err)
	t.Cleanup(f.link.Close)
	return f
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// browser is a person's browser: its own cookies.
func browser(t *testing.T) *pagetest.Browser { return pagetest.New() }

func get(t *testing.T, b *pagetest.Browser, u string) (int, string) {
	t.Helper()
	status, body, err := b.Open(u)
	require.NoError(t, err)
	return status, body
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	token := pagetest.CSRF(body)
	require.NotEmpty(t, token, "the page has a CSRF token")
	return token
}

// post submits inputs as named, and files by field name, as the page's form does.
func post(t *testing.T, b *pagetest.Browser, u string, inputs map[string]string, files map[string][]byte) (int, string) {
	t.Helper()
	named := map[string][]byte{}
	for k, v := range files {
		named[page.FieldName(k)] = v
	}
	status, body, err := b.Post(u, inputs, named)
	require.NoError(t, err)
	return status, body
}

func (f *fixture) answers() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got
}

func TestTheFirstBrowserIsBound(t *testing.T) {
	f := newFixture(t)
	a, b := browser(t), browser(t)
	status, body := get(t, a, f.link.URL)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `<label for="f-user">User name (required)</label>`)
	assert.Contains(t, body, `<input type="password" id="f-password"`)
	assert.Contains(t, body, `accept="application/pdf"`)
	assert.Contains(t, body, "To reach your account.")
	u, _ := url.Parse(f.link.URL)
	cookies := a.Client.Jar.Cookies(u)
	require.Len(t, cookies, 1)

	status, body = get(t, b, f.link.URL)
	assert.Equal(t, http.StatusForbidden, status, "a second browser is refused")
	assert.Contains(t, body, "opened in another browser first")
	assert.NotContains(t, body, "_csrf")

	status, _ = get(t, a, f.link.URL)
	assert.Equal(t, http.StatusOK, status, "the first browser may reload")
	status, _ = post(t, b, f.link.URL, map[string]string{"_csrf": "x", "f.user": "mallory"}, nil)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Empty(t, f.answers())
}

func TestTheCookieIsHttpOnlyLaxAndScopedToTheLink(t *testing.T) {
	f := newFixture(t)
	res, err := http.Get(f.link.URL)
	require.NoError(t, err)
	res.Body.Close()
	set := res.Header.Get("Set-Cookie")
	assert.Contains(t, set, "HttpOnly")
	assert.Contains(t, set, "SameSite=Lax")
	u, _ := url.Parse(f.link.URL)
	assert.Contains(t, set, "Path="+u.Path)
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/elicit/[A-Z2-7]{52}$`, f.link.URL, "the URL is a random token and nothing else: no personal data")
}

func TestASubmitNeedsItsCSRFToken(t *testing.T) {
	f := newFixture(t)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	token := csrfOf(t, body)
	good := map[string]string{"f.user": "ada", "f.password": "correct horse"}
	status, body := post(t, a, f.link.URL, good, nil)
	assert.Equal(t, http.StatusForbidden, status, "no token")
	assert.Contains(t, body, "not sent from this page")
	good["_csrf"] = token + "x"
	status, _ = post(t, a, f.link.URL, good, nil)
	assert.Equal(t, http.StatusForbidden, status, "a wrong token")

	req, _ := http.NewRequest(http.MethodPost, f.link.URL, strings.NewReader("_csrf="+token))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := a.Client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode, "a cross-site post")
	assert.Empty(t, f.answers())
}

func TestProblemsShowNextToTheirFieldsAndSecretsAreNeverEchoed(t *testing.T) {
	f := newFixture(t)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	token := csrfOf(t, body)

	status, body := post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.user": "ada lovelace", "f.password": "hunter2"},
		map[string][]byte{"contract": []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, `<p class="error" id="f-password-error">Password: must be at least 8 characters</p>`)
	assert.Contains(t, body, `<p class="error" id="f-contract-error">Contract: is a file of type image/png; expected application/pdf</p>`)
	assert.Contains(t, body, `value="ada lovelace"`, "a valid value is kept")
	assert.NotContains(t, body, "hunter2", "a secret is never echoed")
	assert.Contains(t, body, `aria-invalid="true"`)
	assert.Empty(t, f.answers())

	// Fixed: the password is right now, the file too; the name was kept by the page.
	status, body = post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.user": "ada lovelace", "f.password": "correct horse"},
		map[string][]byte{"contract": pdf})
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "Your answer has been sent")
	select {
	case <-f.link.Submitted():
	default:
		t.Fatal("Submitted is not closed")
	}
	got := f.answers()
	require.Len(t, got, 1)
	assert.Equal(t, "ada lovelace", got[0]["user"])
	assert.Equal(t, "correct horse", got[0]["password"])
	assert.Equal(t, pdf, got[0]["contract"].(*validator.Upload).Bytes)

	status, _ = post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.user": "eve", "f.password": "correct horse"}, nil)
	assert.Equal(t, http.StatusGone, status, "a replayed submit is refused")
	assert.Len(t, f.answers(), 1)

	logs := f.logs.String()
	for _, typed := range []string{"hunter2", "correct horse", "ada lovelace"} {
		assert.NotContains(t, logs, typed)
	}
	assert.Contains(t, logs, "page submitted")
}

func TestAValidSecretIsKeptWithoutBeingShown(t *testing.T) {
	f := newFixture(t)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	token := csrfOf(t, body)
	status, body := post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.password": "correct horse"}, map[string][]byte{"contract": pdf})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, "User name: is required")
	assert.Contains(t, body, `id="f-password-kept"`)
	assert.Contains(t, body, `id="f-contract-kept"`)
	assert.NotContains(t, body, "correct horse")

	status, _ = post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.user": "ada"}, nil)
	require.Equal(t, http.StatusOK, status)
	got := f.answers()
	require.Len(t, got, 1)
	assert.Equal(t, "correct horse", got[0]["password"])
	assert.Equal(t, pdf, got[0]["contract"].(*validator.Upload).Bytes)
}

func TestAFileOverTheLimitIsRefusedBeforeItIsRead(t *testing.T) {
	f := newFixture(t, validator.Field{Name: "doc", Type: validator.File, Label: "Document", MaxBytes: 1024})
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	status, body := post(t, a, f.link.URL, map[string]string{"_csrf": csrfOf(t, body)}, map[string][]byte{"doc": make([]byte, 2<<20)})
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, body, "over the limit")
	status, body = post(t, a, f.link.URL, map[string]string{"_csrf": csrfOf(t, body)}, map[string][]byte{"doc": make([]byte, 2000)})
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, "Document: is 2000 bytes; the limit is 1024")
	assert.Empty(t, f.answers())
}

func TestALinkEndsWithItsQuestion(t *testing.T) {
	f := newFixture(t)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	token := csrfOf(t, body)

	f.mu.Lock()
	f.refuse = errors.New("ended")
	f.mu.Unlock()
	status, body := post(t, a, f.link.URL, map[string]string{"_csrf": token, "f.user": "ada", "f.password": "correct horse"}, nil)
	assert.Equal(t, http.StatusGone, status)
	assert.Contains(t, body, "ended before your answer arrived")

	f.link.Close()
	assert.Equal(t, 0, f.ps.Live())
	status, body = get(t, a, f.link.URL)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "not valid, or its question has ended")
}

func TestAnotherHostIsRefused(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest(http.MethodGet, f.link.URL, nil)
	req.Host = "attacker.example:80"
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.NotContains(t, res.Header.Get("Set-Cookie"), "elicitd_bind", "nothing bound")
}

// With Route, a link's token names its node, and a token of another node is served by the
// handler elsewhere gives for that node (none: the link is unknown here).
func TestRouteServesOtherNodesLinksElsewhere(t *testing.T) {
	var asked []string
	var base string
	ps := page.New(page.Options{Base: func() (string, error) { return base, nil }})
	ps.Route("NODEA", func(node string) http.Handler {
		asked = append(asked, node)
		if node != "NODEB" {
			return nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	})
	srv := httptest.NewServer(ps)
	t.Cleanup(srv.Close)
	base = srv.URL
	ps2 := page.New(page.Options{Base: func() (string, error) { return base, nil }})
	ps2.Route("NODEA", nil)
	form, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "pin", Type: validator.Text, Sensitive: true}}})
	require.NoError(t, err)
	l, err := ps2.Open(page.Question{Form: form, Submit: func(*page.Link, map[string]any) error { return nil }})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	assert.Contains(t, l.URL, page.Path+"NODEA-", "the token names the node")

	b := browser(t)
	status, _ := get(t, b, srv.URL+page.Path+"NODEB-SOMETOKEN")
	assert.Equal(t, http.StatusTeapot, status, "another node's link, served elsewhere")
	status, _ = get(t, b, srv.URL+page.Path+"NODEC-SOMETOKEN")
	assert.Equal(t, http.StatusNotFound, status, "a node elsewhere does not serve")
	status, _ = get(t, b, srv.URL+page.Path+"NODEA-SOMETOKEN")
	assert.Equal(t, http.StatusNotFound, status, "this node's own unknown link is never sent elsewhere")
	assert.Equal(t, []string{"NODEB", "NODEC"}, asked)
}
