package webhook_test

import (
	"encoding/json"
	"io"
	"net/http"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The receiver's verification snippet of docs/webhooks.md, word for word between the two
// marker lines (TestDocsSnippetIsTheTestedOne checks it): every test receiver of this
// package verifies its webhooks with it.

// snippet:begin
// webhookHandler returns the handler of an endpoint that receives elicitd's webhooks.
// It verifies each one with the Standard Webhooks library and the endpoint's secret
// ("whsec_..."): the signature over the webhook-id, the webhook-timestamp and the body,
// and a timestamp within five minutes of now (older or newer is refused, a replay).
// Then it passes the webhook-id and the event to handle, and answers 204. A retry
// brings the same webhook-id again: handle must do nothing twice for one id.
func webhookHandler(secret string, handle func(id string, event map[string]any)) (http.Handler, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var event map[string]any
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		handle(r.Header.Get("webhook-id"), event)
		w.WriteHeader(http.StatusNoContent)
	}), nil
}

// snippet:end
