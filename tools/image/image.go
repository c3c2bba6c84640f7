package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as (distroless' "nonroot").
const (
	UID      = 65532
	User     = "65532:65532"
	Entry    = "/usr/local/bin/trialform"
	WorkDir  = "/var/lib/trialform"
	certPath = "/etc/ssl/certs/ca-certificates.crt"
)

// Options say what to build.
type Options struct {
	Binary, Out, Tag, Arch, CACerts, Version string
}

// Done says what was written.
type Done struct {
	Digest   v1.Hash
	Platform string
	Notes    []string
}

// epoch is every file's time and the image's creation time, so that the
// same binary gives the same digest.
var epoch = time.Unix(0, 0).UTC()

// Write builds the image and writes the layout.
func Write(o Options) (Done, error) {
	var d Done
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return d, err
	}
	arch, err := staticELF(o.Binary)
	if err != nil {
		return d, err
	}
	if o.Arch != "" {
		arch = o.Arch
	}
	var certs []byte
	if o.CACerts != "" {
		if certs, err = os.ReadFile(o.CACerts); errors.Is(err, os.ErrNotExist) {
			d.Notes = append(d.Notes, fmt.Sprintf("no CA bundle at %s: the image has none (https:// git needs one; give -ca-certs)", o.CACerts))
			certs = nil
		} else if err != nil {
			return d, err
		}
	}
	layer, err := rootLayer(bin, certs)
	if err != nil {
		return d, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return d, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return d, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{Entry}
	cf.Config.Cmd = []string{"controller"}
	cf.Config.User = User
	cf.Config.WorkingDir = WorkDir
	cf.Config.Env = []string{"PATH=/usr/local/bin", "HOME=/home/nonroot", "SSL_CERT_FILE=" + certPath}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":  "trialform",
		"org.opencontainers.image.source": "https://github.com/trialform/trialform",
	}
	if o.Version != "" {
		cf.Config.Labels["org.opencontainers.image.version"] = o.Version
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return d, err
	}
	if d.Digest, err = img.Digest(); err != nil {
		return d, err
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return d, err
	}
	p, err := layout.Write(o.Out, empty.Index)
	if err != nil {
		return d, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Tag}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: arch})); err != nil {
		return d, err
	}
	d.Platform = "linux/" + arch
	return d, nil
}

// staticELF checks the binary runs in an image without a libc (no ELF
// interpreter) and returns its GOARCH name.
func staticELF(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: not a Linux binary (%v): build it with GOOS=linux CGO_ENABLED=0", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked: the image has no libc; build it with CGO_ENABLED=0", path)
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_PPC64:
		return "ppc64le", nil
	case elf.EM_S390:
		return "s390x", nil
	}
	return "", fmt.Errorf("%s: machine %s: give -arch", path, f.Machine)
}

// rootLayer is the image's one layer.
func rootLayer(bin, certs []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)))
		},
		func() error { return file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, UID) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(Entry[1:], 0o755, bin) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		func() error { return dir(WorkDir[1:], 0o755, UID) },
	}
	if certs != nil {
		steps = append(steps,
			func() error { return dir("etc/ssl", 0o755, 0) },
			func() error { return dir("etc/ssl/certs", 0o755, 0) },
			func() error { return file(certPath[1:], 0o644, certs) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
