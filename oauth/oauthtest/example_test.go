package oauthtest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/elicitd/elicitd/oauth/oauthtest"
)

// A provider in process, and a token issued by it for a resource: signed in as alice through
// the code flow with PKCE, for the MCP endpoint, with the scope elicitd.
func Example() {
	p, err := oauthtest.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()
	tok, err := p.SignIn(context.Background(), oauthtest.ClientOptions{}, "alice", "https://elicitd.example.com/mcp", "openid", "elicitd")
	if err != nil {
		panic(err)
	}
	parsed, err := jwt.ParseSigned(tok.AccessToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		panic(err)
	}
	var claims struct {
		jwt.Claims
		Scope string `json:"scope"`
	}
	_ = parsed.UnsafeClaimsWithoutVerification(&claims) // a test verifies against p's JWKS
	fmt.Println(claims.Subject, claims.Audience.Contains("https://elicitd.example.com/mcp"), claims.Scope)
	fmt.Println(strings.HasPrefix(claims.Issuer, "http://127.0.0.1:"), tok.RefreshToken == "")
	// Output:
	// alice true openid elicitd
	// true true
}
