// Command booking is a small custom MCP server built on elicitd's ask package: one typed
// tool, book_table, that asks the person for the details of a restaurant booking in a form
// and confirms it. It speaks MCP over stdio, in both eras: clients up to 2025-11-25 get the
// form as an elicitation/create request, 2026-07-28 clients as an input_required result.
// When it starts it says so on stderr (stdout is MCP's), with the command that drives it:
//
//	go run ./cmd/elicit call book_table --args '{"restaurant": "Chez Nous"}' -- go run ./examples/booking
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
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
	msg := confirmation(in.Restaurant, b)
	return nil, Out{Confirmation: msg, Booking: b}, nil
}

// confirmation words a booking: the restaurant is where, the name is whom the table is for.
func confirmation(restaurant string, b Booking) string {
	return fmt.Sprintf("Table for %d at %s, in the name of %s, on %s (%s)", b.Guests, restaurant, b.Name,
		b.When.Format("Mon 2 Jan 2006 15:04 MST"), b.Seating)
}

// Drive is the command, from the repository root, that drives this server with elicit.
const Drive = `go run ./cmd/elicit call book_table --args '{"restaurant": "Chez Nous"}' -- go run ./examples/booking`

// greet says on w (stderr: stdout carries MCP's JSON-RPC) what the program is and how to
// drive it, so that someone who starts it in a terminal is not left facing silence.
func greet(w io.Writer) {
	fmt.Fprintf(w, `booking: an MCP server on stdio with one tool, book_table, which asks the person for
the details of a restaurant booking and confirms it. Its stdin and stdout carry MCP's
JSON-RPC for an MCP client, not for typing; to try it, from the repository root run
  %s
(Ctrl-D or Ctrl-C stops this server.)
`, Drive)
}

// newServer returns the MCP server with its one tool, and the Elicitor to close at the end.
func newServer() (*mcp.Server, *ask.Elicitor) {
	server := mcp.NewServer(&mcp.Implementation{Name: "booking", Version: "1"}, nil)
	x := ask.New(server, ask.Options{Timeout: 5 * time.Minute})
	ask.AddTool(x, server, &mcp.Tool{Name: "book_table", Description: "Book a restaurant table, asking the person for the details."}, bookTable)
	return server, x
}

func main() {
	greet(os.Stderr)
	server, x := newServer()
	defer func() { _ = x.Close(context.Background(), elicitation.Shutdown) }()
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
