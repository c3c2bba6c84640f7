package trialproto

import (
	"sort"
	"strconv"
	"strings"

	"github.com/trialform/trialform/providers"
)

// Names of the protocol environment variables.
const (
	EnvPlatform   = "NNI_PLATFORM"
	EnvSysDir     = "NNI_SYS_DIR"
	EnvOutputDir  = "NNI_OUTPUT_DIR"
	EnvTrialJobID = "NNI_TRIAL_JOB_ID"
	EnvExpID      = "NNI_EXP_ID"
	EnvTrialSeqID = "NNI_TRIAL_SEQ_ID"
	// EnvCommandChannel is never set: without it NNI (v2 and v3) falls back
	// to the file protocol this package implements.
	EnvCommandChannel = "NNI_TRIAL_COMMAND_CHANNEL"

	EnvExperiment = "TRIALFORM_EXPERIMENT"
	EnvTrialID    = "TRIALFORM_TRIAL_ID"
	EnvParams     = "TRIALFORM_PARAMS"
	EnvOutput     = "TRIALFORM_OUTPUT_DIR"
	// EnvTensorBoard is the trial's TensorBoard log directory.
	// EnvAdaptDLTensorBoard is the experiment's, as AdaptDL (seed 000)
	// defines it: trial code joins it with NNI_TRIAL_JOB_ID, which gives
	// EnvTensorBoard's directory.
	EnvTensorBoard        = "TRIALFORM_TENSORBOARD_DIR"
	EnvAdaptDLTensorBoard = "ADAPTDL_TENSORBOARD_LOGDIR"
)

var protocolNames = map[string]bool{
	EnvPlatform: true, EnvSysDir: true, EnvOutputDir: true, EnvTrialJobID: true,
	EnvExpID: true, EnvTrialSeqID: true, EnvCommandChannel: true,
	EnvExperiment: true, EnvTrialID: true, EnvParams: true, EnvOutput: true,
	EnvTensorBoard: true, EnvAdaptDLTensorBoard: true,
}

// IsProtocolEnv reports whether name is one of the variables the protocol
// owns; a user's trial.env cannot override these.
func IsProtocolEnv(name string) bool { return protocolNames[name] }

// Env is the environment of one trial: the user's req.Env plus the protocol
// variables (NNI_PLATFORM=local, NNI_SYS_DIR, NNI_OUTPUT_DIR,
// NNI_TRIAL_JOB_ID, NNI_EXP_ID, NNI_TRIAL_SEQ_ID, TRIALFORM_EXPERIMENT,
// TRIALFORM_TRIAL_ID, TRIALFORM_PARAMS, TRIALFORM_OUTPUT_DIR, and
// ADAPTDL_TENSORBOARD_LOGDIR = OUTPUT/tensorboard and
// TRIALFORM_TENSORBOARD_DIR = OUTPUT/tensorboard/TRIAL unless
// SetTensorBoard names others). The protocol
// wins over the user for those names; NNI_TRIAL_COMMAND_CHANNEL is never
// present.
func Env(req providers.StartRequest, sysDir, outputDir, paramsFile string) map[string]string {
	env := make(map[string]string, len(req.Env)+10)
	for k, v := range req.Env {
		if !IsProtocolEnv(k) {
			env[k] = v
		}
	}
	env[EnvPlatform] = "local"
	env[EnvSysDir] = sysDir
	env[EnvOutputDir] = outputDir
	env[EnvTrialJobID] = req.TrialID
	env[EnvExpID] = req.ExperimentID
	env[EnvTrialSeqID] = strconv.Itoa(req.Seq)
	env[EnvExperiment] = req.Experiment
	env[EnvTrialID] = req.TrialID
	env[EnvParams] = paramsFile
	env[EnvOutput] = outputDir
	tb := strings.TrimSuffix(outputDir, "/") + "/" + TensorBoardSubdir
	SetTensorBoard(env, tb, tb+"/"+req.TrialID)
	return env
}

// TensorBoardSubdir is where, under a trial's output directory, its
// TensorBoard logs go by default: the trial's own in TensorBoardSubdir/TRIAL,
// which is where AdaptDL-style code that joins ADAPTDL_TENSORBOARD_LOGDIR
// with NNI_TRIAL_JOB_ID writes too.
const TensorBoardSubdir = "tensorboard"

// SetTensorBoard sets the TensorBoard directories in env: AdaptDL's
// ADAPTDL_TENSORBOARD_LOGDIR is the experiment's directory expDir, and
// TRIALFORM_TENSORBOARD_DIR is the trial's, trialDir, which is expDir
// joined with the trial id (seed 000's trial code makes that join itself;
// a directory per trial given as ADAPTDL_TENSORBOARD_LOGDIR made its runs
// TRIAL/TRIAL).
func SetTensorBoard(env map[string]string, expDir, trialDir string) {
	env[EnvTensorBoard] = trialDir
	env[EnvAdaptDLTensorBoard] = expDir
}

// Environ merges env into base (an os.Environ-style list) for exec: entries
// of base whose name is in env, or that start with NNI_ or TRIALFORM_ (left
// over from whatever ran trialform), are dropped; env follows, sorted by
// name.
func Environ(base []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := env[name]; ok {
			continue
		}
		if strings.HasPrefix(name, "NNI_") || strings.HasPrefix(name, "TRIALFORM_") {
			continue
		}
		out = append(out, kv)
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+env[k])
	}
	return out
}
