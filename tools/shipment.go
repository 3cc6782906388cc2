package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/tools/preflight"
	"github.com/elicitd/elicitd/tools/shipping"
	"github.com/elicitd/elicitd/tools/ups"
	"github.com/elicitd/elicitd/validator"
)

// Error codes of the shipping tools.
const (
	CodeMalformed          = "MALFORMED_REQUEST"
	CodeStructural         = "STRUCTURAL_FIELDS_REQUIRED"
	CodeUPSNotConfigured   = "UPS_NOT_CONFIGURED"
	CodeUPSAPIError        = "UPS_API_ERROR"
	defaultShipmentVersion = "v2409"
)

// CreateShipmentInput is create_shipment's input.
type CreateShipmentInput struct {
	RequestBody                 map[string]any `json:"request_body" jsonschema:"the UPS ShipmentRequest body, complete or partial"`
	Version                     string         `json:"version,omitempty" jsonschema:"UPS API version, default v2409"`
	AdditionalAddressValidation string         `json:"additional_address_validation,omitempty" jsonschema:"UPS additionaladdressvalidation query value, e.g. city"`
	DryRun                      bool           `json:"dry_run,omitempty" jsonschema:"complete the body and return it with its endpoint instead of calling UPS"`
	TransID                     string         `json:"trans_id,omitempty" jsonschema:"transId header; a fresh UUID by default"`
	TransactionSrc              string         `json:"transaction_src,omitempty" jsonschema:"transactionSrc header; elicitd by default"`
}

// RateShipmentInput is rate_shipment's input.
type RateShipmentInput struct {
	RequestOption  string         `json:"request_option" jsonschema:"Rate, Shop, Ratetimeintransit or Shoptimeintransit (any case)"`
	RequestBody    map[string]any `json:"request_body" jsonschema:"the UPS RateRequest body, complete or partial"`
	Version        string         `json:"version,omitempty" jsonschema:"UPS API version, default v2409"`
	AdditionalInfo string         `json:"additional_info,omitempty" jsonschema:"UPS additionalinfo query value, e.g. timeintransit"`
	DryRun         bool           `json:"dry_run,omitempty" jsonschema:"complete the body and return it with its endpoint instead of calling UPS"`
	TransID        string         `json:"trans_id,omitempty" jsonschema:"transId header; a fresh UUID by default"`
	TransactionSrc string         `json:"transaction_src,omitempty" jsonschema:"transactionSrc header; elicitd by default"`
}

// shipJob is one create or rate call being completed.
type shipJob struct {
	kind    shipping.Kind
	option  string
	body    map[string]any
	path    string
	query   url.Values
	dryRun  bool
	callOpt ups.CallOptions
}

func (j shipJob) noun() string {
	if j.kind == shipping.Rate {
		return "rate request"
	}
	return "shipment creation"
}

// header is the line above a shipping form that asks n fields.
func (j shipJob) header(n int) string {
	return fmt.Sprintf("Missing %d required field(s) for %s.", n, j.noun())
}

func (s *Server) addShipping() {
	addTool(s.MCP, s.el, &mcp.Tool{Name: "create_shipment", Title: "Create a UPS shipment",
		Description: "Create a UPS shipment from a complete or partial ShipmentRequest body. Missing required fields are asked from the person in one form; fields a form cannot carry are listed for you to add. With dry_run the completed body is returned instead of calling UPS."},
		func(ctx context.Context, req *mcp.CallToolRequest, in CreateShipmentInput) *mcp.CallToolResult {
			q := url.Values{}
			if in.AdditionalAddressValidation != "" {
				q.Set("additionaladdressvalidation", in.AdditionalAddressValidation)
			}
			job := shipJob{kind: shipping.Create, body: in.RequestBody, path: ups.ShipPath(orDefault(in.Version)), query: q,
				dryRun: in.DryRun, callOpt: ups.CallOptions{TransID: in.TransID, TransactionSrc: in.TransactionSrc}}
			return s.ship(ctx, req, job)
		})
	addTool(s.MCP, s.el, &mcp.Tool{Name: "rate_shipment", Title: "Rate a UPS shipment",
		Description: "Rate (or shop rates for) a UPS shipment from a complete or partial RateRequest body, asking the person for missing required fields. request_option is Rate, Shop, Ratetimeintransit or Shoptimeintransit."},
		func(ctx context.Context, req *mcp.CallToolRequest, in RateShipmentInput) *mcp.CallToolResult {
			option, err := shipping.CanonicalOption(in.RequestOption)
			if err != nil {
				return ask.Errorf(CodeMalformed, "invalid_request_option", "request_option %q is not one of Rate, Shop, Ratetimeintransit, Shoptimeintransit", in.RequestOption).Result()
			}
			q := url.Values{}
			if in.AdditionalInfo != "" {
				q.Set("additionalinfo", in.AdditionalInfo)
			}
			job := shipJob{kind: shipping.Rate, option: option, body: in.RequestBody, path: ups.RatePath(orDefault(in.Version), option), query: q,
				dryRun: in.DryRun, callOpt: ups.CallOptions{TransID: in.TransID, TransactionSrc: in.TransactionSrc}}
			return s.ship(ctx, req, job)
		})
}

func orDefault(version string) string {
	if strings.TrimSpace(version) == "" {
		return defaultShipmentVersion
	}
	return strings.TrimSpace(version)
}

func missingOf(rules []preflight.Rule) []ask.Missing {
	out := make([]ask.Missing, len(rules))
	for i, r := range rules {
		out[i] = ask.Missing{DotPath: r.DotPath, FlatKey: r.FlatKey, Prompt: r.Prompt}
	}
	return out
}

func malformedError(err error) *ask.Error {
	var m *shipping.Malformed
	if errors.As(err, &m) {
		e := ask.Errorf(CodeMalformed, m.Reason, "%s", m.Error())
		e.Details = map[string]any{"path": m.Path}
		return e
	}
	return ask.Errorf(CodeMalformed, "malformed_structure", "%s", err.Error())
}

func structuralError(rules []preflight.Rule) *ask.Error {
	e := ask.Errorf(CodeStructural, "structural", "add these to request_body and call again; a form cannot ask for them")
	e.Missing = missingOf(rules)
	return e
}

// ship runs the loop of docs/shipping.md: malformed -> structural -> unsupported client -> one
// form -> re-prompts keeping valid answers -> follow-ups for newly required fields -> UPS.
func (s *Server) ship(ctx context.Context, req *mcp.CallToolRequest, job shipJob) *mcp.CallToolResult {
	if !job.dryRun && s.ups == nil {
		return ask.Errorf(CodeUPSNotConfigured, "no_credentials",
			"UPS credentials are not set (UPS_CLIENT_ID and UPS_CLIENT_SECRET); use dry_run to complete the body without calling UPS").Result()
	}
	if job.body == nil {
		job.body = map[string]any{}
	}
	res, err := shipping.Check(job.body, job.kind, job.option, shipping.Env{AccountNumber: s.opts.UPS.AccountNumber})
	if err != nil {
		return malformedError(err).Result()
	}
	if st := res.Structural(); len(st) > 0 {
		return structuralError(st).Result()
	}
	if len(res.Missing) == 0 {
		return s.finishShipment(ctx, job, res.Body) // complete: nothing to ask
	}
	loop := &shipLoop{job: job, body: res.Body, env: s.opts.UPS.AccountNumber}
	form, err := loop.form(res)
	if err != nil {
		return ask.Errorf(ask.CodeFailed, "form", "%s", err.Error()).Result()
	}
	o, err := ask.Outcome(ctx, ask.Question{Title: "UPS " + job.noun(), Message: job.header(len(res.Missing)), Form: form.compiled, Wire: form,
		Then: loop.next, Missing: missingOf(res.Missing)})
	if err != nil {
		return errorResult(err)
	}
	if o.State != elicitation.Completed {
		e := ask.OutcomeError(o)
		if errs, ok := o.Data["errors"].([]validator.FieldError); ok && len(errs) > 0 {
			e.Errors = errs
		}
		return e.Result()
	}
	if e, ok := o.Data["error"].(*ask.Error); ok {
		return e.Result()
	}
	body, _ := o.Data["body"].(map[string]any)
	return s.finishShipment(ctx, job, body)
}

// shipLoop is the state of one shipping elicitation, owned by its actor once started: the
// body being completed and the rules the current form asks.
type shipLoop struct {
	job     shipJob
	env     string
	body    map[string]any
	current []preflight.Rule
}

// collectForm lets every answer through to the continuation with its problems, so that
// valid answers are kept and only the rest is asked again.
type collectForm struct{ compiled *validator.Compiled }

func (f collectForm) WireSchema() json.RawMessage { return f.compiled.WireSchema() }

func (f collectForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	data, errs := f.compiled.ValidatePartial(content)
	if len(errs) == 1 && errs[0].Constraint == "size" {
		return nil, errs // nothing was read: the engine asks the same form again
	}
	return map[string]any{"answers": data, "errors": errs}, nil
}

func (l *shipLoop) form(res shipping.Result) (collectForm, error) {
	l.body, l.current = res.Body, res.Missing
	c, err := preflight.Form("UPS "+l.job.noun(), res.Missing, res.Body)
	return collectForm{c}, err
}

// next writes the valid answers back, checks the body again, and asks for what is invalid
// or newly required, or finishes.
func (l *shipLoop) next(data map[string]any) elicitation.Next {
	answers, _ := data["answers"].(map[string]any)
	errs, _ := data["errors"].([]validator.FieldError)
	if _, err := preflight.WriteBack(l.body, l.current, answers); err != nil {
		return elicitation.Next{Data: map[string]any{"error": malformedError(err)}}
	}
	res, err := shipping.Check(l.body, l.job.kind, l.job.option, shipping.Env{AccountNumber: l.env})
	if err != nil {
		return elicitation.Next{Data: map[string]any{"error": malformedError(err)}}
	}
	if st := res.Structural(); len(st) > 0 {
		return elicitation.Next{Data: map[string]any{"error": structuralError(st)}}
	}
	if len(res.Missing) == 0 {
		return elicitation.Next{Data: map[string]any{"body": res.Body}}
	}
	var msg strings.Builder
	if len(errs) > 0 {
		msg.WriteString("Please correct the following:\n")
		for _, fe := range errs {
			fmt.Fprintf(&msg, "- %s: %s\n", fe.Label, strings.TrimPrefix(fe.Message, fe.Label+": "))
		}
	} else {
		msg.WriteString("Still missing after elicitation:\n")
		for _, r := range res.Missing {
			fmt.Fprintf(&msg, "- %s\n", r.Prompt)
		}
	}
	// The header counts what this round asks, not what the first did.
	msg.WriteString("\n" + l.job.header(len(res.Missing)))
	form, err := l.form(res)
	if err != nil {
		return elicitation.Next{Data: map[string]any{"error": ask.Errorf(ask.CodeFailed, "form", "%s", err.Error())}}
	}
	return elicitation.Next{Data: map[string]any{"body": res.Body, "errors": errs}, FollowUp: &elicitation.Step{Message: msg.String(), Form: form}}
}

// finishShipment turns the completed body into the tool's result: the dry-run body, or
// UPS's answer.
func (s *Server) finishShipment(ctx context.Context, job shipJob, body map[string]any) *mcp.CallToolResult {
	if job.kind == shipping.Rate {
		shipping.RenamePackaging(body)
	}
	if job.dryRun {
		// The endpoint as configured, whether or not credentials are set.
		endpoint := ups.New(s.opts.UPS).Endpoint(job.path, job.query)
		return ask.JSONResult(map[string]any{"endpoint": endpoint, "request_body": body}, false)
	}
	out, err := s.ups.Post(ctx, job.path, job.query, body, job.callOpt)
	if err != nil {
		var apiErr *ups.APIError
		if errors.As(err, &apiErr) {
			e := ask.Errorf(CodeUPSAPIError, "ups_error", "%s", apiErr.Message)
			e.Details = apiErr
			return e.Result()
		}
		return ask.Errorf(CodeUPSAPIError, "unreachable", "UPS could not be reached: %s", err.Error()).Result()
	}
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
}
