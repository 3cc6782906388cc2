package validator

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it; tests pass a
// fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// URLPolicy says which URLs CheckURL accepts.
type URLPolicy struct {
	Schemes      []string // allowed schemes, any case; none means just "https"
	AllowPrivate bool     // accept loopback, private and other non-public hosts
	Resolver     Resolver // nil means net.DefaultResolver
}

// ErrUnsafeURL is matched (errors.Is) by every *URLError.
var ErrUnsafeURL = errors.New("validator: unsafe URL")

// URLError says why CheckURL or a guarded dialer refused a URL or an address.
type URLError struct {
	Reason  string // syntax, scheme, userinfo, host, private_address, resolve
	Message string // written for a person: "the host resolves to a non-public address"
}

func (e *URLError) Error() string { return "unsafe URL: " + e.Message }

// Is makes errors.Is(err, ErrUnsafeURL) true.
func (e *URLError) Is(target error) bool { return target == ErrUnsafeURL }

func urlErr(reason, format string, args ...any) *URLError {
	return &URLError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// CheckURL parses raw and accepts it only if its scheme is allowed, it has no user info, its
// host is spelt plainly (no numeric IPv4 tricks such as 2130706433, 0x7f.1 or 0177.0.0.1, no
// trailing dot, no zone id), and, unless the policy allows private hosts, the host is not
// localhost and every address it resolves to is public (see IsPublicAddr).
//
// A check before fetching cannot stop DNS rebinding on its own: the name may resolve
// elsewhere when the fetch connects. Code that fetches a URL should also dial through
// GuardDialer.
func CheckURL(ctx context.Context, raw string, p URLPolicy) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return nil, urlErr("syntax", "not an absolute URL such as https://example.com/page")
	}
	schemes := p.Schemes
	if len(schemes) == 0 {
		schemes = []string{"https"}
	}
	if !slices.ContainsFunc(schemes, func(s string) bool { return strings.EqualFold(s, u.Scheme) }) {
		return nil, urlErr("scheme", "the scheme %q is not allowed; use %s", u.Scheme, strings.Join(schemes, " or "))
	}
	if u.User != nil {
		return nil, urlErr("userinfo", "a URL must not carry a user name or password")
	}
	host := strings.ToLower(u.Hostname()) // DNS names are case-insensitive
	if err := checkHostSpelling(host); err != nil {
		var ue *URLError
		if p.AllowPrivate && errors.As(err, &ue) && ue.Reason == "private_address" {
			return u, nil
		}
		return nil, err
	}
	if p.AllowPrivate {
		return u, nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return u, nil // a public literal address: checkHostSpelling has checked it
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, urlErr("resolve", "the host %q could not be resolved", host)
	}
	if len(addrs) == 0 {
		return nil, urlErr("resolve", "the host %q has no addresses", host)
	}
	for _, a := range addrs {
		if !IsPublicAddr(a) {
			return nil, urlErr("private_address", "the host %q resolves to a non-public address", host)
		}
	}
	return u, nil
}

// checkHostSpelling refuses hosts that are malformed or tricky, and hosts that are
// non-public by their spelling alone (localhost, a non-public literal address). Those last
// get reason private_address.
func checkHostSpelling(host string) error {
	switch {
	case host == "":
		return urlErr("host", "the URL has no host")
	case strings.Contains(host, "%"):
		return urlErr("host", "a host must not carry a zone id")
	case strings.HasSuffix(host, "."):
		return urlErr("host", "a host must not end with a dot")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !IsPublicAddr(a) {
			return urlErr("private_address", "the address %s is not public", a)
		}
		return nil
	}
	lower := strings.ToLower(host)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return urlErr("private_address", "localhost is not a public host")
	}
	if len(host) > 253 {
		return urlErr("host", "the host name is too long")
	}
	labels := strings.Split(lower, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return urlErr("host", "the host name has an empty or over-long part")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return urlErr("host", "the host name may use only letters, digits and hyphens (write international names in punycode)")
			}
		}
	}
	// A last label that is a number makes the whole host an IPv4 address to a browser
	// (2130706433, 0x7f.1, 127.1, 0177.0.0.1): refuse such spellings outright.
	if last := labels[len(labels)-1]; isNumericLabel(last) {
		return urlErr("host", "write an IP address in plain dotted form, or use a host name")
	}
	return nil
}

func isNumericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		return strings.Trim(l, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}

// specialPurpose is the IANA special-purpose registries, as data (special-purpose.csv).
//
//go:embed special-purpose.csv
var specialPurposeCSV []byte

// specialBlock is one entry of the registries.
type specialBlock struct {
	Prefix    netip.Prefix
	Name      string
	Reachable bool // "Globally Reachable" is True (False and N/A are not)
}

// specialBlocks holds the registries' entries, most specific first.
var specialBlocks = mustSpecialBlocks(specialPurposeCSV)

func mustSpecialBlocks(data []byte) []specialBlock {
	blocks, err := parseSpecialBlocks(data)
	if err != nil {
		panic("validator: special-purpose.csv: " + err.Error()) // embedded data: caught by any test
	}
	return blocks
}

func parseSpecialBlocks(data []byte) ([]specialBlock, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != "block,name,rfc,globally_reachable" {
		return nil, errors.New("the header must be block,name,rfc,globally_reachable")
	}
	var out []specialBlock
	for _, row := range rows[1:] {
		p, err := netip.ParsePrefix(row[0])
		if err != nil || p != p.Masked() {
			return nil, fmt.Errorf("%q is not a block", row[0])
		}
		switch row[3] {
		case "True", "False", "N/A":
		default:
			return nil, fmt.Errorf("%s: globally_reachable must be True, False or N/A, got %q", row[0], row[3])
		}
		out = append(out, specialBlock{Prefix: p, Name: row[1], Reachable: row[3] == "True"})
	}
	slices.SortStableFunc(out, func(a, b specialBlock) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	return out, nil
}

// special returns the most specific registry entry holding a, if any.
func special(a netip.Addr) (specialBlock, bool) {
	for _, b := range specialBlocks {
		if b.Prefix.Contains(a) {
			return b, true
		}
	}
	return specialBlock{}, false
}

var (
	multicast4 = netip.MustParsePrefix("224.0.0.0/4") // the multicast registry, not the special-purpose one
	global6    = netip.MustParsePrefix("2000::/3")    // the only IPv6 range allocated for global unicast
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4     = netip.MustParsePrefix("2002::/16")
	mapped4    = netip.MustParsePrefix("::ffff:0:0/96")
)

// IsPublicAddr reports whether a is a public unicast address: every block of the IANA IPv4
// and IPv6 special-purpose registries whose addresses are not globally reachable is refused
// (loopback, private, link-local, shared, benchmarking, documentation, reserved, discard,
// ULA, ...), judged by the most specific block holding a; so are multicast, an address with
// a zone, and IPv6 outside 2000::/3. IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 addresses
// are judged by the IPv4 address inside them.
func IsPublicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if mapped4.Contains(a) {
		a = a.Unmap()
	}
	if a.Is4() {
		if multicast4.Contains(a) {
			return false
		}
	} else {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return IsPublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(a):
			return IsPublicAddr(netip.AddrFrom4([4]byte(b[2:6])))
		case !global6.Contains(a):
			return false
		}
	}
	if blk, ok := special(a); ok {
		return blk.Reachable
	}
	return true
}

// DialControl is a net.Dialer Control function that refuses a connection to a non-public
// address, at connect time: after every DNS answer, so a name that rebinds to a private
// address between check and fetch is still refused.
func DialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return urlErr("private_address", "refusing to connect to %q: not an IP address and port", address)
	}
	if !IsPublicAddr(ap.Addr()) {
		return urlErr("private_address", "refusing to connect to the non-public address %s", ap.Addr())
	}
	return nil
}

// GuardDialer returns a copy of d (a zero Dialer when d is nil) that refuses non-public
// addresses through DialControl, after any Control or ControlContext function d already had.
func GuardDialer(d *net.Dialer) *net.Dialer {
	var g net.Dialer
	if d != nil {
		g = *d
	}
	prevCtx, prev := g.ControlContext, g.Control
	g.Control = nil
	g.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		var err error
		switch {
		case prevCtx != nil:
			err = prevCtx(ctx, network, address, c)
		case prev != nil:
			err = prev(network, address, c)
		}
		if err != nil {
			return err
		}
		return DialControl(network, address, c)
	}
	return &g
}
