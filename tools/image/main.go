// Command image writes trialform's container image as an OCI image layout
// (a directory that crane, skopeo, podman and containerd read) without a
// Docker daemon and without pulling a base image: FROM scratch, one layer
// holding the static binary, the host's CA certificates (for https:// git
// and cloud APIs), a passwd entry for the non-root user it runs as and
// the directories it writes. No python3: the image is for `trialform
// controller` running trials on a cluster platform (kubernetes Jobs, whose
// own image has python3); trials on the local platform need an image of
// your own with python3 (docs/controller.md).
//
//	go run ./tools/image -binary bin/linux/trialform -out bin/image -tag latest
//
// It is its own module (tools/image) so that go-containerregistry stays
// out of trialform's go.mod.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "", "the trialform binary: static (CGO_ENABLED=0), for the image's OS and architecture")
	flag.StringVar(&o.Out, "out", "bin/image", "directory of the OCI image layout (replaced)")
	flag.StringVar(&o.Tag, "tag", "latest", "the image's ref.name in the layout's index")
	flag.StringVar(&o.Arch, "arch", "", "the image's architecture (default: the binary's)")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into the image (skipped with a note when absent; \"\" for none)")
	flag.StringVar(&o.Version, "version", "", "org.opencontainers.image.version label")
	flag.Parse()
	if o.Binary == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -binary PATH [-out DIR] [-tag TAG]")
		os.Exit(2)
	}
	d, err := Write(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	for _, n := range d.Notes {
		fmt.Fprintln(os.Stderr, "image: note:", n)
	}
	fmt.Printf("wrote %s (OCI layout, tag %s, %s, %s)\n", o.Out, o.Tag, d.Platform, d.Digest)
}
