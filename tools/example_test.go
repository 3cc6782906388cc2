package tools_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/tools"
)

// ask_user on any go-sdk server: the agent sends a form, the person (here an in-memory
// client) answers 0 guests, is asked again for that field only, and the agent gets the
// checked data.
func ExampleAskUser() {
	server := mcp.NewServer(&mcp.Implementation{Name: "mine", Version: "1"}, nil)
	el := ask.New(server, ask.Options{})
	defer el.Close(context.Background(), elicitation.Shutdown)
	el.Add(server, tools.AskUser(tools.AskUserOptions{}))

	answers := []map[string]any{{"email": "ada@example.com", "guests": 0}, {"guests": 2}}
	client := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Printf("asked: %q\n", req.Params.Message)
			a := answers[0]
			answers = answers[1:]
			return &mcp.ElicitResult{Action: "accept", Content: a}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(context.Background(), st, nil)
	cs, _ := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{
		"message": "Who is coming?",
		"form": map[string]any{"fields": []any{
			map[string]any{"name": "email", "type": "email", "label": "Email", "required": true},
			map[string]any{"name": "guests", "type": "integer", "label": "Guests", "exclusive_minimum": 0},
		}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	ss.Wait()
	// Output:
	// asked: "Who is coming?"
	// asked: "Guests: must be a positive, whole number\n\nWho is coming?"
	// {"status":"completed","data":{"email":"ada@example.com","guests":2},"attempts":2}
}
