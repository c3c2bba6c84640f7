package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trialform/trialform/providers"
)

// dirSize is the bytes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A trial (or a hostile host) that writes more TensorBoard logs than
// this machine should keep does not fill its disk: a sync copies at most
// req.MaxBytes of a trial's logs and then says which trial, how much and
// what to do. (Before, everything was copied: 100 GB of event files
// filled the laptop's disk.) The test's limit is small (MaxBytes), the
// command's default 10 GiB (-sync-limit).
func TestTensorBoardSyncBounded(t *testing.T) {
	l := testLab(t)
	r := newRemote(t, labConfig(t, l))
	code := t.TempDir()
	h, err := r.Start(ctx(t), trialReq("tb", "t1", `d="$TRIALFORM_TENSORBOARD_DIR"; mkdir -p "$d" && head -c 1000 /dev/zero > "$d/events.1" && truncate -s 3M "$d/events.2" && truncate -s 3M "$d/events.3"`, code))
	if err != nil {
		t.Fatal(err)
	}
	waitPhase(t, r, "tb", "t1", providers.PhaseSucceeded)
	dest := t.TempDir()
	const limit = 4 << 20
	st, err := r.SyncTensorBoard(ctx(t), providers.SyncRequest{Experiment: "tb", TrialID: "t1", Handle: h, Dest: dest, MaxBytes: limit})
	if err == nil || !strings.Contains(err.Error(), "t1") || !strings.Contains(err.Error(), "-sync-limit") {
		t.Fatalf("sync of 6 MB of logs with a 4 MiB limit: %+v, %v; want an error naming the trial and -sync-limit", st, err)
	}
	t.Logf("%+v: %v", st, err)
	if n := dirSize(t, dest); n > limit || n < 1000 {
		t.Fatalf("%d bytes copied, want what fits in %d", n, limit)
	}
	// Again: nothing more is copied, and it says so again.
	st, err = r.SyncTensorBoard(ctx(t), providers.SyncRequest{Experiment: "tb", TrialID: "t1", Handle: h, Dest: dest, MaxBytes: limit})
	if err == nil || st.Bytes != 0 {
		t.Fatalf("second sync: %+v %v, want nothing copied and the error again", st, err)
	}
}
