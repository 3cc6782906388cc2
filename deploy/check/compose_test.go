package check

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"
)

// loadCompose parses deploy/compose.yaml with compose-go, the compose specification's
// reference parser, as `docker compose` and `podman compose` (through docker-compose) read it.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	root := repoRoot(t)
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "deploy", "compose.yaml")},
		cli.WithWorkingDirectory(filepath.Join(root, "deploy")),
		cli.WithEnv(kv),
		cli.WithInterpolation(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

var composeEnv = map[string]string{
	"ELICITD_HTTP_TOKEN": "0123456789abcdef0123456789abcdef",
	"ELICITD_STATE_KEY":  strings.Repeat("s", 64),
}

// haproxyCheck reads the health check of haproxy.cfg's backend: its path, and how long a
// node that turned unready keeps getting requests (inter x fall).
func haproxyConfig(t *testing.T) (cfg string, path string, notice time.Duration, servers []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = string(b)
	if m := regexp.MustCompile(`(?m)^\s*option httpchk GET (\S+)$`).FindStringSubmatch(cfg); m != nil {
		path = m[1]
	}
	m := regexp.MustCompile(`(?m)^\s*default-server .*\bcheck inter (\d+)ms fall (\d+)`).FindStringSubmatch(cfg)
	if m == nil {
		t.Fatal("haproxy.cfg: no default-server line with check inter Nms fall N")
	}
	inter, _ := strconv.Atoi(m[1])
	fall, _ := strconv.Atoi(m[2])
	notice = time.Duration(inter*fall) * time.Millisecond
	for _, s := range regexp.MustCompile(`(?m)^\s*server (\S+) (\S+)$`).FindAllStringSubmatch(cfg, -1) {
		servers = append(servers, s[2])
	}
	return cfg, path, notice, servers
}

// templateVar is a dashboard variable: its query is a string or an object, by its type.
type templateVar struct {
	Name, Type string
	Query      json.RawMessage
}

func TestCompose(t *testing.T) {
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	_, hcPath, notice, servers := haproxyConfig(t)
	if hcPath != "/readyz" {
		t.Errorf("HAProxy checks %q, want /readyz", hcPath)
	}

	var nodes, natsServers []types.ServiceConfig
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range p.Services {
			if !yield(n) {
				return
			}
		}
	}) {
		s := p.Services[name]
		switch {
		case strings.HasPrefix(name, "elicitd"):
			nodes = append(nodes, s)
		case strings.HasPrefix(name, "nats"):
			natsServers = append(natsServers, s)
		}
	}
	if len(nodes) != 3 || len(natsServers) != 3 {
		t.Fatalf("%d elicitd nodes and %d NATS servers, want 3 and 3", len(nodes), len(natsServers))
	}
	for _, want := range []string{"haproxy", "prometheus", "grafana"} {
		if _, ok := p.Services[want]; !ok {
			t.Errorf("no service %s", want)
		}
	}

	var targets []string
	for _, s := range nodes {
		t.Run(s.Name, func(t *testing.T) {
			if s.Image != "localhost/elicitd:latest" {
				t.Errorf("image %q, want the one deploy/build-image builds", s.Image)
			}
			if len(s.Entrypoint) != 0 {
				t.Errorf("entrypoint %q replaces the image's", s.Entrypoint)
			}
			flags := parseArgs(t, s.Command)
			if flags["http"] != "0.0.0.0:8080" {
				t.Errorf("--http %q", flags["http"])
			}
			if !slices.Contains(servers, s.Name+":"+strconv.Itoa(int(portOf(t, flags["http"])))) {
				t.Errorf("HAProxy's servers %v lack %s at --http's port", servers, s.Name)
			}
			store := strings.TrimPrefix(flags["store"], "nats://")
			var hosts []string
			for _, hp := range strings.Split(store, ",") {
				h, _, _ := net.SplitHostPort(hp)
				hosts = append(hosts, h)
			}
			if !slices.Equal(hosts, []string{"nats1", "nats2", "nats3"}) || flags["store-replicas"] != "3" {
				t.Errorf("--store %q --store-replicas %q: want all three NATS servers, R3", flags["store"], flags["store-replicas"])
			}
			drain, err := time.ParseDuration(flags["drain-wait"])
			if err != nil || drain <= notice {
				t.Errorf("--drain-wait %q is not longer than HAProxy takes to notice (%s)", flags["drain-wait"], notice)
			}
			if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= drain+2*time.Second {
				t.Errorf("stop_grace_period %v is not above --drain-wait %s and the 2 s of the exit", s.StopGracePeriod, drain)
			}
			if flags["log-format"] != "json" {
				t.Errorf("--log-format %q", flags["log-format"])
			}
			// --metrics-listen on the node's own fixed, private address, scraped by Prometheus.
			ml := flags["metrics-listen"]
			host, _, _ := net.SplitHostPort(ml)
			if ip := net.ParseIP(host); ip == nil || !ip.IsPrivate() {
				t.Errorf("--metrics-listen %q is not a private address", ml)
			}
			if n := s.Networks["elicitd"]; n == nil || n.Ipv4Address != host {
				t.Errorf("--metrics-listen %q is not the node's address on the network (%+v)", ml, s.Networks)
			}
			targets = append(targets, ml)
			for _, k := range []string{"ELICITD_HTTP_TOKEN", "ELICITD_STATE_KEY"} {
				if v := s.Environment[k]; v == nil || *v != composeEnv[k] {
					t.Errorf("%s is not taken from the environment: %v", k, v)
				}
			}
			if s.User != "" {
				t.Errorf("user %q replaces the image's non-root user", s.User)
			}
			if !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") || s.Privileged {
				t.Errorf("read_only %v, cap_drop %v, security_opt %v, privileged %v: want a read-only root, no capabilities, no privileges",
					s.ReadOnly, s.CapDrop, s.SecurityOpt, s.Privileged)
			}
			for _, dep := range []string{"nats1", "nats2", "nats3"} {
				if _, ok := s.DependsOn[dep]; !ok {
					t.Errorf("does not depend on %s", dep)
				}
			}
		})
	}

	// Prometheus scrapes exactly the nodes' metrics addresses.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct{ Targets []string } `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatal(err)
	}
	var scraped []string
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			scraped = append(scraped, st.Targets...)
		}
	}
	slices.Sort(scraped)
	slices.Sort(targets)
	if !slices.Equal(scraped, targets) {
		t.Errorf("Prometheus scrapes %v, the nodes listen on %v", scraped, targets)
	}

	// The NATS servers: one config, each its own name, JetStream, routes to all three.
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server_name: $SERVER_NAME", "jetstream {", "nats://nats1:6222", "nats://nats2:6222", "nats://nats3:6222"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nats.conf lacks %q", want)
		}
	}
	for _, s := range natsServers {
		if v := s.Environment["SERVER_NAME"]; v == nil || *v != s.Name {
			t.Errorf("%s: SERVER_NAME %v", s.Name, v)
		}
		if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Target == "/etc/nats/nats.conf" && strings.HasSuffix(v.Source, filepath.Join("compose", "nats.conf"))
		}) {
			t.Errorf("%s does not mount compose/nats.conf", s.Name)
		}
	}

	// Grafana starts with the Prometheus data source and docs/grafana-dashboard.json, both
	// provisioned from files: the dashboard is in its dashboards directory, a provider reads
	// that directory, and the dashboard names its data source through a variable (file
	// provisioning fills in no import input such as ${DS_PROMETHEUS}).
	g := p.Services["grafana"]
	if !slices.ContainsFunc(g.Volumes, func(v types.ServiceVolumeConfig) bool {
		return strings.HasPrefix(v.Target, "/etc/grafana/provisioning/datasources/")
	}) {
		t.Error("Grafana has no provisioned data source")
	}
	var provider, dashboard string
	for _, v := range g.Volumes {
		switch {
		case strings.HasPrefix(v.Target, "/etc/grafana/provisioning/dashboards/"):
			provider = v.Source
		case strings.HasSuffix(v.Source, filepath.Join("docs", "grafana-dashboard.json")):
			dashboard = v.Target
		}
	}
	if provider == "" || dashboard == "" {
		t.Fatalf("Grafana is not provisioned with docs/grafana-dashboard.json (provider %q, dashboard at %q)", provider, dashboard)
	}
	var prov struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		}
	}
	b, err = os.ReadFile(provider)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prov); err != nil {
		t.Fatalf("%s: %v", provider, err)
	}
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path != filepath.Dir(dashboard) {
		t.Errorf("the dashboard provider %s reads %+v, not the directory of %s", provider, prov.Providers, dashboard)
	}
	d, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d), "${DS_") {
		t.Error("docs/grafana-dashboard.json names its data source by an import input, which file provisioning leaves unfilled")
	}
	var dash struct {
		Templating struct {
			List []templateVar
		}
	}
	if err := json.Unmarshal(d, &dash); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(dash.Templating.List, func(v templateVar) bool {
		return v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"`
	}) {
		t.Error("docs/grafana-dashboard.json has no Prometheus data source variable")
	}
	for _, uid := range regexp.MustCompile(`"uid":\s*"([^"]*)"`).FindAllStringSubmatch(string(d), -1) {
		if uid[1] != "${datasource}" && uid[1] != "elicitd" {
			t.Errorf("a data source by uid %q, not by the variable", uid[1])
		}
	}
	// Every file a service mounts exists.
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s mounts %s: %v", s.Name, v.Source, err)
				}
			}
		}
	}
}

// TestComposeNeedsSecrets: without the token and the state key exported, compose refuses to
// start rather than run nodes that would refuse them.
func TestComposeNeedsSecrets(t *testing.T) {
	_, err := loadCompose(t, map[string]string{"ELICITD_STATE_KEY": strings.Repeat("s", 64)})
	if err == nil || !strings.Contains(err.Error(), "ELICITD_HTTP_TOKEN") {
		t.Errorf("compose without ELICITD_HTTP_TOKEN: %v", err)
	}
}

// TestHAProxyConfig checks deploy/compose/haproxy.cfg as HAProxy reads it (haproxy -c), and
// holds it to docs/cluster.md's affinity: the session id learnt from the response.
func TestHAProxyConfig(t *testing.T) {
	cfg, _, _, servers := haproxyConfig(t)
	for _, want := range []string{
		"balance roundrobin",
		"stick on req.hdr(Mcp-Session-Id)",
		"stick store-response res.hdr(Mcp-Session-Id)",
		"expire 30m", // --session-idle's default
		"timeout server 1h",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	if len(servers) != 3 {
		t.Errorf("servers %v, want three", servers)
	}
	_, err := exec.LookPath("haproxy")
	need(t, "haproxy (Debian's package haproxy)", err)
	out, err := exec.Command("haproxy", "-c", "-f", filepath.Join(repoRoot(t), "deploy", "compose", "haproxy.cfg")).CombinedOutput()
	if err != nil {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}
