package schema

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// RemotePlatform is a platform "remote" block: SSH machines.
type RemotePlatform struct {
	Machines   []RemoteMachine
	KnownHosts string        // absolute local path; "" = ~/.ssh/known_hosts
	WorkDir    string        // on the machines, as written ("~/trialform" when unset)
	LostGrace  time.Duration // 0 = the provider's default (2m)
}

// RemoteMachine is one machine block of a remote platform.
type RemoteMachine struct {
	Host            string
	Port            int    // default 22
	User            string // "" = the local user
	SSHKeyFile      string // absolute local path, or ""
	Password        string // sensitive
	GPUIndices      []int
	MaxTrialsPerGPU int // default 1
	MaxTrials       int // 0 = the machine's CPU count
	PythonPath      string
	WorkDir         string // overrides the platform's work_dir
	DeclRange       hcl.Range
}

var remotePlatformSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "known_hosts"}, {Name: "work_dir"}, {Name: "lost_grace"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "machine"}},
}

var remoteMachineSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "host", Required: true}, {Name: "port"}, {Name: "user"}, {Name: "ssh_key_file"}, {Name: "password"},
		{Name: "gpu_indices"}, {Name: "max_trials_per_gpu"}, {Name: "max_trials"}, {Name: "python_path"}, {Name: "work_dir"},
	},
}

// decodeRemote checks a remote platform block strictly (unknown
// arguments, types, at least one machine, no machine twice) and fills
// p.Remote.
func (l *loader) decodeRemote(b *hcl.Block, p *Platform) {
	content, diags := b.Body.Content(remotePlatformSchema)
	l.diags = append(l.diags, diags...)
	rp := &RemotePlatform{}
	if a, ok := content.Attributes["known_hosts"]; ok {
		if s, ok := l.str(a); ok {
			rp.KnownHosts = l.localPath(s)
		}
	}
	if a, ok := content.Attributes["work_dir"]; ok {
		if s, ok := l.str(a); ok {
			if strings.TrimSpace(s) == "" {
				l.errorf(a.Expr.Range().Ptr(), "Invalid value", "work_dir must not be empty; it is the directory on each machine where trialform keeps code and trials (e.g. \"~/trialform\").")
			}
			rp.WorkDir = s
		}
	}
	if a, ok := content.Attributes["lost_grace"]; ok {
		if d, ok := l.duration(a); ok {
			rp.LostGrace = d
		}
	}
	if len(content.Blocks) == 0 {
		l.errorf(b.DefRange.Ptr(), "Missing machine block",
			"platform \"remote\" %q needs at least one machine block, e.g.\n  machine {\n    host = \"10.0.0.5\"\n    user = \"alice\"\n    ssh_key_file = \"~/.ssh/id_ed25519\"\n  }", p.Name)
	}
	seen := map[string]hcl.Range{}
	for _, mb := range content.Blocks {
		m := RemoteMachine{Port: 22, MaxTrialsPerGPU: 1, DeclRange: mb.DefRange}
		mc, diags := mb.Body.Content(remoteMachineSchema)
		l.diags = append(l.diags, diags...)
		if a, ok := mc.Attributes["host"]; ok {
			if s, ok := l.str(a); ok {
				if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\n/") {
					l.errorf(a.Expr.Range().Ptr(), "Invalid value", "host %q is not a host name or address.", s)
				}
				m.Host = s
			}
		}
		if a, ok := mc.Attributes["port"]; ok {
			if i, ok := l.integer(a, 1); ok {
				if i > 65535 {
					l.errorf(a.Expr.Range().Ptr(), "Invalid value", "port must be at most 65535, got %d.", i)
				}
				m.Port = int(i)
			}
		}
		if a, ok := mc.Attributes["password"]; ok {
			l.withSensitive(func() {
				if v, ok := l.typed(a, cty.String, "a string"); ok {
					v, _ = v.UnmarkDeep()
					m.Password = v.AsString()
				}
			})
		}
		for name, dst := range map[string]*string{"user": &m.User, "python_path": &m.PythonPath, "work_dir": &m.WorkDir} {
			if a, ok := mc.Attributes[name]; ok {
				if s, ok := l.str(a); ok {
					*dst = s
				}
			}
		}
		if a, ok := mc.Attributes["ssh_key_file"]; ok {
			if s, ok := l.str(a); ok {
				m.SSHKeyFile = l.localPath(s)
			}
		}
		if a, ok := mc.Attributes["gpu_indices"]; ok {
			if v, ok := l.typed(a, cty.List(cty.Number), "a list of GPU indices (whole numbers)"); ok {
				m.GPUIndices = []int{}
				seenG := map[int64]bool{}
				for it := v.ElementIterator(); it.Next(); {
					_, ev := it.Element()
					i, whole := wholeNumber(ev)
					if !whole || i < 0 || seenG[i] {
						l.errorf(a.Expr.Range().Ptr(), "Invalid value", "gpu_indices must hold distinct whole numbers >= 0 (GPU indices as nvidia-smi shows them on that machine).")
						break
					}
					seenG[i] = true
					m.GPUIndices = append(m.GPUIndices, int(i))
				}
			}
		}
		if a, ok := mc.Attributes["max_trials_per_gpu"]; ok {
			if i, ok := l.integer(a, 1); ok {
				m.MaxTrialsPerGPU = int(i)
			}
		}
		if a, ok := mc.Attributes["max_trials"]; ok {
			if i, ok := l.integer(a, 1); ok {
				m.MaxTrials = int(i)
			}
		}
		key := m.Host + ":" + strconv.Itoa(m.Port)
		if prev, dup := seen[key]; dup && m.Host != "" {
			l.errorf(mb.DefRange.Ptr(), "Duplicate machine", "machine %s is listed twice in platform \"remote\" %q; first at %s. Remove one.", key, p.Name, prev)
		}
		seen[key] = mb.DefRange
		rp.Machines = append(rp.Machines, m)
	}
	p.Remote = rp
}

// localPath resolves a path on this machine: "~/" is the home directory,
// a relative path is relative to the configuration directory.
func (l *loader) localPath(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, s[1:])
		}
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return filepath.Join(l.cfg.Dir, s)
}
