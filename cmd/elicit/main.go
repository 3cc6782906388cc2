// Command elicit is a terminal MCP client that answers elicitations: it starts a stdio MCP
// server, or connects to one served over Streamable HTTP, calls one of its tools, and when
// the server asks the person something, shows the form in the terminal (or answers from a
// script) and sends the answer back.
//
//	elicit [flags] tools -- SERVER_COMMAND [ARGS...]
//	elicit [flags] call TOOL [--args JSON | --args @file.json] -- SERVER_COMMAND [ARGS...]
//	elicit [flags] --url URL tools
//	elicit [flags] --url URL call TOOL [--args JSON | --args @file.json]
//	elicit [flags] --url URL task resume|cancel ID
//	elicit [--url URL] logout
//	elicit --version
//
// Exit status: 0 on success, 1 when the tool reports an error or the call fails, 2 on a
// usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/tasks"
)

// version is elicit's version, reported to servers in initialize.
const version = "0.1.0"

// versionLine is what elicit --version prints: elicit's version and the MCP protocol
// versions it speaks, newest first, as its SDK lists them.
func versionLine() string {
	return fmt.Sprintf("elicit %s (MCP %s)\n", version, strings.Join(mcp.SupportedProtocolVersions(), ", "))
}

const usageText = `usage:
  elicit [flags] tools [--json] -- SERVER_COMMAND [ARGS...]
  elicit [flags] call TOOL [--args JSON | --args @file.json] -- SERVER_COMMAND [ARGS...]
  elicit [flags] --url URL tools [--json]
  elicit [flags] --url URL call TOOL [--args JSON | --args @file.json]
  elicit [flags] --url URL task resume|cancel ID
  elicit [--url URL] logout
  elicit --version

Starts SERVER_COMMAND as a stdio MCP server, or with --url connects to an MCP server served
over Streamable HTTP. "tools" lists its tools (--json: as JSON, input schemas included);
"call" calls one and answers the forms the server asks for: in the terminal, or from
--answers. A call the server makes an MCP task (2026-07-28) is followed until it ends;
"task resume ID" follows one again after elicit stopped, "task cancel ID" cancels it. A
server at --url that answers 401 is signed in to in the browser (OAuth), once: "logout"
forgets the sign-in to --url, or without --url every sign-in.

flags:
  --url URL           the MCP endpoint of a server served over Streamable HTTP
                      (http://127.0.0.1:8080/mcp, say), instead of -- SERVER_COMMAND
  --token-file FILE   with --url: send the bearer token in FILE (its surrounding whitespace
                      trimmed); without it, the token in $ELICIT_TOKEN, if set. A token goes
                      only over https, or http to this machine, and never as a flag's value.
                      With a token, elicit never signs in
  --no-open           signing in: show the authorization link on stderr instead of opening
                      the browser
  --sign-in-timeout DURATION
                      signing in: how long to wait for the browser to come back (default 5m)
  --client-id-url URL signing in: the https URL of a Client ID Metadata Document describing
                      elicit, used where the authorization server accepts those; otherwise
                      elicit registers itself with the authorization server
  --client-id ID      signing in: the client id elicit was registered with beforehand at the
                      authorization server, used instead of registering
  --client-secret-file FILE
                      signing in: with --client-id, the file holding that client's secret
                      (a confidential client); without it, a public client
  --args JSON|@FILE   the tool's arguments, a JSON object (call only; default {})
  --answers FILE      scripted answers: a JSON list, one entry per prompt in order, each the
                      field values (accept) or {"action": "decline"} / {"action": "cancel"}
  --protocol VERSION  MCP protocol version to ask for: 2026-07-28 (the default, answers
                      travel in retried tool calls) or 2025-11-25 (the server sends
                      elicitation/create requests); any version the SDK supports
  --no-tasks          do not declare the MCP Tasks extension: a call waits as a plain call
  --timeout DURATION  bound the whole call, e.g. 10m (default: no bound)
  --server-log FILE   append the server's stderr (its log) to FILE (not with --url)
  -v                  show the server's stderr here, marked [server] (held while a form is
                      open; not with --url)
  --open              open the link of a URL-mode question (secrets, files: the server's own
                      page) in the browser ($BROWSER, else the system's); without it the
                      link is shown. elicit waits until the page has been sent.
  --version           print elicit's version and the MCP protocol versions it speaks

In a form: Enter or Tab moves on, Shift+Tab goes back, Esc offers to decline or cancel,
Ctrl-C cancels.
`

// usageError is a mistake in how elicit was invoked: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// invocation is a parsed command line.
type invocation struct {
	command  string // tools or call
	json     bool   // tools: print the tools as JSON
	tool     string
	args     map[string]any
	answers  string
	protocol string
	timeout  time.Duration
	server   []string // the stdio server's command; nil with --url

	url       string // the Streamable HTTP endpoint, or ""
	tokenFile string // --token-file
	token     string // the bearer token, from --token-file or $ELICIT_TOKEN; never shown

	noOpen      bool          // signing in: print the authorization link, do not open it
	signInWait  time.Duration // signing in: how long to wait for the browser
	clientIDURL string        // signing in: elicit's Client ID Metadata Document, or ""
	clientID    string        // signing in: a client id registered beforehand, or ""
	secretFile  string        // signing in: the file holding that client's secret, or ""
	secret      string        // its secret, read from secretFile; never shown

	noTasks bool   // --no-tasks: do not declare the Tasks extension
	taskOp  string // task: resume or cancel
	taskID  string // task: the task's id

	serverLog string // append the server's stderr to this file
	verbose   bool   // show the server's stderr
	open      bool   // open URL-mode links in the browser
}

// parse reads elicit's command line (without the program name). Flags may come before or
// after the subcommand; everything after the first "--" is the server's command, which
// --url replaces.
func parse(argv []string) (*invocation, error) {
	inv := &invocation{}
	mine := argv
	dash := slices.Index(argv, "--")
	if dash >= 0 {
		mine, inv.server = argv[:dash], argv[dash+1:]
	}
	fs := flag.NewFlagSet("elicit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	argsFlag := fs.String("args", "", "")
	fs.StringVar(&inv.answers, "answers", "", "")
	fs.StringVar(&inv.protocol, "protocol", "", "")
	fs.DurationVar(&inv.timeout, "timeout", 0, "")
	fs.StringVar(&inv.serverLog, "server-log", "", "")
	fs.BoolVar(&inv.verbose, "v", false, "")
	fs.BoolVar(&inv.open, "open", false, "")
	fs.StringVar(&inv.url, "url", "", "")
	fs.StringVar(&inv.tokenFile, "token-file", "", "")
	fs.BoolVar(&inv.noOpen, "no-open", false, "")
	fs.DurationVar(&inv.signInWait, "sign-in-timeout", defaultSignInWait, "")
	fs.StringVar(&inv.clientIDURL, "client-id-url", "", "")
	fs.BoolVar(&inv.json, "json", false, "")
	fs.StringVar(&inv.clientID, "client-id", "", "")
	fs.StringVar(&inv.secretFile, "client-secret-file", "", "")
	fs.BoolVar(&inv.noTasks, "no-tasks", false, "")
	var positional []string
	rest := mine
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, usagef("%v", err)
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		positional, rest = append(positional, rest[0]), rest[1:]
	}
	if len(positional) > 0 && positional[0] == "logout" {
		return inv, inv.checkLogout(dash >= 0, positional[1:])
	}
	if err := inv.checkServer(dash >= 0); err != nil {
		return nil, err
	}
	if len(positional) == 0 {
		return nil, usagef("missing subcommand: tools, call or task")
	}
	inv.command = positional[0]
	switch inv.command {
	case "tools":
		if len(positional) > 1 {
			return nil, usagef("tools takes no arguments, got %q", positional[1:])
		}
		if *argsFlag != "" {
			return nil, usagef("--args belongs to call, not tools")
		}
	case "call":
		if inv.json {
			return nil, usagef("--json belongs to tools, not call: a call's structured content is printed as JSON already")
		}
		if len(positional) != 2 {
			return nil, usagef("call takes exactly one TOOL name, got %d", len(positional)-1)
		}
		inv.tool = positional[1]
		args, err := toolArgs(*argsFlag)
		if err != nil {
			return nil, err
		}
		inv.args = args
	case "task":
		if len(positional) != 3 || positional[1] != "resume" && positional[1] != "cancel" {
			return nil, usagef("task takes resume or cancel, and a task's id: task resume ID, task cancel ID")
		}
		if inv.url == "" {
			return nil, usagef("task needs --url: a task lives on a server elicit reaches over HTTP, not one it starts")
		}
		if !validTaskID(positional[2]) {
			return nil, usagef("task %s: %q is not a task id", positional[1], positional[2])
		}
		inv.taskOp, inv.taskID = positional[1], positional[2]
		if *argsFlag != "" {
			return nil, usagef("--args belongs to call, not task")
		}
	default:
		return nil, usagef("unknown subcommand %q: use tools, call or task", inv.command)
	}
	if inv.protocol != "" && !slices.Contains(mcp.SupportedProtocolVersions(), inv.protocol) {
		return nil, usagef("--protocol %q is not a version this client speaks; use one of %s",
			inv.protocol, strings.Join(mcp.SupportedProtocolVersions(), ", "))
	}
	if inv.timeout < 0 {
		return nil, usagef("--timeout must be positive, got %s", inv.timeout)
	}
	if inv.signInWait <= 0 {
		return nil, usagef("--sign-in-timeout must be positive, got %s", inv.signInWait)
	}
	if inv.clientIDURL != "" {
		u, err := url.Parse(inv.clientIDURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return nil, usagef("--client-id-url must be the https URL of elicit's Client ID Metadata Document, with a path (https://example.com/elicit.json, say), got %q", inv.clientIDURL)
		}
	}
	if inv.secretFile != "" && inv.clientID == "" {
		return nil, usagef("--client-secret-file goes with --client-id: the secret of the client registered beforehand")
	}
	return inv, nil
}

// checkLogout checks "elicit [--url URL] logout": it forgets sign-ins, and starts or
// connects to nothing.
func (inv *invocation) checkLogout(dashed bool, extra []string) error {
	inv.command = "logout"
	switch {
	case len(extra) > 0:
		return usagef("logout takes no arguments, got %q; give --url URL to forget one server's sign-in", extra)
	case dashed:
		return usagef("logout forgets sign-ins to servers at --url; a stdio server is not signed in to")
	}
	if inv.url != "" {
		return inv.checkURL()
	}
	return nil
}

// checkURL checks that --url is an MCP endpoint's URL.
func (inv *invocation) checkURL() error {
	u, err := url.Parse(inv.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--url must be an http:// or https:// URL of an MCP endpoint (http://127.0.0.1:8080/mcp, say), got %q", inv.url)
	}
	return nil
}

// checkServer checks that the server is given once: a command after "--" (dashed), or
// --url, with the flags that belong to that way.
func (inv *invocation) checkServer(dashed bool) error {
	if inv.url == "" {
		switch {
		case !dashed:
			return usagef("missing -- SERVER_COMMAND: give the stdio MCP server to start after --, or --url for one served over HTTP")
		case len(inv.server) == 0:
			return usagef("missing SERVER_COMMAND after --")
		case inv.tokenFile != "":
			return usagef("--token-file belongs to --url: a stdio server is not sent a bearer token")
		case inv.noOpen || inv.clientIDURL != "" || inv.clientID != "" || inv.secretFile != "" || inv.signInWait != defaultSignInWait:
			return usagef("--no-open, --sign-in-timeout, --client-id-url, --client-id and --client-secret-file belong to --url: a stdio server is not signed in to")
		}
		return nil
	}
	if dashed {
		return usagef("--url and -- SERVER_COMMAND are mutually exclusive: elicit either connects to the server at --url or starts SERVER_COMMAND, not both")
	}
	if err := inv.checkURL(); err != nil {
		return err
	}
	switch {
	case inv.serverLog != "":
		return usagef("--server-log is for a server elicit starts; a server at --url keeps its own log")
	case inv.verbose:
		return usagef("-v shows the stderr of a server elicit starts; a server at --url keeps its own log")
	}
	return nil
}

// toolArgs reads --args: a JSON object, inline or from @file.
func toolArgs(v string) (map[string]any, error) {
	if v == "" {
		return map[string]any{}, nil
	}
	data, where := []byte(v), "--args"
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, usagef("--args: cannot read %s: %v", name, err)
		}
		data, where = b, "--args file "+name
	}
	var args map[string]any
	if err := json.Unmarshal(data, &args); err != nil || args == nil {
		return nil, usagef("%s must be a JSON object of the tool's arguments (%v)", where, describe(err))
	}
	return args, nil
}

func describe(err error) string {
	if err == nil {
		return "got null"
	}
	return err.Error()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is elicit's whole life; it returns the exit status.
func run(argv []string, stdin *os.File, stdout, stderr io.Writer) int {
	if len(argv) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, argv[0]) {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if wantsVersion(argv) {
		fmt.Fprint(stdout, versionLine())
		return 0
	}
	inv, err := parse(argv)
	if err != nil {
		fmt.Fprintf(stderr, "elicit: %v\n\n%s", err, usageText)
		return 2
	}
	if inv.command == "logout" {
		return logout(inv.url, stderr)
	}
	if err := inv.loadSecret(stderr); err != nil {
		fmt.Fprintf(stderr, "elicit: %v\n", err)
		return 2
	}
	if err := inv.loadToken(os.Getenv, stderr); err != nil {
		fmt.Fprintf(stderr, "elicit: %v\n", err)
		return 2
	}
	answerer, err := chooseAnswerer(inv, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "elicit: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if inv.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inv.timeout)
		defer cancel()
	}
	c := &client{inv: inv, answerer: answerer, stdout: stdout, stderr: stderr}
	if inv.serverLog != "" {
		f, err := os.OpenFile(inv.serverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "elicit: --server-log: cannot open %s for writing: %v\n", inv.serverLog, err)
			return 2
		}
		defer func() { _ = f.Close() }()
		c.serverLog = f
	}
	if inv.verbose {
		c.lines = &serverLines{out: stderr}
	}
	return c.run(ctx)
}

// wantsVersion reports whether --version is among elicit's own arguments (before any "--"):
// it is answered whatever else is given, as elicitd's is.
func wantsVersion(argv []string) bool {
	for _, a := range argv {
		switch a {
		case "--":
			return false
		case "--version", "-version":
			return true
		}
	}
	return false
}

// chooseAnswerer picks who answers the server's questions: the script, the person at the
// terminal, or nobody (each question is cancelled, with a note on stderr).
func chooseAnswerer(inv *invocation, stdin *os.File, stderr io.Writer) (answerer, error) {
	if inv.answers != "" {
		return loadScript(inv.answers, stderr)
	}
	if term.IsTerminal(stdin.Fd()) {
		return &terminal{in: stdin, out: stderr}, nil
	}
	return noAnswers{stderr}, nil
}

// client is one run against one server.
type client struct {
	inv      *invocation
	answerer answerer
	stdout   io.Writer
	stderr   io.Writer
	server   string // how the server is shown to the person

	serverLog io.Writer    // --server-log's file, or nil
	lines     *serverLines // -v, or nil

	pull bool // the session speaks the pull era (2026-07-28)

	openMu     sync.Mutex
	cancelOpen context.CancelFunc // ends the question being answered, if any

	mu      sync.Mutex      // held while a question is being answered
	asked   int             // questions so far
	links   map[string]bool // URL-mode links shown so far
	schemas schemas         // requested schemas as sent, for their field order
}

// stderrTail keeps the end of the server's stderr, to explain a server that fails. exec
// copies into it on a goroutine of its own while the server may still be writing.
type stderrTail struct {
	mu sync.Mutex
	b  []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	const keep = 4096
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

// keepGoing writes to w and ignores its failures: a full disk under --server-log must not
// stop the copying of the server's stderr (the server would block on its log).
type keepGoing struct{ w io.Writer }

func (k keepGoing) Write(p []byte) (int, error) {
	_, _ = k.w.Write(p)
	return len(p), nil
}

func (c *client) run(ctx context.Context) int {
	var (
		transport mcp.Transport
		tail      *stderrTail // the stdio server's stderr; nil with --url
		refused   *bearer     // with --url: how the server answered the token
	)
	if c.inv.url != "" {
		transport, refused = c.httpTransport()
	} else {
		transport, tail = c.stdioTransport()
	}
	caps := &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
	if !c.inv.noTasks {
		tasks.Declare(caps)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: version}, &mcp.ClientOptions{
		ElicitationHandler:         c.elicit,
		ElicitationCompleteHandler: c.pageSent,
		Capabilities:               caps,
	})
	if err := tasks.AddClientMethods(cl); err != nil {
		c.fail("%v", err)
		return 1
	}
	cs, err := cl.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: c.inv.protocol})
	if err != nil {
		if c.timedOut(ctx) {
			return 1
		}
		if c.inv.url != "" {
			if err := refused.signInFailure(); err != nil {
				c.fail("%v", err) // says it all: the transport's wrapping of it adds nothing
				return 1
			}
			c.fail("could not connect to %s as an MCP server: %v", c.inv.url, err)
			refused.explain(c.stderr)
			return 1
		}
		c.fail("could not start %q as an MCP server: %v", strings.Join(c.inv.server, " "), err)
		c.showTail(tail)
		return 1
	}
	defer func() { _ = cs.Close() }()
	if info := cs.InitializeResult().ServerInfo; info != nil && info.Name != "" {
		c.server = strings.TrimSpace(info.Name + " " + info.Version)
	}
	c.pull = cs.InitializeResult().ProtocolVersion >= ask.PullEra
	switch c.inv.command {
	case "tools":
		return c.listTools(ctx, cs)
	case "task":
		c.pull = true // a task's questions are the pull era's
		return c.taskCommand(ctx, cs)
	default:
		return c.call(ctx, cs, tail)
	}
}

// stdioTransport starts nothing yet: it is the transport that starts the server's command
// when the client connects, with the server's stderr kept (its end, to explain a failure),
// and copied to --server-log and -v. The requested schemas in what the server sends are
// recorded (recordingTransport).
func (c *client) stdioTransport() (mcp.Transport, *stderrTail) {
	cmd := exec.Command(c.inv.server[0], c.inv.server[1:]...)
	tail := &stderrTail{}
	sinks := []io.Writer{tail}
	if c.serverLog != nil {
		sinks = append(sinks, keepGoing{c.serverLog})
	}
	if c.lines != nil {
		sinks = append(sinks, c.lines)
	}
	cmd.Stderr = io.MultiWriter(sinks...)
	detach(cmd)
	c.server = filepath.Base(c.inv.server[0])
	return recordingTransport{&mcp.CommandTransport{Command: cmd}, &c.schemas}, tail
}

// timedOut reports, once --timeout has passed, that elicit gave up.
func (c *client) timedOut(ctx context.Context) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	c.fail("gave up: --timeout %s passed before the server finished", c.inv.timeout)
	return true
}

func (c *client) fail(format string, args ...any) {
	fmt.Fprintf(c.stderr, "elicit: "+format+"\n", args...)
}

func (c *client) showTail(tail *stderrTail) {
	if tail == nil {
		return // a server at --url: its log is its own
	}
	tail.mu.Lock()
	s := strings.TrimSpace(string(tail.b))
	tail.mu.Unlock()
	if s != "" {
		fmt.Fprintf(c.stderr, "the server's stderr ended with:\n%s\n", s)
	}
}

func (c *client) listTools(ctx context.Context, cs *mcp.ClientSession) int {
	if c.inv.json {
		return c.listToolsJSON(ctx, cs)
	}
	n := 0
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.fail("listing tools: %v", err)
			return 1
		}
		n++
		fmt.Fprintf(c.stdout, "%s\n", tool.Name)
		for line := range strings.SplitSeq(strings.TrimSpace(tool.Description), "\n") {
			fmt.Fprintf(c.stdout, "    %s\n", line)
		}
		fmt.Fprintln(c.stdout)
	}
	if n == 0 {
		fmt.Fprintf(c.stderr, "%s has no tools\n", c.server)
	}
	return 0
}

// listToolsJSON prints the server's tools as a JSON array, each as the server lists it (its
// input schema as sent), for a script.
func (c *client) listToolsJSON(ctx context.Context, cs *mcp.ClientSession) int {
	tools := []*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.fail("listing tools: %v", err)
			return 1
		}
		tools = append(tools, tool)
	}
	out, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		c.fail("listing tools: %v", err)
		return 1
	}
	fmt.Fprintf(c.stdout, "%s\n", out)
	return 0
}

func (c *client) call(ctx context.Context, cs *mcp.ClientSession, tail *stderrTail) int {
	if c.inv.url != "" {
		// Over Streamable HTTP, an argument its tool's input schema marks with x-mcp-header
		// (2026-07-28) goes in an Mcp-Param-* header too, which the server checks: the SDK
		// adds it from the schemas of the tools listed in this session. A listing that fails
		// leaves the call to say what is wrong.
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				break
			}
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.inv.tool, Arguments: c.inv.args})
	// The call is over: a form still open (the server's cancel of it may still be on its
	// way) closes, and the terminal is restored, before anything is printed.
	c.openMu.Lock()
	if c.cancelOpen != nil {
		c.cancelOpen()
	}
	c.openMu.Unlock()
	c.mu.Lock()
	//lint:ignore SA2001 taking the lock waits for the question's handler to finish
	c.mu.Unlock()
	switch {
	case c.timedOut(ctx):
		return 1
	case err != nil:
		c.fail("calling %s: %v", c.inv.tool, err)
		c.showTail(tail)
		return 1
	}
	if id := tasks.TaskOf(res); id != "" {
		return c.follow(ctx, cs, id)
	}
	printResult(c.stdout, res)
	if s, ok := c.answerer.(*script); res.IsError || ok && s.misfits > 0 {
		return 1
	}
	return 0
}

// printResult prints a tool result: its text, and its structured content as indented JSON.
// A text that is the structured content's own JSON is printed once, indented.
func printResult(w io.Writer, res *mcp.CallToolResult) {
	var structured []byte
	if res.StructuredContent != nil {
		if b, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			structured = b
		}
	}
	for _, content := range res.Content {
		switch ct := content.(type) {
		case *mcp.TextContent:
			if structured != nil && sameJSON(ct.Text, structured) {
				continue
			}
			fmt.Fprintln(w, ct.Text)
		default:
			b, _ := json.Marshal(content)
			fmt.Fprintln(w, string(b))
		}
	}
	if structured != nil {
		fmt.Fprintln(w, string(structured))
	}
}

func sameJSON(text string, indented []byte) bool {
	var a, b any
	if json.Unmarshal([]byte(text), &a) != nil || json.Unmarshal(indented, &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
