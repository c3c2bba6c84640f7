package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/providers"
	"github.com/trialform/trialform/providers/registry"
)

// Settings is a platform "remote" block.
type Settings struct {
	KnownHosts string            `hcl:"known_hosts,optional" doc:"known_hosts file on this machine (relative to the configuration directory; default ~/.ssh/known_hosts)"`
	WorkDir    string            `hcl:"work_dir,optional" doc:"directory on each machine for code and trials (default ~/trialform)"`
	LostGrace  time.Duration     `hcl:"lost_grace,optional" doc:"how long a trial may go unread (its machine unreachable, or its own files hanging there) before it is LOST (default 2m)"`
	Machines   []MachineSettings `hcl:"machine,block" doc:"one SSH machine; at least one"`
}

// MachineSettings is one machine block.
type MachineSettings struct {
	Host            string `hcl:"host,attr" doc:"host name or address"`
	Port            int    `hcl:"port,optional" min:"1" doc:"SSH port (default 22)"`
	User            string `hcl:"user,optional" doc:"login user (default the local user)"`
	SSHKeyFile      string `hcl:"ssh_key_file,optional" doc:"private key on this machine; without it and password, the SSH agent or ~/.ssh/id_*"`
	Password        string `hcl:"password,optional" doc:"password login (prefer a key)"`
	GPUIndices      []int  `hcl:"gpu_indices,optional" type:"a list of GPU indices (whole numbers)" doc:"GPUs trials may be given on that machine"`
	MaxTrialsPerGPU int    `hcl:"max_trials_per_gpu,optional" min:"1" doc:"trials sharing one GPU (default 1)"`
	MaxTrials       int    `hcl:"max_trials,optional" min:"1" doc:"trials at once on the machine (default its CPU count)"`
	PythonPath      string `hcl:"python_path,optional" doc:"directory put first on PATH on the machine"`
	WorkDir         string `hcl:"work_dir,optional" doc:"overrides the platform's work_dir for this machine"`
}

// Check checks what types do not: a machine at least, host names, ports,
// GPU indices, no machine twice.
func (s *Settings) Check(w *decl.Where) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if w.Has("work_dir") && strings.TrimSpace(s.WorkDir) == "" {
		diags = append(diags, w.Error("work_dir", "Invalid value", "work_dir must not be empty; it is the directory on each machine where trialform keeps code and trials (e.g. \"~/trialform\")."))
	}
	if len(s.Machines) == 0 {
		diags = append(diags, w.Error("", "Missing machine block",
			"platform \"remote\" %q needs at least one machine block, e.g.\n  machine {\n    host = \"10.0.0.5\"\n    user = \"alice\"\n    ssh_key_file = \"~/.ssh/id_ed25519\"\n  }", w.Name))
	}
	seen := map[string]string{}
	for i, m := range s.Machines {
		p := "machine." + strconv.Itoa(i)
		if strings.TrimSpace(m.Host) == "" || strings.ContainsAny(m.Host, " \t\n/") {
			diags = append(diags, w.Error(p+".host", "Invalid value", "host %q is not a host name or address.", m.Host))
		}
		port := m.Port
		if port == 0 {
			port = 22
		}
		if port > 65535 {
			diags = append(diags, w.Error(p+".port", "Invalid value", "port must be at most 65535, got %d.", port))
		}
		g := map[int]bool{}
		for _, x := range m.GPUIndices {
			if x < 0 || g[x] {
				diags = append(diags, w.Error(p+".gpu_indices", "Invalid value", "gpu_indices must hold distinct whole numbers >= 0 (GPU indices as nvidia-smi shows them on that machine)."))
				break
			}
			g[x] = true
		}
		key := m.Host + ":" + strconv.Itoa(port)
		if prev, dup := seen[key]; dup && m.Host != "" {
			diags = append(diags, w.Error(p, "Duplicate machine", "machine %s is listed twice in platform \"remote\" %q; first at %s. Remove one.", key, w.Name, prev))
		}
		seen[key] = w.Range(p).String()
	}
	return diags
}

// Registration is the remote kind's entry in the platform registry.
func Registration() registry.Kind {
	return registry.Kind{
		Name:    "remote",
		Summary: "processes on SSH machines (NNI's remote mode)",
		Config:  func() any { return &Settings{} },
		New: func(cfg any, env registry.Env) (providers.Provider, error) {
			s, ok := cfg.(*Settings)
			if !ok {
				return nil, fmt.Errorf("remote platform: configuration %T", cfg)
			}
			return New(ConfigFrom(s, env))
		},
	}
}

// ConfigFrom turns decoded settings into a Config: paths on this machine
// are resolved against env.Dir and the home directory.
func ConfigFrom(s *Settings, env registry.Env) Config {
	c := Config{Name: env.Name, WorkDir: s.WorkDir, LostGrace: s.LostGrace}
	if s.KnownHosts != "" {
		c.KnownHosts = localPath(s.KnownHosts, env.Dir)
	}
	if env.StateDir != "" {
		c.StateDir = filepath.Join(env.StateDir, "remote", env.Name)
	}
	for _, m := range s.Machines {
		mc := Machine{
			Host: m.Host, Port: m.Port, User: m.User, Password: m.Password,
			GPUIndices: m.GPUIndices, MaxTrialsPerGPU: m.MaxTrialsPerGPU, MaxTrials: m.MaxTrials,
			PythonPath: m.PythonPath, WorkDir: m.WorkDir,
		}
		if mc.Port == 0 {
			mc.Port = 22
		}
		if mc.MaxTrialsPerGPU == 0 {
			mc.MaxTrialsPerGPU = 1
		}
		if m.SSHKeyFile != "" {
			mc.KeyFile = localPath(m.SSHKeyFile, env.Dir)
		}
		c.Machines = append(c.Machines, mc)
	}
	return c
}

// localPath resolves a path on this machine: "~/" is the home directory,
// a relative path is relative to dir.
func localPath(s, dir string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, s[1:])
		}
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return filepath.Join(dir, s)
}
