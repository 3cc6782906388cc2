package validator

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// One check per registry entry: its first and last addresses are judged as the most
// specific entry holding them says (or, for the blocks that carry an IPv4 address, as that
// address: the ends carry 0.0.0.0 and 255.255.255.255, neither public).
func TestEveryRegistryEntryIsApplied(t *testing.T) {
	require.GreaterOrEqual(t, len(specialBlocks), 50)
	carriesIPv4 := map[string]bool{"::ffff:0:0/96": true, "64:ff9b::/96": true, "2002::/16": true}
	for _, e := range specialBlocks {
		t.Run(e.Prefix.String(), func(t *testing.T) {
			for _, a := range []netip.Addr{e.Prefix.Addr(), lastAddr(e.Prefix)} {
				want := false
				if !carriesIPv4[e.Prefix.String()] {
					best := -1
					for _, o := range specialBlocks { // a model: the longest block holding a
						if o.Prefix.Contains(a) && o.Prefix.Bits() > best {
							best, want = o.Prefix.Bits(), o.Reachable
						}
					}
				}
				assert.Equal(t, want, IsPublicAddr(a), "%s (%s)", a, e.Name)
			}
		})
	}
}

func TestRegistryCases(t *testing.T) {
	for addr, public := range map[string]bool{
		"2001:2::1":            false, // benchmarking: was accepted
		"2001:2:0:ffff::1":     false,
		"2001:4860:4860::8888": true,
		"8.8.8.8":              true,
		"192.0.0.9":            true, // PCP anycast, inside the IETF block
		"192.0.0.1":            false,
		"192.31.196.1":         true, // AS112
		"100.64.0.1":           false,
		"198.19.255.255":       false,
		"224.0.0.1":            false, // multicast: not in the special-purpose registry
		"255.255.255.255":      false,
		"::ffff:10.0.0.1":      false,
		"64:ff9b::a00:1":       false, // NAT64 of 10.0.0.1
		"64:ff9b::808:808":     true,  // NAT64 of 8.8.8.8
		"2002:808:808::1":      true,  // 6to4 of 8.8.8.8
		"2002:7f00:1::1":       false, // 6to4 of 127.0.0.1
		"5f00::1":              false,
		"100:0:0:1::1":         false,
		"fec0::1":              false, // outside 2000::/3
		"2001::1":              false, // Teredo
		"2001:db8::1":          false,
		"3fff:fff::1":          false,
	} {
		assert.Equal(t, public, IsPublicAddr(netip.MustParseAddr(addr)), addr)
	}
}

func TestRegistryDataIsChecked(t *testing.T) {
	for name, data := range map[string]string{
		"no header":     "10.0.0.0/8,x,RFC,False\n",
		"not a block":   "block,name,rfc,globally_reachable\n10.0.0.1/8,x,RFC,False\n",
		"bad reachable": "block,name,rfc,globally_reachable\n10.0.0.0/8,x,RFC,Maybe\n",
		"short row":     "block,name,rfc,globally_reachable\n10.0.0.0/8,x\n",
		"not a prefix":  "block,name,rfc,globally_reachable\nten,x,RFC,False\n",
	} {
		_, err := parseSpecialBlocks([]byte(data))
		assert.Error(t, err, name)
	}
}
