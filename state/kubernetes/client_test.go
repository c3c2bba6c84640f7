package k8sstate
