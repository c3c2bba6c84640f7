package convert

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// cloudFields maps, per cloud platform kind trialform runs, the fields of
// NNI's configuration (v1's ...Config and trial sections, v2's
// trainingService) to the platform block's attributes.
var cloudFields = map[string]map[string]string{
	"openpai": {
		"host": "host", "username": "username", "userName": "username", "token": "token",
		"trialCpuNumber": "trial_cpu_number", "cpuNum": "trial_cpu_number",
		"trialMemorySize": "trial_memory_size", "memoryMB": "trial_memory_size",
		"trialGpuNumber": "trial_gpu_number",
		"dockerImage":    "docker_image", "image": "docker_image",
		"virtualCluster":    "virtual_cluster",
		"storageConfigName": "storage_config_name", "paiStorageConfigName": "storage_config_name",
		"localStorageMountPoint": "local_storage_mount_point", "nniManagerNFSMountPath": "local_storage_mount_point",
		"containerStorageMountPoint": "container_storage_mount_point", "containerNFSMountPath": "container_storage_mount_point",
	},
	"dlc": {
		"jobType": "job_type", "image": "image", "podCount": "pod_count", "ecsSpec": "ecs_spec", "region": "region",
		"workspaceId": "workspace_id", "nasDataSourceId": "nas_data_source_id", "ossDataSourceId": "oss_data_source_id",
		"accessKeyId": "access_key_id", "accessKeySecret": "access_key_secret",
		"localStorageMountPoint": "local_storage_mount_point", "containerStorageMountPoint": "container_storage_mount_point",
	},
	"aml": {
		"subscriptionId": "subscription_id", "resourceGroup": "resource_group", "workspaceName": "workspace_name",
		"computeTarget": "compute_target", "dockerImage": "image", "image": "image",
		"localStorageMountPoint": "local_storage_mount_point", "containerStorageMountPoint": "container_storage_mount_point",
	},
	"dlts": {
		"dashboard": "dashboard", "cluster": "cluster", "team": "team", "email": "email", "password": "password",
		"gpuType": "gpu_type", "image": "image",
	},
}

// cloudReasons say why NNI fields of the cloud platforms are not converted.
var cloudReasons = map[string]string{
	"reuse":                "trialform starts one job per trial (no reused environments)",
	"reuseMode":            "trialform starts one job per trial (no reused environments)",
	"openpaiConfig":        "a job protocol to merge: trialform writes the job from docker_image and the trial_* resources",
	"openpaiConfigFile":    "a job protocol to merge: trialform writes the job from docker_image and the trial_* resources",
	"paiConfigPath":        "a job protocol to merge: trialform writes the job from docker_image and the trial_* resources",
	"platform":             "",
	"type":                 "the DLC node type: trialform's dlc jobs have one kind of node, Worker (NNI's default)",
	"maxTrialNumberPerGpu": "each trial is its own Azure ML job: the compute target's scheduler places jobs on GPUs",
	"useActiveGpu":         "each trial is its own Azure ML job: the compute target's scheduler places jobs on GPUs",
}

// cloudOptional are the attributes of a cloud platform that it does not
// need, with what it does without them: a placeholder there (NNI's
// "${your_ak_id}") is left out rather than made a required variable.
var cloudOptional = map[string]map[string]string{
	"dlc": {
		"access_key_id":      "without it the platform reads ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET from the environment",
		"access_key_secret":  "without it the platform reads ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET from the environment",
		"oss_data_source_id": "optional, as in NNI: set it when the data is on OSS",
		"workspace_id":       "optional, as in NNI: without it the jobs go to the default workspace",
	},
}

func placeholderNode(n *yaml.Node) (string, bool) {
	if p, ok := placeholder(n); ok {
		return p, true
	}
	if n.Kind == yaml.ScalarNode && isPlaceholder(n.Value) {
		return strings.TrimSpace(n.Value), true
	}
	return "", false
}

// nniCloud converts the fields of the cloud platform kind from objs into p:
// secrets become sensitive variables, placeholders variables, NNI's
// memoryMB a size string. The shared storage mount points, which the
// platform needs, become variables when NNI's configuration has none.
func (c *conv) nniCloud(kind string, p *block, objs ...*obj) {
	fields := cloudFields[kind]
	for _, o := range objs {
		for _, k := range o.unused() {
			attr, ok := fields[k]
			if !ok || p.has(attr) {
				continue
			}
			n := o.take(k)
			if n == nil {
				continue
			}
			if why, ok := cloudOptional[kind][attr]; ok {
				if ph, ok := placeholderNode(n); ok {
					p.tailComment(fmt.Sprintf("%s: left out, NNI's config held the placeholder %s; %s", attr, ph, why))
					c.warn(o.keyNode(k), o.field(k), "placeholder %s: %s left out: %s", ph, attr, why)
					continue
				}
			}
			switch {
			case isSecret(k):
				ref := c.secret(&c.vars, p, o.keyNode(k), o.field(k), kind+"_"+attr)
				c.markSensitive(strings.TrimPrefix(ref, "var."))
				p.raw(attr, ref)
			case k == "memoryMB":
				if f, ok := o.c.goValue(n).(float64); ok {
					p.set(attr, fmt.Sprintf("%dmb", int64(f)))
				}
			default:
				if _, ok := placeholder(n); ok || (n.Kind == yaml.ScalarNode && isPlaceholder(n.Value)) {
					c.setStr(p, attr, n, o.field(k), kind+"_"+attr)
					continue
				}
				p.set(attr, c.goValue(n))
			}
		}
	}
	for _, attr := range []string{"local_storage_mount_point", "container_storage_mount_point"} {
		if p.has(attr) {
			continue
		}
		name := c.declare(kind+"_"+attr, fmt.Sprintf("%s: the shared storage trialform and the jobs both mount, which NNI's %s configuration does not name: give it with -var or TRIALFORM_VAR_%s_%s", attr, kind, kind, attr))
		p.raw(attr, "var."+name)
	}
}

// markSensitive makes the declared variable name sensitive.
func (c *conv) markSensitive(name string) {
	for _, b := range c.vars.blocks {
		if len(b.labels) > 0 && b.labels[0] == name {
			b.raw("sensitive", "true")
		}
	}
}
