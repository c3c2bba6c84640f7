// Package topdir marks a directory as the top of a directory hierarchy
// for ext4's Orlov allocator (chattr +T): the directories made below it
// are spread over block groups with free inodes, instead of being packed
// next to their parent.
//
// Why trialform cares: on ext4 without a journal, every new inode is
// checked against the inodes of its block group deleted in the last
// minutes (ext4's recently_deleted), so creating a file in a group where
// many files were just deleted (a temporary directory where builds and
// tests come and go, a state just destroyed) costs a scan of them all. A
// trial creates about ten files; with .trialform and its trial root
// marked, they land in quiet groups. On other file systems, or ext4 with
// a journal, the mark is refused or harmless.
package topdir

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsTopdirFL is FS_TOPDIR_FL of linux/fs.h.
const fsTopdirFL = 0x00020000

// Mark sets the mark on dir, best effort: errors (a file system without
// inode flags, no permission) are ignored, the mark being only a hint.
// It reports whether dir carries the mark afterwards.
func Mark(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	if flags&fsTopdirFL != 0 {
		return true
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags|fsTopdirFL) == nil
}
