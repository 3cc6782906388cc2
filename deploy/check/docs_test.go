package check

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// deployDoc is docs/deploy.md's text.
func deployDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commands are the shell lines of a page's ```sh blocks, continuation lines joined.
func commands(doc string) []string {
	var out []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		for _, line := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// hasValue reports whether the chart's values.yaml has the dotted key.
func hasValue(values map[string]any, key string) bool {
	var cur any = values
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// TestDeployDocHelmCommands holds docs/deploy.md's helm commands to the chart: each
// install or upgrade of deploy/helm/elicitd uses a values file that exists (and that the
// chart tests render), each --set a key the chart has, and so does every values key the page
// names.
func TestDeployDocHelmCommands(t *testing.T) {
	root := repoRoot(t)
	doc := deployDoc(t)
	vals, err := chartutil.ReadValuesFile(filepath.Join(root, "deploy", "helm", "elicitd", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	installs := 0
	for _, cmd := range commands(doc) {
		f := strings.Fields(cmd)
		if len(f) < 4 || f[0] != "helm" || (f[1] != "install" && f[1] != "upgrade") || f[3] != "deploy/helm/elicitd" {
			continue
		}
		installs++
		for i := 4; i < len(f); i++ {
			switch f[i] {
			case "-f", "--values":
				if _, err := os.Stat(filepath.Join(root, f[i+1])); err != nil {
					t.Errorf("%q: %v", cmd, err)
				}
				if !strings.HasPrefix(f[i+1], "deploy/helm/examples/") {
					t.Errorf("%q: values the chart tests do not render", cmd)
				}
			case "--set":
				key, _, _ := strings.Cut(f[i+1], "=")
				if !hasValue(vals, key) {
					t.Errorf("%q: the chart has no value %s", cmd, key)
				}
			}
		}
	}
	if installs < 3 {
		t.Errorf("found %d helm install or upgrade commands of the chart in docs/deploy.md", installs)
	}
	// `--set store.nats.credsSecret=` in prose, and `auth.oauth.issuers` and the like.
	top := map[string]bool{}
	for k := range vals {
		top[k] = true
	}
	for _, m := range regexp.MustCompile("`(?:--set )?([a-z][A-Za-z]*(?:\\.[a-z][A-Za-z]*)+)=?[^`]*`").FindAllStringSubmatch(doc, -1) {
		key := m[1]
		if !top[strings.Split(key, ".")[0]] {
			continue // not a value of the chart (a file name, a metric)
		}
		if !hasValue(vals, key) {
			t.Errorf("docs/deploy.md names value %s, which the chart does not have", key)
		}
	}
}

// TestDeployDocComposeCommands: the laptop cluster's commands export what compose.yaml
// requires, and with exactly those exported it parses.
func TestDeployDocComposeCommands(t *testing.T) {
	env := map[string]string{}
	var up bool
	for _, cmd := range commands(deployDoc(t)) {
		if rest, ok := strings.CutPrefix(cmd, "export "); ok {
			for _, m := range regexp.MustCompile(`([A-Z_]+)="?\$\(openssl rand -hex (\d+)\)"?`).FindAllStringSubmatch(rest, -1) {
				n, _ := strconv.Atoi(m[2])
				env[m[1]] = strings.Repeat("x", 2*n) // hex: two characters a byte
				if min := map[string]int{"ELICITD_HTTP_TOKEN": 16, "ELICITD_STATE_KEY": 32}[m[1]]; 2*n < min {
					t.Errorf("%s: openssl rand -hex %d makes %d characters; elicitd needs %d", m[1], n, 2*n, min)
				}
			}
		}
		if strings.Contains(cmd, "compose -f deploy/compose.yaml up") {
			up = true
		}
	}
	if !up {
		t.Fatal("docs/deploy.md has no `compose -f deploy/compose.yaml up` command")
	}
	if _, err := loadCompose(t, env); err != nil {
		t.Errorf("compose.yaml with what docs/deploy.md exports (%v): %v", keys(env), err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
