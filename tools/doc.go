// Package tools holds elicitd's own general tools, built on package ask as any tool author
// would build them, without the MCP SDK: ask_user (an agent asks the person a structured
// question, in the form language of package validator, as a raw MCP requestedSchema, or by
// the name of a template of package templates) and the fixtures the MCP conformance suite
// calls. A server adds them with ask.Elicitor.Add.
//
// Every failure is the ask package's error payload: {code, message, reason, missing}.
package tools
