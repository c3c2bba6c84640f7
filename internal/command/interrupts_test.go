package command

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// refresh only reads: its first interrupt cancels the platform calls in
// flight (a read stuck on a file a trial left, as a FIFO did, used to keep
// it past the first Ctrl-C), and a call that ignores the cancellation
// cannot hold it: the process ends hardExit later (issue 25, item E).
func TestRefreshStopsAtFirstInterrupt(t *testing.T) {
	exited := make(chan int, 1)
	in := &interrupts{errw: io.Discard, exit: func(code int) { exited <- code }, hardExit: time.Millisecond, sigs: make(chan os.Signal, 1)}
	in.soft, in.cancelSoft = context.WithCancel(context.Background())
	in.hard, in.cancelHard = context.WithCancel(context.Background())
	go in.loop()
	defer close(in.sigs)
	in.setGraceful(true, "")
	in.setCancelFirst(true)
	in.sigs <- os.Interrupt
	select {
	case <-in.hard.Done():
	case <-time.After(time.Minute): // a guard only
		t.Fatal("the first interrupt left the calls in flight running")
	}
	if in.soft.Err() == nil {
		t.Error("the first interrupt did not cancel the command's context")
	}
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
	case <-time.After(time.Minute): // a guard only
		t.Fatal("a command stuck after the first interrupt was not ended")
	}
}
