package natsstore

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/store"
)

// A publish refused because one with the same message id is still being processed (an
// earlier try of the same outbox add, its answer lost as the store blipped) is not a
// refusal of the event: the add is tried again, and then deduplicated. Taken for a refusal,
// it lost webhook events in the robustness suite's long run, as NATS's quorum came back.
func TestAMessageIDInProcessIsTransient(t *testing.T) {
	err := fmt.Errorf("add: %w", &jetstream.APIError{Code: 409, ErrorCode: codeMessageIDInProcess, Description: "duplicate message id is in process"})
	assert.ErrorIs(t, classify(err), store.ErrUnavailable)
	assert.ErrorIs(t, classify(err), store.ErrInProcess, "told apart: if it lasts, the earlier add was lost")
	other := &jetstream.APIError{Code: 400, ErrorCode: 10999, Description: "something else"}
	assert.NotErrorIs(t, classify(other), store.ErrUnavailable, "other API errors stay what they are")
}
