package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/elicitd/elicitd/validator"
)

// ErrInvalidURL is matched (errors.Is) by every *URLError.
var ErrInvalidURL = errors.New("webhook: invalid URL")

// URLError says why ParseURL refused a webhook URL.
type URLError struct {
	Value   string // the URL as given
	Problem string // what is wrong with it, for a person
	Want    string // what would be accepted
}

func (e *URLError) Error() string {
	return fmt.Sprintf("webhook URL %q: %s; want %s", e.Value, e.Problem, e.Want)
}

// Is makes errors.Is(err, ErrInvalidURL) true.
func (e *URLError) Is(target error) bool { return target == ErrInvalidURL }

// ParseURL checks a webhook URL: absolute, https (plain http only with allowPrivate, for a
// receiver on this machine or a private network), a host and no user name, password or
// #fragment. Without allowPrivate, a host that is a non-public address by its spelling
// (localhost, 127.0.0.1, 10.0.0.5, [::1]...) is refused too. A host name is not resolved
// here: the deliverer's client (Client) checks every address it connects to.
func ParseURL(raw string, allowPrivate bool) (*url.URL, error) {
	want := "an https:// URL of a public host, such as https://hooks.example.com/elicitd"
	if allowPrivate {
		want = "an https:// or http:// URL, such as https://hooks.example.com/elicitd"
	}
	bad := func(format string, args ...any) error {
		return &URLError{Value: raw, Problem: fmt.Sprintf(format, args...), Want: want}
	}
	// validator.CheckURL with private hosts allowed checks the syntax and the spelling of
	// the host (no numeric IPv4 tricks, zones or trailing dots) and resolves nothing.
	u, err := validator.CheckURL(context.Background(), raw, validator.URLPolicy{Schemes: []string{"https", "http"}, AllowPrivate: true})
	if err != nil {
		var ue *validator.URLError
		if errors.As(err, &ue) {
			return nil, bad("%s", ue.Message)
		}
		return nil, bad("%v", err)
	}
	switch {
	case u.Scheme == "http" && !allowPrivate:
		return nil, bad("plain http is allowed only for private receivers (elicitd: --webhook-allow-private)")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, bad("a webhook URL has no #fragment")
	}
	if allowPrivate {
		return u, nil
	}
	host := strings.ToLower(u.Hostname())
	if a, err := netip.ParseAddr(host); err == nil && !validator.IsPublicAddr(a) {
		return nil, bad("%s is not a public address (allowed only with allowPrivate)", a)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil, bad("localhost is not a public host (allowed only with elicitd's --webhook-allow-private)")
	}
	return u, nil
}
