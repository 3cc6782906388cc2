// Package ask lets an MCP tool handler ask the person behind the call for what it is
// missing, as straight-line code that works unchanged in both MCP eras.
//
// Create one Elicitor per *mcp.Server with New, register the tools that ask with AddTool
// (typed, as mcp.AddTool) or Elicitor.Handler (raw), and in the handler call Ask, Outcome or
// a typed form's Ask with the handler's context:
//
//	el := ask.New(server, ask.Options{})
//	ask.AddTool(el, server, &mcp.Tool{Name: "book"}, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
//		seat, err := seatForm.Ask(ctx, "Which seat?")
//		if err != nil {
//			return nil, Out{}, err // declined, cancelled, timed out...: the client gets the error payload
//		}
//		...
//	})
//
// A package of tools need not import the MCP SDK at all: it describes its tools with
// NewTool (typed input and result) or RawTool (it reads its own arguments), and the program
// that owns the server adds them with Elicitor.Add. elicitd's own ask_user and shipping
// tools are written that way. AddManagement adds the tools an agent manages its own open
// questions with (list, cancel, extend), scoped to the caller's owner, and a statistics
// resource.
//
// # Asking in rounds
//
// One question may take several rounds (prompts): a form's conditional fields are asked in
// a follow-up round once the field they depend on is answered; fields only elicitd's page
// may ask (secrets, files) in a round of their own on the page; and a Question's Then runs
// after each valid answer and decides: finish (with a result of the tool's own type as
// Value), ask a follow-up made with FollowUp (or a typed form's FollowUp), or end with an
// error (Next.Err), which the tool gets back as its error and which is not counted as a
// completed question. Every round's answers are kept, merged: Then sees them all, and so
// does the caller (Ask's data; a typed form's Decode reads its own fields from them, and
// Form.AskThen returns both). Reprompt words the message after an invalid answer. Valid
// answers are kept across a re-prompt: only the fields at fault are asked again.
//
// Attempts count invalid answers, and nothing else: the first prompt is attempt 1, and
// each invalid answer earns a re-prompt, the next attempt, up to MaxAttempts; a follow-up
// round, or a round on the page, is not an attempt. A person who answers every round
// correctly never ends a question with ELICITATION_MAX_RETRIES. Options.MaxRounds bounds
// the rounds one question may take (20 by default), every prompt counted, so a Then that
// keeps asking ends with ELICITATION_TOO_MANY_ROUNDS rather than keep a person answering.
//
// # Owners
//
// Every question has an owner: by default the client session of the call, whose questions
// end (client gone) when the session does; Options.Owner names owners otherwise (an
// authenticated caller, say). Only the owner may resume, list, extend or cancel them.
//
// Over Streamable HTTP, wrap go-sdk's handler with Elicitor.WatchStreams: a call whose
// response stream drops (its session may stay open) then ends its questions (client gone) at
// once, rather than at their deadline.
//
// # Eras
//
// A client up to protocol 2025-11-25 gets each prompt as a server-initiated
// elicitation/create request while the tool call waits (push). A 2026-07-28 client gets
// the prompt as the call's input_required result, with a signed requestState, and answers
// by calling the tool again with the state and its inputResponses (pull).
//
// # Continuation, not replay
//
// In the pull era the handler is not run again on the client's retry. It runs once, on its
// own goroutine, and stays parked in Ask between the client's calls: each prompt goes back
// as the result of the call that is waiting (the first, or the retry that brought the last
// answer), and the handler's own result goes back on the call that is waiting when it
// returns. The rules that follow:
//
//   - A handler may do anything before its first ask, and between asks: it runs once.
//   - Its context is not the first request's: it ends when the call does (the client
//     cancels, goes away, or the Elicitor closes; or, with the opt-in Options.PullIdle, does
//     not come back for that long), and then the question being asked ends the same way. A
//     question lives until its deadline otherwise.
//   - The requestState binds the owner, the tool and the arguments of the first call; a
//     retry with other arguments, another owner's state, a state used already or one for an
//     earlier round is refused with INVALID_REQUEST_STATE.
//   - The handler lives in this process: after a restart a retry is told the question has
//     ended, and the client calls the tool again.
//
// # The durable call
//
// With a store (Options.Store), a pull-era call is also a record, and its life is the
// durable*.go files', the only ones that read or write the store or talk to other nodes:
//
//   - durable.go: the record written through on every step a client can see (a round
//     handed out, a round claimed, the handler's result), compare-and-set, fenced once
//     another node takes the call over;
//   - durable_hibernate.go: between rounds a replayable call's goroutine ends; what stays is
//     its record and a sleeper (a registry member and a timer), woken by the next round on
//     any node;
//   - durable_takeover.go: a call whose node is gone is taken over and its handler replayed
//     from the record's log;
//   - durable_forward.go, durable_pages.go, durable_manage.go: a retry, a page request or a
//     management op for a call another node holds goes there over the store's relay;
//   - durable_roster.go: each node's roster of its push-era questions, swept when the node
//     dies, and the adoption of its hibernating ones;
//   - durable_ends.go: the ends of a call's questions carried in its record until told;
//   - durable_tasks.go: what package tasks, which drives the pull era for a task's client,
//     asks of a durable call (FirstCall, DropUnseen, QuestionEnded, Retryable). A task is
//     the pull era's call with a task record beside it, not a third copy of its life.
//
// # What the engine does for every question
//
// Answers are normalised and checked by the form (package validator); an invalid answer
// earns a re-prompt listing the problems, for only the fields at fault, up to
// MaxAttempts; the rounds are bounded by MaxRounds; a deadline ends the question as a timeout; the registry bounds how many
// questions live and how fast an owner starts them, and ends an owner's questions when its
// client session ends. Every refusal a tool returns has one shape, Error, whose codes are
// stable API.
package ask
