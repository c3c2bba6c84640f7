package k8sstate

import (
	"context"
	"sync"
)

// ctxMutex is a mutex whose wait can end with a context (LockContext).
// The client's lock (Backend.mu) is held for a whole read, and a read
// retries an outage for 2 minutes: a sync.Mutex made a read with a
// context (the controller's, ended by a stop) wait for another's (its
// dashboard's, with none) for as long, whatever its context said. Its zero
// value is unlocked.
type ctxMutex struct {
	once sync.Once
	ch   chan struct{} // holds one token while locked
}

func (m *ctxMutex) c() chan struct{} {
	m.once.Do(func() { m.ch = make(chan struct{}, 1) })
	return m.ch
}

// Lock waits for the mutex.
func (m *ctxMutex) Lock() { m.c() <- struct{}{} }

// LockContext waits for the mutex until ctx ends; it returns ctx's error
// (and does not hold the mutex) when ctx ended first.
func (m *ctxMutex) LockContext(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case m.c() <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unlock releases the mutex; unlocking one not locked is a bug, as for
// sync.Mutex.
func (m *ctxMutex) Unlock() {
	select {
	case <-m.c():
	default:
		panic("kubernetes state: unlock of an unlocked mutex")
	}
}
