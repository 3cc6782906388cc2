package check

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// rendered is a chart rendered with one set of values, every manifest decoded strictly into
// its Kubernetes type.
type rendered struct {
	deployment      *appsv1.Deployment
	services        []*corev1.Service
	secrets         map[string]*corev1.Secret
	pvcs            map[string]*corev1.PersistentVolumeClaim
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
}

// render renders deploy/helm/elicitd as `helm template` does (no cluster: lookup finds
// nothing), with the values files given and then the values in set, and decodes every
// manifest strictly: a field its type does not have fails the test.
func render(t *testing.T, set map[string]any, files ...string) (*rendered, error) {
	t.Helper()
	return renderLive(t, nil, set, files...)
}

// renderLive renders as render does, as an upgrade does when live is not nil: lookup then
// reads live's objects, as Helm reads the cluster's.
func renderLive(t *testing.T, live engine.ClientProvider, set map[string]any, files ...string) (*rendered, error) {
	t.Helper()
	root := repoRoot(t)
	ch, err := loader.Load(filepath.Join(root, "deploy", "helm", "elicitd"))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	vals = chartutil.CoalesceTables(set, vals)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: "e", Namespace: "elicitd", Revision: 1, IsInstall: live == nil, IsUpgrade: live != nil,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	var out map[string]string
	if live == nil {
		out, err = engine.Render(ch, rv)
	} else {
		out, err = engine.RenderWithClientProvider(ch, rv, live)
	}
	if err != nil {
		return nil, err
	}
	r := &rendered{secrets: map[string]*corev1.Secret{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	names := slices.Sorted(maps.Keys(out))
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out[name], -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			var meta struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			strict := func(into any) {
				t.Helper()
				if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
					t.Fatalf("%s: %s %s does not decode strictly: %v\n%s", name, meta.APIVersion, meta.Kind, err, doc)
				}
			}
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 Deployment":
				if r.deployment != nil {
					t.Fatalf("%s: a second Deployment", name)
				}
				r.deployment = &appsv1.Deployment{}
				strict(r.deployment)
			case "v1 Service":
				s := &corev1.Service{}
				strict(s)
				r.services = append(r.services, s)
			case "v1 Secret":
				s := &corev1.Secret{}
				strict(s)
				r.secrets[s.Name] = s
			case "v1 PersistentVolumeClaim":
				p := &corev1.PersistentVolumeClaim{}
				strict(p)
				r.pvcs[p.Name] = p
			case "policy/v1 PodDisruptionBudget":
				p := &policyv1.PodDisruptionBudget{}
				strict(p)
				r.pdbs = append(r.pdbs, p)
			case "monitoring.coreos.com/v1 ServiceMonitor":
				s := &monitoringv1.ServiceMonitor{}
				strict(s)
				r.serviceMonitors = append(r.serviceMonitors, s)
			default:
				t.Fatalf("%s: a %s %s, which this test does not know", name, meta.APIVersion, meta.Kind)
			}
		}
	}
	if r.deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	return r, nil
}

// mustRender renders or fails.
func mustRender(t *testing.T, set map[string]any, files ...string) *rendered {
	t.Helper()
	r, err := render(t, set, files...)
	if err != nil {
		t.Fatalf("render %v %v: %v", files, set, err)
	}
	return r
}

// elicitdFlags are the flags docs/settings.md lists (cmd/elicitd's docs test holds that
// page to `elicitd -help`), with whether each is a boolean that takes no value.
func elicitdFlags(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "settings.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| [^|]* \\| `?([^|`]*)`?")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		flags[m[1]] = m[2] == "false"
	}
	if len(flags) < 30 {
		t.Fatalf("read %d flags from docs/settings.md", len(flags))
	}
	return flags
}

// parseArgs reads a container's args as elicitd does: --flag value, or a boolean alone.
func parseArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	known := elicitdFlags(t)
	got := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			t.Fatalf("arg %q is not a flag (elicitd takes flags only)", args[i])
		}
		boolean, exists := known[name]
		if !exists {
			t.Fatalf("--%s: elicitd has no such flag (docs/settings.md)", name)
		}
		if boolean {
			got[name] = "true"
			continue
		}
		if i+1 >= len(args) {
			t.Fatalf("--%s has no value", name)
		}
		got[name] = args[i+1]
		i++
	}
	return got
}

func portOf(t *testing.T, hostPort string) int32 {
	t.Helper()
	i := strings.LastIndex(hostPort, ":")
	n, err := strconv.Atoi(hostPort[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("%q is not host:port", hostPort)
	}
	return int32(n)
}

// containerPort resolves a probe's port (a name or a number) to the container's port.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("port %q is not a port of container %s", p.StrVal, c.Name)
	return 0
}

// checkCommon asserts what every variant must hold, and returns elicitd's flags.
func checkCommon(t *testing.T, r *rendered) map[string]string {
	t.Helper()
	d := r.deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want elicitd alone", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("command %q replaces the image's entrypoint", c.Command)
	}
	flags := parseArgs(t, c.Args)

	// The probes reach the MCP listener, on /readyz and /healthz.
	httpPort := portOf(t, flags["http"])
	if flags["http"] != fmt.Sprintf("0.0.0.0:%d", httpPort) {
		t.Errorf("--http %q: want every address of the pod", flags["http"])
	}
	rp, lp := c.ReadinessProbe, c.LivenessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/readyz" || containerPort(t, c, rp.HTTPGet.Port) != httpPort {
		t.Errorf("readiness probe %+v: want GET /readyz on --http's port %d", rp, httpPort)
	}
	if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" || containerPort(t, c, lp.HTTPGet.Port) != httpPort {
		t.Errorf("liveness probe %+v: want GET /healthz on --http's port %d", lp, httpPort)
	}

	// The drain: /readyz turns 503 at SIGTERM; the pod must be out of the endpoints (the
	// readiness probe failed failureThreshold times) before elicitd refuses calls, and
	// Kubernetes must not kill it before it has exited (within --drain-wait and 2 s).
	drain, err := time.ParseDuration(flags["drain-wait"])
	if err != nil {
		t.Fatalf("--drain-wait %q: %v", flags["drain-wait"], err)
	}
	noticed := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second
	if drain <= noticed {
		t.Errorf("--drain-wait %s is not longer than the readiness probe's %ds x %d = %s", drain, rp.PeriodSeconds, rp.FailureThreshold, noticed)
	}
	if drain > 5*time.Minute {
		t.Errorf("--drain-wait %s is over elicitd's 5m", drain)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= drain+2*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v is not above --drain-wait %s and the 2 s of the exit", g, drain)
	}

	if flags["log-format"] != "json" {
		t.Errorf("--log-format %q, want json", flags["log-format"])
	}

	// Nothing as root, nothing it can gain.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Privileged == nil || *sc.Privileged ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext %+v: want non-root, no privilege escalation, a read-only root, all capabilities dropped", sc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it never uses")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares a host namespace")
	}

	// Memory: the Go runtime's limit under the container's.
	limit := c.Resources.Limits.Memory()
	req := c.Resources.Requests.Memory()
	if limit.IsZero() || req.IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v: want memory requests and limit, and a CPU request", c.Resources)
	}
	if ml, err := strconv.ParseInt(flags["memory-limit"], 10, 64); err != nil || ml >= limit.Value() || ml < 64<<20 {
		t.Errorf("--memory-limit %q must be at least 64 MiB and under the container's limit %s", flags["memory-limit"], limit)
	} else if held := int64(128 << 20); ml-held < 64<<20 {
		t.Errorf("--memory-limit %d leaves under 64 MiB beside the default upload budget", ml)
	}

	// The shared requestState key comes from a Secret the release has (or one given).
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	sk := env["ELICITD_STATE_KEY"]
	if sk.ValueFrom == nil || sk.ValueFrom.SecretKeyRef == nil || sk.ValueFrom.SecretKeyRef.Key != "state-key" {
		t.Fatalf("ELICITD_STATE_KEY %+v: want it from a Secret", sk)
	}
	if s, ok := r.secrets[sk.ValueFrom.SecretKeyRef.Name]; ok {
		if key := s.Data["state-key"]; len(key) < 32 {
			t.Errorf("Secret %s: state-key of %d bytes, elicitd needs 32 or more", s.Name, len(key))
		}
		if ws := string(s.Data["webhook-secret"]); !strings.HasPrefix(ws, "whsec_") {
			t.Errorf("Secret %s: webhook-secret %q is not a whsec_ secret", s.Name, ws)
		}
	}
	// A pod's address is not loopback: clients need a token or OAuth.
	if _, ok := env["ELICITD_HTTP_TOKEN"]; !ok && flags["auth-issuer"] == "" {
		t.Error("neither ELICITD_HTTP_TOKEN nor --auth-issuer: elicitd refuses to serve a pod's address without one")
	}
	if tok, ok := env["ELICITD_HTTP_TOKEN"]; ok {
		ref := tok.ValueFrom.SecretKeyRef
		if s, own := r.secrets[ref.Name]; own && len(s.Data[ref.Key]) < 16 {
			t.Errorf("Secret %s: %s holds %q, under elicitd's 16 characters a token", s.Name, ref.Key, s.Data[ref.Key])
		}
	}
	if _, ok := env["ELICITD_WEBHOOK_SECRET"]; ok != (flags["webhook"] != "") {
		t.Error("ELICITD_WEBHOOK_SECRET without --webhook (or the reverse): elicitd refuses to start")
	}
	for _, e := range c.Env {
		if e.Value != "" && (strings.Contains(e.Name, "TOKEN") || strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "PASSWORD")) {
			t.Errorf("%s is written in the pod spec: secrets come from a Secret", e.Name)
		}
	}

	// Metrics on the pod's own address, its port exposed and announced.
	if ml := flags["metrics-listen"]; ml != "" {
		mp := portOf(t, ml)
		if !strings.HasPrefix(ml, "$(POD_IP):") || env["POD_IP"].ValueFrom == nil || env["POD_IP"].ValueFrom.FieldRef.FieldPath != "status.podIP" {
			t.Errorf("--metrics-listen %q: want the pod's own address (status.podIP), the only private one it has", ml)
		}
		if containerPort(t, c, intstr.FromString("metrics")) != mp {
			t.Errorf("container port metrics is not --metrics-listen's %d", mp)
		}
		if a := d.Spec.Template.Annotations; a["prometheus.io/scrape"] == "true" && a["prometheus.io/port"] != strconv.Itoa(int(mp)) {
			t.Errorf("prometheus.io/port %q, want %d", a["prometheus.io/port"], mp)
		}
	}

	// Every Secret the pod reads is one the release makes or one the values name; every
	// volume is mounted.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	for _, v := range pod.Volumes {
		if _, ok := mounts[v.Name]; !ok {
			t.Errorf("volume %s is not mounted", v.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			t.Errorf("mount %s has no volume", m.Name)
		}
	}

	// The Service reaches the pods' MCP port.
	if len(r.services) != 1 {
		t.Fatalf("%d Services, want 1", len(r.services))
	}
	svc := r.services[0]
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the pods lack", k, v)
		}
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.TargetPort == intstr.FromString("http") && p.Name == "http"
	}) {
		t.Errorf("the Service has no port http to the pods' MCP port: %+v", svc.Spec.Ports)
	}
	return flags
}

// mountedFile asserts that path (a flag's file) lies in a mount of a Secret volume holding
// that file, and returns the Secret's name.
func mountedFile(t *testing.T, pod corev1.PodSpec, path string) string {
	t.Helper()
	c := pod.Containers[0]
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				if !m.ReadOnly {
					t.Errorf("Secret volume %s is mounted writable", v.Name)
				}
				if len(v.Secret.Items) > 0 && !slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == rel }) {
					t.Errorf("Secret %s puts no file at %s", v.Secret.SecretName, rel)
				}
				return v.Secret.SecretName
			}
		}
	}
	t.Errorf("%s is in no Secret volume mounted", path)
	return ""
}

// The variants docs/deploy.md shows, by values file.
var variants = []string{
	"deploy/helm/examples/cluster.yaml",
	"deploy/helm/examples/single.yaml",
	"deploy/helm/examples/oauth.yaml",
	"deploy/helm/examples/servicemonitor.yaml",
}

func TestChartDefaults(t *testing.T) {
	r := mustRender(t, nil)
	flags := checkCommon(t, r)
	d := r.deployment
	if *d.Spec.Replicas != 3 {
		t.Errorf("%d replicas by default, want 3", *d.Spec.Replicas)
	}
	if !strings.HasPrefix(flags["store"], "nats://") || flags["store-replicas"] != "3" {
		t.Errorf("--store %q --store-replicas %q: want a NATS cluster, R3", flags["store"], flags["store-replicas"])
	}
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v: want a rolling update that takes no node down before its successor is ready", d.Spec.Strategy)
	}
	if len(r.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want 1", len(r.pdbs))
	}
	pdb := r.pdbs[0]
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the PodDisruptionBudget selects %s=%s, which the pods lack", k, v)
		}
	}
	// No token given and no OAuth: the chart generates one, in its own Secret.
	if s := r.secrets["e-elicitd"]; s == nil || len(s.Data["tokens"]) < 16 {
		t.Error("the default install generates no token in Secret e-elicitd")
	}
	if a := d.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v: want Prometheus scrape annotations", a)
	}
	if len(r.serviceMonitors) != 0 {
		t.Error("a ServiceMonitor by default; its CRD may not be installed")
	}
}

func TestChartCluster(t *testing.T) {
	r := mustRender(t, map[string]any{"store": map[string]any{"nats": map[string]any{
		"caSecret": "nats-ca", "user": "elicitd", "passwordSecret": "nats-password",
	}}}, "deploy/helm/examples/cluster.yaml")
	flags := checkCommon(t, r)
	pod := r.deployment.Spec.Template.Spec
	if got := mountedFile(t, pod, flags["nats-creds"]); got != "elicitd-nats" {
		t.Errorf("--nats-creds %q is from Secret %q, want elicitd-nats", flags["nats-creds"], got)
	}
	if got := mountedFile(t, pod, flags["nats-ca"]); got != "nats-ca" {
		t.Errorf("--nats-ca %q is from Secret %q, want nats-ca", flags["nats-ca"], got)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e
	}
	if ref := env["ELICITD_HTTP_TOKEN"].ValueFrom; ref == nil || ref.SecretKeyRef.Name != "elicitd-tokens" || ref.SecretKeyRef.Key != "tokens" {
		t.Errorf("ELICITD_HTTP_TOKEN %+v: want Secret elicitd-tokens, key tokens", env["ELICITD_HTTP_TOKEN"])
	}
	if ref := env["ELICITD_NATS_PASSWORD"].ValueFrom; ref == nil || ref.SecretKeyRef.Name != "nats-password" || flags["nats-user"] != "elicitd" {
		t.Errorf("ELICITD_NATS_PASSWORD %+v, --nats-user %q", env["ELICITD_NATS_PASSWORD"], flags["nats-user"])
	}
	if s := r.secrets["e-elicitd"]; s == nil || s.Data["tokens"] != nil {
		t.Error("with existing tokens, the chart's Secret holds the state key and the webhook secret only")
	}
}

func TestChartSingleNode(t *testing.T) {
	r := mustRender(t, nil, "deploy/helm/examples/single.yaml")
	flags := checkCommon(t, r)
	d := r.deployment
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("%d replicas, strategy %s: want one node, recreated (one process per data directory)", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	if flags["store"] != "embedded" || flags["data-dir"] != "/data" {
		t.Errorf("--store %q --data-dir %q: want the embedded store on /data", flags["store"], flags["data-dir"])
	}
	pod := d.Spec.Template.Spec
	var claim string
	for _, v := range pod.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	pvc := r.pvcs[claim]
	if pvc == nil {
		t.Fatalf("volume data is not the release's PersistentVolumeClaim (%q; rendered %v)", claim, slices.Collect(maps.Keys(r.pvcs)))
	}
	if !slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "data" && m.MountPath == flags["data-dir"] && !m.ReadOnly
	}) {
		t.Error("the claim is not mounted writable at --data-dir")
	}
	if pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != *pod.SecurityContext.RunAsUser {
		t.Error("no fsGroup: the volume may not be writable by elicitd's user")
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("2Gi")) < 0 {
		t.Errorf("the claim asks %s; JetStream reserves 2 GiB for the buckets", q.String())
	}
	if len(r.pdbs) != 0 {
		t.Error("a PodDisruptionBudget for one node only blocks node drains")
	}
}

func TestChartOAuth(t *testing.T) {
	r := mustRender(t, nil, "deploy/helm/examples/oauth.yaml")
	flags := checkCommon(t, r)
	if flags["auth-issuer"] != "https://auth.example.com" || flags["public-url"] != "https://elicitd.example.com/mcp" || flags["auth-scope"] != "elicitd" {
		t.Errorf("OAuth flags %v", flags)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range r.deployment.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if _, ok := env["ELICITD_HTTP_TOKEN"]; ok {
		t.Error("with OAuth and no tokens given, the chart adds a static token")
	}
	for _, n := range []string{"ELICITD_AUTH_CLIENT_ID", "ELICITD_AUTH_CLIENT_SECRET"} {
		if ref := env[n].ValueFrom; ref == nil || ref.SecretKeyRef.Name != "elicitd-oauth" {
			t.Errorf("%s %+v: want Secret elicitd-oauth", n, env[n])
		}
	}
	if ws := env["ELICITD_WEBHOOK_SECRET"].ValueFrom; ws == nil || ws.SecretKeyRef.Name != "e-elicitd" || ws.SecretKeyRef.Key != "webhook-secret" {
		t.Errorf("ELICITD_WEBHOOK_SECRET %+v: want the chart's Secret", env["ELICITD_WEBHOOK_SECRET"])
	}
	if flags["page-url"] != "https://elicitd.example.com" {
		t.Errorf("--page-url %q", flags["page-url"])
	}
}

func TestChartServiceMonitor(t *testing.T) {
	r := mustRender(t, nil, "deploy/helm/examples/servicemonitor.yaml")
	checkCommon(t, r)
	if len(r.serviceMonitors) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(r.serviceMonitors))
	}
	sm := r.serviceMonitors[0]
	svc := r.services[0]
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the Service lacks", k, v)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("endpoints %+v: want port metrics, /metrics", sm.Spec.Endpoints)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
		t.Error("the Service has no port metrics for the ServiceMonitor")
	}
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("labels %v: want the values' release label", sm.Labels)
	}
	if _, ok := r.deployment.Spec.Template.Annotations["prometheus.io/scrape"]; ok {
		t.Error("scrape annotations beside the ServiceMonitor: scraped twice")
	}
}

// TestChartGivenSecrets: secrets given in values are the ones used.
func TestChartGivenSecrets(t *testing.T) {
	key := strings.Repeat("k", 40)
	r := mustRender(t, map[string]any{
		"secrets": map[string]any{"stateKey": key, "webhookSecret": "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"},
		"auth":    map[string]any{"tokens": map[string]any{"values": []any{"0123456789abcdef", "fedcba9876543210"}}},
	})
	checkCommon(t, r)
	s := r.secrets["e-elicitd"]
	if string(s.Data["state-key"]) != key || string(s.Data["tokens"]) != "0123456789abcdef,fedcba9876543210" {
		t.Errorf("Secret %v: want the values given", s.Data)
	}
	r = mustRender(t, map[string]any{"secrets": map[string]any{"existingSecret": "mine"}})
	checkCommon(t, r)
	if s := r.secrets["e-elicitd"]; s == nil || s.Data["state-key"] != nil {
		t.Error("with secrets.existingSecret, the chart's Secret still holds a state key")
	}
}

// TestChartRefuses: values that cannot work stop the render, saying why.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]any
		want string
	}{
		{map[string]any{"drainWaitSeconds": 4}, "drainWaitSeconds (4) must exceed"},
		{map[string]any{"terminationGracePeriodSeconds": 12}, "terminationGracePeriodSeconds (12) must be at least"},
		{map[string]any{"mode": "both"}, "mode must be cluster or single"},
		{map[string]any{"auth": map[string]any{"oauth": map[string]any{"issuers": []any{"https://a.example.com"}}}}, "needs auth.oauth.publicURL"},
		{map[string]any{"auth": map[string]any{"tokens": map[string]any{"values": []any{"short"}}}}, "at least 16 characters"},
		{map[string]any{"secrets": map[string]any{"stateKey": "short"}}, "at least 32 characters"},
	} {
		_, err := render(t, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: %v, want an error saying %q", tc.set, err, tc.want)
		}
	}
}

// TestChartVariantsDocumented: docs/deploy.md shows every variant the tests render, and
// every example values file is one of them.
func TestChartVariantsDocumented(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "helm", "examples", "*.yaml"))
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		got = append(got, filepath.ToSlash(rel))
	}
	sort.Strings(got)
	want := slices.Sorted(slices.Values(variants))
	if !slices.Equal(got, want) {
		t.Errorf("deploy/helm/examples holds %v, the tests render %v", got, want)
	}
	for _, v := range variants {
		if !strings.Contains(string(doc), v) {
			t.Errorf("docs/deploy.md does not show %s", v)
		}
	}
}
