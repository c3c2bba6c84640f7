package command_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A new leader breaks the controller claim of the leader it replaced at
// once, as docs/controller.md says ("A claim of a former leader of the
// same Lease is broken at once"), rather than standing by until the
// claim's Lease expires. The test keeps the killed leader's claim Lease
// renewed, as a leader paused past its term whose claim renewals went on
// would, so that the new leader can get it only by breaking it, whatever
// the machine's load.
func TestControllerHABreaksAFormerLeadersClaim(t *testing.T) {
	t.Parallel()
	h := startHA(t, 2, haTrial)
	h.replicas(2)
	leader := h.leader()
	const claimed = "claimed the state: this controller reconciles it"
	h.waitFor(leader.name+" claiming the state", 120*time.Second, func() bool { return h.lines(leader, claimed) > 0 })
	id := logField(t, leader.log, claimed, "claim_id")
	leader.cmd.Process.Signal(syscall.SIGKILL)
	<-leader.done

	done := make(chan struct{})
	renewed := make(chan struct{}, 1)
	defer close(done)
	go func() {
		leases := h.cp.Client.CoordinationV1().Leases(h.ns)
		for {
			if ls, err := leases.List(h.ctx, metav1.ListOptions{}); err == nil {
				for _, l := range ls.Items {
					if !strings.HasPrefix(l.Name, "trialform-claim-") || l.Spec.HolderIdentity == nil || !strings.Contains(*l.Spec.HolderIdentity, id) {
						continue
					}
					now := metav1.NewMicroTime(time.Now())
					l.Spec.RenewTime = &now
					if _, err := leases.Update(h.ctx, &l, metav1.UpdateOptions{}); err == nil {
						select {
						case renewed <- struct{}{}:
						default:
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	<-renewed // the killed leader's claim is kept fresh from now on

	other := h.other(leader)
	h.waitFor(other.name+" claiming the state", 120*time.Second, func() bool { return h.lines(other, claimed) > 0 })
	if got := logField(t, other.log, "broke the state lock of a former leader", "lock_id"); got != id {
		t.Fatalf("%s broke lock %q, want the former leader's claim %s", other.name, got, id)
	}
	if n := h.lines(other, "standing by: another controller reconciles this state"); n != 0 {
		t.Fatalf("%s stood by %d times before taking the claim of the former leader", other.name, n)
	}
}

// logField returns field of the first record of msg in a controller's log.
func logField(t *testing.T, log, msg, field string) string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(field) + `":"([^"]*)"`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"`+msg+`"`) {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no %q with %s in %s", msg, field, log)
	return ""
}
