package cloudjob

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/trialform/trialform/internal/decl"
)

// MountSettings are the shared storage attributes of a cloud platform
// block; embed it in the platform's settings struct (the registry reads
// embedded structs' tags).
type MountSettings struct {
	LocalMount     string `hcl:"local_storage_mount_point,attr" doc:"where the shared storage (NFS, NAS) that the jobs mount is mounted on this machine; trialform copies code and parameters there (NNI's nniManagerNFSMountPath)"`
	ContainerMount string `hcl:"container_storage_mount_point,attr" doc:"where the same storage is mounted in the job's containers, an absolute path (NNI's containerNFSMountPath)"`
}

// Check checks the mount paths: the local one not empty, the container one
// absolute.
func (m *MountSettings) Check(w *decl.Where) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if strings.TrimSpace(m.LocalMount) == "" {
		diags = append(diags, w.Error("local_storage_mount_point", "Invalid value", "local_storage_mount_point must name the directory on this machine where the jobs' shared storage is mounted (e.g. \"/mnt/nfs\")."))
	}
	if !path.IsAbs(m.ContainerMount) {
		diags = append(diags, w.Error("container_storage_mount_point", "Invalid value", "container_storage_mount_point must be an absolute path in the container (e.g. \"/mnt/nfs\"), got %q.", m.ContainerMount))
	}
	return diags
}

// Local resolves the local mount: "~/" is the home directory, a relative
// path is relative to dir (the configuration directory).
func (m *MountSettings) Local(dir string) string {
	s := m.LocalMount
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
