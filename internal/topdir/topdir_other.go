//go:build !linux

package topdir

// Mark does nothing here: only Linux file systems know the mark.
func Mark(dir string) bool { return false }
