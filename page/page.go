// Package page is elicitd's own web page for URL-mode elicitation: the fields a form must not
// ask in form mode (secrets, files) are asked there instead.
//
// Each question gets a Link: an unguessable one-time URL that carries no personal data. The
// first browser to open it is bound to the question by an HttpOnly, SameSite cookie; any
// other browser gets a refusal page. A submit must carry the page's CSRF token and come
// from the page's own origin. The page is rendered from the compiled form, checked with the
// same validator as any answer: problems are shown next to their fields, the values that were
// right are kept, and a secret is never echoed back, logged or quoted. Once an answer is
// valid it is handed to the question (Question.Submit) and the link is spent; it also ends
// with the question (Link.Close).
//
// A Server is an http.Handler for the paths under Path. It never logs a value typed.
package page

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/elicitd/elicitd/validator"
)

// Path is where a Server's pages are: Path + a link's token.
const Path = "/elicit/"

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	// Base returns the URL the pages are served under, without a path (http://127.0.0.1:8080,
	// or the https address of a proxy in front). It is called at each Open until it succeeds,
	// so a listener can be started on demand. A browser must reach the pages with the Host
	// it names.
	Base func() (string, error)
	// MaxFileBytes caps every file, whatever its field allows; 0: validator.DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxHeldBytes caps the upload bytes all links hold at once: submits being read, and
	// the secrets and files kept for a re-send after an invalid one. A submit that would
	// pass it is refused (413). 0: DefaultMaxHeldBytes.
	MaxHeldBytes int64
	Logger       *slog.Logger // opened, refused and submitted pages, with ids only; discards when nil
}

// Server serves the pages of open links. Create it with New.
type Server struct {
	o    Options
	log  *slog.Logger
	csrf *http.CrossOriginProtection

	budget *semaphore.Weighted // MaxHeldBytes
	held   atomic.Int64        // taken from budget

	mu    sync.Mutex
	base  *url.URL
	links map[string]*Link // by token

	// Set by Route: tokens start with prefix and '-', and a token of another prefix is
	// elsewhere's to serve.
	prefix    string
	elsewhere func(prefix string) http.Handler
}

// Route has the Server's links carry prefix (a node's name: letters and digits), and
// serves a page whose token carries another prefix with elsewhere(prefix), when it returns
// a handler: the node that opened the link, reached through another (nodes behind one
// address). Call it before the first Open.
func (s *Server) Route(prefix string, elsewhere func(prefix string) http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefix, s.elsewhere = prefix, elsewhere
}

// New returns a Server.
func New(o Options) *Server {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = validator.DefaultMaxFileBytes
	}
	if o.MaxHeldBytes <= 0 {
		o.MaxHeldBytes = DefaultMaxHeldBytes
	}
	s := &Server{o: o, log: o.Logger, csrf: http.NewCrossOriginProtection(), links: map[string]*Link{},
		budget: semaphore.NewWeighted(o.MaxHeldBytes)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Question is what a page asks.
type Question struct {
	Title   string // the page's heading; the form's title, else "A question"
	Message string // what is asked and why, shown above the fields
	// Form asks its fields now (AskedFields); the answers it kept from earlier rounds are
	// neither shown nor asked again.
	Form *validator.Compiled
	// Submit hands a valid answer (the content as the page read it, which Form accepts) to
	// the question whose link l is. An error means the question can no longer take it (it
	// has ended).
	Submit func(l *Link, content map[string]any) error
}

// Link is one question's page.
type Link struct {
	URL string // Path + token under the Server's base
	ID  string // names the link to the client (the elicitationId), never its URL

	s         *Server
	token     string
	q         Question
	fields    []validator.Field // q.Form.AskedFields()
	submitted chan struct{}

	mu     sync.Mutex
	bound  []byte         // SHA-256 of the cookie of the browser that opened it first
	csrf   string         // the token its form carries
	kept   map[string]any // secrets and files of an invalid submit that were valid themselves
	held   int64          // kept's bytes, taken from the Server's budget
	closed bool
	spent  bool
}

// ErrNoBase is Open's error when the Server has no URL to give.
var ErrNoBase = errors.New("page: no address to serve the page on")

// Open makes a link for q. Close it when the question ends.
func (s *Server) Open(q Question) (*Link, error) {
	base, err := s.baseURL()
	if err != nil {
		return nil, err
	}
	l := &Link{s: s, token: rand.Text() + rand.Text(), ID: rand.Text(), q: q, fields: q.Form.AskedFields(), csrf: rand.Text(),
		submitted: make(chan struct{})}
	s.mu.Lock()
	if s.prefix != "" {
		l.token = s.prefix + "-" + l.token
	}
	s.links[l.token] = l
	s.mu.Unlock()
	l.URL = base.JoinPath(Path, l.token).String()
	return l, nil
}

func (s *Server) baseURL() (*url.URL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base != nil {
		return s.base, nil
	}
	if s.o.Base == nil {
		return nil, ErrNoBase
	}
	raw, err := s.o.Base()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBase, err)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %q is not an http(s) URL with a host", ErrNoBase, raw)
	}
	s.base = u
	return u, nil
}

// Held returns how many upload bytes the links hold now: submits being read, and what
// they keep for a re-send.
func (s *Server) Held() int64 { return s.held.Load() }

// Live returns how many links are open.
func (s *Server) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.links)
}

// Submitted is closed once the page has handed a valid answer to the question.
func (l *Link) Submitted() <-chan struct{} { return l.submitted }

// Close ends the link: its page is gone, and what it kept is dropped.
func (l *Link) Close() {
	l.s.mu.Lock()
	delete(l.s.links, l.token)
	l.s.mu.Unlock()
	l.mu.Lock()
	l.closed, l.kept = true, nil
	held := l.held
	l.held = 0
	l.mu.Unlock()
	l.s.release(held)
}

// cookieName is the binding cookie's name; its path is the link's own, so each link has its
// own.
const cookieName = "elicitd_bind"

// ServeHTTP serves Path + token: GET shows the page, POST submits it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	base, err := s.baseURL()
	if err != nil || !sameHost(r.Host, base.Host) {
		// A rebound DNS name, or a name the page was not given under.
		s.refuse(w, http.StatusForbidden, "", "wrong_host", "This address is not the one the page was given under.")
		return
	}
	token, ok := strings.CutPrefix(r.URL.Path, Path)
	s.mu.Lock()
	l := s.links[token]
	prefix, elsewhere := s.prefix, s.elsewhere
	s.mu.Unlock()
	if other, _, cut := strings.Cut(token, "-"); ok && l == nil && cut && elsewhere != nil && other != prefix && !strings.Contains(token, "/") {
		if h := elsewhere(other); h != nil {
			h.ServeHTTP(w, r)
			return
		}
	}
	if !ok || l == nil || strings.Contains(token, "/") {
		s.refuse(w, http.StatusNotFound, "", "unknown", "This link is not valid, or its question has ended. Go back to your assistant and ask again.")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		l.show(w, r, base.Scheme == "https")
	case http.MethodPost:
		s.csrf.Handler(http.HandlerFunc(l.submit)).ServeHTTP(w, r)
	default:
		h.Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// sameHost reports whether a request's Host names the base's host (case aside).
func sameHost(host, want string) bool {
	if strings.EqualFold(host, want) {
		return true
	}
	// A default port may be left out.
	h, _, err := net.SplitHostPort(want)
	return err == nil && strings.EqualFold(host, h) && !strings.Contains(host, ":")
}

// refuse writes a page that says why nothing can be done here, and logs it (id and why).
func (s *Server) refuse(w http.ResponseWriter, status int, id, why, text string) {
	s.log.Info("page refused", "id", id, "why", why, "status", status)
	// A body left unread is not read to keep the connection: it is closed instead.
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = noticeTmpl.Execute(w, notice{Title: "Not available", Text: text})
}

// show renders the page, binding the link to this browser if none has opened it yet.
func (l *Link) show(w http.ResponseWriter, r *http.Request, secure bool) {
	l.mu.Lock()
	state := l.state(r)
	if state == "unbound" {
		secret := rand.Text() + rand.Text()
		sum := sha256.Sum256([]byte(secret))
		l.bound = sum[:]
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: secret, Path: Path + l.token, HttpOnly: true, Secure: secure,
			SameSite: http.SameSiteLaxMode})
		l.s.log.Info("page opened", "id", l.ID)
		state = "ok"
	}
	if state != "ok" {
		l.mu.Unlock()
		l.refused(w, state)
		return
	}
	v := l.view(nil, nil)
	l.mu.Unlock()
	l.render(w, http.StatusOK, v)
}

// state (l.mu held) says whether r may use the page: "ok", "unbound" (nobody opened it
// yet), "foreign" (another browser did), "spent" or "closed".
func (l *Link) state(r *http.Request) string {
	switch {
	case l.closed:
		return "closed"
	case l.bound == nil:
		return "unbound"
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "foreign"
	}
	sum := sha256.Sum256([]byte(c.Value))
	if subtle.ConstantTimeCompare(sum[:], l.bound) != 1 {
		return "foreign"
	}
	if l.spent {
		return "spent"
	}
	return "ok"
}

// refused writes the page for a state other than "ok".
func (l *Link) refused(w http.ResponseWriter, state string) {
	switch state {
	case "foreign", "unbound":
		l.s.refuse(w, http.StatusForbidden, l.ID, "other_browser",
			"This page was opened in another browser first. For your safety only that browser can answer it. If that was not you, decline the request in your assistant.")
	case "spent":
		l.s.refuse(w, http.StatusGone, l.ID, "spent", "This form has been sent already. You can close this tab.")
	default:
		l.s.refuse(w, http.StatusGone, l.ID, "ended", "This question has ended. Go back to your assistant and ask again.")
	}
}

// submit checks that this browser may use the page, then reads the body (within the link's
// limit and the Server's budget), checks the CSRF token and the fields, and either shows the
// problems or hands the answer to the question. A browser that may not use the page is
// refused before its body is read.
func (l *Link) submit(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	state := l.state(r)
	l.mu.Unlock()
	if state != "ok" {
		l.refused(w, state)
		return
	}
	limit := l.bodyLimit()
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	var rc received
	err := l.receive(r, &rc)
	l.mu.Lock()
	held := rc.held // given back when this returns, but for what the link keeps
	defer func() { l.s.release(held) }()
	if state = l.state(r); state != "ok" {
		// Closed or sent meanwhile.
		l.mu.Unlock()
		l.refused(w, state)
		return
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, errBudget):
		v := l.view(nil, []validator.FieldError{{Label: "Files", Constraint: "budget",
			Message: fmt.Sprintf("Files: the server is holding as many uploads as it may (%s for all pages at once); try again in a moment, or choose smaller files", mib(l.s.o.MaxHeldBytes))}})
		l.mu.Unlock()
		l.s.log.Info("page refused", "id", l.ID, "why", "upload_budget", "status", http.StatusRequestEntityTooLarge)
		w.Header().Set("Connection", "close") // the rest of the body is not read
		l.render(w, http.StatusRequestEntityTooLarge, v)
		return
	case errors.As(err, &tooLarge):
		v := l.view(nil, []validator.FieldError{{Label: "Files", Constraint: "size",
			Message: fmt.Sprintf("Files: together they are over the limit of %d bytes; choose smaller ones", limit)}})
		l.mu.Unlock()
		w.Header().Set("Connection", "close")
		l.render(w, http.StatusRequestEntityTooLarge, v)
		return
	case err != nil:
		l.mu.Unlock()
		l.s.refuse(w, http.StatusBadRequest, l.ID, "bad_form", "The form could not be read. Reload the page and try again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(rc.values.Get(CSRFField)), []byte(l.csrf)) != 1 {
		l.mu.Unlock()
		l.s.refuse(w, http.StatusForbidden, l.ID, "csrf", "The form was not sent from this page. Reload the page and send it from there.")
		return
	}
	content := l.read(&rc)
	_, errs := l.q.Form.ValidatePartial(content)
	errs = append(rc.errs, errs...)
	if len(errs) > 0 {
		// What was right is kept: secrets and files here, other values in the page.
		kept := map[string]any{}
		bad := map[string]bool{}
		for _, fe := range errs {
			bad[fe.Field] = true
		}
		for _, f := range l.fields {
			if v, ok := content[f.Name]; ok && f.NeedsPage() && !bad[f.Name] {
				kept[f.Name] = v
			}
		}
		// The budget held the old kept and this submit; it now holds the new kept.
		held += l.held - heldBy(kept)
		l.kept, l.held = kept, heldBy(kept)
		v := l.view(rc.values, errs)
		l.mu.Unlock()
		l.s.log.Info("page answer invalid", "id", l.ID, "problems", len(errs))
		l.render(w, http.StatusUnprocessableEntity, v)
		return
	}
	l.spent, l.kept = true, nil // one answer: a replay finds it spent
	held += l.held
	l.held = 0
	l.mu.Unlock()
	if err := l.q.Submit(l, content); err != nil {
		l.s.refuse(w, http.StatusGone, l.ID, "ended", "This question ended before your answer arrived. Go back to your assistant and ask again.")
		return
	}
	close(l.submitted)
	l.s.log.Info("page submitted", "id", l.ID)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = noticeTmpl.Execute(w, notice{Title: "Sent", Text: "Thank you. Your answer has been sent; you can close this tab and go back to your assistant.", Done: true})
}

// mib words a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// bodyLimit is the most a submit may send: each file at its limit, and 1 MiB for the rest.
func (l *Link) bodyLimit() int64 {
	n := int64(1 << 20)
	for _, f := range l.fields {
		if f.Type == validator.File {
			n += min(f.MaxBytes, l.s.o.MaxFileBytes) + 4<<10
		}
	}
	return n
}
