package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/webhook"
)

// A new secret is in the form receivers' libraries take, and each is another.
func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := webhook.NewSecret(), webhook.NewSecret()
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, "whsec_"))
	_, err := standardwebhooks.NewWebhook(a)
	require.NoError(t, err)
}

// The snippet's receiver refuses a webhook whose timestamp is outside its five-minute
// window (a replay of a captured webhook), one signed with another secret, one whose body
// was changed, and one without the headers; it accepts the same webhook signed now.
func TestSnippetRefusesReplaysAndForgeries(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	var got []string
	h, err := webhookHandler(secret, func(id string, _ map[string]any) { got = append(got, id) })
	require.NoError(t, err)
	body := []byte(`{"id":"evt_Q1_ended","type":"elicitation.ended"}`)
	send := func(signWith string, at time.Time, sent []byte, headers bool) int {
		wh, err := standardwebhooks.NewWebhook(signWith)
		require.NoError(t, err)
		sig, err := wh.Sign("evt_Q1_ended", at, body)
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(string(sent)))
		if headers {
			req.Header.Set("webhook-id", "evt_Q1_ended")
			req.Header.Set("webhook-timestamp", fmt.Sprint(at.Unix()))
			req.Header.Set("webhook-signature", sig)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	now := time.Now()
	assert.Equal(t, http.StatusUnauthorized, send(secret, now.Add(-10*time.Minute), body, true), "a replay from 10 minutes ago")
	assert.Equal(t, http.StatusUnauthorized, send(secret, now.Add(10*time.Minute), body, true), "from the future")
	assert.Equal(t, http.StatusUnauthorized, send(webhook.NewSecret(), now, body, true), "another secret")
	assert.Equal(t, http.StatusUnauthorized, send(secret, now, []byte(`{"id":"evt_Q1_ended","type":"x"}`), true), "a changed body")
	assert.Equal(t, http.StatusUnauthorized, send(secret, now, body, false), "no headers")
	assert.Empty(t, got)
	assert.Equal(t, http.StatusNoContent, send(secret, now, body, true))
	assert.Equal(t, []string{"evt_Q1_ended"}, got)
}
