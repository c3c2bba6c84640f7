package fsx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// FlockWait takes a flock (syscall.LOCK_EX or LOCK_SH) on f, polling
// until ctx is done: flock(2) itself cannot be given up.
func FlockWait(ctx context.Context, f *os.File, how int) error {
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s: %w", f.Name(), ctx.Err())
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
