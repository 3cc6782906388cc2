package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	jose "github.com/go-jose/go-jose/v4"
)

// issuerState is what the verifier knows of one authorization server: its metadata and its
// signing keys, both fetched on demand and kept.
//
// The cache policy: the metadata is fetched once (again, after a failure, at most once per
// DefaultRefreshEvery). The JWKS is fetched with the metadata, and again when a token names
// a key id the set does not hold, at most once per DefaultRefreshEvery; a failed fetch
// keeps the keys held (an issuer that is down does not stop tokens signed with keys
// already known).
type issuerState struct {
	issuer string
	client *http.Client
	clock  clock.Clock

	fetch sync.Mutex // one fetch at a time; held across the network call

	mu        sync.Mutex // guards the fields below; never held across a network call
	meta      *ServerMetadata
	keys      []jose.JSONWebKey
	lastTried time.Time // the last fetch attempt (metadata or keys), success or not
	lastErr   error     // the last fetch's error, nil after a success
}

// errNoKeys: the issuer's keys could not be fetched and none are held.
var errNoKeys = errors.New("no keys held")

// metadata returns the issuer's metadata, fetching it when it has none and may try.
func (s *issuerState) metadata(ctx context.Context) (*ServerMetadata, error) {
	s.mu.Lock()
	md, seen := s.meta, s.lastTried
	s.mu.Unlock()
	if md != nil {
		return md, nil
	}
	_ = s.refresh(ctx, seen) // the metadata may have come even if the keys did not
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta == nil {
		return nil, s.lastErr
	}
	return s.meta, nil
}

// key returns the keys that may have signed a token with key id kid: the one with that id,
// or every key held for a token without one. An unknown kid triggers a refresh, unless one
// was tried within DefaultRefreshEvery.
func (s *issuerState) key(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	if k := s.lookup(kid); len(k) > 0 {
		return k, nil
	}
	s.mu.Lock()
	seen := s.lastTried
	s.mu.Unlock()
	err := s.refresh(ctx, seen)
	if k := s.lookup(kid); len(k) > 0 {
		return k, nil
	}
	s.mu.Lock()
	held := len(s.keys)
	s.mu.Unlock()
	if held == 0 && err != nil {
		return nil, fmt.Errorf("%w: %w", errNoKeys, err)
	}
	return nil, fmt.Errorf("no key %q in the issuer's JWKS", kid)
}

func (s *issuerState) lookup(kid string) []jose.JSONWebKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jose.JSONWebKey
	for _, k := range s.keys {
		if kid == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// refresh fetches the metadata (if not held) and the JWKS, unless another caller has done
// so since seen (the lastTried the caller saw) or the last attempt was within
// DefaultRefreshEvery; either way it returns the last fetch's error (nil when it
// succeeded, so a JWKS that answered without the key asked for is no outage). Keys are
// replaced only by a successful fetch.
func (s *issuerState) refresh(ctx context.Context, seen time.Time) error {
	s.fetch.Lock()
	defer s.fetch.Unlock()
	s.mu.Lock()
	last, md, lastErr := s.lastTried, s.meta, s.lastErr
	s.mu.Unlock()
	if last.After(seen) {
		return lastErr // someone fetched while this caller waited: use that
	}
	now := s.clock.Now()
	if !last.IsZero() && now.Sub(last) < DefaultRefreshEvery {
		return lastErr // fetched too recently to ask again: what that fetch said stands
	}
	err := s.fetchAll(ctx, md)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTried, s.lastErr = now, err
	return err
}

// fetchAll fetches the metadata when md is nil, then the keys, and stores what it got.
func (s *issuerState) fetchAll(ctx context.Context, md *ServerMetadata) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if md == nil {
		var err error
		if md, err = Discover(ctx, s.client, s.issuer); err != nil {
			return err
		}
		s.mu.Lock()
		s.meta = md
		s.mu.Unlock()
	}
	set, status, err := getJSON[jose.JSONWebKeySet](ctx, s.client, md.JWKSURI)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("answered %d", status)
	}
	if err != nil {
		return fmt.Errorf("authorization server %s: JWKS at %s: %w", s.issuer, md.JWKSURI, err)
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		if usable(k) {
			keys = append(keys, k)
		}
	}
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
	return nil
}

// fetchTimeout bounds one fetch of metadata and keys.
const fetchTimeout = 10 * time.Second

// usable keeps public signing keys of the kinds the allowed algorithms use: never a
// symmetric key (an HMAC secret has no place in a JWKS), never one meant for encryption.
func usable(k jose.JSONWebKey) bool {
	if k.Use != "" && k.Use != "sig" {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}
