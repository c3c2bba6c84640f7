package command

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/trialform/trialform/internal/views"
)

// interrupts implements trialform's answer to SIGINT and SIGTERM, as
// Terraform's:
//
//   - A command that does not handle interrupts (validate, plan, show, ...)
//     ends at the first signal: nothing it does needs finishing.
//   - apply, destroy, watch, import and logs stop gracefully at the first
//     signal (soft is cancelled): nothing new is launched, platform calls in
//     flight finish and their results are saved in the state.
//   - refresh only reads: its first signal cancels the platform calls in
//     flight at once (as apply's second does) and the command saves what
//     it read and exits; a call that ignores its cancellation does not
//     hold it past hardExit.
//   - The second signal cancels every platform call in flight at once (hard
//     is cancelled); the command then saves what it knows and exits. If it
//     has not exited hardExit later, the process ends.
//   - A third signal ends the process at once.
type interrupts struct {
	soft, hard             context.Context
	cancelSoft, cancelHard context.CancelFunc
	errw                   io.Writer

	mu       sync.Mutex
	graceful bool
	msg      string // the graceful command's first-interrupt message
	// cancelFirst: the first signal cancels the calls in flight (refresh).
	cancelFirst bool
	first       os.Signal // the first signal received
	n           int
	sigs        chan os.Signal
	exit        func(code int)
	hardExit    time.Duration
}

func newInterrupts(errw io.Writer) *interrupts {
	in := &interrupts{errw: errw, exit: os.Exit, hardExit: 10 * time.Second}
	in.soft, in.cancelSoft = context.WithCancel(context.Background())
	in.hard, in.cancelHard = context.WithCancel(context.Background())
	in.sigs = make(chan os.Signal, 4)
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go in.loop()
	return in
}

func (in *interrupts) setGraceful(b bool, msg string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.graceful, in.msg = b, msg
}

// received is the first signal received, nil when none came.
func (in *interrupts) received() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.first
}

func (in *interrupts) setCancelFirst(b bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.cancelFirst = b
}

// cancelAll cancels every call in flight and ends the process hardExit
// later if the command has not ended by then.
func (in *interrupts) cancelAll(sig os.Signal, after string) {
	in.cancelSoft()
	in.cancelHard()
	code := exitCode(sig)
	time.AfterFunc(in.hardExit, func() {
		views.HardExit(in.errw, in.hardExit, after)
		in.exit(code)
	})
}

// exitCode is the shell's status for death by sig (128 + number).
func exitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

func (in *interrupts) loop() {
	for sig := range in.sigs {
		in.mu.Lock()
		in.n++
		if in.first == nil {
			in.first = sig
		}
		n, graceful, msg, cancelFirst := in.n, in.graceful, in.msg, in.cancelFirst
		in.mu.Unlock()
		switch {
		case n == 1 && cancelFirst:
			if msg != "" {
				views.InterruptNote(in.errw, msg)
			}
			in.cancelAll(sig, "the interrupt")
		case n == 1 && graceful:
			if msg != "" {
				views.InterruptNote(in.errw, msg)
			}
			in.cancelSoft()
		case n == 1:
			in.exit(exitCode(sig))
		case n == 2:
			views.SecondInterrupt(in.errw)
			in.cancelAll(sig, "the second interrupt")
		default:
			in.exit(exitCode(sig))
		}
	}
}

func (in *interrupts) stop() {
	signal.Stop(in.sigs)
	in.cancelSoft()
	in.cancelHard()
}
