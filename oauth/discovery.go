package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// ServerMetadata is what the resource server needs of an authorization server's metadata
// (RFC 8414, or OpenID Connect Discovery 1.0).
type ServerMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// metadataURLs are where issuer's metadata may be, in the order the MCP authorization spec
// gives: RFC 8414 (with path insertion), then OpenID Connect Discovery (path insertion, then
// path appending).
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.Trim(u.Path, "/")
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath = p, ""
		return v.String()
	}
	if path == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server/" + path),
		at("/.well-known/openid-configuration/" + path),
		at("/" + path + "/.well-known/openid-configuration"),
	}
}

// Discover fetches issuer's metadata, trying each well-known URL in turn: a 4xx moves on
// to the next, anything else (the server unreachable, a 5xx, a document for another
// issuer) is an error. The document's issuer must be issuer exactly (RFC 8414 §3.3), and
// it must name a jwks_uri that is https, or http on loopback.
func Discover(ctx context.Context, c *http.Client, issuer string) (*ServerMetadata, error) {
	for _, u := range metadataURLs(issuer) {
		md, status, err := getJSON[ServerMetadata](ctx, c, u)
		if err != nil {
			return nil, fmt.Errorf("authorization server %s: metadata at %s: %w", issuer, u, err)
		}
		if status >= 400 && status < 500 {
			continue
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("authorization server %s: metadata at %s answered %d", issuer, u, status)
		}
		if md.Issuer != issuer {
			return nil, fmt.Errorf("authorization server %s: metadata at %s is for issuer %q", issuer, u, md.Issuer)
		}
		if err := CheckServerURL(md.JWKSURI); err != nil {
			return nil, fmt.Errorf("authorization server %s: jwks_uri: %w", issuer, err)
		}
		if md.IntrospectionEndpoint != "" {
			if err := CheckServerURL(md.IntrospectionEndpoint); err != nil {
				return nil, fmt.Errorf("authorization server %s: introspection_endpoint: %w", issuer, err)
			}
		}
		return md, nil
	}
	return nil, fmt.Errorf("authorization server %s: no metadata at %s", issuer, strings.Join(metadataURLs(issuer), " or "))
}

// CheckServerURL accepts an absolute https URL, or http on a loopback host (for
// development), with no fragment.
func CheckServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("must be an absolute https:// URL, got %q", s)
	}
	if u.Scheme == "http" && !LoopbackHost(u.Hostname()) {
		return fmt.Errorf("must be https:// (http:// only on loopback, for development), got %q", s)
	}
	return nil
}

// maxDocument bounds a metadata, JWKS or introspection response.
const maxDocument = 1 << 20

// getJSON GETs u and decodes a 200's JSON body; other statuses return with a nil value.
func getJSON[T any](ctx context.Context, c *http.Client, u string) (*T, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	v, err := decodeJSON[T](resp)
	return v, resp.StatusCode, err
}

func decodeJSON[T any](resp *http.Response) (*T, error) {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return nil, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return nil, fmt.Errorf("content type %q, not JSON", resp.Header.Get("Content-Type"))
	}
	var v T
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return &v, nil
}
