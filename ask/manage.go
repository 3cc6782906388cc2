package ask

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/store"
)

// MaxExtendSeconds bounds one extend_elicitation call; the question's lifetime bounds the
// total.
const MaxExtendSeconds = 3600

// StatsURI is the resource AddManagement serves the statistics at.
const StatsURI = "elicitd://stats"

type listedElicitation struct {
	ID          string  `json:"id"`
	Tool        string  `json:"tool"`
	Title       string  `json:"title,omitempty"`
	State       string  `json:"state"`
	Round       int     `json:"round"`   // prompts so far, follow-ups included
	Attempt     int     `json:"attempt"` // 1 plus the invalid answers so far
	MaxAttempts int     `json:"max_attempts"`
	AgeSeconds  float64 `json:"age_seconds"`
	Deadline    string  `json:"deadline"`
}

type listInput struct{}

type idInput struct {
	ID string `json:"id" jsonschema:"the elicitation id, from list_elicitations"`
}

type extendInput struct {
	ID      string `json:"id" jsonschema:"the elicitation id, from list_elicitations"`
	Seconds int    `json:"seconds" jsonschema:"how many seconds to add to its deadline (1 to 3600)"`
}

// AddManagement registers the tools with which an agent manages its own open questions
// (list_elicitations, cancel_elicitation, extend_elicitation) and the statistics resource
// (StatsURI). Each tool sees only the questions of the caller's owner (Options.Owner): the
// ids of others are not found.
func (el *Elicitor) AddManagement(server *mcp.Server) {
	manage(el, server, "list_elicitations", "List open questions",
		"List the questions this session is still waiting on: id, tool, state, round, attempt, age and deadline.", el.list)
	manage(el, server, "cancel_elicitation", "Cancel a question",
		"Cancel one of this session's open questions by id; the tool call waiting on it returns.", el.cancelOne)
	manage(el, server, "extend_elicitation", "Give more time",
		"Move the deadline of one of this session's open questions later by a number of seconds (bounded).", el.extendOne)
	server.AddResource(&mcp.Resource{URI: StatsURI, Name: "stats", Title: "elicitd statistics", MIMEType: "application/json",
		Description: "Live elicitations by state, totals by outcome and reason, and time-to-answer percentiles."}, el.readStats)
}

// manage registers a management tool: its arguments decode into In, and it acts for the
// caller's owner. It asks nothing, so it needs none of a call's machinery.
func manage[In any](el *Elicitor, server *mcp.Server, name, title, description string, h func(owner string, in In) (any, error)) {
	schema, decode := typedArgs[In](name)
	el.addTool(server, &mcp.Tool{Name: name, Title: title, Description: description}, schema,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in, err := decode(req.Params.Arguments)
			var out any
			if err == nil {
				out, err = h(el.Owner(req), in)
			}
			if err != nil {
				return ErrorResult(err), nil
			}
			return JSONResult(out, false), nil
		})
}

func (el *Elicitor) list(owner string, _ listInput) (any, error) {
	now := el.clk.Now()
	out := []listedElicitation{}
	for _, snap := range el.reg.List(owner, elicitation.Pending, elicitation.Active) {
		out = append(out, listedElicitation{ID: snap.ID, Tool: snap.Tool, Title: snap.Title, State: snap.State.String(),
			Round: snap.Round, Attempt: snap.Attempt, MaxAttempts: snap.MaxAttempts, AgeSeconds: now.Sub(snap.Created).Seconds(),
			Deadline: snap.Deadline.UTC().Format(time.RFC3339)})
	}
	// With a store, the owner's open 2026-07-28 questions held by other nodes too.
	for _, rec := range el.remoteRecords(owner) {
		out = append(out, listedElicitation{ID: rec.Question, Tool: rec.Tool, Title: rec.Title, State: elicitation.Active.String(),
			Round: rec.Handed, Attempt: rec.Attempts, MaxAttempts: el.maxAttempts, AgeSeconds: now.Sub(store.QuestionCreated(rec)).Seconds(),
			Deadline: rec.Due.UTC().Format(time.RFC3339)})
	}
	return map[string]any{"elicitations": out}, nil
}

// managed words a registry refusal of an owner-scoped operation.
func managed(err error, id string) error {
	var e *Error
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return Errorf(CodeNotFound, "not_found", "no open question of this session has id %q", id)
	case errors.As(err, &e):
		return e // the store's, say: the question has not ended, and a retry may do
	}
	return Errorf(CodeNotFound, "finished", "question %q has already ended", id)
}

func (el *Elicitor) cancelOne(owner string, in idInput) (any, error) {
	err := el.reg.Cancel(owner, in.ID, elicitation.Operator)
	if errors.Is(err, registry.ErrNotFound) && el.store != nil {
		return el.manageRemote(owner, forwarded{Op: "cancel", Owner: owner, ID: in.ID})
	}
	if err != nil {
		return nil, managed(err, in.ID)
	}
	return map[string]any{"id": in.ID, "state": "cancelled"}, nil
}

func (el *Elicitor) extendOne(owner string, in extendInput) (any, error) {
	if in.Seconds < 1 || in.Seconds > MaxExtendSeconds {
		return nil, Errorf(CodeInvalidArgument, "seconds_out_of_range", "seconds must be between 1 and %d, got %d", MaxExtendSeconds, in.Seconds)
	}
	d, err := el.reg.Extend(owner, in.ID, time.Duration(in.Seconds)*time.Second)
	if errors.Is(err, registry.ErrNotFound) && el.store != nil {
		return el.manageRemote(owner, forwarded{Op: "extend", Owner: owner, ID: in.ID, Seconds: in.Seconds})
	}
	if err != nil {
		return nil, managed(err, in.ID)
	}
	el.extendRecord(in.ID, d)
	return map[string]any{"id": in.ID, "deadline": d.UTC().Format(time.RFC3339)}, nil
}

func (el *Elicitor) readStats(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p50, p99, n := el.AnswerPercentiles()
	// The reader's own open questions, on this node and (with a store) on the others.
	owner := el.Owner(&mcp.CallToolRequest{Session: req.Session, Extra: req.Extra})
	mine := len(el.reg.List(owner, elicitation.Pending, elicitation.Active))
	elsewhere := len(el.remoteRecords(owner))
	b, err := json.MarshalIndent(struct {
		registry.Stats
		AnswerP50 float64 `json:"time_to_answer_p50_seconds"`
		AnswerP99 float64 `json:"time_to_answer_p99_seconds"`
		Answers   int     `json:"time_to_answer_samples"`
		Yours     int     `json:"your_open_questions"`
		Elsewhere int     `json:"your_open_questions_on_other_nodes"`
		Swept     int64   `json:"ended_for_dead_nodes"`
	}{el.reg.Stats(), p50.Seconds(), p99.Seconds(), n, mine + elsewhere, elsewhere, el.swept.Load()}, "", "  ")
	if err == nil {
		var all map[string]any
		if err = json.Unmarshal(b, &all); err == nil {
			maps.Copy(all, el.Counts().statsJSON())
			for k, f := range el.moreStats {
				all[k] = f()
			}
			b, err = json.MarshalIndent(all, "", "  ")
		}
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StatsURI, MIMEType: "application/json", Text: string(b)}}}, nil
}
