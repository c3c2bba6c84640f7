package kubernetes

// FollowReady reports whether the following provider answers from its
// watched copies (both synced and watching).
func (k *Kubernetes) FollowReady() bool { return k.following() != nil }
