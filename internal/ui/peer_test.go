package ui

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Without a token the dashboard serves only its own user's processes: on
// a shared machine another user read through it the output that the
// trials' 0600 files keep from them (curl as nobody got a trial's logs).
// The uid the server serves is changed to stand for another user; run as
// root, the test also connects as nobody for real.
func TestOtherUserRefusedWithoutToken(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".trialform"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := New(Options{StateDir: filepath.Join(dir, ".trialform"), WorkDir: dir, SameUser: true})
	ts := httptest.NewUnstartedServer(s)
	ts.Config = HTTPServer(s, Limits{})
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	fetch := func() (int, string) {
		t.Helper()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(ts.URL + "/api/overview")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	if code, body := fetch(); code != 200 {
		t.Fatalf("its own user: %d %s", code, body)
	}
	s.uid = os.Getuid() + 1
	code, body := fetch()
	if code != http.StatusForbidden || !strings.Contains(body, "serves only its own user") || !strings.Contains(body, "-token") {
		t.Errorf("another user: %d %q, want 403 saying whom it serves and -token", code, body)
	}
	s.uid = os.Getuid()
	if os.Getuid() != 0 {
		t.Log("not root: no connection as another user for real")
		return
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Log("no curl: no connection as another user for real")
		return
	}
	cmd := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", ts.URL+"/api/overview")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as nobody: %v", err)
	}
	if string(out) != "403" {
		t.Errorf("curl as nobody: %s, want 403", out)
	}
}

// procAddr and socketUID read /proc/net/tcp's form.
func TestSocketUID(t *testing.T) {
	a := procAddr(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080})
	if a != "0100007F:1F90" && a != "7F000001:1F90" { // little- or big-endian
		t.Fatalf("procAddr: %s", a)
	}
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n" +
		"   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 2 1 0000000000000000 20 4 30 10 -1\n" +
		"   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1\n"
	if uid, ok := socketUID([]byte(table), "0100007F:D431", "0100007F:1F90"); !ok || uid != 1001 {
		t.Errorf("client socket: %d %v, want 1001", uid, ok)
	}
	if _, ok := socketUID([]byte(table), "0100007F:D432", "0100007F:1F90"); ok {
		t.Error("found a socket that is not there")
	}
}
