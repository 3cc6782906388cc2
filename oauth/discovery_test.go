package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/oauth"
)

// issuerWith serves, for an issuer with path /realms/mcp (Keycloak's shape), a metadata
// document at the paths given only, each saying issuer (the server's own when ""); asked
// returns the paths requested.
func issuerWith(t *testing.T, paths []string, issuer string) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		for _, p := range paths {
			if r.URL.Path == p {
				iss := issuer
				if iss == "" {
					iss = srv.URL + "/realms/mcp"
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": srv.URL + "/realms/mcp/certs"})
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/realms/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

func TestDiscoverTriesRFC8414ThenOpenIDConnect(t *testing.T) {
	for _, c := range []struct {
		name, at string
		tried    int
	}{
		{"RFC 8414, path inserted", "/.well-known/oauth-authorization-server/realms/mcp", 1},
		{"OpenID Connect, path inserted", "/.well-known/openid-configuration/realms/mcp", 2},
		{"OpenID Connect, path appended (Keycloak)", "/realms/mcp/.well-known/openid-configuration", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			issuer, asked := issuerWith(t, []string{c.at}, "")
			md, err := oauth.Discover(context.Background(), http.DefaultClient, issuer)
			require.NoError(t, err)
			assert.Equal(t, issuer, md.Issuer)
			assert.Equal(t, issuer+"/certs", md.JWKSURI)
			assert.Len(t, asked(), c.tried, "%v", asked())
		})
	}
	t.Run("none", func(t *testing.T) {
		issuer, asked := issuerWith(t, nil, "")
		_, err := oauth.Discover(context.Background(), http.DefaultClient, issuer)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no metadata")
		assert.Len(t, asked(), 3)
	})
	t.Run("a document for another issuer", func(t *testing.T) {
		issuer, _ := issuerWith(t, []string{"/.well-known/oauth-authorization-server/realms/mcp"}, "https://evil.example.com")
		_, err := oauth.Discover(context.Background(), http.DefaultClient, issuer)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `is for issuer "https://evil.example.com"`)
	})
}
