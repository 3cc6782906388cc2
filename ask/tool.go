package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is a tool that asks, described without the MCP SDK's types: a package of tools
// exports Tools made with NewTool or RawTool, and the program that owns the *mcp.Server adds
// them with Elicitor.Add. The tool package then needs only this package, as elicitd's own
// ask_user and shipping tools do.
type Tool struct {
	Name        string
	Title       string
	Description string
	// Replayable declares the handler safe to replay (see the option Replayable): set it
	// for a tool that asks the same given the same arguments and answers, and acts only
	// after its last Ask.
	Replayable bool
	// Pure declares that the handler acts on nothing outside its result (see the option
	// Pure): with a store, each round then costs one write instead of two.
	Pure bool
	// Tasks is how the tool takes part in the MCP Tasks extension, in its words (tools/list's
	// execution.taskSupport): "optional" (a call that has to wait may become a task, for a
	// client that has the extension), "required"; empty: never a task. Package tasks reads
	// it through Elicitor.TaskSupport.
	Tasks  string
	schema *jsonschema.Schema
	handle func(ctx context.Context, args json.RawMessage) (any, error)
}

// Text is a result for a NewTool or RawTool handler to return: it is sent as plain text
// content, where any other result is sent as JSON (structured content, and the same JSON
// as text).
type Text string

// NewTool describes a tool whose arguments decode into In and whose result is Out. The
// arguments are handled as mcp.AddTool handles them (the input schema inferred from In, its
// defaults applied, checked, then decoded), except that arguments that break the schema get
// the error payload every failure has (INVALID_ARGUMENT, naming the argument), where the SDK
// answers with plain text. They are decoded once per call: a pull-era retry resumes the
// handler, which already has them.
//
// The handler may ask (Ask, Outcome, Form.Ask) with its context. An error it returns is sent
// as the error payload: an *Error as it is, any other error as ELICITATION_FAILED.
func NewTool[In, Out any](name, title, description string, h func(ctx context.Context, in In) (Out, error)) Tool {
	schema, decode := typedArgs[In](name)
	return Tool{Name: name, Title: title, Description: description, schema: schema,
		handle: func(ctx context.Context, raw json.RawMessage) (any, error) {
			in, err := decode(raw)
			if err != nil {
				return nil, err
			}
			return h(ctx, in)
		}}
}

// typedArgs infers tool's input schema from In, resolves it once, and returns it with the
// decoder of a call's arguments.
func typedArgs[In any](tool string) (*jsonschema.Schema, func(json.RawMessage) (In, error)) {
	schema := InputSchema[In]()
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("ask: %s's input schema: %v", tool, err)) // a fixed type: caught by any test
	}
	return schema, func(raw json.RawMessage) (In, error) { return decodeArgs[In](raw, resolved, tool) }
}

// RawTool describes a tool that reads its arguments itself, from their JSON, for a tool that
// checks them its own way; its input schema is still inferred from In, the type its
// arguments document. Results and errors are as with NewTool.
func RawTool[In any](name, title, description string, h func(ctx context.Context, args json.RawMessage) (any, error)) Tool {
	return Tool{Name: name, Title: title, Description: description, schema: InputSchema[In](), handle: h}
}

// InputSchema is the input schema mcp.AddTool would infer from In.
func InputSchema[In any]() *jsonschema.Schema {
	schema, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("ask: input schema of %T: %v", *new(In), err)) // a fixed type
	}
	return schema
}

// Add registers tools on server. Each may ask, in either era.
func (el *Elicitor) Add(server *mcp.Server, tools ...Tool) {
	for _, t := range tools {
		if t.Tasks != "" {
			el.taskSupport.Store(t.Name, t.Tasks)
		}
		handle := t.handle
		var opts []ToolOption
		if t.Replayable {
			opts = append(opts, Replayable)
		}
		if t.Pure {
			opts = append(opts, Pure)
		}
		el.addTool(server, &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description}, t.schema,
			el.Handler(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out, err := handle(ctx, req.Params.Arguments)
				if err != nil {
					return ErrorResult(err), nil
				}
				return toolResult(out), nil
			}, opts...))
	}
}

// Private is a result for a NewTool or RawTool handler to return when its text must differ
// from its structured content: Structured is sent as the structured content, and Text, as
// JSON, as the text content, which hosts may show the model, put in a transcript or log.
// It is for results that hold what only the program should read, a secret typed on
// elicitd's page, say, or a file's bytes: Text leaves them out. (A handler added with
// AddTool builds its own result, and leaves them out of its content itself.)
type Private struct {
	Structured any
	Text       any
}

// toolResult sends a handler's result: Text as it is, Private as it says, anything else as
// JSON.
func toolResult(out any) *mcp.CallToolResult {
	switch t := out.(type) {
	case Text:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(t)}}}
	case Private:
		r := JSONResult(t.Structured, false)
		r.Content = JSONResult(t.Text, false).Content
		return r
	}
	return JSONResult(out, false)
}

// ErrorResult is the tool result of an error: an *Error's payload, or ELICITATION_FAILED
// with the error's text.
func ErrorResult(err error) *mcp.CallToolResult {
	var e *Error
	if !errors.As(err, &e) {
		e = Errorf(CodeFailed, "failed", "%s", err.Error())
	}
	return e.Result()
}

// Admits reports whether the owner of the tool call whose context ctx is may start a
// question now, as the error Ask would return if not: a tool that does costly work before
// asking (compiling a form from its arguments, say) checks it first. Outside a tool call it
// returns Ask's error for that.
func Admits(ctx context.Context) error {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return errNotInCall
	}
	if err := c.el.reg.Admits(c.owner); err != nil {
		c.refused(err)
		return startError(err)
	}
	return nil
}

// decodeArgs applies the schema's defaults to a tool call's arguments, checks them and decodes
// them into In.
func decodeArgs[In any](raw json.RawMessage, resolved *jsonschema.Resolved, tool string) (In, error) {
	var in In
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return in, Errorf(CodeInvalidArgument, "invalid_arguments", "the arguments of %s must be a JSON object", tool)
		}
	}
	var v any = args
	if err := resolved.ApplyDefaults(&v); err != nil {
		return in, Errorf(CodeInvalidArgument, "invalid_arguments", "%s: %v", tool, err)
	}
	if err := resolved.Validate(&v); err != nil {
		return in, Errorf(CodeInvalidArgument, "invalid_arguments", "%s: %s", tool, argumentProblem(err))
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		return in, Errorf(CodeInvalidArgument, "invalid_arguments", "%s: %v", tool, err)
	}
	return in, nil
}

// propertyPath matches jsonschema-go's "validating /properties/NAME: " steps. The library
// reports a failure only as text; TestToolArgumentsErrorsAndResults pins the wording this
// relies on, so a change in the library fails a test rather than garbles a message.
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

// encodedSchema is schema as JSON, as tools/list sends it, encoded once: go-sdk encodes a
// tool's input schema where it reads it (on registering, listing, and each 2026-07-28
// tools/call over Streamable HTTP for a schema with x-mcp-header: listing.go), and encoded,
// that is a copy, not a walk of the schema by reflection. A schema that does not encode is
// passed as it is, for AddTool to refuse.
func encodedSchema(schema *jsonschema.Schema) any {
	b, err := json.Marshal(schema)
	if err != nil {
		return schema
	}
	return json.RawMessage(b)
}

// TaskSupport is the task support (Tool.Tasks) of the tool name added with Add: "" for
// none.
func (el *Elicitor) TaskSupport(name string) string {
	v, _ := el.taskSupport.Load(name)
	s, _ := v.(string)
	return s
}
