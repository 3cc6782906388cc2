package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspection is the part of an RFC 7662 answer the verifier reads.
type introspection struct {
	Active bool            `json:"active"`
	Scope  string          `json:"scope"`
	Sub    string          `json:"sub"`
	Iss    string          `json:"iss"`
	Aud    json.RawMessage `json:"aud"` // a string or a list
	Exp    int64           `json:"exp"`
	Nbf    int64           `json:"nbf"`
}

func (in introspection) audience() []string {
	var list []string
	if json.Unmarshal(in.Aud, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(in.Aud, &s) == nil && s != "" {
		return []string{s}
	}
	return nil
}

// IntrospectionCacheFor is how long an active introspection answer is kept (never past the
// token's exp): a revoked opaque token may be accepted this much longer, and the issuer is
// asked once per token and period rather than on every request.
const IntrospectionCacheFor = 30 * time.Second

// introspectionCacheSize bounds the answers kept; the least recently used go first.
const introspectionCacheSize = 10_000

// cachedAnswer is an active answer, kept until until.
type cachedAnswer struct {
	claims Claims
	until  time.Time
}

// introspect asks each trusted issuer that offers introspection, in order, about an opaque
// token; the first that says it is active decides. Active answers are kept for
// IntrospectionCacheFor, by the token's SHA-256 (the token itself is not kept).
func (v *Verifier) introspect(ctx context.Context, token string) (*Claims, error) {
	if v.cfg.ClientID == "" || v.cfg.ClientSecret == "" {
		return nil, invalid("not a JWT, and elicitd has no client credentials to introspect it with (ELICITD_AUTH_CLIENT_ID, ELICITD_AUTH_CLIENT_SECRET)")
	}
	key := sha256.Sum256([]byte(token))
	now := v.cfg.Clock.Now()
	v.cacheMu.Lock()
	hit, ok := v.answers.Get(key)
	v.cacheMu.Unlock()
	if ok && now.Before(hit.until) {
		c := hit.claims
		return &c, nil
	}
	c, err := v.introspectAll(ctx, token)
	if err != nil {
		return nil, err
	}
	until := now.Add(IntrospectionCacheFor)
	if !c.Expiry.IsZero() && c.Expiry.Before(until) {
		until = c.Expiry
	}
	v.cacheMu.Lock()
	v.answers.Add(key, cachedAnswer{claims: *c, until: until})
	v.cacheMu.Unlock()
	return c, nil
}

// introspectAll is introspect without the cache.
func (v *Verifier) introspectAll(ctx context.Context, token string) (*Claims, error) {
	var unreachable []error
	asked := 0
	for _, iss := range v.cfg.Issuers {
		st := v.issuers[iss]
		md, err := st.metadata(ctx)
		if err != nil {
			unreachable = append(unreachable, err)
			continue
		}
		if md.IntrospectionEndpoint == "" {
			continue
		}
		asked++
		in, err := v.ask(ctx, md.IntrospectionEndpoint, token)
		if err != nil {
			unreachable = append(unreachable, fmt.Errorf("authorization server %s: introspection: %w", iss, err))
			continue
		}
		if !in.Active {
			continue
		}
		if in.Iss != "" && in.Iss != iss {
			return nil, invalid("introspection at %s answered for issuer %q", iss, in.Iss)
		}
		if !slices.Contains(in.audience(), v.cfg.Resource) {
			return nil, invalid("its audience %q does not include %s (--public-url)", in.audience(), v.cfg.Resource)
		}
		if in.Sub == "" {
			return nil, invalid("introspection at %s gave no sub", iss)
		}
		now := v.cfg.Clock.Now()
		c := &Claims{Issuer: iss, Subject: in.Sub, Scopes: strings.Fields(in.Scope)}
		if in.Exp != 0 {
			c.Expiry = time.Unix(in.Exp, 0)
			if now.After(c.Expiry.Add(DefaultLeeway)) {
				return nil, invalid("expired at %s", c.Expiry.UTC().Format(time.RFC3339))
			}
		}
		if in.Nbf != 0 && now.Add(DefaultLeeway).Before(time.Unix(in.Nbf, 0)) {
			return nil, invalid("not valid yet")
		}
		return c, nil
	}
	if len(unreachable) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(unreachable...))
	}
	if asked == 0 {
		return nil, invalid("not a JWT, and no trusted issuer offers introspection")
	}
	return nil, invalid("not active at any trusted issuer")
}

// ask POSTs token to an introspection endpoint (RFC 7662 §2.1), authenticated as the
// configured client.
func (v *Verifier) ask(ctx context.Context, endpoint, token string) (*introspection, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		// *url.Error quotes the URL only, never the body: the token is not in it.
		return nil, err
	}
	defer resp.Body.Close()
	in, err := decodeJSON[introspection](resp)
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return in, nil
}
