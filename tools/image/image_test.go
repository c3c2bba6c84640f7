//go:build linux

// The image is a Linux image and the tests read ELF binaries: they are
// built on Linux only (not skipped: CI runs on Linux, and a skip would
// hide a missing dependency there).

package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The layout `make image` writes is valid and holds what the Deployment
// of examples/controller runs: read back with go-containerregistry's
// layout package, the index names the tag, the config runs the binary as
// the non-root user, and the one layer holds the static binary (byte for
// byte), a passwd entry for that user, the CA bundle and the work dir
// owned by it. The same binary gives the same digest.
func TestLayoutReadsBack(t *testing.T) {
	dir := t.TempDir()
	// A small static program stands in for trialform (same build flags).
	src := filepath.Join(dir, "hello")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644)
	bin := filepath.Join(dir, "trialform")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs := filepath.Join(dir, "ca.pem")
	os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"), 0o644)
	out := filepath.Join(dir, "image")
	done, err := Write(Options{Binary: bin, Out: out, Tag: "v9", CACerts: certs, Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v9" || im.Manifests[0].Digest != done.Digest {
		t.Fatalf("index: %+v, want one image tagged v9 of digest %s", im.Manifests, done.Digest)
	}
	img, err := p.Image(done.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != Entry {
		t.Errorf("entrypoint %q, want %q", got, Entry)
	}
	if cf.Config.User != User || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("user %q, platform %s/%s; want %s, linux/%s", cf.Config.User, cf.OS, cf.Architecture, User, runtime.GOARCH)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, _ := os.ReadFile(bin)
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name], contents[h.Name] = h, b
	}
	if h := files[Entry[1:]]; h == nil || h.Mode&0o111 == 0 || !bytes.Equal(contents[Entry[1:]], want) {
		t.Errorf("the layer's %s: %+v; want the binary, executable", Entry, h)
	}
	if !strings.Contains(string(contents["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("etc/passwd: %q, want the non-root user 65532", contents["etc/passwd"])
	}
	if !bytes.Contains(contents[certPath[1:]], []byte("BEGIN CERTIFICATE")) {
		t.Errorf("no CA bundle at %s", certPath)
	}
	if h := files[WorkDir[1:]+"/"]; h == nil || h.Uid != UID {
		t.Errorf("the work dir %s: %+v, want a directory owned by %d", WorkDir, h, UID)
	}
	// Reproducible.
	again, err := Write(Options{Binary: bin, Out: filepath.Join(dir, "again"), Tag: "v9", CACerts: certs, Version: "v9"})
	if err != nil || again.Digest != done.Digest {
		t.Errorf("a second build: %s, %v; want the same digest %s", again.Digest, err, done.Digest)
	}
}

// A binary linked against libc is refused: the image has none.
func TestDynamicBinaryRefused(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("a dynamically linked binary to try: %v", err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	_, err = Write(Options{Binary: sh, Out: filepath.Join(t.TempDir(), "x"), Tag: "t"})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("%s: %v, want a refusal naming CGO_ENABLED=0", sh, err)
	}
}
