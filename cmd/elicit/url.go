package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// openLink answers a URL-mode elicitation: the person answers on the server's page, in a
// browser. elicit shows the link (and with --open opens it), and accepts: the tool call's
// result comes once the page has been sent. A link shown before (a 2026-07-28 server hands
// it again while the page has not been sent) is not shown or opened twice.
func (c *client) openLink(p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if c.links == nil {
		c.links = map[string]bool{}
	}
	if c.links[p.URL] {
		fmt.Fprintf(c.stderr, "%s is still waiting for the page to be sent: %s\n", c.server, p.URL)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fmt.Fprintf(c.stderr, "%s asked to open %q, which is not a web link; declining\n", c.server, p.URL)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	c.links[p.URL] = true
	fmt.Fprintf(c.stderr, "%s asks (question %d): %s\nAnswer it in your browser: %s\n", c.server, c.asked, p.Message, p.URL)
	if c.inv.open {
		if err := openBrowser(p.URL); err != nil {
			fmt.Fprintf(c.stderr, "elicit: could not open a browser (%v); open the link yourself\n", err)
		}
	}
	fmt.Fprintf(c.stderr, "waiting for the page to be sent (Ctrl-C cancels)\n")
	return &mcp.ElicitResult{Action: "accept"}, nil
}

// pageSent reports the server's notifications/elicitation/complete.
func (c *client) pageSent(_ context.Context, _ *mcp.ElicitationCompleteNotificationRequest) {
	fmt.Fprintf(c.stderr, "%s: the page was sent\n", c.server)
}

// openBrowser opens u in the person's browser: $BROWSER if set, else the system's opener.
func openBrowser(u string) error {
	name, args := os.Getenv("BROWSER"), []string{u}
	if name == "" {
		switch runtime.GOOS {
		case "darwin":
			name = "open"
		case "windows":
			name, args = "rundll32", []string{"url.dll,FileProtocolHandler", u}
		default:
			name = "xdg-open"
		}
	}
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
