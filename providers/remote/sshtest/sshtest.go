// Package sshtest starts real OpenSSH servers on 127.0.0.1 for tests: each
// Server stands in for one remote machine. It generates the host keys and a
// user key, writes an sshd_config in a temporary directory (UsePAM no,
// StrictModes no, key authentication only, internal-sftp) and runs
// `/usr/sbin/sshd -D -f CONFIG -e`. It is test-only code.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/procfs"
	"golang.org/x/crypto/ssh"
)

// SSHD is the server binary the harness runs.
const SSHD = "/usr/sbin/sshd"

// Available reports why real sshd servers cannot run here ("" when they
// can).
func Available() string {
	if _, err := os.Stat(SSHD); err != nil {
		return SSHD + " is missing (Debian package openssh-server; `make deps` installs it)"
	}
	return ""
}

// Lab is a set of servers sharing one user key and one known_hosts file.
type Lab struct {
	Dir        string // temporary directory of keys, configs and logs
	User       string // the user to log in as (the current user)
	KeyFile    string // private user key (OpenSSH format, no passphrase)
	KnownHosts string // known_hosts holding every server's host key
	Servers    []*Server
}

// Server is one sshd on 127.0.0.1.
type Server struct {
	Name    string
	Host    string // "127.0.0.1"
	Port    int
	HostKey ssh.PublicKey
	dir     string
	config  string
	logPath string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// NewLab creates keys and configs for n servers in dir (created) and
// starts them. Call Close to stop them.
func NewLab(dir string, n int) (*Lab, error) { return NewLabConfig(dir, n, "") }

// NewLabConfig is NewLab with extra sshd_config lines, which come first
// and so win over the lab's own (sshd takes a keyword's first value):
// "MaxSessions 10" gives OpenSSH's default back, for one. An extra
// "Subsystem sftp" line replaces the lab's (sshd refuses a second one).
func NewLabConfig(dir string, n int, extra string) (*Lab, error) {
	if extra != "" && !strings.HasSuffix(extra, "\n") {
		extra += "\n"
	}
	if why := Available(); why != "" {
		return nil, errors.New(why)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, err
		}
	}
	lab := &Lab{Dir: dir, User: u.Username, KeyFile: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts")}
	userPub, err := writeKey(lab.KeyFile)
	if err != nil {
		return nil, err
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		return nil, err
	}
	subsystem := "Subsystem sftp internal-sftp\n"
	if strings.Contains(extra, "Subsystem sftp ") {
		subsystem = ""
	}
	var known strings.Builder
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		sdir := filepath.Join(dir, "sshd-"+name)
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return nil, err
		}
		hostPub, err := writeKey(filepath.Join(sdir, "host_ed25519"))
		if err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Name: name, Host: "127.0.0.1", Port: port, HostKey: hostPub, dir: sdir,
			config: filepath.Join(sdir, "sshd_config"), logPath: filepath.Join(sdir, "sshd.log")}
		cfg := extra + fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
%sMaxSessions 64
MaxStartups 64
LogLevel ERROR
`, port, filepath.Join(sdir, "host_ed25519"), filepath.Join(sdir, "sshd.pid"), auth, subsystem)
		if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		known.WriteString(KnownHostsLine(s.Host, s.Port, hostPub))
		lab.Servers = append(lab.Servers, s)
	}
	if err := os.WriteFile(lab.KnownHosts, []byte(known.String()), 0o600); err != nil {
		return nil, err
	}
	for _, s := range lab.Servers {
		if err := s.Start(); err != nil {
			lab.Close()
			return nil, err
		}
	}
	return lab, nil
}

// KnownHostsLine is the known_hosts line for host:port.
func KnownHostsLine(host string, port int, key ssh.PublicKey) string {
	h := host
	if port != 22 {
		h = "[" + host + "]:" + strconv.Itoa(port)
	}
	return h + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "\n"
}

// Close stops every server.
func (l *Lab) Close() {
	for _, s := range l.Servers {
		s.Stop()
	}
}

// Server returns the server named name ("a", "b", ...) or nil.
func (l *Lab) Server(name string) *Server {
	for _, s := range l.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Start runs the server (again, on the same port with the same host key)
// and waits until it accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(SSHD, "-D", "-e", "-f", s.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so Stop also ends the per-connection
	// processes (the trials' sessions are their own sessions).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start sshd: %w", err)
	}
	logf.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			s.cmd = cmd
			return nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("sshd on port %d exited at start: %s", s.Port, strings.TrimSpace(string(b)))
		default:
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return fmt.Errorf("sshd on port %d did not accept connections within 10s", s.Port)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server and its connection processes: the machine becomes
// unreachable (processes started through it keep running, as on a real
// host whose network went away).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	// Connection handlers call setsid: find the listener's descendants
	// first (detached trials were reparented away already), then kill.
	tree := descendants(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_, _ = s.cmd.Process.Wait()
	s.cmd = nil
	for i := 0; i < 200; i++ {
		c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// descendants lists the processes below root in the process tree.
func descendants(root int) []int { return procfs.Descendants(root, true) }

func writeKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "trialform test key")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return sp, os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// KillUnder kills every process whose working directory or command line is
// under dir: the trials (and supervisors) a test left on its "machines".
func KillUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || e.Name() == self {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.HasPrefix(cwd, dir+"/") || cwd == dir || strings.Contains(string(cmd), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
