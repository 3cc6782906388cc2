// Package pagetest is a scripted browser for tests of questions asked on elicitd's page
// (package page): it keeps its own cookies, as a person's browser does, opens a link, and
// sends the page's form.
package pagetest

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"regexp"

	"github.com/elicitd/elicitd/page"
)

// Browser is one person's browser.
type Browser struct {
	Client *http.Client // with the browser's own cookie jar
}

// New returns a browser with no cookies.
func New() *Browser {
	jar, _ := cookiejar.New(nil) // nil options: cannot fail
	return &Browser{Client: &http.Client{Jar: jar}}
}

// Open opens link and returns the status and the page.
func (b *Browser) Open(link string) (int, string, error) {
	res, err := b.Client.Get(link)
	if err != nil {
		return 0, "", err
	}
	return read(res)
}

var csrfInput = regexp.MustCompile(`name="` + page.CSRFField + `" value="([^"]+)"`)

// CSRF returns the CSRF token a page's form carries, "" when it has none.
func CSRF(pageHTML string) string {
	if m := csrfInput.FindStringSubmatch(pageHTML); m != nil {
		return m[1]
	}
	return ""
}

// Send fills in the form of pageHTML, as last shown, with fields and files (by field name;
// a file is sent as name.bin) and sends it to link with the page's CSRF token. It returns
// the status and the page that came back.
func (b *Browser) Send(link, pageHTML string, fields map[string]string, files map[string][]byte) (int, string, error) {
	form := map[string]string{}
	if token := CSRF(pageHTML); token != "" {
		form[page.CSRFField] = token
	}
	for k, v := range fields {
		form[page.FieldName(k)] = v
	}
	named := map[string][]byte{}
	for k, v := range files {
		named[page.FieldName(k)] = v
	}
	return b.Post(link, form, named)
}

// Post posts a multipart form with these inputs and files, named as given: for tests of what
// the page refuses (no CSRF token, a wrong one).
func (b *Browser) Post(link string, inputs map[string]string, files map[string][]byte) (int, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range inputs {
		_ = mw.WriteField(k, v) // into a bytes.Buffer: cannot fail
	}
	for k, data := range files {
		fw, _ := mw.CreateFormFile(k, k+".bin")
		_, _ = fw.Write(data)
	}
	_ = mw.Close()
	res, err := b.Client.Post(link, mw.FormDataContentType(), &body)
	if err != nil {
		return 0, "", err
	}
	return read(res)
}

func read(res *http.Response) (int, string, error) {
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}
