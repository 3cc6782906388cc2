package tools_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools"
	"github.com/elicitd/elicitd/validator"
)

// ask_user with templates: the program defines a form once, agents see its name in
// tools/list and ask it by name, with defaults of their own.
func ExampleAskUser_templates() {
	set := templates.New()
	if err := set.Add("contact", validator.Form{Title: "Contact", Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true},
		{Name: "country", Type: validator.Select, Label: "Country", Required: true,
			Options: []validator.Option{{Value: "CA", Title: "Canada"}, {Value: "US", Title: "United States"}}},
	}}); err != nil {
		fmt.Println(err)
		return
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "mine", Version: "1"}, nil)
	el := ask.New(server, ask.Options{})
	defer el.Close(context.Background(), elicitation.Shutdown)
	el.Add(server, tools.AskUser(tools.AskUserOptions{Templates: set}))

	client := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			country := req.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)["country"].(map[string]any)
			fmt.Printf("asked: %q, country pre-filled with %v\n", req.Params.Message, country["default"])
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "country": "CA"}}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(context.Background(), st, nil)
	cs, _ := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	defer func() { cs.Close(); ss.Wait() }()

	list, _ := cs.ListTools(context.Background(), nil)
	template := list.Tools[0].InputSchema.(map[string]any)["properties"].(map[string]any)["template"].(map[string]any)
	fmt.Println("templates:", template["enum"])
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{
		"message": "Who is the parcel for?", "template": "contact", "defaults": map[string]any{"country": "canada"},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// templates: [contact]
	// asked: "Who is the parcel for?", country pre-filled with CA
	// {"status":"completed","data":{"country":"CA","name":"Ada"},"attempts":1}
}
