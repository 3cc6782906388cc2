package check

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The image deploy/build-image built: ELICITD_IMAGE, by default elicitd:latest in podman's
// local storage (STORAGE_DRIVER, when set, is passed to podman as --storage-driver: CI uses
// vfs).
func imageName() string {
	if s := os.Getenv("ELICITD_IMAGE"); s != "" {
		return s
	}
	return "localhost/elicitd:latest"
}

func podman(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	if d := os.Getenv("STORAGE_DRIVER"); d != "" {
		args = append([]string{"--storage-driver", d}, args...)
	}
	return exec.Command("podman", args...)
}

// imageConfig is the part of `podman image inspect` the test reads.
type imageConfig struct {
	Size   int64
	Config struct {
		User         string
		ExposedPorts map[string]struct{}
		Env          []string
		Entrypoint   []string
		Cmd          []string
		WorkingDir   string
		Labels       map[string]string
		Volumes      map[string]struct{}
	}
}

// inspectImage returns the image's config, or skips (fails under CI) without podman or the
// image.
func inspectImage(t *testing.T) imageConfig {
	t.Helper()
	_, err := exec.LookPath("podman")
	need(t, "podman (Debian's package podman)", err)
	out, err := podman(t, "image", "inspect", imageName()).Output()
	if err != nil {
		err = fmt.Errorf("podman image inspect %s: %v (build it with deploy/build-image)", imageName(), err)
	}
	need(t, "the image", err)
	var imgs []imageConfig
	if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("podman image inspect: %v (%d images)", err, len(imgs))
	}
	return imgs[0]
}

// exportRootFS writes the image's root file system (podman export of a container created
// from it, never started) to dir, and returns every path in it with its header.
func exportRootFS(t *testing.T, dir string) map[string]*tar.Header {
	t.Helper()
	name := fmt.Sprintf("elicitd-check-%d", os.Getpid())
	if out, err := podman(t, "create", "--name", name, imageName()).CombinedOutput(); err != nil {
		t.Fatalf("podman create: %v\n%s", err, out)
	}
	defer func() { _ = podman(t, "rm", "--force", name).Run() }()
	cmd := podman(t, "export", name)
	var tarball, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &tarball, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("podman export: %v\n%s", err, errs.Bytes())
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(&tarball)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := "/" + strings.TrimPrefix(path.Clean(h.Name), "./")
		p = path.Clean(p)
		files[p] = h
		dst := filepath.Join(dir, filepath.FromSlash(p))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		default:
			// Links and devices: none belongs in the image, and the file list says so below.
		}
		if os.Geteuid() == 0 {
			_ = os.Lchown(dst, h.Uid, h.Gid)
		}
	}
	return files
}

// TestImage checks the image deploy/build-image built, by its config and its own files: it
// runs as a numeric non-root user, exposes the MCP and metrics ports, carries the OCI labels,
// holds elicitd, the CA bundle and /data and nothing else (no shell, no package manager),
// and its elicitd, started as the image starts it (entrypoint, user, environment), prints
// the version the label names and answers /healthz.
func TestImage(t *testing.T) {
	img := inspectImage(t)
	c := img.Config
	t.Logf("image %s: %.1f MB", imageName(), float64(img.Size)/1e6)
	if img.Size > 40e6 { // docs/deploy.md says 28 MB: the binary and the CA bundle
		t.Errorf("the image is %.1f MB: more than elicitd and the CA bundle", float64(img.Size)/1e6)
	}

	if c.User != "65532:65532" {
		t.Errorf("USER is %q, want 65532:65532 (numeric, not root: scratch has no /etc/passwd)", c.User)
	}
	var ports []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	if want := []string{"8080/tcp", "9090/tcp"}; !slices.Equal(ports, want) {
		t.Errorf("EXPOSE %v, want %v (MCP, metrics)", ports, want)
	}
	if want := []string{"/usr/local/bin/elicitd"}; !slices.Equal(c.Entrypoint, want) {
		t.Errorf("ENTRYPOINT %q, want %q", c.Entrypoint, want)
	}
	if want := []string{"--http", "0.0.0.0:8080"}; !slices.Equal(c.Cmd, want) {
		t.Errorf("CMD %q, want %q", c.Cmd, want)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("VOLUME %v, want /data only", c.Volumes)
	}
	if !slices.Contains(c.Env, "ELICITD_DATA_DIR=/data") {
		t.Errorf("ENV %q lacks ELICITD_DATA_DIR=/data", c.Env)
	}
	version := c.Labels["org.opencontainers.image.version"]
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/elicitd/elicitd",
		"org.opencontainers.image.licenses": "MIT",
		"org.opencontainers.image.title":    "elicitd",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s is %q, want %q", k, c.Labels[k], want)
		}
	}
	if version == "" {
		t.Error("label org.opencontainers.image.version is empty")
	}

	// Not t.TempDir, whose parent only root may enter: the image's user must reach its files.
	root, err := os.MkdirTemp("", "elicitd-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	files := exportRootFS(t, root)
	var regular []string
	for p, h := range files {
		switch {
		case h.Typeflag == tar.TypeReg:
			regular = append(regular, p)
		case h.Typeflag != tar.TypeDir:
			t.Errorf("%s: a %c entry; the image holds regular files and directories only", p, h.Typeflag)
		}
	}
	sort.Strings(regular)
	if want := []string{"/etc/ssl/certs/ca-certificates.crt", "/usr/local/bin/elicitd"}; !slices.Equal(regular, want) {
		t.Errorf("the image's files are %q, want only %q", regular, want)
	}
	for _, p := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/apt-get", "/usr/bin/dpkg", "/sbin/apk", "/usr/bin/env"} {
		if _, ok := files[p]; ok {
			t.Errorf("the image holds %s", p)
		}
	}
	if h := files["/data"]; h == nil || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("/data: %+v, want a directory owned by 65532:65532", h)
	}
	if h := files["/usr/local/bin/elicitd"]; h != nil && h.Mode&0o022 != 0 {
		t.Errorf("elicitd's mode is %o: writable by others than its owner", h.Mode)
	}
	if h := files["/etc/ssl/certs/ca-certificates.crt"]; h != nil && h.Size < 100_000 {
		t.Errorf("the CA bundle is %d bytes: not Debian's bundle", h.Size)
	}

	bin := filepath.Join(root, "usr", "local", "bin", "elicitd")
	env := slices.Clone(c.Env)
	data := filepath.Join(root, "data") // the image's own /data, owned by its user
	runEnv := append(slices.Clone(env), "ELICITD_DATA_DIR="+data, "HOME="+data)

	t.Run("version", func(t *testing.T) {
		out, err := asImageUser(exec.Command(bin, "--version"), c.User, runEnv).Output()
		if err != nil {
			t.Fatalf("elicitd --version: %v", err)
		}
		want := regexp.MustCompile(`^elicitd ` + regexp.QuoteMeta(version) + ` \(MCP [0-9-]+`)
		if !want.Match(out) {
			t.Errorf("elicitd --version printed %q, want the label's version %q", out, version)
		}
	})
	t.Run("healthz", func(t *testing.T) {
		// The image's command with its address made loopback: no token needed, and a port of
		// its own. The embedded store (the default with --http) keeps its files in /data.
		cmd := asImageUser(exec.Command(bin, "--http", "127.0.0.1:0"), c.User, runEnv)
		serveAndProbe(t, cmd)
	})
	t.Run("container", func(t *testing.T) {
		runContainer(t, root, c.Entrypoint, env, c.User)
	})
}

// asImageUser sets cmd to run with env alone, as the image's numeric user when the test
// runs as root.
func asImageUser(cmd *exec.Cmd, user string, env []string) *exec.Cmd {
	cmd.Env = env
	var uid, gid uint32
	if _, err := fmt.Sscanf(user, "%d:%d", &uid, &gid); err == nil && os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	return cmd
}

var servingLine = regexp.MustCompile(`serving MCP over Streamable HTTP.*address=(\S+)`)

// serveAndProbe starts cmd, an elicitd serving --http 127.0.0.1:0, reads its address from
// its log, checks that /healthz and /readyz answer 200, then stops it with SIGTERM.
func serveAndProbe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("elicitd after SIGTERM: %v", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("elicitd did not stop within 20 s of SIGTERM")
		}
	}()
	addr := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		done <- cmd.Wait()
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		done <- err
		t.Fatalf("elicitd exited before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("elicitd did not say where it serves within 60 s")
	}
	t.Logf("serving on %s", a)
	for _, p := range []string{"/healthz", "/readyz"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+p, nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %q, want 200", p, resp.StatusCode, body)
		}
	}
}

// runContainer runs the image's root file system as a container with runc, the OCI runtime
// podman drives: read-only, as the image's user, with its entrypoint and environment, and a
// fresh /data mounted on it (as a volume would be). `podman run` itself cannot run here, in
// this sandbox or in CI: as root it sets resource limits (RLIMIT_NOFILE, RLIMIT_NPROC) that
// the sandbox refuses, whatever --ulimit says, so the spec here sets none. It shares the
// host's network, so that the test reaches /healthz.
func runContainer(t *testing.T, rootfs string, entrypoint, env []string, user string) {
	_, err := exec.LookPath("runc")
	need(t, "runc (Debian's package runc)", err)
	if os.Geteuid() != 0 {
		need(t, "root, for runc", errors.New("runc runs a container only as root here"))
	}
	bundle := t.TempDir()
	if out, err := exec.Command("runc", "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	var spec map[string]any
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	var uid, gid int
	if _, err := fmt.Sscanf(user, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("USER %q is not uid:gid", user)
	}
	data := t.TempDir()
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	proc := spec["process"].(map[string]any)
	delete(proc, "rlimits")
	proc["terminal"] = false
	proc["args"] = append(slices.Clone(entrypoint), "--http", "127.0.0.1:0")
	proc["env"] = env
	proc["user"] = map[string]any{"uid": uid, "gid": gid}
	proc["cwd"] = "/"
	spec["root"] = map[string]any{"path": rootfs, "readonly": true}
	spec["mounts"] = append(spec["mounts"].([]any), map[string]any{
		"destination": "/data", "type": "bind", "source": data, "options": []string{"rbind", "rw"},
	})
	linux := spec["linux"].(map[string]any)
	var ns []any
	for _, n := range linux["namespaces"].([]any) {
		if n.(map[string]any)["type"] != "network" {
			ns = append(ns, n)
		}
	}
	linux["namespaces"] = ns
	b, err = json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("elicitd-check-%d", os.Getpid())
	cmd := exec.Command("runc", "run", "--bundle", bundle, id)
	defer func() { _ = exec.Command("runc", "delete", "--force", id).Run() }()
	serveAndProbe(t, cmd)
	// elicitd, not runc, made the store's files: the container wrote to its volume only.
	entries, err := os.ReadDir(data)
	if err != nil || len(entries) == 0 {
		t.Errorf("the container's /data holds nothing after serving with the embedded store (%v)", err)
	}
}
