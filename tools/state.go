package tools

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// requestState is what a pull-era RequestState token binds: the elicitation, the client
// session that owns it, the tool and its arguments, the round it answers, and an expiry.
type requestState struct {
	ID      string `json:"id"`
	Owner   string `json:"o"`
	Tool    string `json:"t"`
	Args    string `json:"a"` // base64 of SHA-256 over the canonical arguments
	Round   int    `json:"r"`
	Expires int64  `json:"e"` // unix seconds
}

// stateSigner signs and checks RequestState tokens with HMAC-SHA256.
type stateSigner struct {
	key []byte
}

var errBadState = errors.New("tools: request state is not one this server issued")

// sign returns payload.mac, both base64url.
func (s stateSigner) sign(st requestState) string {
	payload, _ := json.Marshal(st) // plain data: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s stateSigner) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// open checks the token's MAC in constant time and decodes it. It does not check expiry or
// what the token binds: the caller compares those with the request.
func (s stateSigner) open(token string) (requestState, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return requestState{}, errBadState
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return requestState{}, errBadState
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return requestState{}, errBadState
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil {
		return requestState{}, errBadState
	}
	return st, nil
}

// argsHash hashes tool arguments in a canonical form (object keys sorted), so a client that
// re-encodes the same arguments still matches.
func argsHash(args json.RawMessage) string {
	var v any
	canon := []byte("null")
	if len(args) > 0 && json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// expired reports whether st has expired at now.
func (st requestState) expired(now time.Time) bool { return now.Unix() >= st.Expires }
