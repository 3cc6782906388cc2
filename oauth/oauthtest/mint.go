package oauthtest

import (
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Claims are an access token's claims, for tokens a test signs itself. Zero fields take
// the defaults of an honest token: Issuer the provider's, IssuedAt and NotBefore now,
// Expiry now plus AccessTokenLifetime.
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	Scope     string // space-separated
	IssuedAt  time.Time
	NotBefore time.Time
	Expiry    time.Time
}

func (p *Provider) payload(c Claims) map[string]any {
	now := time.Now()
	if c.Issuer == "" {
		c.Issuer = p.Issuer
	}
	if c.IssuedAt.IsZero() {
		c.IssuedAt = now
	}
	if c.NotBefore.IsZero() {
		c.NotBefore = now
	}
	if c.Expiry.IsZero() {
		c.Expiry = now.Add(AccessTokenLifetime)
	}
	m := map[string]any{
		"iss": c.Issuer, "sub": c.Subject, "iat": c.IssuedAt.Unix(),
		"nbf": c.NotBefore.Unix(), "exp": c.Expiry.Unix(), "jti": newID(), "client_id": "oauthtest",
	}
	if c.Scope != "" {
		m["scope"] = c.Scope
	}
	if len(c.Audience) > 0 {
		m["aud"] = c.Audience
	}
	return m
}

// Token signs c with the provider's current key (RS256, its kid in the header), as the
// provider signs the tokens it issues.
func (p *Provider) Token(c Claims) string {
	k := p.store.current()
	return sign(k.key, k.id, p.payload(c))
}

// TokenForeignKey signs c with a key the provider never published, under the kid of the
// provider's current key: a valid signature from the wrong key.
func (p *Provider) TokenForeignKey(c Claims) string {
	return sign(p.stranger(), p.store.current().id, p.payload(c))
}

// TokenUnknownKID signs c with a key that is in no JWKS, under a kid the provider never
// used: a verifier asks the JWKS again, and still finds none.
func (p *Provider) TokenUnknownKID(c Claims) string {
	return sign(p.stranger(), "unknown-"+newID()[:8], p.payload(c))
}

// TokenAlgNone is c unsigned: header alg "none", an empty signature.
func (p *Provider) TokenAlgNone(c Claims) string {
	return compact(map[string]any{"alg": "none", "typ": "at+jwt"}, p.payload(c), func([]byte) []byte { return nil })
}

// TokenHS256WithPublicKey is c signed with HMAC-SHA256 whose secret is the provider's
// public key (PEM, as a verifier that takes "the key" for any algorithm would read it),
// under the provider's kid: the algorithm-confusion attack.
func (p *Provider) TokenHS256WithPublicKey(c Claims) string {
	k := p.store.current()
	der, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	if err != nil {
		panic(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return compact(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": k.id}, p.payload(c), func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	})
}

// stranger is a key the provider never publishes, made once (RSA keys are slow to make).
func (p *Provider) stranger() *rsa.PrivateKey {
	p.strangerOnce.Do(func() {
		k, err := newKey()
		if err != nil {
			panic(err)
		}
		p.strangerKey = k.key
	})
	return p.strangerKey
}

// sign is a JWS compact serialization of payload, RS256 with key under kid.
func sign(key *rsa.PrivateKey, kid string, payload map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		panic(err)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	jws, err := signer.Sign(body)
	if err != nil {
		panic(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return out
}

// compact builds a JWS by hand, for the algorithms a signing library rightly refuses.
func compact(header, payload map[string]any, mac func([]byte) []byte) string {
	enc := base64.RawURLEncoding
	h, err := json.Marshal(header)
	if err != nil {
		panic(fmt.Sprint("oauthtest: ", err))
	}
	b, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprint("oauthtest: ", err))
	}
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(b)
	return in + "." + enc.EncodeToString(mac([]byte(in)))
}
