package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
)

// addTool registers a tool whose arguments decode into In, handled as mcp.AddTool handles
// them (the same inferred input schema, defaults applied, checked with the same validator,
// then decoded), with one difference: arguments that break the schema get the error shape
// every elicitd tool failure has (INVALID_ARGUMENT, naming the argument), where the SDK
// answers with plain text. With an Elicitor the handler may ask (see ask.Elicitor.Handler).
func addTool[In any](s *mcp.Server, x *ask.Elicitor, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) *mcp.CallToolResult) {
	schema := inputSchema[In]()
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tools: %s's input schema: %v", t.Name, err)) // a fixed type: caught by any test
	}
	tt := *t
	tt.InputSchema = schema
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, terr := decodeArgs[In](req.Params.Arguments, resolved, t.Name)
		if terr != nil {
			return terr.Result(), nil
		}
		return h(ctx, req, in), nil
	}
	if x != nil {
		handler = x.Handler(handler)
	}
	s.AddTool(&tt, handler)
}

// inputSchema infers a tool's input schema from In as mcp.AddTool does.
func inputSchema[In any]() *jsonschema.Schema {
	schema, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tools: input schema of %T: %v", *new(In), err)) // a fixed type
	}
	return schema
}

// decodeArgs applies the schema's defaults to a tool call's arguments, checks them and decodes
// them into In.
func decodeArgs[In any](raw json.RawMessage, resolved *jsonschema.Resolved, tool string) (In, *ask.Error) {
	var in In
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return in, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "the arguments of %s must be a JSON object", tool)
		}
	}
	var v any = args
	if err := resolved.ApplyDefaults(&v); err != nil {
		return in, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "%s: %v", tool, err)
	}
	if err := resolved.Validate(&v); err != nil {
		return in, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "%s: %s", tool, argumentProblem(err))
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		return in, ask.Errorf(ask.CodeInvalidArgument, "invalid_arguments", "%s: %v", tool, err)
	}
	return in, nil
}

// propertyPath matches the validator's "validating /properties/NAME: " steps.
var propertyPath = regexp.MustCompile(`validating /properties/([^:]+): `)

// argumentProblem words a schema validation error for the person reading the tool result:
// `argument "seconds": type: soon has type "string", want "integer"`.
func argumentProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	return propertyPath.ReplaceAllStringFunc(msg, func(step string) string {
		name := propertyPath.FindStringSubmatch(step)[1]
		return fmt.Sprintf("argument %q: ", strings.ReplaceAll(name, "/properties/", "."))
	})
}
