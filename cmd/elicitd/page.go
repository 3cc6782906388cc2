package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/elicitd/elicitd/page"
)

// pageConfig is the settings of elicitd's page, through which secrets and files are asked
// (URL mode).
type pageConfig struct {
	addr     string // stdio: where the page listens once a question needs it; loopback
	url      string // the URL the page is reached at, when not its own address (a TLS proxy in front)
	maxBytes int64  // the largest file accepted
	maxHeld  int64  // the upload bytes all links may hold at once
	conn     connLimits
}

// check refuses a page reachable beyond this machine over plain HTTP: the MCP spec asks
// for HTTPS outside local use.
func (pc pageConfig) check() error {
	if pc.url != "" {
		u, err := url.Parse(pc.url)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("ELICITD_PAGE_URL must be a URL with a host and no path (https://elicitd.example.com, say), got %q", pc.url)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
			return fmt.Errorf("ELICITD_PAGE_URL must be https:// unless it is a loopback address (the page carries secrets), got %q", pc.url)
		}
	}
	host, _, err := net.SplitHostPort(pc.addr)
	switch {
	case err != nil:
		return fmt.Errorf("--page-addr must be host:port (127.0.0.1:0, say), got %q", pc.addr)
	case !loopbackHost(host) && pc.url == "":
		return fmt.Errorf("--page-addr must be a loopback address unless ELICITD_PAGE_URL names the https address in front of it, got %q", pc.addr)
	}
	return nil
}

// options are the page server's options, with its base URL from base.
func (pc pageConfig) options(base func() (string, error), log *slog.Logger) page.Options {
	return page.Options{Base: base, MaxFileBytes: pc.maxBytes, MaxHeldBytes: pc.maxHeld, Logger: log}
}

// base is the page's URL for a listener at addr: the configured one, else its own.
func (pc pageConfig) base(addr net.Addr) string {
	if pc.url != "" {
		return pc.url
	}
	return "http://" + addr.String()
}

// pageOnDemand is elicitd's page when serving stdio: it listens only once a question needs it.
type pageOnDemand struct {
	pc  pageConfig
	log *slog.Logger

	once  sync.Once
	hs    *http.Server
	base  string
	err   error
	pages *page.Server
}

func newPageOnDemand(pc pageConfig, log *slog.Logger) *pageOnDemand {
	p := &pageOnDemand{pc: pc, log: log}
	p.pages = page.New(pc.options(p.start, log))
	return p
}

// start listens on the page's address, the first time only.
func (p *pageOnDemand) start() (string, error) {
	p.once.Do(func() {
		ln, err := net.Listen("tcp", p.pc.addr)
		if err != nil {
			p.err = fmt.Errorf("the page cannot listen on %s: %w", p.pc.addr, err)
			p.log.Error("page not served", "error", p.err.Error())
			return
		}
		p.hs = p.pc.conn.server(p.pages, p.log)
		p.base = p.pc.base(ln.Addr())
		go func() { _ = p.hs.Serve(ln) }()
		p.log.Info("serving elicitd's page", "address", ln.Addr().String())
	})
	return p.base, p.err
}

// close stops the page's listener, if it was started.
func (p *pageOnDemand) close() {
	p.once.Do(func() { p.err = errors.New("closed") }) // never starts after this
	if p.hs != nil {
		_ = p.hs.Close()
	}
}
