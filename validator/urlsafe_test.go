package validator_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

// fakeResolver answers from a table; any other name does not resolve.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

var resolver = fakeResolver{
	"example.com":           {"93.184.215.14"},
	"dual.example.com":      {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"v6.example.com":        {"2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"rebind.example.com":    {"93.184.215.14", "10.0.0.5"}, // one private answer spoils it
	"internal.corp":         {"192.168.1.10"},
	"meta.example.com":      {"169.254.169.254"},
	"ula.example.com":       {"fd12:3456:789a::1"},
	"mapped.example.com":    {"::ffff:127.0.0.1"},
	"nat64.example.com":     {"64:ff9b::a00:1"},
	"nat64ok.example.com":   {"64:ff9b::5db8:d70e"},
	"empty.example.com":     {},
	"xn--bcher-kva.example": {"93.184.215.14"},
}

func TestCheckURL(t *testing.T) {
	ok := ""
	cases := []struct {
		url    string
		reason string // "" when accepted
	}{
		// Accepted.
		{"https://example.com/", ok},
		{"https://example.com:8443/a/b?c=d#e", ok},
		{"HTTPS://EXAMPLE.COM/", ok},
		{"https://dual.example.com/", ok},
		{"https://v6.example.com/", ok},
		{"https://93.184.215.14/", ok},
		{"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", ok},
		{"https://nat64ok.example.com/", ok},
		{"https://[64:ff9b::5db8:d70e]/", ok},
		{"https://[2002:5db8:d70e::1]/", ok}, // 6to4 around a public IPv4
		{"https://8.8.8.8/", ok},
		{"https://xn--bcher-kva.example/", ok},
		{"  https://example.com/  ", ok},
		// Scheme, syntax, user info.
		{"http://example.com/", "scheme"},
		{"ftp://example.com/", "scheme"},
		{"file:///etc/passwd", "scheme"},
		{"javascript:alert(1)", "syntax"},
		{"gopher://example.com/", "scheme"},
		{"//example.com/", "syntax"},
		{"example.com", "syntax"},
		{"", "syntax"},
		{"https://user@example.com/", "userinfo"},
		{"https://user:pass@example.com/", "userinfo"},
		{"https://:@example.com/", "userinfo"},
		{"https:///nohost", "host"},
		// Names that resolve badly.
		{"https://rebind.example.com/", "private_address"},
		{"https://internal.corp/", "private_address"},
		{"https://meta.example.com/latest/meta-data", "private_address"},
		{"https://ula.example.com/", "private_address"},
		{"https://mapped.example.com/", "private_address"},
		{"https://nat64.example.com/", "private_address"},
		{"https://nowhere.example.com/", "resolve"},
		{"https://empty.example.com/", "resolve"},
		// localhost by name.
		{"https://localhost/", "private_address"},
		{"https://LOCALHOST:8080/", "private_address"},
		{"https://foo.localhost/", "private_address"},
		{"https://a.b.localhost/", "private_address"},
		// Literal IPv4 in every private or reserved range.
		{"https://127.0.0.1/", "private_address"},
		{"https://127.255.255.254/", "private_address"},
		{"https://0.0.0.0/", "private_address"},
		{"https://0.1.2.3/", "private_address"},
		{"https://10.1.2.3/", "private_address"},
		{"https://100.64.0.1/", "private_address"},
		{"https://100.127.255.255/", "private_address"},
		{"https://169.254.169.254/", "private_address"},
		{"https://172.16.0.1/", "private_address"},
		{"https://172.31.255.255/", "private_address"},
		{"https://192.0.0.8/", "private_address"},
		{"https://192.0.2.1/", "private_address"},
		{"https://192.168.0.1/", "private_address"},
		{"https://198.18.0.1/", "private_address"},
		{"https://198.19.255.255/", "private_address"},
		{"https://198.51.100.7/", "private_address"},
		{"https://203.0.113.9/", "private_address"},
		{"https://224.0.0.1/", "private_address"},
		{"https://239.255.255.250/", "private_address"},
		{"https://240.0.0.1/", "private_address"},
		{"https://255.255.255.255/", "private_address"},
		// Just outside the ranges: public.
		{"https://172.32.0.1/", ok},
		{"https://100.128.0.1/", ok},
		{"https://11.0.0.1/", ok},
		// Literal IPv6.
		{"https://[::1]/", "private_address"},
		{"https://[::]/", "private_address"},
		{"https://[fc00::1]/", "private_address"},
		{"https://[fdff:ffff::1]/", "private_address"},
		{"https://[fe80::1]/", "private_address"},
		{"https://[ff02::1]/", "private_address"},
		{"https://[2001:db8::1]/", "private_address"},
		{"https://[::ffff:127.0.0.1]/", "private_address"},
		{"https://[::ffff:10.0.0.1]/", "private_address"},
		{"https://[::ffff:7f00:1]/", "private_address"},
		{"https://[64:ff9b::127.0.0.1]/", "private_address"},
		{"https://[64:ff9b::c0a8:101]/", "private_address"},
		{"https://[2002:7f00:1::1]/", "private_address"}, // 6to4 around 127.0.0.1
		{"https://[2001::1]/", "private_address"},        // Teredo
		{"https://[::127.0.0.1]/", "private_address"},    // IPv4-compatible, deprecated
		{"https://[100::1]/", "private_address"},         // discard prefix
		// Literal tricks.
		{"https://2130706433/", "host"},
		{"https://0x7f000001/", "host"},
		{"https://0x7f.0.0.1/", "host"},
		{"https://0177.0.0.1/", "host"},
		{"https://127.1/", "host"},
		{"https://127.0.1/", "host"},
		{"https://017700000001/", "host"},
		{"https://example.com./", "host"},
		{"https://localhost./", "host"},
		{"https://[fe80::1%25eth0]/", "host"},
		{"https://exa_mple..com/", "host"},
		{"https://bücher.example/", "host"},
	}
	require.GreaterOrEqual(t, len(cases), 60)
	policy := v.URLPolicy{Resolver: resolver}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			u, err := v.CheckURL(context.Background(), c.url, policy)
			if c.reason == "" {
				require.NoError(t, err)
				assert.NotNil(t, u)
				return
			}
			require.Error(t, err)
			assert.Nil(t, u)
			assert.ErrorIs(t, err, v.ErrUnsafeURL)
			var ue *v.URLError
			require.True(t, errors.As(err, &ue))
			assert.Equal(t, c.reason, ue.Reason, ue.Message)
		})
	}
}

func TestCheckURLPolicy(t *testing.T) {
	ctx := context.Background()
	u, err := v.CheckURL(ctx, "http://example.com/", v.URLPolicy{Resolver: resolver, Schemes: []string{"HTTP", "https"}})
	require.NoError(t, err)
	assert.Equal(t, "example.com", u.Host)

	private := v.URLPolicy{Resolver: resolver, AllowPrivate: true}
	for _, ok := range []string{"https://127.0.0.1/", "https://localhost/", "https://internal.corp/", "https://[::1]:8080/"} {
		_, err := v.CheckURL(ctx, ok, private)
		assert.NoError(t, err, ok)
	}
	for _, still := range []string{"https://2130706433/", "https://user@localhost/", "http://localhost/"} {
		_, err := v.CheckURL(ctx, still, private)
		assert.Error(t, err, "tricks, user info and schemes are refused even when private hosts are allowed: %s", still)
	}
}

func TestIsPublicAddr(t *testing.T) {
	assert.False(t, v.IsPublicAddr(netip.Addr{}))
	assert.False(t, v.IsPublicAddr(netip.MustParseAddr("fe80::1%eth0")))
	assert.True(t, v.IsPublicAddr(netip.MustParseAddr("1.1.1.1")))
	assert.True(t, v.IsPublicAddr(netip.MustParseAddr("::ffff:1.1.1.1")))
	assert.False(t, v.IsPublicAddr(netip.MustParseAddr("3fff::1")))
}

// The dialer guard refuses at connect time, whatever name led there: a real listener on
// 127.0.0.1 is unreachable through it and reachable without it.
func TestGuardDialerRefusesNonPublicAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hi")) }))
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	plain, err := (&net.Dialer{}).Dial("tcp", addr)
	require.NoError(t, err, "the listener is there")
	require.NoError(t, plain.Close())

	guarded := v.GuardDialer(nil)
	_, err = guarded.Dial("tcp", addr)
	require.Error(t, err)
	assert.ErrorIs(t, err, v.ErrUnsafeURL)
	assert.Contains(t, err.Error(), "non-public address 127.0.0.1")

	// Through an HTTP client, as code that fetches a checked URL would.
	client := &http.Client{Transport: &http.Transport{DialContext: guarded.DialContext}}
	_, err = client.Get(srv.URL)
	require.ErrorIs(t, err, v.ErrUnsafeURL)

	// A Control the dialer already had still runs, first.
	called := false
	base := &net.Dialer{Control: func(string, string, syscall.RawConn) error { called = true; return nil }}
	_, err = v.GuardDialer(base).Dial("tcp", addr)
	require.Error(t, err)
	assert.True(t, called)

	assert.Error(t, v.DialControl("tcp", "not-an-address", nil))
	assert.NoError(t, v.DialControl("tcp", "93.184.215.14:443", nil))
	assert.Error(t, v.DialControl("tcp6", "[::1]:443", nil))
}
