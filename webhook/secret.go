package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// secretPrefix starts a secret in Standard Webhooks' form.
const secretPrefix = "whsec_"

// ErrInvalidSecret is matched (errors.Is) by the error of a secret New cannot use.
var ErrInvalidSecret = errors.New("webhook: invalid secret")

// NewSecret returns a new random signing secret, in the form receivers' Standard Webhooks
// libraries take: "whsec_" and the standard base64 of 32 random bytes.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// signer returns the Standard Webhooks signer of secret: "whsec_" and the standard base64
// of 24 to 64 bytes. Its error never quotes the secret.
func signer(secret string) (*standardwebhooks.Webhook, error) {
	want := `want "whsec_" and the base64 of 24-64 random bytes, such as webhook.NewSecret makes`
	rest, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: the secret does not start with %q; %s", ErrInvalidSecret, secretPrefix, want)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: the secret is not base64 after %q; %s", ErrInvalidSecret, secretPrefix, want)
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("%w: the secret holds %d bytes; %s", ErrInvalidSecret, len(key), want)
	}
	return standardwebhooks.NewWebhookRaw(key)
}
