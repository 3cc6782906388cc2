package natsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/elicitd/elicitd/store"
)

// JetStream API error codes this package tells apart (see nats-server's
// jetstream_errors_generated.go).
const (
	codeWrongLastSequence      = jetstream.JSErrCodeStreamWrongLastSequence         // 10071
	codeWrongLastSequenceR     = jetstream.JSErrCodeStreamWrongLastSequenceConstant // 10164: another write in process (replicated streams)
	codeMessageExceedsMaximum  = jetstream.JSErrCodeStreamMessageExceedsMaximum     // 10054
	codeStoreFailed            = 10077                                              // "{err}": the store refused the message
	codeInsufficientResources  = 10023                                              // the server's own JetStream limits
	codeClusterNotAvailable    = 10008
	codeStreamOffline          = 10118
	codeMessageIDInProcess     = 10158 // a publish with this Nats-Msg-Id is still being processed
	codeJetStreamNotEnabled    = jetstream.JSErrCodeJetStreamNotEnabled
	codeJetStreamNotEnabledAcc = jetstream.JSErrCodeJetStreamNotEnabledForAccount
)

// isWrongLastSequence reports whether err is JetStream's answer to a compare-and-set whose
// expected revision is not the key's last.
func isWrongLastSequence(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == codeWrongLastSequence
}

// isInProcess reports whether err is JetStream refusing a compare-and-set because another
// write to the same key is still in process on the stream leader (10164, on replicated
// streams): not a mismatch, or not yet (see whileInProcess).
func isInProcess(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == codeWrongLastSequenceR
}

// classify wraps err with the store error it means: ErrFull, ErrTooLarge or
// ErrUnavailable; err as it is when it means none of them (a caller's cancellation, say).
func classify(err error) error {
	var ae *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ae):
		switch {
		case ae.ErrorCode == codeStoreFailed && strings.Contains(ae.Description, "maximum bytes"),
			ae.ErrorCode == codeInsufficientResources:
			return fmt.Errorf("%w: %w", store.ErrFull, err)
		case ae.ErrorCode == codeMessageExceedsMaximum:
			return fmt.Errorf("%w: %w", store.ErrTooLarge, err)
		case ae.ErrorCode == codeMessageIDInProcess:
			return fmt.Errorf("%w: %w", store.ErrInProcess, err)
		case ae.Code == 503, ae.ErrorCode == codeClusterNotAvailable, ae.ErrorCode == codeStreamOffline,
			ae.ErrorCode == codeJetStreamNotEnabled,
			ae.ErrorCode == codeJetStreamNotEnabledAcc:
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrNoServers),
		errors.Is(err, nats.ErrStaleConnection),
		errors.Is(err, jetstream.ErrStreamNotFound), // the bucket is gone: someone deleted it
		errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, net.ErrClosed):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}
