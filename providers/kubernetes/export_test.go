package kubernetes

// FollowReady reports whether the following provider answers from its
// watched copies (both synced and watching).
func (k *Kubernetes) FollowReady() bool { return k.following() != nil }

// FollowReady is the CRD platform's.
func (c *CRD) FollowReady() bool { return c.following() != nil }
