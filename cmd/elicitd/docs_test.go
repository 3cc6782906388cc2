package main

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documentation is checked against the code here: the settings page against
// elicitd -help, the errors page against the code constants, the library instructions by
// following them, and every relative link of the README and docs/ by resolving it.

// repoRoot is the repository's root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	require.NoError(t, err)
	return string(b)
}

// helpFlag is one flag as elicitd -help describes it.
type helpFlag struct {
	name, env, def string
	boolean        bool
}

var (
	helpHeader = regexp.MustCompile(`^  -(\S+)( \S+)?$`)
	helpEnv    = regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
	helpDef    = regexp.MustCompile(`\(default "([^"]*)"\)`)
)

// helpFlags runs the built elicitd with -help and returns its flags.
func helpFlags(t *testing.T) []helpFlag {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-help").CombinedOutput()
	require.NoError(t, err, "elicitd -help exits 0: %s", out)
	var flags []helpFlag
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if m := helpHeader.FindStringSubmatch(line); m != nil {
			flags = append(flags, helpFlag{name: m[1], boolean: m[2] == ""})
			continue
		}
		if len(flags) == 0 || !strings.HasPrefix(line, "    \t") {
			continue
		}
		f := &flags[len(flags)-1]
		if m := helpEnv.FindStringSubmatch(line); m != nil {
			f.env = m[1]
		}
		if m := helpDef.FindStringSubmatch(line); m != nil {
			f.def = m[1]
		}
	}
	require.GreaterOrEqual(t, len(flags), 20, "elicitd -help lists its flags:\n%s", out)
	return flags
}

// tableRows returns the rows of the Markdown tables in doc, each split into its cells,
// header and separator rows left out.
func tableRows(doc string) [][]string {
	var rows [][]string
	inFence := false
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		// A cell may hold an escaped pipe (\|), which does not end it.
		cells := strings.Split(strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "\x00", `\|`))
		}
		rows = append(rows, cells)
	}
	return rows
}

var (
	docFlag = regexp.MustCompile("`--([a-z][a-z-]*)`")
	docEnv  = regexp.MustCompile("`((?:ELICITD|UPS)_[A-Z0-9_]+)`")
)

// Every flag of elicitd -help is a row of docs/settings.md's table, with its environment
// variable and its default; the table's flag column names no flag that does not exist.
func TestSettingsPageHasEveryFlag(t *testing.T) {
	doc := readDoc(t, "docs/settings.md")
	rows := tableRows(doc)
	flags := helpFlags(t)
	exists := map[string]bool{}
	for _, f := range flags {
		exists[f.name] = true
	}
	rowOf := func(flag string) []string {
		for _, r := range rows {
			if r[0] == "`--"+flag+"`" {
				return r
			}
		}
		return nil
	}
	for _, f := range flags {
		if f.name == "h" || f.name == "help" {
			continue
		}
		row := rowOf(f.name)
		if !assert.NotNil(t, row, "docs/settings.md has no row for --%s", f.name) {
			continue
		}
		require.GreaterOrEqual(t, len(row), 4, "a settings row is flag | environment | default | accepted: %q", row)
		if f.env != "" {
			assert.Equal(t, "`"+f.env+"`", row[1], "--%s's environment variable", f.name)
		}
		if f.def != "" {
			assert.True(t, strings.HasPrefix(row[2], "`"+f.def+"`"), "--%s's default is %q; the table says %s", f.name, f.def, row[2])
		}
	}
	var documented int
	for _, r := range rows {
		for _, m := range docFlag.FindAllStringSubmatch(r[0], -1) {
			documented++
			assert.True(t, exists[m[1]], "docs/settings.md has a row for --%s, which elicitd -help does not list", m[1])
		}
	}
	assert.GreaterOrEqual(t, documented, len(flags)-1, "every flag has its row")

	// The README's configuration table only points into this page: every flag it names
	// exists, and every variable it names is here.
	readme := readDoc(t, "README.md")
	section := markdownSection(t, readme, "## Configuration")
	for _, r := range tableRows(section) {
		for _, m := range docFlag.FindAllStringSubmatch(strings.Join(r, " "), -1) {
			assert.True(t, exists[m[1]], "the README's configuration table names --%s, which elicitd -help does not list", m[1])
		}
		for _, m := range docEnv.FindAllStringSubmatch(strings.Join(r, " "), -1) {
			assert.Contains(t, doc, "`"+m[1]+"`", "the README's configuration table names %s, which docs/settings.md does not", m[1])
		}
	}
}

// settingsSources are the files that read elicitd's environment, from the repository root.
var settingsSources = []string{"cmd/elicitd/main.go", "cmd/elicitd/store.go", "tools/ups/ups.go"}

// Every environment variable elicitd reads is in docs/settings.md, and every ELICITD_ or
// UPS_ variable the page names is one elicitd reads.
func TestSettingsPageHasEveryVariable(t *testing.T) {
	doc := readDoc(t, "docs/settings.md")
	read := map[string]bool{}
	literal := regexp.MustCompile(`"((?:ELICITD|UPS)_[A-Z0-9_]+|CLIENT_ID|CLIENT_SECRET|ENVIRONMENT|GOGC|GOMEMLIMIT|GOMAXPROCS)"`)
	for _, src := range settingsSources {
		for _, m := range literal.FindAllStringSubmatch(readDoc(t, src), -1) {
			read[m[1]] = true
		}
	}
	require.True(t, read["ELICITD_STATE_KEY"] && read["UPS_CLIENT_ID"], "the sources were read: %v", read)
	for v := range read {
		assert.Contains(t, doc, "`"+v+"`", "elicitd reads %s; docs/settings.md does not name it", v)
	}
	for _, m := range docEnv.FindAllStringSubmatch(doc, -1) {
		assert.True(t, read[m[1]], "docs/settings.md names %s, which elicitd does not read", m[1])
	}
}

// errorCodeSources hold the tool error codes, as constants named Code...
var errorCodeSources = []string{"ask/errors.go", "ask/durable.go", "tools/shipping/tools.go"}

// codeConstants returns the string constants named Code... in the Go file at path.
func codeConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	codes := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					codes[v] = name.Name
				}
			}
		}
	}
	return codes
}

// Every error code a tool returns has its section in docs/errors.md, and every section is
// a code that exists; so do the JSON-RPC codes of the stdio framing and the session caps.
func TestErrorsPageHasEveryCode(t *testing.T) {
	doc := readDoc(t, "docs/errors.md")
	codes := map[string]string{}
	for _, src := range errorCodeSources {
		for v, name := range codeConstants(t, filepath.Join(repoRoot(t), src)) {
			codes[v] = src + ": " + name
		}
	}
	require.Contains(t, codes, "ELICITATION_DECLINED", "the constants were read")
	require.Contains(t, codes, "UPS_API_ERROR", "the constants were read")
	for v, where := range codes {
		assert.Contains(t, doc, "\n### `"+v+"`\n", "%s (%s) has no section in docs/errors.md", v, where)
	}
	for _, m := range regexp.MustCompile("\n### `([A-Z_]+)`\n").FindAllStringSubmatch(doc, -1) {
		assert.Contains(t, codes, m[1], "docs/errors.md has a section for %s, which is no Code constant of %v", m[1], errorCodeSources)
	}
	rows := tableRows(doc)
	for _, code := range []int{-32700, -32600, CodeTooManySessions} {
		assert.True(t, slices.ContainsFunc(rows, func(r []string) bool { return r[0] == fmt.Sprintf("`%d`", code) }),
			"docs/errors.md's JSON-RPC table has no row for %d", code)
	}
}

// markdownSection returns the part of doc from heading to the next heading of its level.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, start, 0, "the document has a section %q", heading)
	rest := doc[start+1+len(heading):]
	level := heading[:strings.Index(heading, " ")+1]
	if end := strings.Index(rest, "\n"+level); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

var (
	shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")
	goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")
)

// checkoutPlaceholder is where the README's library commands say this checkout is.
const checkoutPlaceholder = "/path/to/elicitd"

// offlineGo is the environment the library tests run go in: no module proxy (every module
// comes from the module cache, as this checkout's own build left it) and no checksum
// database, which a go get online consults for the modules it adds; GOFLAGS and GOWORK
// cleared, so that neither the caller's flags nor a workspace of theirs interferes.
var offlineGo = []string{"GOPROXY=off", "GOSUMDB=off", "GOFLAGS=", "GOWORK=", "GOTOOLCHAIN=local"}

// runIn runs a shell command line in dir with offlineGo, failing the test if it fails.
func runIn(t *testing.T, dir, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), offlineGo...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s (in %s):\n%s", line, dir, out)
	return string(out)
}

// newModule makes an empty module of the reader's own, as `go mod init` does, holding
// main.go.
func newModule(t *testing.T, main string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mine")
	require.NoError(t, os.Mkdir(dir, 0o755))
	runIn(t, dir, "go mod init example.com/mine")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	return dir
}

// A program of the reader's own that imports the library.
const importsAsk = `package main

import (
	"fmt"

	"github.com/elicitd/elicitd/ask"
)

type Contact struct {
	Name string ` + "`json:\"name\" label:\"Name\" form:\"required\"`" + `
}

func main() {
	fmt.Println(string(ask.MustForm[Contact]("Contact").Compiled().WireSchema()))
}
`

// The README says go get @latest cannot work, and how to use the library from a checkout
// instead; each way it gives, followed to the letter in a module of the reader's own, builds
// a program that imports package ask.
func TestLibraryFromACheckout(t *testing.T) {
	root := repoRoot(t)
	readme := readDoc(t, "README.md")
	section := markdownSection(t, readme, "## Using elicitd as a Go library")
	assert.Contains(t, section, "`go get github.com/elicitd/elicitd@latest` does not work")
	assert.Contains(t, readme, "Go 1.26 or newer")
	var ways [][]string
	for _, m := range shBlock.FindAllStringSubmatch(section, -1) {
		var lines []string
		for line := range strings.SplitSeq(strings.TrimSpace(m[1]), "\n") {
			lines = append(lines, strings.TrimSpace(line))
		}
		ways = append(ways, lines)
	}
	require.Len(t, ways, 2, "two ways: a replace directive, and a workspace")
	assert.Contains(t, ways[0][0], "go mod edit -replace")
	assert.Contains(t, ways[1][0], "go work init")
	for _, way := range ways {
		t.Run(strings.Fields(way[0])[1], func(t *testing.T) {
			dir := newModule(t, importsAsk)
			for _, line := range way {
				runIn(t, dir, strings.ReplaceAll(line, checkoutPlaceholder, root))
			}
			runIn(t, dir, "go build -o prog .")
			out := runIn(t, dir, "./prog")
			assert.Contains(t, out, `"properties":{"name":`)
		})
	}
}

// The program on docs/library.md builds and vets against this checkout.
func TestLibraryPageProgramBuilds(t *testing.T) {
	doc := readDoc(t, "docs/library.md")
	var program string
	for _, m := range goBlock.FindAllStringSubmatch(doc, -1) {
		if strings.HasPrefix(m[1], "package main\n") {
			program = m[1]
			break
		}
	}
	require.NotEmpty(t, program, "docs/library.md has a whole program")
	dir := newModule(t, program)
	runIn(t, dir, "go work init . "+repoRoot(t))
	runIn(t, dir, "go build -o prog . && go vet .")
}

// The README stays a front page: under 250 lines, with a table of contents.
func TestReadmeIsAFrontPage(t *testing.T) {
	readme := readDoc(t, "README.md")
	assert.Less(t, strings.Count(readme, "\n"), 250, "README.md is a front page; the reference belongs in docs/")
	contents := markdownSection(t, readme, "## Contents")
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(readme, -1) {
		if m[1] != "Contents" {
			assert.Contains(t, contents, "(#"+slug(m[1])+")", "the table of contents lists %q", m[1])
		}
	}
}

var (
	mdLink    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6} (.+)$`)
	codeSpan  = regexp.MustCompile("`[^`]*`") // what looks like a link in code is not one
)

// slug is the anchor GitHub gives a heading: lower case, punctuation other than - and _
// dropped, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown document's headings, as GitHub numbers
// repeated ones.
func anchors(doc string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	inFence := false
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		m := mdHeading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Every relative link in the README and docs/ leads to a file or directory of the
// repository, and every #anchor to a heading of the page it names.
func TestDocsLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, filepath.Join(root, "README.md"))
	var checked int
	for _, page := range pages {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		name, _ := filepath.Rel(root, page)
		inFence := false
		for line := range strings.Lines(string(data)) {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s links to %s, which does not exist", name, target)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				body, err := os.ReadFile(file)
				if err != nil || !strings.HasSuffix(file, ".md") {
					t.Errorf("%s links to %s: an anchor in something other than a Markdown page", name, target)
					continue
				}
				assert.True(t, anchors(string(body))[anchor], "%s links to %s: no heading there has the anchor #%s", name, target, anchor)
			}
		}
	}
	assert.Greater(t, checked, 30, "the pages' links were found")
}
