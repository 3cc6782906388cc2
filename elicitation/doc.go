// Package elicitation is the engine: one question put to a person, as an actor.
//
// Each Elicitation is one goroutine that alone owns its state machine (pending, active,
// then completed, cancelled or timeout), its deadline timer on an injected clock, and its
// attempt count. Everything else talks to it through methods that hand it events (Answer,
// Cancel, Extend) or read what it last published (Snapshot, Outcome, Done).
//
// The contract:
//   - the outcome is fixed exactly once, by one code path (end), before Done is closed;
//     every event after that gets ErrFinished, so nothing is delivered twice;
//   - an answer is checked against its round's form on the answering goroutine, so a slow
//     check never delays the deadline, a cancel or a shutdown; an answer for another round
//     is refused with ErrStaleRound;
//   - an invalid answer earns a re-prompt listing the problems while attempts remain (a
//     Keeper form keeps the valid part and asks only for the rest); a valid one goes to the
//     Spec's Continuation, which finishes (with Data and a typed Value), asks a follow-up,
//     or ends the elicitation with an error (reason ToolError);
//   - the Prompter receives each prompt on the actor's goroutine and must not block: it
//     delivers the prompt elsewhere (elicitd's MCP adapter, package ask, is one Prompter
//     per era).
//
// Package registry starts elicitations within limits and tracks them by owner; most code
// uses it rather than Start.
package elicitation
