// Command library is the smallest whole program that uses elicitd as a library: an MCP
// server on stdio whose one tool, greet, asks the person for their name in a form and
// greets them. The same handler serves clients of both eras: up to 2025-11-25 the form
// comes as an elicitation/create request, from 2026-07-28 as the call's input_required
// result. Each finished question is logged on stderr (stdout carries the protocol).
//
// Try it from the repository root with elicit, which plays the person in a terminal:
//
//	go run ./cmd/elicit call greet -- go run ./examples/library
package main

import (
	"context"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
)

// Name is the form, derived from the struct's fields and tags.
type Name struct {
	Name string `json:"name" label:"Your name" form:"required,minlen=2"`
}

// nameForm is built when the program starts: a bad tag would stop it here.
var nameForm = ask.MustForm[Name]("Who are you?")

// Greeting is greet's result.
type Greeting struct {
	Text string `json:"text"`
}

func greet(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Greeting, error) {
	n, err := nameForm.Ask(ctx, "What should I call you?")
	if err != nil {
		return nil, Greeting{}, err // declined, cancelled, timed out...: the client gets the error payload
	}
	return nil, Greeting{Text: "Hello, " + n.Name + "!"}, nil
}

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	el := ask.New(server, ask.Options{
		Timeout: 5 * time.Minute,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, nil)), // how each question ended; never what was typed
	})
	ask.AddTool(el, server, &mcp.Tool{Name: "greet", Description: "Greet the person by name, asking for it."}, greet)

	// stdout is the protocol: say what this is on stderr.
	log.Print("library example: an MCP server on stdio with one tool, greet, that asks your name; " +
		"drive it with: go run ./cmd/elicit call greet -- go run ./examples/library")
	err := server.Run(context.Background(), &mcp.StdioTransport{}) // until the client goes
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if cerr := el.Close(ctx, elicitation.Shutdown); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
}
