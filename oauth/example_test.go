package oauth_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/oauth/oauthtest"
)

// The challenge of a 401 for a token that was refused, pointing at the resource's metadata.
func ExampleChallenge() {
	resource := "https://elicitd.example.com/mcp"
	fmt.Println(oauth.MetadataPath(resource))
	fmt.Println(oauth.Challenge{
		ResourceMetadata: oauth.MetadataURL(resource),
		Error:            oauth.ErrorInvalidToken,
		Description:      "expired",
		Scope:            "elicitd",
	})
	// Output:
	// /.well-known/oauth-protected-resource/mcp
	// Bearer resource_metadata="https://elicitd.example.com/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="expired", scope="elicitd"
}

// A verifier for one resource, trusting one issuer: it accepts the issuer's token for the
// resource, and refuses one for another resource.
func ExampleVerifier_Verify() {
	p, err := oauthtest.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()
	v, err := oauth.New(oauth.Config{Resource: "https://elicitd.example.com/mcp", Issuers: []string{p.Issuer}})
	if err != nil {
		panic(err)
	}
	ok := p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{"https://elicitd.example.com/mcp"}, Scope: "elicitd"})
	c, err := v.Verify(context.Background(), ok)
	fmt.Println(c.Subject, c.Scopes, err)
	elsewhere := p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{"https://other.example.com/mcp"}})
	_, err = v.Verify(context.Background(), elsewhere)
	fmt.Println(errors.Is(err, oauth.ErrInvalidToken))
	// Output:
	// alice [elicitd] <nil>
	// true
}
