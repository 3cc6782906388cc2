package ask_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/validator"
)

// contactForm has a conditional field (asked in a follow-up round once "company" is
// answered); vatForm is a Then's follow-up.
var (
	contactForm = mustCompile(validator.Form{Title: "Contact", Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true, MinLength: validator.Ptr(2)},
		{Name: "company", Type: validator.Text, Label: "Company"},
		{Name: "role", Type: validator.Text, Label: "Role", Required: true, When: &validator.Condition{Field: "company", Present: true}},
	}})
	vatForm = mustCompile(validator.Form{Title: "VAT", Fields: []validator.Field{
		{Name: "vat", Type: validator.Text, Label: "VAT number", Required: true, Pattern: "^[A-Z]{2}[0-9]+$"},
	}})
)

// contactTool asks contactForm and, through Then, vatForm once the company is known: three
// rounds for one question. It returns the answers Ask gave it.
func contactTool(server *mcp.Server, el *ask.Elicitor) {
	ask.AddTool(el, server, &mcp.Tool{Name: "contact"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]any, error) {
		data, err := ask.Ask(ctx, ask.Question{Title: "Contact", Message: "Who are you?", Form: contactForm,
			Then: func(data map[string]any) elicitation.Next {
				if _, asked := data["vat"]; asked {
					return elicitation.Next{}
				}
				return elicitation.Next{FollowUp: ask.FollowUp("And the company's VAT number?", vatForm)}
			}})
		if err != nil {
			return nil, nil, err
		}
		return nil, data, nil
	})
}

// Rounds that follow a valid answer (a conditional field's, a Then's follow-up) use no
// attempt, in both eras: with one attempt allowed, a person who answers each of three
// rounds correctly gets an answer; only the invalid answer uses attempts, and the last one
// may be used up in a follow-up. The caller gets every round's answers.
func TestFollowUpRoundsUseNoAttemptInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New(), MaxAttempts: 1})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			contactTool(server, el)
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"name": "Ada", "company": "ACME"}),
				elicittest.Accept(map[string]any{"role": "CTO"}),
				elicittest.Accept(map[string]any{"vat": "DE123"}))
			res := u.Call(failsafe(t), "contact", map[string]any{})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", p)
			assert.Equal(t, map[string]any{"name": "Ada", "company": "ACME", "role": "CTO", "vat": "DE123"}, p,
				"every round's answers")
			assert.Len(t, u.Prompts(), 3)
			assert.Zero(t, u.Left())
		})
	}
}

// With two attempts, an invalid first answer uses one; the follow-ups are free; an invalid
// answer to the last follow-up uses the other, and the question ends out of attempts.
func TestInvalidAnswersInAnyRoundUseTheAttemptsInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New(), MaxAttempts: 2})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			contactTool(server, el)
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"name": "A", "company": "ACME"}),
				elicittest.Accept(map[string]any{"name": "Ada"}),
				elicittest.Accept(map[string]any{"role": "CTO"}),
				elicittest.Accept(map[string]any{"vat": "123"}))
			res := u.Call(failsafe(t), "contact", map[string]any{})
			require.True(t, res.IsError)
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, ask.CodeMaxRetries, p["code"])
			elicittest.AssertOnlyFieldError(t, elicittest.FieldErrors(res), "vat", "pattern")
			assert.Len(t, u.Prompts(), 4, "two attempts, and two follow-ups that used none")
		})
	}
}

// failsafeBound bounds every wait of these tests for something that takes a moment: far
// longer than it takes, even on a slow, loaded 2-core machine running the whole suite with
// the race detector, so that only what never happens fails a test.
const failsafeBound = 30 * time.Second

// failsafe bounds a call that should return at once, so a question that hangs fails its
// test rather than the whole run.
func failsafe(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failsafeBound)
	t.Cleanup(cancel)
	return ctx
}

// A Then that never stops asking is ended at Options.MaxRounds, in both eras, with its own
// error code; the error is for errors.Is too.
func TestAThenThatKeepsAskingEndsAtMaxRoundsInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New(), MaxRounds: 3})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			errs := make(chan error, 1)
			ask.AddTool(el, server, &mcp.Tool{Name: "loop"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				_, err := ask.Ask(ctx, ask.Question{Message: "Your phone?", Form: phoneForm,
					Then: func(map[string]any) elicitation.Next {
						return elicitation.Next{FollowUp: ask.FollowUp("Another phone?", phoneForm)}
					}})
				errs <- err
				return nil, nil, err
			})
			phone := elicittest.Accept(map[string]any{"phone": "555"})
			u := elicittest.Connect(t, server, era, phone, phone, phone)
			res := u.Call(failsafe(t), "loop", map[string]any{})
			require.True(t, res.IsError)
			err := <-errs
			assert.ErrorIs(t, err, ask.ErrTooManyRounds)
			var e *ask.Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, "too_many_rounds", e.Reason)
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, ask.CodeTooManyRounds, p["code"])
			assert.Contains(t, p["message"], "3 rounds")
			assert.Len(t, u.Prompts(), 3, "no fourth round")
		})
	}
}

// After a Then's follow-up on another form, Ask still returns the first form's answers:
// every round's, merged.
func TestAskReturnsEveryRoundsAnswersInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New()})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			contactTool(server, el)
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"name": "Ada"}),
				elicittest.Accept(map[string]any{"vat": "DE123"}))
			res := u.Call(failsafe(t), "contact", map[string]any{})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", p)
			assert.Equal(t, map[string]any{"name": "Ada", "vat": "DE123"}, p)
		})
	}
}
