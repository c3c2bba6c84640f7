package kubernetes

// CRD platform kinds.
const (
	KindKubeflow            = "kubeflow"
	KindAdaptDL             = "adaptdl"
	KindFrameworkController = "frameworkcontroller"
)

// CRDConfig configures a platform that creates one custom resource per
// trial (platform "kubeflow", "adaptdl" or "frameworkcontroller"): the
// common kubernetes settings plus the kind's own.
type CRDConfig struct {
	Config
	Kind     string // KindKubeflow, KindAdaptDL or KindFrameworkController
	Operator string // kubeflow: one of KubeflowOperators
	// Roles are kubeflow's replica types (worker, ps, master) or
	// frameworkcontroller's task roles, in order; the trial's metrics come
	// from the first pod of the first role (kubeflow: of the master when
	// there is one).
	Roles []Role
	// AdaptDL: Adaptive makes the job preemptible and rescalable between
	// MinReplicas and MaxReplicas (0 = the scheduler's default).
	Adaptive                 bool
	MinReplicas, MaxReplicas int
}

// Role is one kubeflow replica type or frameworkcontroller task role.
type Role struct {
	Name     string // "worker", "ps", "master", or the task role's name
	Replicas int    // replicas (kubeflow) or task_number (frameworkcontroller)
	// CPU, Memory and GPU override the platform's resources for this role.
	CPU, Memory string
	GPU         int
	Image       string // "" = the platform's image
	// Command, when set, runs instead of the trial's command in this
	// role's pods (with the same environment and parameter.cfg).
	Command string
	// MinFailedTaskCount and MinSucceededTaskCount are frameworkcontroller's
	// framework attempt completion policy for the role (-1 = off).
	MinFailedTaskCount, MinSucceededTaskCount int
}
