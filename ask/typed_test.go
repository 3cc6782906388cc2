package ask_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/page/pagetest"
	"github.com/elicitd/elicitd/validator"
)

type Contact struct {
	Name    string `json:"name" label:"Name" form:"required,minlen=2"`
	Company string `json:"company" label:"Company"`
}

type VAT struct {
	Number string `json:"vat" label:"VAT number" pattern:"^[A-Z]{2}[0-9]+$" form:"required"`
}

var contacts, vats = ask.MustForm[Contact]("Contact"), ask.MustForm[VAT]("VAT")

// A typed form with a typed follow-up in the same question: the caller gets both answers
// typed, in both eras, and the follow-up used no attempt.
func TestAskThenReturnsEveryRoundTypedInBothEras(t *testing.T) {
	type out struct {
		Contact Contact
		VAT     VAT
		Thens   int
	}
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New(), MaxAttempts: 1})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			ask.AddTool(el, server, &mcp.Tool{Name: "contact"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, out, error) {
				var o out
				c, data, err := contacts.AskThen(ctx, "Who are you?", func(c Contact, data map[string]any) elicitation.Next {
					o.Thens++
					if _, asked := data["vat"]; c.Company != "" && !asked {
						return elicitation.Next{FollowUp: vats.FollowUp("The VAT number of " + c.Company + "?")}
					}
					return elicitation.Next{}
				})
				if err != nil {
					return nil, out{}, err
				}
				o.Contact = c
				if o.VAT, err = vats.Decode(data); err != nil {
					return nil, out{}, err
				}
				return nil, o, nil
			})
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"name": "Ada", "company": "ACME"}),
				elicittest.Accept(map[string]any{"vat": "DE123"}))
			res := u.Call(failsafe(t), "contact", map[string]any{})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", p)
			assert.Equal(t, map[string]any{"Contact": map[string]any{"name": "Ada", "company": "ACME"},
				"VAT": map[string]any{"vat": "DE123"}, "Thens": 2.0}, p)
			assert.Equal(t, "The VAT number of ACME?", u.Prompts()[1].Message)
		})
	}
}

// Login is a typed form with a secret and a file: they are asked on elicitd's page, the
// user name in form mode first, and the answer is one Login.
type Login struct {
	User     string            `json:"user" label:"User name" form:"required"`
	APIKey   string            `json:"api_key" label:"API key" form:"sensitive,required,minlen=8"`
	Contract *validator.Upload `json:"contract" label:"Signed contract" form:"required,accept=application/pdf,max_bytes=65536"`
	Photo    validator.Upload  `json:"photo" label:"Photo"`
}

var logins = ask.MustForm[Login]("Sign in")

var contractPDF = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")

// pages is a page server behind a test HTTP server, as a library user serves it.
func pages(t *testing.T) *page.Server {
	t.Helper()
	var base string
	p := page.New(page.Options{Base: func() (string, error) { return base, nil }})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	base = srv.URL
	return p
}

// A typed form may ask a secret and files: through elicitd's page, in URL mode, in both
// eras; the page's own re-prompt (a key too short) uses no attempt.
func TestTypedSecretsAndFilesAreAskedOnThePageInBothEras(t *testing.T) {
	f := logins.Compiled().Fields()
	require.Equal(t, validator.File, f[2].Type)
	assert.True(t, f[1].Sensitive)
	assert.Equal(t, []string{"application/pdf"}, f[2].Accept)
	assert.EqualValues(t, 65536, f[2].MaxBytes)
	assert.NotContains(t, string(logins.Compiled().WireSchema()), "contract", "a file is never on the wire")

	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{Clock: clock.New(), MaxAttempts: 1, Pages: pages(t)})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			got := make(chan Login, 1)
			ask.AddTool(el, server, &mcp.Tool{Name: "login"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				l, err := logins.Ask(ctx, "Sign in, and attach the signed contract.")
				if err != nil {
					return nil, nil, err
				}
				got <- l
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in"}}}, nil, nil
			})
			u := elicittest.ConnectURL(t, server, era,
				elicittest.Accept(map[string]any{"user": "ada"}),
				elicittest.OnPage(func(link string) {
					b := pagetest.New()
					status, html, err := b.Open(link)
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, status)
					status, html, err = b.Send(link, html, map[string]string{"api_key": "short"}, map[string][]byte{"contract": contractPDF})
					require.NoError(t, err)
					assert.Equal(t, http.StatusUnprocessableEntity, status, "the page re-asks a key too short")
					status, _, err = b.Send(link, html, map[string]string{"api_key": "k-12345678"}, nil)
					require.NoError(t, err)
					assert.Equal(t, http.StatusOK, status)
				}))
			res := u.Call(failsafe(t), "login", map[string]any{})
			p, _ := elicittest.Payload(res)
			require.False(t, res.IsError, "%v", p)
			l := <-got
			assert.Equal(t, "ada", l.User)
			assert.Equal(t, "k-12345678", l.APIKey)
			require.NotNil(t, l.Contract)
			assert.Equal(t, "application/pdf", l.Contract.Type)
			assert.Equal(t, contractPDF, l.Contract.Bytes)
			assert.Zero(t, l.Photo, "an optional file left out")
			prompts := u.Prompts()
			require.Len(t, prompts, 2)
			assert.Equal(t, "form", prompts[0].Mode)
			assert.Equal(t, []string{"user"}, properties(t, prompts[0]), "a secret is never asked in form mode")
			assert.Equal(t, "url", prompts[1].Mode)
		})
	}
}

// Without a page server, a typed form with a secret cannot be asked: the error names it.
func TestTypedSecretsNeedThePage(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{})
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	ask.AddTool(el, server, &mcp.Tool{Name: "login"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_, err := logins.Ask(ctx, "Sign in.")
		return nil, nil, err
	})
	u := elicittest.ConnectURL(t, server, elicittest.Push)
	res := u.Call(failsafe(t), "login", map[string]any{})
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, ask.CodeUnsupported, p["code"])
	assert.Equal(t, "no_page", p["reason"])
	assert.Contains(t, p["message"], "api_key, contract, photo")
}
