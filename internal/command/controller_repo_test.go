package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestControllerRefusesAnUnparsableRepoURL: a password or token written
// in -repo with a character a URL must percent-encode (# / ? % or a
// space) made an URL that cannot be parsed. The controller did not
// recognise its credentials: it logged the whole -repo, password
// included, in "controller started", and again in every retry of the
// clone for ever ("clone https://bob:pa#ss@…: parse …: invalid port"),
// and served it on /readyz and the dashboard. It is refused at start,
// with the credentials left out and what to do.
func TestControllerRefusesAnUnparsableRepoURL(t *testing.T) {
	for _, repo := range []string{
		"https://bob:pa#ss99tok@127.0.0.1:1/r.git",
		"https://bob:pa%zztok@127.0.0.1:1/r.git",
		"https://bob:pa/sstok@127.0.0.1:1/r.git",
		"https://bob:pa?sstok@127.0.0.1:1/r.git",
		"https://bob:pa ss tok@127.0.0.1:1/r.git",
		"ssh://bob:pa#ss99tok@127.0.0.1:1/r.git",
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a controller that starts stops at once
		code := Run(ctx, []string{"controller", "-repo", repo, "-work-dir", t.TempDir(), "-interval", "1h"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		all := out.String() + errb.String()
		for _, part := range []string{"ss99tok", "zztok", "sstok", "ss tok"} {
			if strings.Contains(all, part) {
				t.Errorf("-repo %s: the output shows the password:\n%s", repo, all)
				break
			}
		}
		if code == 0 || !strings.Contains(errb.String(), "cannot be parsed") || !strings.Contains(errb.String(), "percent-encode") {
			t.Errorf("-repo %s: exit %d, want a refusal that says to percent-encode; stderr:\n%s", repo, code, errb.String())
		}
	}
}
