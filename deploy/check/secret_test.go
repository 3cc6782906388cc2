package check

import (
	"bytes"
	"testing"

	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// cluster is a ClientProvider over a fake Kubernetes API holding objects: what Helm's lookup
// reads during an upgrade.
type cluster struct{ c dynamic.Interface }

func (c cluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	if kind != "Secret" {
		panic("the chart looks up only Secrets, not " + kind)
	}
	return c.c.Resource(gv.WithResource("secrets")), true, nil
}

func clusterWith(t *testing.T, objs ...runtime.Object) engine.ClientProvider {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return cluster{dynamicfake.NewSimpleDynamicClient(scheme, objs...)}
}

// TestChartSecretGeneratedOnce: the state key, the webhook secret and the generated token are
// made at the first install, and every upgrade keeps them (lookup reads the live Secret), so
// that the nodes' requestStates and the receivers' signatures survive an upgrade.
func TestChartSecretGeneratedOnce(t *testing.T) {
	first := mustRender(t, nil).secrets["e-elicitd"]
	if first == nil {
		t.Fatal("the first install makes no Secret e-elicitd")
	}
	first.Namespace = "elicitd"
	other := mustRender(t, nil).secrets["e-elicitd"]
	if bytes.Equal(other.Data["state-key"], first.Data["state-key"]) {
		t.Fatal("two installs generated the same state key")
	}

	up, err := renderLive(t, clusterWith(t, first), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCommon(t, up)
	got := up.secrets["e-elicitd"]
	for _, k := range []string{"state-key", "webhook-secret", "tokens"} {
		if !bytes.Equal(got.Data[k], first.Data[k]) {
			t.Errorf("the upgrade changed %s: %q, was %q", k, got.Data[k], first.Data[k])
		}
	}

	// A value given in the values wins over the live one.
	key := bytes.Repeat([]byte("g"), 40)
	up, err = renderLive(t, clusterWith(t, first), map[string]any{"secrets": map[string]any{"stateKey": string(key)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := up.secrets["e-elicitd"].Data["state-key"]; !bytes.Equal(got, key) {
		t.Errorf("state-key %q, want the value given", got)
	}
}
