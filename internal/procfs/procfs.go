// Package procfs reads Linux's /proc/PID/stat: one parser, and the scans
// of every process that the local platform's reaper, the cloud fakes'
// job init and the tests use to find a process's children.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/trialform/trialform/internal/fsx"
)

// Stat is what trialform reads of a process's stat line.
type Stat struct {
	PID   int
	State byte   // 'R', 'S', 'D', 'Z' (zombie), 'X' (dead), ...
	PPID  int    // parent
	PGID  int    // process group
	Start uint64 // start time, in clock ticks after boot (field 22)
}

// Gone reports whether the process has ended: a zombie or dead.
func (s Stat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

// Parse parses the content of /proc/PID/stat. The command name may hold
// spaces and parentheses, so the fields are read after the last ')'.
func Parse(pid int, b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] ppid, f[2] pgrp, f[19] starttime (22).
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	st := Stat{PID: pid, State: f[0][0]}
	var err error
	if st.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	if st.PGID, err = strconv.Atoi(f[2]); err != nil {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	if st.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// Read reads and parses /proc/PID/stat (non-blocking, regular files only).
func Read(pid int) (Stat, error) {
	b, err := fsx.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(pid, b)
}

// All returns the stat of every process that could be read (processes
// that exit during the scan are left out).
func All() ([]Stat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := make([]Stat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := Read(pid); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// ChildrenByParent maps each process's parent to its pid, from a scan of
// every process; zombies only when asked, dead ones never.
func ChildrenByParent(zombies bool) map[int][]int {
	all, err := All()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, st := range all {
		if st.State == 'X' || (st.State == 'Z' && !zombies) {
			continue
		}
		children[st.PPID] = append(children[st.PPID], st.PID)
	}
	return children
}

// Descendants lists the processes below root (breadth first), from one
// scan; zombies only when asked.
func Descendants(root int, zombies bool) []int {
	children := ChildrenByParent(zombies)
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
