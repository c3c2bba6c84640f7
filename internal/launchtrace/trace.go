// Package launchtrace writes timestamped events of a trial's launch and of
// apply's run loop to the file named by TRIALFORM_TRACE (one line per
// event: Unix time in microseconds, the process id, the event and its
// fields). It is off, and costs one branch, when the variable is unset.
// Supervisors inherit the variable, so their events land in the same file
// (appends of one short line are atomic). scripts/launchtrace.awk turns a
// trace into the idle time of the concurrency slots and where it goes.
package launchtrace

import (
	"os"
	"strconv"
	"sync"
	"time"
)

// Env names the variable holding the trace file's path.
const Env = "TRIALFORM_TRACE"

var (
	once sync.Once
	f    *os.File
	pid  string
)

func file() *os.File {
	once.Do(func() {
		p := os.Getenv(Env)
		if p == "" {
			return
		}
		tf, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		f = tf
		pid = strconv.Itoa(os.Getpid())
	})
	return f
}

// On reports whether tracing is on.
func On() bool { return file() != nil }

// Event records event with its fields (words without spaces).
func Event(event string, fields ...string) {
	tf := file()
	if tf == nil {
		return
	}
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, time.Now().UnixMicro(), 10)
	b = append(b, ' ')
	b = append(b, pid...)
	b = append(b, ' ')
	b = append(b, event...)
	for _, s := range fields {
		b = append(b, ' ')
		b = append(b, s...)
	}
	b = append(b, '\n')
	_, _ = tf.Write(b)
}
