// Command library-pages is elicitd as a library with its own web page: an MCP server on
// stdio whose tool, connect_account, asks the person in a typed form for a company name, an
// API key (a secret) and a signed contract (a file). The MCP spec forbids secrets in form
// mode and a form has no file type, so those two are asked on elicitd's page (package page)
// in URL mode: the client gets a one-time link, the person opens it in a browser and
// answers there, and the handler gets one typed answer. The page is served by the
// program's own HTTP server, on a loopback port.
//
// The client must declare URL elicitation, as elicitd's terminal client, elicit, does:
//
//	go run ./cmd/elicit call connect_account -- go run ./examples/library-pages
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/validator"
)

// Account is the form. The company is asked in form mode; the key and the contract on the
// page, after it.
type Account struct {
	Company  string            `json:"company" label:"Company" form:"required"`
	APIKey   string            `json:"api_key" label:"API key" form:"sensitive,required,minlen=8"`
	Contract *validator.Upload `json:"contract" label:"Signed contract (PDF)" form:"required,accept=application/pdf,max_bytes=1048576"`
}

var accountForm = ask.MustForm[Account]("Connect your account")

// Connected is connect_account's result: what the model may read. Never the key, nor the
// file's bytes.
type Connected struct {
	Company  string `json:"company"`
	Contract string `json:"contract"` // its name, type and size
	SHA256   string `json:"sha256"`
}

func connectAccount(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Connected, error) {
	a, err := accountForm.Ask(ctx, "To connect your account, give its API key and attach the signed contract.")
	if err != nil {
		return nil, Connected{}, err // declined, cancelled, timed out, no URL mode...: the error payload
	}
	// Here the tool would use a.APIKey and a.Contract.Bytes with the service.
	return nil, Connected{Company: a.Company, Contract: a.Contract.String(), SHA256: a.Contract.SHA256}, nil
}

// newServer returns the MCP server with its tool, asking through pages, and the Elicitor
// to close at the end.
func newServer(pages *page.Server) (*mcp.Server, *ask.Elicitor) {
	server := mcp.NewServer(&mcp.Implementation{Name: "accounts", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Timeout: 10 * time.Minute, Pages: pages})
	ask.AddTool(el, server, &mcp.Tool{Name: "connect_account",
		Description: "Connect the person's account: asks for its API key and the signed contract."}, connectAccount)
	return server, el
}

// servePages serves elicitd's page with the program's own HTTP server, on ln, and returns
// the page server and what stops the HTTP server.
func servePages(ln net.Listener) (*page.Server, func(context.Context) error) {
	base := "http://" + ln.Addr().String() // the links' address: the browser must reach it
	pages := page.New(page.Options{Base: func() (string, error) { return base, nil }})
	mux := http.NewServeMux()
	mux.Handle(page.Path, pages)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	}()
	return pages, func(ctx context.Context) error {
		err := hs.Shutdown(ctx)
		<-served
		return err
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	pages, stopPages := servePages(ln)
	server, el := newServer(pages)

	// stdout is the protocol: say what this is on stderr.
	log.Printf("library-pages example: an MCP server on stdio whose tool connect_account asks an API key and a PDF on its own page (%s); "+
		"drive it with: go run ./cmd/elicit call connect_account -- go run ./examples/library-pages", ln.Addr())
	err = server.Run(context.Background(), &mcp.StdioTransport{}) // until the client goes
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(err, el.Close(ctx, elicitation.Shutdown), stopPages(ctx))
	if err != nil {
		log.Fatal(err)
	}
}
