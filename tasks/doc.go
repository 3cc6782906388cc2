// Package tasks serves the MCP Tasks extension (io.modelcontextprotocol/tasks, SEP-2663)
// on a go-sdk server: a tools/call that has to wait (for the person, or for work that takes
// longer than a moment) comes back at once as a task handle, and the client polls
// tasks/get, answers with tasks/update, and may tasks/cancel.
//
// A task is driven over the 2026-07-28 multi round-trip (SEP-2322) of the tool it runs:
// the package calls the tool as a pull-era client would, and keeps, in one record of the
// store (Era "task"), what that client would keep: the call's requestState, the input
// requests still open, the answers given so far, and at the end the tool's result or the
// JSON-RPC error. tasks/update with every open key answered is the call's next round: the
// tool is called again with the requestState and the answers, on whichever node the
// update reaches. So a task has exactly the forms, validation, re-prompts, rounds and
// durability of the pull era (package ask hibernates the call between rounds, its record
// in the same store); a task waiting for the person holds no goroutine, only its record.
//
// When a call becomes a task (Server.Middleware): for a tool declared Optional or Required,
// from a request whose client capabilities name the extension (per request, in _meta, or
// for the session), the call runs for up to Options.Window. Completed by then, its result
// goes back as it is; asking the person (input_required) or still working, it becomes a
// task, whose record is written before the CreateTaskResult goes out. A tool declared
// AsksInline asks over the pull era's own rounds, and becomes a task only for the work
// that follows. A Required tool called without the extension is refused with
// MissingRequiredClientCapability (-32021), naming the extension.
//
// A task's record belongs to its caller (Options.Owner): another caller gets the same
// -32602 as for an id that never existed. Ids are 130 random bits.
package tasks
