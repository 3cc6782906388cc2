// Package elicitation is the engine: one question put to a person, as an actor.
//
// Each Elicitation is one goroutine that alone owns its state machine (pending, active,
// then completed, cancelled or timeout), its deadline timer on an injected clock, and its
// round and attempt counts. Everything else talks to it through methods that hand it events
// (Answer, Cancel, Extend) or read what it last published (Snapshot, Outcome, Done).
//
// # Rounds and attempts
//
// A round is one prompt. Rounds are numbered from 1, every prompt counted (the first, each
// re-prompt, each follow-up); an answer names the round it answers (Prompt.Round,
// Answer.Round). An attempt is one try at a valid answer: the first prompt, and each
// re-prompt that follows an invalid answer. So the attempt count is 1 plus the invalid
// answers so far, and only an invalid answer uses one: a person who answers every round
// correctly never runs out of attempts, however many follow-ups the question asks.
// Spec.MaxAttempts bounds the attempts (reason MaxAttempts past it) and Spec.MaxRounds the
// rounds (reason TooManyRounds), so a continuation that keeps asking cannot keep a person
// answering for ever. Prompt, Snapshot and Outcome carry both counts.
//
// The contract:
//   - the outcome is fixed exactly once, by one code path (end), before Done is closed;
//     every event after that gets ErrFinished, so nothing is delivered twice;
//   - an answer is checked against its round's form on the answering goroutine, so a slow
//     check never delays the deadline, a cancel or a shutdown; an answer for another round
//     is refused with ErrStaleRound;
//   - an invalid answer earns a re-prompt listing the problems while attempts remain (a
//     Keeper form keeps the valid part and asks only for the rest); a valid one is merged
//     into the data so far (every round's answers) and goes to the Spec's Continuation,
//     which finishes (with the data and a typed Value), asks a follow-up, or ends the
//     elicitation with an error (reason ToolError);
//   - the Prompter receives each prompt on the actor's goroutine and must not block: it
//     delivers the prompt elsewhere (elicitd's MCP adapter, package ask, is one Prompter
//     per era).
//
// Package registry starts elicitations within limits and tracks them by owner; most code
// uses it rather than Start.
package elicitation
