package ups_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/tools/ups"
	"github.com/elicitd/elicitd/validator"
)

// tally is a TCP listener that counts the connections made to it.
type tally struct {
	l        net.Listener
	accepted chan net.Conn
	done     chan struct{}
}

// listenTally listens on addr; nil if addr cannot be bound on this machine.
func listenTally(t *testing.T, addr string) *tally {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Logf("cannot listen on %s (%v): that target's connections are not counted", addr, err)
		return nil
	}
	tl := &tally{l: l, accepted: make(chan net.Conn, 1024), done: make(chan struct{})}
	go func() {
		defer close(tl.done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tl.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-tl.done
		close(tl.accepted)
		for c := range tl.accepted {
			_ = c.Close()
		}
	})
	return tl
}

func (tl *tally) port() string { return fmt.Sprint(tl.l.Addr().(*net.TCPAddr).Port) }

// count returns how many connections were made so far. It connects once itself and counts
// what was accepted before its own connection: the backlog is accepted in order, so every
// earlier connection has been seen by then, with no waiting on time.
func (tl *tally) count(t *testing.T) int {
	t.Helper()
	probe, err := net.Dial("tcp", tl.l.Addr().String())
	require.NoError(t, err)
	defer probe.Close()
	n := 0
	for c := range tl.accepted {
		own := c.RemoteAddr().String() == probe.LocalAddr().String()
		_ = c.Close()
		if own {
			return n
		}
		n++
	}
	t.Fatal("the listener closed before the probe was accepted")
	return n
}

// A UPS (or something posing as one) that answers a token or API request with a redirect to
// a non-public address is not followed there, whatever the status, scheme or spelling of the
// address (IPv4-mapped IPv6 included): the call fails with a *validator.URLError naming the
// address, and the address is never connected to. The fake UPS itself is on 127.0.0.1,
// allowed as the configured base (AllowLocal), which covers that host and port only.
func TestRedirectsToNonPublicAddressesAreRefusedAndNeverContacted(t *testing.T) {
	targets := []struct {
		addr   string // as written in the URL's host, without brackets
		listen string // where to count connections to it; "" when it cannot be bound here
		path   string
	}{
		{"127.0.0.2", "127.0.0.2:0", "/"},
		{"::1", "[::1]:0", "/"},
		{"169.254.169.254", "", "/latest/meta-data/"},
		{"::ffff:127.0.0.1", "127.0.0.1:0", "/"}, // a connection to it reaches 127.0.0.1
		{"::ffff:169.254.169.254", "", "/latest/meta-data/"},
	}
	for _, tg := range targets {
		host := tg.addr
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		var tl *tally
		if tg.listen != "" {
			tl = listenTally(t, tg.listen)
		}
		urls := []string{"http://" + host + tg.path, "https://" + host + tg.path}
		if tl != nil {
			urls = append(urls, "http://"+host+":"+tl.port()+tg.path, "https://"+host+":"+tl.port()+tg.path)
		}
		for _, target := range urls {
			for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
				for _, stage := range []string{"token", "api"} {
					t.Run(fmt.Sprintf("%s/%d/%s", target, status, stage), func(t *testing.T) {
						redirect := func(w http.ResponseWriter, r *http.Request) {
							http.Redirect(w, r, target, status)
						}
						var c *ups.Client
						var f *fakeUPS
						if stage == "token" { // the token request is redirected
							srv := httptest.NewServer(http.HandlerFunc(redirect))
							t.Cleanup(srv.Close)
							c = ups.New(ups.Config{ClientID: "id", ClientSecret: "secret", BaseURL: srv.URL, AllowLocal: true})
						} else { // a token is issued; the API call is redirected
							f = newFake(t)
							f.api = func(w http.ResponseWriter, r *http.Request, _ string) { redirect(w, r) }
							c = f.client(nil)
						}
						_, err := c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
						require.Error(t, err)
						var ue *validator.URLError
						require.True(t, errors.As(err, &ue), "a *validator.URLError, got %T: %v", err, err)
						assert.ErrorIs(t, err, validator.ErrUnsafeURL)
						assert.Equal(t, "private_address", ue.Reason, "%v", err)
						assert.Contains(t, ue.Message, tg.addr, "the error names the address it refused")
						var apiErr *ups.APIError
						assert.False(t, errors.As(err, &apiErr), "a refused redirect is not a UPS answer")
						if f != nil {
							assert.EqualValues(t, 1, f.calls.Load(), "the API was called once, not retried elsewhere")
						}
					})
				}
			}
		}
		if tl != nil {
			assert.Zero(t, tl.count(t), "nothing connected to %s", tg.addr)
		}
	}
}

// A redirect to a public host over plain http is refused too, with a typed error naming the
// host and saying why.
func TestPlainHTTPRedirectIsRefusedNamingTheHost(t *testing.T) {
	f := newFake(t)
	f.api = func(w http.ResponseWriter, r *http.Request, _ string) {
		http.Redirect(w, r, "http://ups.example.com/api/x", http.StatusTemporaryRedirect)
	}
	_, err := f.client(nil).Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	var ue *validator.URLError
	require.True(t, errors.As(err, &ue), "a *validator.URLError, got %T: %v", err, err)
	assert.Equal(t, "scheme", ue.Reason)
	assert.Contains(t, ue.Message, "ups.example.com")
	assert.Contains(t, ue.Message, "only https is followed")
}
