package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/elicitd/elicitd/validator"
)

// ErrRedirect is matched (errors.Is) by the error of a POST its receiver answered with a
// redirect: webhooks do not follow redirects.
var ErrRedirect = errors.New("webhook: redirect not followed")

// Client returns the HTTP client webhooks are sent with, unless Options.HTTPClient gives
// another. It connects only to public addresses (validator.GuardDialer: every address is
// checked when it is connected to, after DNS, so a name that resolves to 127.0.0.1 or
// 169.254.169.254 is refused), unless allowPrivate; it uses no proxy (a proxy would
// connect past the guard); and it follows no redirect at all, to a private address or any
// other: a receiver that answers 3xx has failed the attempt (ErrRedirect, naming where it
// pointed), and the event is retried as after any failure.
func Client(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d = validator.GuardDialer(d)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = d.DialContext
	tr.MaxIdleConnsPerHost = 8
	return &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
}

// refuseRedirect refuses every redirect before anything is sent to its target.
func refuseRedirect(req *http.Request, via []*http.Request) error {
	from := "the receiver"
	if len(via) > 0 {
		from = via[len(via)-1].URL.Host
	}
	return fmt.Errorf("%w: %s redirected to %s://%s", ErrRedirect, from, req.URL.Scheme, req.URL.Host)
}
