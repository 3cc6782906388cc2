package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools/preflight"
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

// Tools returns create_shipment and rate_shipment, which complete a partial UPS request by
// asking the person for exactly what it lacks, then call UPS with cfg (without credentials,
// only dry_run works). They use package ask as any tool author would; a server adds them with
// ask.Elicitor.Add. Their forms are worded as the built-in templates (Templates) are.
func Tools(cfg ups.Config) []ask.Tool { return ToolsWith(cfg, nil) }

// ToolsWith is Tools with each tool's form worded by the template of its name in set
// (CreateTemplate, RateTemplate), when a file has replaced the built-in one there; a nil set
// gives the built-in wording. The wording is set's as it is now: after a reload, add the
// tools again. A question already asked keeps its wording.
func ToolsWith(cfg ups.Config, set *templates.Set) []ask.Tool {
	t := &tools{cfg: cfg, ups: ups.New(cfg), configured: cfg.Configured(),
		words: [2]*wording{Create: wordingOf(Create, set), Rate: wordingOf(Rate, set)}}
	// Both ask what the request lacks (the same for the same arguments and answers), and
	// call UPS only after their last question: they may be replayed on another node, or
	// after a restart.
	all := []ask.Tool{
		ask.NewTool("create_shipment", "Create a UPS shipment",
			"Create a UPS shipment from a complete or partial ShipmentRequest body. Missing required fields are asked from the person in one form; fields a form cannot carry are listed for you to add. With dry_run the completed body is returned instead of calling UPS.",
			t.create),
		ask.NewTool("rate_shipment", "Rate a UPS shipment",
			"Rate (or shop rates for) a UPS shipment from a complete or partial RateRequest body, asking the person for missing required fields. request_option is Rate, Shop, Ratetimeintransit or Shoptimeintransit.",
			t.rate),
	}
	for i := range all {
		all[i].Replayable = true
		all[i].Tasks = "optional" // one that has to ask may be a task
	}
	return all
}

// tools is the shipping tools' configuration.
type tools struct {
	cfg        ups.Config
	ups        *ups.Client // for the endpoint always, for calls only when configured
	configured bool        // credentials are set
	words      [2]*wording // by Kind
}

func (t *tools) create(ctx context.Context, in CreateShipmentInput) (json.RawMessage, error) {
	q := url.Values{}
	if in.AdditionalAddressValidation != "" {
		q.Set("additionaladdressvalidation", in.AdditionalAddressValidation)
	}
	return t.ship(ctx, shipJob{kind: Create, body: in.RequestBody, path: ups.ShipPath(orDefault(in.Version)), query: q,
		dryRun: in.DryRun, callOpt: ups.CallOptions{TransID: in.TransID, TransactionSrc: in.TransactionSrc}})
}

func (t *tools) rate(ctx context.Context, in RateShipmentInput) (json.RawMessage, error) {
	option, err := CanonicalOption(in.RequestOption)
	if err != nil {
		return nil, ask.Errorf(CodeMalformed, "invalid_request_option", "request_option %q is not one of Rate, Shop, Ratetimeintransit, Shoptimeintransit", in.RequestOption)
	}
	q := url.Values{}
	if in.AdditionalInfo != "" {
		q.Set("additionalinfo", in.AdditionalInfo)
	}
	return t.ship(ctx, shipJob{kind: Rate, option: option, body: in.RequestBody, path: ups.RatePath(orDefault(in.Version), option), query: q,
		dryRun: in.DryRun, callOpt: ups.CallOptions{TransID: in.TransID, TransactionSrc: in.TransactionSrc}})
}

// shipJob is one create or rate call being completed.
type shipJob struct {
	kind    Kind
	option  string
	body    map[string]any
	path    string
	query   url.Values
	dryRun  bool
	callOpt ups.CallOptions
}

func (j shipJob) noun() string {
	if j.kind == Rate {
		return "rate request"
	}
	return "shipment creation"
}

// header is the line above a shipping form that asks n fields.
func (j shipJob) header(n int) string {
	return fmt.Sprintf("Missing %d required field(s) for %s.", n, j.noun())
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
	var m *Malformed
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
func (t *tools) ship(ctx context.Context, job shipJob) (json.RawMessage, error) {
	if !job.dryRun && !t.configured {
		return nil, ask.Errorf(CodeUPSNotConfigured, "no_credentials",
			"UPS credentials are not set (UPS_CLIENT_ID and UPS_CLIENT_SECRET); use dry_run to complete the body without calling UPS")
	}
	if job.body == nil {
		job.body = map[string]any{}
	}
	env := Env{AccountNumber: t.cfg.AccountNumber}
	res, err := Check(job.body, job.kind, job.option, env)
	if err != nil {
		return nil, malformedError(err)
	}
	if st := res.Structural(); len(st) > 0 {
		return nil, structuralError(st)
	}
	if len(res.Missing) == 0 {
		return t.finish(ctx, job, res.Body) // complete: nothing to ask
	}
	words := t.words[job.kind]
	res.Missing = words.reword(res.Missing)
	loop := &shipLoop{job: job, env: env, words: words}
	form, err := loop.form(res)
	if err != nil {
		return nil, ask.Errorf(ask.CodeFailed, "form", "%s", err.Error())
	}
	o, err := ask.Outcome(ctx, ask.Question{Title: words.title, Message: job.header(len(res.Missing)), Form: form,
		Then: loop.next, Reprompt: job.reprompt, Missing: missingOf(res.Missing), Template: job.kind.TemplateName()})
	if err != nil {
		return nil, err
	}
	if o.State != elicitation.Completed {
		return nil, ask.OutcomeError(o)
	}
	return t.finish(ctx, job, o.Value.(map[string]any))
}

// reprompt words the prompt after an invalid answer: the problems, then the header counting
// the fields asked again (the valid answers are kept).
func (j shipJob) reprompt(errs []validator.FieldError, asked int) string {
	var msg strings.Builder
	msg.WriteString("Please correct the following:\n")
	for _, fe := range errs {
		fmt.Fprintf(&msg, "- %s: %s\n", fe.Label, strings.TrimPrefix(fe.Message, fe.Label+": "))
	}
	msg.WriteString("\n" + j.header(asked))
	return msg.String()
}

// shipLoop is the state of one shipping elicitation, owned by its actor once started: the
// body being completed and the rules the current form asks.
type shipLoop struct {
	job     shipJob
	env     Env
	words   *wording
	body    map[string]any
	current []preflight.Rule
}

func (l *shipLoop) form(res Result) (*validator.Compiled, error) {
	l.body, l.current = res.Body, res.Missing
	return preflight.Form(l.words.title, res.Missing, res.Body)
}

// next writes a valid answer back, checks the body again, and asks for what is newly
// required, or finishes with the completed body as the outcome's Value.
func (l *shipLoop) next(answers map[string]any) elicitation.Next {
	if _, err := preflight.WriteBack(l.body, l.current, answers); err != nil {
		return elicitation.Next{Err: malformedError(err)}
	}
	res, err := Check(l.body, l.job.kind, l.job.option, l.env)
	if err != nil {
		return elicitation.Next{Err: malformedError(err)}
	}
	if st := res.Structural(); len(st) > 0 {
		return elicitation.Next{Err: structuralError(st)}
	}
	if len(res.Missing) == 0 {
		return elicitation.Next{Value: res.Body}
	}
	res.Missing = l.words.reword(res.Missing)
	var msg strings.Builder
	msg.WriteString("Still missing after elicitation:\n")
	for _, r := range res.Missing {
		fmt.Fprintf(&msg, "- %s\n", r.Prompt)
	}
	// The header counts what this round asks, not what the first did.
	msg.WriteString("\n" + l.job.header(len(res.Missing)))
	form, err := l.form(res)
	if err != nil {
		return elicitation.Next{Err: ask.Errorf(ask.CodeFailed, "form", "%s", err.Error())}
	}
	return elicitation.Next{FollowUp: ask.FollowUp(msg.String(), form)}
}

// finish turns the completed body into the tool's result: the dry-run body, or UPS's
// answer.
func (t *tools) finish(ctx context.Context, job shipJob, body map[string]any) (json.RawMessage, error) {
	if job.kind == Rate {
		RenamePackaging(body)
	}
	if job.dryRun {
		// The endpoint as configured, whether or not credentials are set.
		endpoint := t.ups.Endpoint(job.path, job.query)
		return json.Marshal(map[string]any{"endpoint": endpoint, "request_body": body})
	}
	out, err := t.ups.Post(ctx, job.path, job.query, body, job.callOpt)
	if err != nil {
		var apiErr *ups.APIError
		if errors.As(err, &apiErr) {
			e := ask.Errorf(CodeUPSAPIError, "ups_error", "%s", apiErr.Message)
			e.Details = apiErr
			return nil, e
		}
		return nil, ask.Errorf(CodeUPSAPIError, "unreachable", "UPS could not be reached: %s", err.Error())
	}
	return out, nil
}
