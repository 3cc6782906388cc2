package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/tools"
	"github.com/elicitd/elicitd/tools/shipping"
	"github.com/elicitd/elicitd/validator"
)

// templateConfig is --templates: the directories of template files, and the set loaded from
// them at start-up.
type templateConfig struct {
	dirs []string
	set  *templates.Set
}

// parse loads the templates of the directories named (comma-separated). Every problem of
// every file refuses start-up, all in one message.
func (c *templateConfig) parse(s string) error {
	c.dirs = splitList(s)
	if len(c.dirs) == 0 {
		return nil
	}
	set, err := loadTemplates(c.dirs)
	var te *templates.Error
	switch {
	case errors.As(err, &te) && len(te.Problems) == 1:
		return fmt.Errorf("refused: %v", err)
	case err != nil:
		return fmt.Errorf("refused, %v", err)
	}
	c.set = set
	return nil
}

// loadTemplates returns elicitd's templates: the shipping tools' built-in ones, then every
// template in dirs (which may replace a built-in's wording).
func loadTemplates(dirs []string) (*templates.Set, error) {
	set := templates.New()
	for _, b := range shipping.Templates() {
		if err := set.AddBuiltin(b); err != nil {
			panic(fmt.Sprintf("built-in template %s: %v", b.Name, err)) // fixed forms: any test catches it
		}
	}
	if err := set.Load(dirs...); err != nil {
		return nil, err
	}
	return set, nil
}

// served is what a server serves of its templates, replaced as a whole on a reload.
type served struct {
	mu    sync.Mutex // held while the templates are replaced
	set   *templates.Set
	uris  []string // the resources added for them
	names []string // the prompts added for them
	// choices are the options of the prompts' choice arguments, by prompt and argument:
	// what completion/complete offers.
	choices map[string]map[string][]validator.Option
	closed  bool // the server is closing: a reload that ends now serves nothing
}

// errClosing refuses a reload that ends once the server is closing.
var errClosing = errors.New("templates not reloaded: elicitd is stopping")

// serveTemplates adds ask_user asking set's templates, the shipping tools worded by theirs,
// a resource for each template, and a prompt for each template ask_user asks (but those
// with a secret or a file: tools.TemplatePrompts), replacing those of the set served
// before: the SDK then tells connected clients that the tool, resource and prompt lists
// changed. A question already
// asked keeps the form it was asked with. Once the server is closing, it serves nothing
// (errClosing).
func (s *server) serveTemplates(set *templates.Set) error {
	s.templates.mu.Lock()
	defer s.templates.mu.Unlock()
	if s.templates.closed {
		return errClosing
	}
	s.el.Add(s.mcp, tools.AskUser(tools.AskUserOptions{MaxAnswerBytes: s.opts.MaxAnswerBytes, Templates: set}))
	if old := s.templates.set; old == nil || !sameTemplates(old, set, shipping.CreateTemplate, shipping.RateTemplate) {
		// Added again only when reworded: each addition starts its UPS client afresh.
		s.el.Add(s.mcp, shipping.ToolsWith(s.opts.UPS, set)...)
	}
	var uris []string
	for _, t := range set.All() {
		uri := templates.URI(t.Name)
		uris = append(uris, uri)
		text := string(t.JSON)
		s.mcp.AddResource(&mcp.Resource{URI: uri, Name: t.Name, Title: t.Form.Title(), MIMEType: "application/json",
			Description: describeTemplate(t)},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: text}}}, nil
			})
	}
	var gone []string
	for _, uri := range s.templates.uris {
		if !slices.Contains(uris, uri) {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	prompts := tools.TemplatePrompts(tools.AskUserOptions{MaxAnswerBytes: s.opts.MaxAnswerBytes, Templates: set})
	var names []string
	for _, p := range prompts {
		names = append(names, p.Name)
	}
	var goneNames []string
	for _, n := range s.templates.names {
		if !slices.Contains(names, n) {
			goneNames = append(goneNames, n)
		}
	}
	choices := s.templatePrompts(prompts, goneNames)
	s.templates.set, s.templates.uris, s.templates.names, s.templates.choices = set, uris, names, choices
	return nil
}

// sameTemplates reports whether a and b have the same templates of these names.
func sameTemplates(a, b *templates.Set, names ...string) bool {
	for _, name := range names {
		ta, inA := a.Get(name)
		tb, inB := b.Get(name)
		if inA != inB || inA && !bytes.Equal(ta.JSON, tb.JSON) {
			return false
		}
	}
	return true
}

// describeTemplate is a template's resource description. It names no file: a client has no
// business with the server's paths.
func describeTemplate(t *templates.Template) string {
	switch {
	case t.Tool != "" && t.Source == "":
		return fmt.Sprintf("The form %s asks, with its built-in wording: it asks the fields a request lacks. A template file named %s.json rewords it.", t.Tool, t.Name)
	case t.Tool != "":
		return fmt.Sprintf("The form %s asks, as the operator reworded it: it asks the fields a request lacks.", t.Tool)
	}
	return fmt.Sprintf("A form the operator defined: ask_user asks it with {\"template\": %q}.", t.Name)
}

// reloadTemplates loads the template directories again. A good set replaces the one served;
// a bad one is logged, problem by problem, and the set served stays.
func (s *server) reloadTemplates() error {
	set, err := loadTemplates(s.opts.TemplateDirs)
	if err != nil {
		var te *templates.Error
		if errors.As(err, &te) {
			for _, p := range te.Problems {
				s.log.Warn("template problem", "problem", p.String())
			}
		}
		s.log.Warn("templates not reloaded: the templates served stay until every problem is fixed", "error", firstLine(err))
		return err
	}
	if err := s.serveTemplates(set); err != nil {
		s.log.Warn("templates not reloaded: elicitd is stopping")
		return err
	}
	s.log.Info("templates reloaded", "templates", strings.Join(set.Names(), ","))
	return nil
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// reloadStopWait bounds how long stopping the SIGHUP watcher waits for a reload under way.
// A reload stuck reading a file (a hung network mount) is abandoned: it serves nothing once
// the server is closed.
const reloadStopWait = 2 * time.Second

// watchReloads reloads the templates on every SIGHUP until the returned stop is called,
// which waits for a reload under way, for reloadStopWait at most.
func (s *server) watchReloads() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	stopWatching := watch(hup, func() { _ = s.reloadTemplates() }, reloadStopWait)
	return func() {
		signal.Stop(hup)
		s.templates.mu.Lock()
		s.templates.closed = true // a reload that ends from now on serves nothing
		s.templates.mu.Unlock()
		if !stopWatching() {
			s.log.Warn("a template reload is stuck, reading the template directories: abandoned", "waited", reloadStopWait)
		}
	}
}

// watch calls reload on every signal on hup until the returned stop is called, which waits
// for a reload under way for wait at most. Stop reports whether the watcher ended in time;
// when it did not, the reload goes on, abandoned, and the watcher ends after it.
func watch(hup <-chan os.Signal, reload func(), wait time.Duration) (stop func() (inTime bool)) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-hup:
				select {
				case <-done: // stopped with a signal pending: no reload
					return
				default:
				}
				reload()
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() bool {
		once.Do(func() { close(done) })
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-t.C:
			return false
		}
	}
}
