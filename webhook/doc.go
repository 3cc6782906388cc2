// Package webhook tells other systems when a question ends: one event per ended question
// (type "elicitation.ended"), POSTed as JSON to each configured URL and signed by the
// Standard Webhooks scheme (headers webhook-id, webhook-timestamp, webhook-signature: v1,
// HMAC-SHA256 with a "whsec_" secret), so that a receiver verifies it with any Standard
// Webhooks library. docs/webhooks.md is the receiver's side.
//
// The contract:
//
//   - Send never waits for a receiver. It adds the event to a store.Outbox (one entry per
//     URL) and returns; a Deliverer's workers, a bounded number, take entries from the
//     outbox one at a time and POST them. A receiver that is down delays its own events,
//     nothing else.
//   - Delivery is at least once, by id. Every attempt of an event carries the same
//     webhook-id and body. A 2xx answer delivers it; anything else (another status, a
//     redirect, a network error, a timeout) is retried after an exponential wait with
//     jitter (Backoff), until the Backoff's bound: then it is given up and counted.
//     Stats counts deliveries, retries and failures.
//   - With a shared outbox (natsstore), the deliverers of all nodes share the work and an
//     entry is in one deliverer's hands at a time: JetStream's work queue, not a lease of
//     ours. Entries outlive a restart of the node and of its embedded NATS server.
//   - Answers are sent only when Options.Answers says so, and a field named in
//     Ending.Sensitive never is: NewEvent drops it before anything is encoded. Nothing is
//     logged of a payload.
//   - Receivers are reached only at public addresses, over https, unless
//     Options.AllowPrivate (ParseURL at start, Client at every connection); redirects
//     are never followed.
//   - Stop ends every goroutine the Deliverer started, and waits for them.
package webhook
