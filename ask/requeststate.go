package ask

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"math"
	"strings"
	"sync"
	"time"
)

// requestState is what a pull-era RequestState token binds: the elicitation, the client
// session that owns it, the tool, the round it answers, and an expiry. The arguments are not
// in it: the call it names holds those it was started with, and a retry must bring the same.
type requestState struct {
	ID      string
	Owner   string
	Tool    string
	Round   int
	Expires int64 // unix seconds
	// Behind is set in the token of a call's first round whose record is written behind
	// its prompt (Options.RecordBehind): what any node needs to write that record itself
	// if it finds none (the node that asked died before the write landed).
	Behind *firstRound
}

// firstRound is what a requestState carries of a first round whose record is written
// behind its prompt: enough to write the record again, and bound, as the rest, by the MAC.
type firstRound struct {
	Args   [digestBytes]byte // the call's arguments digest (argsDigest)
	Prompt [digestBytes]byte // the prompt's digest (promptSum)
	Due    int64             // unix ms: the question's deadline when it was asked
	// Until (unix ms) is when a missing record may no longer be written from the token:
	// the earlier of Due and the time a written record is kept for at the least (it ends
	// no sooner than the round was handed out, and is kept Options.PullIdle, or the
	// timeout, after it ends). Before it, no record means none was written; after it, the
	// record may have come and gone, and writing it again would let the token be used twice.
	Until int64
}

// digestBytes is the size of a digest (digest), raw.
const digestBytes = 16

// The first byte of a token's payload: a later layout gets another.
const (
	stateVersion       = 1 // ID, Owner, Tool, Round, Expires
	stateVersionBehind = 2 // and Behind
)

// appendBinary appends st as its token payload: the version, the round and expiry as
// varints, then each string with its length. A token travels in every pull-era round, both
// ways, and is read by several JSON passes on each side: it is kept small.
func (st requestState) appendBinary(b []byte) []byte {
	if st.Behind == nil {
		b = append(b, stateVersion)
	} else {
		b = append(b, stateVersionBehind)
	}
	b = binary.AppendUvarint(b, uint64(st.Round))
	b = binary.AppendVarint(b, st.Expires)
	for _, s := range []string{st.ID, st.Owner, st.Tool} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if f := st.Behind; f != nil {
		b = append(b, f.Args[:]...)
		b = append(b, f.Prompt[:]...)
		b = binary.AppendVarint(b, f.Due)
		b = binary.AppendVarint(b, f.Until)
	}
	return b
}

// decodeState reads a payload appendBinary wrote; false if it is not one, including a
// non-canonical spelling of one (a varint with padding).
func decodeState(b []byte) (requestState, bool) {
	var st requestState
	if len(b) == 0 || (b[0] != stateVersion && b[0] != stateVersionBehind) {
		return st, false
	}
	behind := b[0] == stateVersionBehind
	b = b[1:]
	round, n := binary.Uvarint(b)
	if !wholeVarint(b, n) || round > math.MaxInt32 {
		return st, false
	}
	b = b[n:]
	expires, n := binary.Varint(b)
	if !wholeVarint(b, n) {
		return st, false
	}
	b = b[n:]
	st.Round, st.Expires = int(round), expires
	for _, dst := range []*string{&st.ID, &st.Owner, &st.Tool} {
		size, n := binary.Uvarint(b)
		if !wholeVarint(b, n) || size > uint64(len(b)-n) {
			return st, false
		}
		*dst, b = string(b[n:n+int(size)]), b[n+int(size):]
	}
	if behind {
		f := &firstRound{}
		if len(b) < 2*digestBytes {
			return st, false
		}
		copy(f.Args[:], b)
		copy(f.Prompt[:], b[digestBytes:])
		b = b[2*digestBytes:]
		for _, dst := range []*int64{&f.Due, &f.Until} {
			v, n := binary.Varint(b)
			if !wholeVarint(b, n) {
				return st, false
			}
			*dst, b = v, b[n:]
		}
		st.Behind = f
	}
	return st, len(b) == 0
}

// wholeVarint reports whether the n bytes binary.Uvarint or Varint read from b are a
// varint as appendBinary writes it: read at all, and not padded (a last byte of 0 after
// others spells a shorter varint's value).
func wholeVarint(b []byte, n int) bool { return n > 0 && (n == 1 || b[n-1] != 0) }

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

// decodeCanonical decodes s only if it is the one spelling sign writes of its bytes:
// unpadded base64url with nothing else in it. Strict alone is not enough: the decoder
// skips CR and LF wherever they are, so a token with a newline added would still open.
func decodeCanonical(s string) ([]byte, bool) {
	b, err := strictBase64.DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// sign returns payload.mac, both base64url.
func (s stateSigner) sign(st requestState) string {
	var buf [128]byte
	p := base64.RawURLEncoding.EncodeToString(st.appendBinary(buf[:0]))
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s stateSigner) mac(payload string) []byte {
	m := s.macs.Get().(hash.Hash)
	defer s.macs.Put(m)
	m.Reset()
	_, _ = io.WriteString(m, payload)
	return m.Sum(nil)
}

// open checks the token's MAC in constant time and decodes it; a token spelled in any way
// but the one sign wrote (whitespace, padding) is refused. It does not check expiry or
// what the token binds: the caller compares those with the request.
func (s stateSigner) open(token string) (requestState, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return requestState{}, errBadState
	}
	// Exactly the spelling sign wrote, both halves: any other is refused as an altered token.
	got, ok := decodeCanonical(sig)
	if !ok || !hmac.Equal(got, s.mac(p)) {
		return requestState{}, errBadState
	}
	payload, ok := decodeCanonical(p)
	if !ok {
		return requestState{}, errBadState
	}
	st, ok := decodeState(payload)
	if !ok {
		return requestState{}, errBadState
	}
	return st, nil
}

// sameArgs reports whether two tool calls' arguments are the same JSON value, whatever their
// key order and spacing; absent arguments equal null.
func sameArgs(a, b json.RawMessage) bool {
	// Clients resend the bytes they sent first, which settles almost every resumed call.
	return bytes.Equal(a, b) || bytes.Equal(canonicalJSON(a), canonicalJSON(b))
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
