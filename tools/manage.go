package tools

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"

	"github.com/elicitd/elicitd/elicitation"
)

// MaxExtendSeconds bounds one extend_elicitation call; the elicitation's lifetime bounds the
// total.
const MaxExtendSeconds = 3600

type listInput struct{}

type listedElicitation struct {
	ID          string  `json:"id"`
	Tool        string  `json:"tool"`
	Title       string  `json:"title,omitempty"`
	State       string  `json:"state"`
	Attempt     int     `json:"attempt"`
	MaxAttempts int     `json:"max_attempts"`
	AgeSeconds  float64 `json:"age_seconds"`
	Deadline    string  `json:"deadline"`
}

type idInput struct {
	ID string `json:"id" jsonschema:"the elicitation id, from list_elicitations"`
}

type extendInput struct {
	ID      string `json:"id" jsonschema:"the elicitation id, from list_elicitations"`
	Seconds int    `json:"seconds" jsonschema:"how many seconds to add to its deadline (1 to 3600)"`
}

func (s *Server) addManagement() {
	addTool(s.MCP, nil, &mcp.Tool{Name: "list_elicitations", Title: "List open questions",
		Description: "List the questions this session is still waiting on: id, tool, state, attempt, age and deadline."}, s.list)
	addTool(s.MCP, nil, &mcp.Tool{Name: "cancel_elicitation", Title: "Cancel a question",
		Description: "Cancel one of this session's open questions by id; the tool call waiting on it returns."}, s.cancel)
	addTool(s.MCP, nil, &mcp.Tool{Name: "extend_elicitation", Title: "Give more time",
		Description: "Move the deadline of one of this session's open questions later by a number of seconds (bounded)."}, s.extend)
}

func (s *Server) list(_ context.Context, req *mcp.CallToolRequest, _ listInput) *mcp.CallToolResult {
	now := s.opts.Clock.Now()
	out := []listedElicitation{}
	for _, snap := range s.Registry.List(s.el.Owner(req), elicitation.Pending, elicitation.Active) {
		out = append(out, listedElicitation{ID: snap.ID, Tool: snap.Tool, Title: snap.Title, State: snap.State.String(),
			Attempt: snap.Attempt, MaxAttempts: snap.MaxAttempts, AgeSeconds: now.Sub(snap.Created).Seconds(),
			Deadline: snap.Deadline.UTC().Format(time.RFC3339)})
	}
	return ask.JSONResult(map[string]any{"elicitations": out}, false)
}

// owned returns the caller's live elicitation with that id; another session's is NOT_FOUND
// too, so ids of others cannot even be confirmed.
func (s *Server) owned(req *mcp.CallToolRequest, id string) (*elicitation.Elicitation, *ask.Error) {
	e, owner, ok := s.Registry.Get(id)
	if !ok || owner != s.el.Owner(req) {
		return nil, ask.Errorf(ask.CodeNotFound, "not_found", "no open question of this session has id %q", id)
	}
	return e, nil
}

func (s *Server) cancel(_ context.Context, req *mcp.CallToolRequest, in idInput) *mcp.CallToolResult {
	e, terr := s.owned(req, in.ID)
	if terr != nil {
		return terr.Result()
	}
	if err := e.Cancel(elicitation.Operator); err != nil {
		return ask.Errorf(ask.CodeNotFound, "finished", "question %q has already ended", in.ID).Result()
	}
	return ask.JSONResult(map[string]any{"id": in.ID, "state": "cancelled"}, false)
}

func (s *Server) extend(_ context.Context, req *mcp.CallToolRequest, in extendInput) *mcp.CallToolResult {
	if in.Seconds < 1 || in.Seconds > MaxExtendSeconds {
		return ask.Errorf(ask.CodeInvalidArgument, "seconds_out_of_range", "seconds must be between 1 and %d, got %d", MaxExtendSeconds, in.Seconds).Result()
	}
	e, terr := s.owned(req, in.ID)
	if terr != nil {
		return terr.Result()
	}
	d, err := e.Extend(time.Duration(in.Seconds) * time.Second)
	if err != nil {
		return ask.Errorf(ask.CodeNotFound, "finished", "question %q has already ended", in.ID).Result()
	}
	return ask.JSONResult(map[string]any{"id": in.ID, "deadline": d.UTC().Format(time.RFC3339)}, false)
}
