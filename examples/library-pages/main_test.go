package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/page/pagetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var contractPDF = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")

// The program's server and page, in-process, in both eras: the company in form mode, then
// the page, where the person first sends a key too short and a text file, then fixes both.
// The tool's result names the contract and leaves the key out.
func TestAccountIsConnectedThroughThePageInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			pages, stopPages := servePages(ln)
			server, el := newServer(pages)
			t.Cleanup(func() {
				require.NoError(t, el.Close(context.Background(), elicitation.Shutdown))
				require.NoError(t, stopPages(context.Background()))
			})

			var pageAfterFirstSend string
			u := elicittest.ConnectURL(t, server, era,
				elicittest.Accept(map[string]any{"company": "ACME"}),
				elicittest.OnPage(func(link string) {
					b := pagetest.New()
					b.Client.Timeout = 10 * time.Second
					status, html, err := b.Open(link)
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, status)
					status, html, err = b.Send(link, html, map[string]string{"api_key": "zq7x"},
						map[string][]byte{"contract": []byte("not a pdf")})
					require.NoError(t, err)
					require.Equal(t, http.StatusUnprocessableEntity, status)
					pageAfterFirstSend = html
					status, _, err = b.Send(link, html, map[string]string{"api_key": "k-0123456789"},
						map[string][]byte{"contract": contractPDF})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, status)
				}))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failsafe, as the other examples' tests
			defer cancel()
			res := u.Call(ctx, "connect_account", map[string]any{})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", p)
			assert.Equal(t, "ACME", p["company"])
			assert.Equal(t, "f.contract.bin (application/pdf, 48 bytes)", p["contract"])
			assert.Len(t, p["sha256"], 64)

			raw, _ := json.Marshal(res)
			assert.NotContains(t, string(raw), "k-0123456789", "the key is never in the result")
			assert.Contains(t, pageAfterFirstSend, "API key: must be at least 8 characters")
			assert.Contains(t, pageAfterFirstSend, "expected application/pdf")
			assert.NotContains(t, pageAfterFirstSend, "zq7x", "a secret is never echoed back")

			prompts := u.Prompts()
			require.Len(t, prompts, 2)
			assert.Equal(t, "form", prompts[0].Mode)
			assert.Equal(t, "url", prompts[1].Mode)
			assert.Contains(t, prompts[1].URL, "http://"+ln.Addr().String()+"/elicit/", "served by the program's own HTTP server")
		})
	}
}

// A client that cannot open links cannot be asked for the key: the tool says which fields
// need the page, rather than ask for a secret in the chat.
func TestAClientWithoutURLModeIsToldWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pages, stopPages := servePages(ln)
	server, el := newServer(pages)
	t.Cleanup(func() {
		require.NoError(t, el.Close(context.Background(), elicitation.Shutdown))
		require.NoError(t, stopPages(context.Background()))
	})
	u := elicittest.Connect(t, server, elicittest.Push)
	res := u.Call(context.Background(), "connect_account", map[string]any{})
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, "ELICITATION_UNSUPPORTED", p["code"])
	assert.Equal(t, "no_url_elicitation", p["reason"])
	assert.Contains(t, p["message"], "api_key, contract")
}
