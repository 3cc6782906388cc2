package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client's side of the extension, for a go-sdk client (elicit, the tests): go-sdk
// v1.8 has none, so a client declares the extension (Declare), registers its methods
// (AddClientMethods), reads a task's id from the tools/call result (TaskOf), and calls
// Get, Update and Cancel.

// IDParams are the params of tasks/get and tasks/cancel.
type IDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// UpdateParams are the params of tasks/update: the answers (an *mcp.ElicitResult, or
// anything that encodes as one) by the keys of the task's inputRequests.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses"`
}

// Ack is the result of tasks/update and tasks/cancel.
type Ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// Detailed is a task as tasks/get returns it: InputRequests while it is input_required
// (each an elicitation/create request, as JSON), Result once completed, Error once failed.
type Detailed struct {
	mcp.ResultBase
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	CreatedAt      time.Time                  `json:"createdAt"`
	LastUpdatedAt  time.Time                  `json:"lastUpdatedAt"`
	TTLMs          int64                      `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         *mcp.CallToolResult        `json:"result"`
	Error          *jsonrpc.Error             `json:"error"`
}

// Declare adds the extension to caps, a client's capabilities.
func Declare(caps *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	caps.AddExtension(Extension, map[string]any{})
	return caps
}

// AddClientMethods registers tasks/get, tasks/update and tasks/cancel on cl.
func AddClientMethods(cl *mcp.Client) error {
	return errors.Join(
		mcp.AddSendingCustomMethod[*IDParams, *Detailed](cl, "tasks/get"),
		mcp.AddSendingCustomMethod[*UpdateParams, *Ack](cl, "tasks/update"),
		mcp.AddSendingCustomMethod[*IDParams, *Ack](cl, "tasks/cancel"),
	)
}

// TaskOf is the id of the task a tools/call result is (a CreateTaskResult, whose taskId
// elicitd repeats under _meta's RelatedTask: go-sdk decodes the result into a
// CallToolResult, which keeps only _meta), or "".
func TaskOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	related, _ := res.Meta[RelatedTask].(map[string]any)
	id, _ := related["taskId"].(string)
	return id
}

// Get is tasks/get of task id.
func Get(ctx context.Context, cs *mcp.ClientSession, id string) (*Detailed, error) {
	return mcp.CallCustomMethod[*IDParams, *Detailed](ctx, cs, "tasks/get", &IDParams{TaskID: id})
}

// Update is tasks/update of task id with responses.
func Update(ctx context.Context, cs *mcp.ClientSession, id string, responses map[string]any) error {
	_, err := mcp.CallCustomMethod[*UpdateParams, *Ack](ctx, cs, "tasks/update", &UpdateParams{TaskID: id, InputResponses: responses})
	return err
}

// Cancel is tasks/cancel of task id.
func Cancel(ctx context.Context, cs *mcp.ClientSession, id string) error {
	_, err := mcp.CallCustomMethod[*IDParams, *Ack](ctx, cs, "tasks/cancel", &IDParams{TaskID: id})
	return err
}
