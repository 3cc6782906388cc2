package ask_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
)

// Address is a typed form: its fields and tags say what is asked and how it is checked.
type Address struct {
	City    string `json:"city" label:"City" form:"required"`
	Country string `json:"country" label:"Country" options:"US=United States;CA=Canada" form:"required"`
	State   string `json:"state" label:"State" when:"country=US" form:"required,case=upper,maxlen=2"`
}

var addressForm = ask.MustForm[Address]("Delivery address")

// A tool that asks, on your own go-sdk server, answered here by an in-memory client that
// plays the person. The same handler works in both eras; this client speaks 2025-11-25.
func ExampleAddTool() {
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	el := ask.New(server, ask.Options{})
	defer el.Close(context.Background(), elicitation.Shutdown)
	ask.AddTool(el, server, &mcp.Tool{Name: "ship"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := addressForm.Ask(ctx, "Where should the parcel go?")
		if errors.Is(err, ask.ErrDeclined) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not shipped"}}}, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shipping to " + a.City + ", " + a.State + ", " + a.Country}}}, nil, nil
	})

	// The person: the country first; the state, asked only for the United States, next.
	answers := []map[string]any{{"city": "Austin", "country": "US"}, {"state": "tx"}}
	client := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", req.Params.Message)
			a := answers[0]
			answers = answers[1:]
			return &mcp.ElicitResult{Action: "accept", Content: a}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(context.Background(), st, nil)
	cs, _ := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ship", Arguments: map[string]any{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	ss.Wait()
	// Output:
	// asked: Where should the parcel go?
	// asked: Where should the parcel go?
	// shipping to Austin, TX, US
}

// NewForm checks a struct's tags when the tool is registered, not when it is called.
func ExampleNewForm() {
	type Login struct {
		User  string `json:"user" form:"required,minlen=20,maxlen=10"`
		Token string `json:"token" form:"sensitive,required"` // asked on elicitd's page
	}
	_, err := ask.NewForm[Login]("Login")
	fmt.Println(err)
	// Output:
	// ask: form of ask_test.Login: invalid form definition (1 problem); user: has min_length 20 greater than max_length 10
}

// The wire schema of a typed form: what the client shows. The conditional field waits for
// a follow-up round.
func ExampleForm_Compiled() {
	fmt.Println(string(addressForm.Compiled().WireSchema()))
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","title":"City"},"country":{"type":"string","title":"Country","oneOf":[{"const":"US","title":"United States"},{"const":"CA","title":"Canada"}]}},"required":["city","country"]}
}

// Outcomes that are not answers are errors with a stable code, for errors.Is or for the
// client (a handler that returns one sends its payload).
func ExampleError() {
	err := ask.OutcomeError(elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.Declined})
	fmt.Println(errors.Is(err, ask.ErrDeclined), errors.Is(err, ask.ErrTimeout))
	fmt.Println(err)
	// Output:
	// true false
	// ELICITATION_DECLINED: the person declined to answer
}
