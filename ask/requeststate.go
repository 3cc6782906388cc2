package ask

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"strings"
	"sync"
	"time"
)

// requestState is what a pull-era RequestState token binds: the elicitation, the client
// session that owns it, the tool and its arguments, the round it answers, and an expiry.
type requestState struct {
	ID      string `json:"id"`
	Owner   string `json:"o"`
	Tool    string `json:"t"`
	Args    string `json:"a"` // argsDigest of the arguments of the call that started it
	Round   int    `json:"r"`
	Expires int64  `json:"e"` // unix seconds
}

// stateSigner signs and checks RequestState tokens with HMAC-SHA256.
type stateSigner struct {
	macs *sync.Pool // of HMAC hashes keyed with the signing key: every round signs and opens one token
}

func newStateSigner(key []byte) stateSigner {
	return stateSigner{macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

var errBadState = errors.New("tools: request state is not one this server issued")

// strictBase64 refuses non-canonical encodings: without it, the unused low bits of a token's
// last character could be changed and the token would still decode to the same MAC.
var strictBase64 = base64.RawURLEncoding.Strict()

// sign returns payload.mac, both base64url.
func (s stateSigner) sign(st requestState) string {
	payload, _ := json.Marshal(st) // plain data: cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s stateSigner) mac(payload string) []byte {
	m := s.macs.Get().(hash.Hash)
	defer s.macs.Put(m)
	m.Reset()
	_, _ = io.WriteString(m, payload)
	return m.Sum(nil)
}

// open checks the token's MAC in constant time and decodes it. It does not check expiry or
// what the token binds: the caller compares those with the request.
func (s stateSigner) open(token string) (requestState, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return requestState{}, errBadState
	}
	got, err := strictBase64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return requestState{}, errBadState
	}
	payload, err := strictBase64.DecodeString(p)
	if err != nil {
		return requestState{}, errBadState
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil {
		return requestState{}, errBadState
	}
	return st, nil
}

// argsDigest is what a RequestState binds of its tool call's arguments: a SHA-256 of the bytes
// as sent. Clients resend the arguments they sent first, so comparing digests settles almost
// every resumed call; sameArgs settles the rest.
func argsDigest(args json.RawMessage) string {
	sum := sha256.Sum256(args)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sameArgs reports whether two tool calls' arguments are the same JSON value, whatever their
// key order and spacing; absent arguments equal null.
func sameArgs(a, b json.RawMessage) bool {
	return bytes.Equal(canonicalJSON(a), canonicalJSON(b))
}

// canonicalJSON re-encodes a JSON value with object keys sorted; absent or unreadable is null.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	if len(raw) > 0 && json.Unmarshal(raw, &v) == nil {
		if out, err := json.Marshal(v); err == nil {
			return out
		}
	}
	return []byte("null")
}

// expired reports whether st has expired at now.
func (st requestState) expired(now time.Time) bool { return now.Unix() >= st.Expires }
