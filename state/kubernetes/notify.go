package k8sstate

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Changes watches the state's Secrets (the index, the series, the marks),
// their metadata only, and sends a value after each change, until ctx is
// done. A watch the
// apiserver ends is started again from where it was (or, when that is
// too old, from now, with one value for what may have been missed).
func (b *Backend) Changes(ctx context.Context) (<-chan struct{}, error) {
	rv, err := b.listRV(ctx)
	if err != nil {
		return nil, err
	}
	w, err := b.watch(ctx, rv)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	notify := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(ch)
		wait := 200 * time.Millisecond
		for {
			if w != nil {
				rv = b.drain(ctx, w, rv, notify)
				w.Stop()
				w = nil
			}
			if ctx.Err() != nil {
				return
			}
			if rv == "" {
				// Too old to resume: from now, and say something may
				// have changed.
				nrv, err := b.listRV(ctx)
				if err != nil {
					if !sleepCtx(ctx, wait) {
						return
					}
					wait = min(2*wait, 5*time.Second)
					continue
				}
				rv = nrv
				notify()
			}
			nw, err := b.watch(ctx, rv)
			if err != nil {
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					rv = ""
				}
				if !sleepCtx(ctx, wait) {
					return
				}
				wait = min(2*wait, 5*time.Second)
				continue
			}
			wait = 200 * time.Millisecond
			w = nw
		}
	}()
	return ch, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// listRV returns the resourceVersion to watch the state's Secrets from.
func (b *Backend) listRV(ctx context.Context) (string, error) {
	var out string
	err := b.c.do(ctx, "list Secrets in "+b.ns, func(ctx context.Context) error {
		l := &corev1.SecretList{}
		err := b.c.core.Get().Namespace(b.ns).Resource("secrets").
			VersionedParams(&metav1.ListOptions{LabelSelector: b.selector(roleIndex), Limit: 1}, paramCodec).Do(ctx).Into(l)
		if err == nil {
			out = l.ResourceVersion
		}
		return err
	})
	return out, err
}

func (b *Backend) watch(ctx context.Context, rv string) (watch.Interface, error) {
	var w watch.Interface
	err := b.c.do(ctx, "watch Secrets in "+b.ns, func(ctx context.Context) error {
		var err error
		w, err = b.c.core.Get().Namespace(b.ns).Resource("secrets").
			VersionedParams(&metav1.ListOptions{LabelSelector: b.selector(""), Watch: true, ResourceVersion: rv, AllowWatchBookmarks: true}, paramCodec).
			SetHeader("Accept", metaAccept).Watch(ctx)
		return err
	})
	return w, err
}

// drain passes a watch's events on until it ends; the resourceVersion
// to resume from ("" when too old).
func (b *Backend) drain(ctx context.Context, w watch.Interface, rv string, notify func()) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && (st.Code == 410 || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
					return ""
				}
				return rv
			case watch.Bookmark:
				if m, ok := ev.Object.(metav1.Object); ok {
					rv = m.GetResourceVersion()
				}
			default:
				if m, ok := ev.Object.(metav1.Object); ok {
					rv = m.GetResourceVersion()
					if m.GetLabels()[labelRole] == rolePart {
						continue // a part: the index's change follows
					}
				}
				notify()
			}
		}
	}
}
