package pagetest_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/page/pagetest"
	"github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A person opens a question's link, sends a PIN that is too short, then a good one.
func Example() {
	form, _ := validator.Compile(validator.Form{Fields: []validator.Field{
		{Name: "pin", Type: validator.Text, Label: "PIN", Sensitive: true, Required: true, MinLength: validator.Ptr(6)}}})
	var base string
	pages := page.New(page.Options{Base: func() (string, error) { return base, nil }})
	srv := httptest.NewServer(pages)
	defer srv.Close()
	base = srv.URL
	link, _ := pages.Open(page.Question{Message: "Your PIN, please.", Form: form, Submit: func(_ *page.Link, content map[string]any) error {
		fmt.Println("the question got", len(content), "answer")
		return nil
	}})
	defer link.Close()

	b := pagetest.New()
	status, html, _ := b.Open(link.URL)
	fmt.Println(status)
	status, html, _ = b.Send(link.URL, html, map[string]string{"pin": "123"}, nil)
	fmt.Println(status, pagetest.CSRF(html) != "")
	status, _, _ = b.Send(link.URL, html, map[string]string{"pin": "123456"}, nil)
	fmt.Println(status)
	// Output:
	// 200
	// 422 true
	// the question got 1 answer
	// 200
}
