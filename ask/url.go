package ask

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/validator"
)

// URL mode. A field that must not be asked in form mode (a secret, a file) is asked through
// elicitd's own page (package page): the client is sent a URL elicitation, the person opens
// the link and answers there, and the page hands the answer to the question. A question
// that mixes plain and page fields asks the plain ones in form mode first, then the rest
// on the page, keeping the first round's answers: the tool gets one answer. A client that
// declares URL elicitation but no forms gets every field on the page.
//
// Push era: elicitation/create with mode "url" and an elicitationId; the client's accept
// only says the person agreed to open it; notifications/elicitation/complete follows when
// the page has been submitted. Pull era: a URL input request; the retry that brings its
// accept completes once the page has been submitted (waiting up to Options.PageWait for it), and
// otherwise is handed the same link again.

// DefaultPageWait is Options.PageWait's default.
const DefaultPageWait = 30 * time.Second

// pageForm returns the compiled form of a prompt that is asked on the page.
func pageForm(f elicitation.CompiledForm) (*validator.Compiled, bool) {
	k, ok := f.(pageRound)
	return k.Compiled, ok
}

// isPage reports whether pr is asked on the page.
func isPage(pr elicitation.Prompt) bool {
	_, ok := pageForm(pr.Form)
	return ok
}

// pageRound is keepForm for a round asked on the page. The page shows an answer's problems
// itself, so one reaches the question only once it is valid; should it not be, the re-prompt
// is on the page too.
type pageRound struct{ keepForm }

func (f pageRound) Keep(content map[string]any) (map[string]any, []validator.FieldError, elicitation.CompiledForm) {
	data, errs, retry := f.keepForm.Keep(content)
	if k, ok := retry.(keepForm); ok {
		return data, errs, pageRound{k}
	}
	return data, errs, retry
}

func names(ms []Missing) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.FlatKey
	}
	return strings.Join(out, ", ")
}

// links are the pages a question opened, one a round; they close when it ends.
type links struct {
	el    *Elicitor
	title string
	// Push era: the session told when a page has been submitted, and under what context.
	ss  *mcp.ServerSession
	ctx context.Context

	mu     sync.Mutex
	open   map[int]*page.Link // by round
	closed bool
}

// errLinksClosed is link's error once the question has ended.
var errLinksClosed = errors.New("ask: the question has ended")

func newLinks(el *Elicitor, title string) *links {
	return &links{el: el, title: title, open: map[int]*page.Link{}}
}

// link returns the link of pr's round, opening it if needed.
func (ls *links) link(pr elicitation.Prompt) (*page.Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.open[pr.Round]; l != nil {
		return l, nil
	}
	if ls.closed {
		return nil, errLinksClosed
	}
	form, _ := pageForm(pr.Form)
	l, err := ls.el.pages.Open(page.Question{Title: ls.title, Message: pr.Message, Form: form,
		Submit: func(l *page.Link, content map[string]any) error {
			if ls.ss != nil {
				// Before the answer: once the question has its answer the call may return,
				// and over Streamable HTTP the notification goes out on the call's stream.
				_ = ls.ss.NotifyElicitationComplete(ls.ctx, &mcp.ElicitationCompleteParams{ElicitationID: l.ID})
			}
			return pr.Elicitation.Answer(elicitation.Answer{Round: pr.Round, Action: elicitation.Accept, Content: content})
		}})
	if err != nil {
		return nil, err
	}
	ls.open[pr.Round] = l
	return l, nil
}

// get returns the link of round, if one was opened.
func (ls *links) get(round int) *page.Link {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.open[round]
}

// close closes every link: the question has ended.
func (ls *links) close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closed = true
	for r, l := range ls.open {
		l.Close()
		delete(ls.open, r)
	}
}

// urlParams is the URL elicitation of a page round; the pull era has no elicitationId.
func urlParams(pr elicitation.Prompt, l *page.Link, push bool) *mcp.ElicitParams {
	p := &mcp.ElicitParams{Mode: "url", Message: pr.Message, URL: l.URL,
		Meta: mcp.Meta{DeadlineKey: pr.Elicitation.Snapshot().Deadline.UTC().Format(time.RFC3339Nano)}}
	if push {
		p.ElicitationID = l.ID
	}
	return p
}

// promptPage sends a push-era page round: the URL elicitation, then nothing until the page
// is submitted, unless the person declines or cancels.
func (p pushPrompter) promptPage(pr elicitation.Prompt) {
	l, err := p.links.link(pr)
	if err != nil {
		_ = pr.Elicitation.Answer(elicitation.Answer{Round: pr.Round, Action: elicitation.Failed, Err: err})
		return
	}
	res, err := p.ss.Elicit(p.ctx, urlParams(pr, l, true))
	if err == nil && res != nil && res.Action == "accept" {
		return // the person agreed to open the link; the answer comes from the page
	}
	p.settle(pr, res, err)
}

// touch restarts pr's idle expiry (Options.PullIdle), if it has one: the client came back.
func (c *call) touch(pr elicitation.Prompt) {
	if c.el.pullIdle > 0 {
		_ = pr.Elicitation.Touch() // ErrFinished: the handler says what follows
	}
}

// awaitPage is a pull-era retry that accepted the URL elicitation of pr's round: it returns
// what follows once the page has been submitted (or the question ended), and otherwise,
// after Options.PageWait, hands the same link out again.
func (c *call) awaitPage(ctx context.Context, pr elicitation.Prompt) result {
	l := c.links.get(pr.Round)
	if l == nil {
		// Its links closed with the question, which has ended: the handler says what follows.
		return c.next(ctx)
	}
	c.touch(pr) // the client is back, waiting on the person
	t := c.el.clk.Timer(c.el.pageWait)
	defer t.Stop()
	c.el.log.Debug("a retry waits for the page to be sent", "id", pr.Elicitation.ID(), "round", pr.Round)
	select {
	case <-l.Submitted():
	case <-pr.Elicitation.Done():
	case <-t.C:
		c.touch(pr)
		return c.hand(ctx, pr)
	case <-ctx.Done():
		c.kill(reasonOf(ctx))
		return result{err: ctx.Err()}
	}
	return c.next(ctx)
}
