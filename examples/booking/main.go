// Command booking is a small custom MCP server built on elicitd's ask package: one typed
// tool, book_table, that asks the person for the details of a restaurant booking in a form
// and confirms it. It speaks MCP over stdio, in both eras: clients up to 2025-11-25 get the
// form as an elicitation/create request, 2026-07-28 clients as an input_required result.
//
//	go run ./examples/booking
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
)

// Booking is the form, derived from the struct's fields and tags.
type Booking struct {
	Name     string    `json:"name" label:"Name for the booking" form:"required,minlen=2"`
	Guests   int       `json:"guests" label:"Guests" form:"required,min=1,max=12"`
	When     time.Time `json:"when" label:"Date and time" description:"e.g. 2026-12-24T19:30:00Z" form:"required"`
	Seating  string    `json:"seating" label:"Seating" options:"inside=Inside;terrace=Terrace" form:"default=inside"`
	Occasion string    `json:"occasion" label:"Occasion" options:"none=None;birthday=Birthday;other=Other" form:"default=none"`
	// Asked in a follow-up round, only when the occasion is "other".
	Details string `json:"details" label:"What is the occasion?" when:"occasion=other" form:"required,multiline"`
}

// bookingForm is built when the program starts: a bad tag would stop it here.
var bookingForm = ask.MustForm[Booking]("Table booking")

// In is book_table's input: what the agent already knows.
type In struct {
	Restaurant string `json:"restaurant" jsonschema:"the restaurant to book"`
}

// Out is book_table's result.
type Out struct {
	Confirmation string  `json:"confirmation"`
	Booking      Booking `json:"booking"`
}

func bookTable(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
	b, err := bookingForm.Ask(ctx, "Booking a table at "+in.Restaurant+": who is coming, and when?")
	if err != nil {
		return nil, Out{}, err // declined, cancelled, timed out...: the client gets the error payload
	}
	msg := fmt.Sprintf("%s, table for %d at %s on %s (%s)", in.Restaurant, b.Guests, b.Name,
		b.When.Format("Mon 2 Jan 15:04"), b.Seating)
	return nil, Out{Confirmation: msg, Booking: b}, nil
}

// newServer returns the MCP server with its one tool, and the Elicitor to close at the end.
func newServer() (*mcp.Server, *ask.Elicitor) {
	server := mcp.NewServer(&mcp.Implementation{Name: "booking", Version: "1"}, nil)
	x := ask.New(server, ask.Options{Timeout: 5 * time.Minute})
	ask.AddTool(x, server, &mcp.Tool{Name: "book_table", Description: "Book a restaurant table, asking the person for the details."}, bookTable)
	return server, x
}

func main() {
	server, x := newServer()
	defer func() { _ = x.Close(context.Background(), elicitation.Shutdown) }()
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
