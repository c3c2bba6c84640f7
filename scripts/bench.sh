#!/usr/bin/env bash
# make bench: trialform's overhead next to xargs, and plan time on a long
# history. Prints numbers; asserts nothing (targets are in docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/bin/trialform"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== machine: $(nproc) cores, $(uname -sr), $(command -v go >/dev/null && go version | cut -d' ' -f3)"
GENSTATE="$PWD/bin/genstate"
if command -v go >/dev/null; then go build -o "$GENSTATE" ./bench/genstate; fi
WATCHLAT="$PWD/bin/watchlat"
[ -x "$WATCHLAT" ] || go build -o "$WATCHLAT" ./bench/watchlat

# 1. Trivial trials next to xargs -P running the same commands, each
# ratio taken in one run (xargs, then trialform, back to back): 300 and
# 1,000 trials at concurrency 16, 10,000 at concurrency 64. The CPU is the
# CLI's plus everything it waited for (supervisors, trials). The load
# average is printed: on a shared machine wall times swing, ratios less.
# BENCH_LAUNCH="N:P ..." overrides the list; BENCH_REPEAT the repetitions.
launch() {
  local n=$1 p=$2 d
  d=$(mktemp -d "$work/launch-$1-$2-XXXX")
  mkdir -p "$d"
  cat > "$d/main.hcl" <<HCL
search_space "s" {
  param "x" { randint = [0, 1000000000] }
}
experiment "bench" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = $n
  concurrency = $p
  trial {
    command = "echo 'trialform: {\"default\": '\${param.x}'}'"
  }
}
HCL
  local t0 t1 t2 xs ts ok cpu
  t0=$(now)
  seq "$n" | /usr/bin/env time -f "%U %S" -o "$d/xtime" xargs -P "$p" -I{} sh -c "echo 'trialform: {\"default\": {}}' > /dev/null"
  t1=$(now)
  /usr/bin/env time -f "%U %S %M" -o "$d/time" "$BIN" -chdir="$d" apply -auto-approve -wait -parallelism "$p" > "$d/log" 2>&1
  t2=$(now)
  ok=$("$BIN" -chdir="$d" trials bench -json | grep -c '"status": "SUCCEEDED"' || true)
  read -r u s kb < "$d/time"
  read -r xu xs < "$d/xtime"
  # CPU: trialform's (the CLI, its supervisor host, the trials' sh) and
  # xargs's (xargs and the same sh); their difference per trial is what
  # trialform adds, whatever a process creation costs on this machine.
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v u="$u" -v s="$s" -v xc="$(awk -v u="$xu" -v s="$xs" 'BEGIN { print u + s }')" -v kb="$kb" -v ok="$ok" -v n="$n" -v p="$p" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
    printf "  %5d trials @%-2d  xargs %6.2f s  trialform %7.2f s  ratio %5.2fx (target <= 3x)  CPU %6.2f s (%.2f ms/trial; xargs %.2f ms/trial, added %.2f ms/trial)  CLI RSS %d MB  %d SUCCEEDED  load %s\n",
      n, p, b - a, c - b, (c - b) / (b - a), u + s, 1000 * (u + s) / n, 1000 * xc / n, 1000 * (u + s - xc) / n, kb / 1024, ok, l }'
  # Kept until the end (the trap removes $work): deleting thousands of
  # files right before the next run would slow its file creations on ext4
  # without a journal (see internal/topdir), which measures the harness.
}
# 0. The controller (bench/ctllat): a real git repository (local path),
# real python3 trials; commit -> first new trial running with a 5 s
# -interval and with the push webhook (median of BENCH_CTL_COMMITS), and
# the controller's memory with 10,000 trials in its state. About 2 min.
# BENCH_ONLY=controller runs it alone.
CTLLAT="$PWD/bin/ctllat"
[ -x "$CTLLAT" ] || go build -o "$CTLLAT" ./bench/ctllat
if [ "${BENCH_ONLY:-}" = controller ]; then
  "$CTLLAT" -bin "$BIN" -genstate "$GENSTATE" -n "${BENCH_CTL_COMMITS:-5}"
  exit 0
fi
# BENCH_ONLY=plan runs section 2 alone (plan over long histories).
if [ "${BENCH_ONLY:-}" != plan ]; then
echo "launch: trivial trials, apply -auto-approve -wait next to xargs -P (NNI 3.0 local mode: about 36x)"
for r in $(seq "${BENCH_REPEAT:-1}"); do
  for np in ${BENCH_LAUNCH:-300:16 1000:16 10000:64}; do
    launch "${np%%:*}" "${np##*:}"
  done
done
# The same 300 trials with a supervisor process per trial instead of the
# supervisor host (docs/trials.md, "How trials report results").
echo "launch with TRIALFORM_LOCAL_SUPERVISOR=per-trial:"
TRIALFORM_LOCAL_SUPERVISOR=per-trial launch 300 16
fi

# 2. plan over long histories, on states as users have them: a real
# apply's (trial directories, metric series, TensorBoard directories),
# and copies of its trials' files and records grown to 100,000 (genstate
# -like). planbench LABEL DIR TARGET prints the wall time (best of 5), the
# CPU of one more run, and the system calls of one more under strace -f
# (all; openat and stat calls, which must not grow with the finished
# history; getdents64, the one listing of the trial directories, grows with
# the entries it returns; the rest is the Go runtime's, which grows with
# the CPU and memory the state's size costs) (docs/benchmarks.md).
planbench() {
  local label=$1 dir=$2 target=$3 best="" t0 t1 s u sy kb calls opens
  for i in 1 2 3 4 5; do
    t0=$(now)
    "$BIN" -chdir="$dir" plan > /dev/null
    t1=$(now)
    s=$(elapsed "$t0" "$t1")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
  done
  /usr/bin/env time -f "%U %S %M" -o "$work/plan.time" "$BIN" -chdir="$dir" plan > /dev/null
  read -r u sy kb < "$work/plan.time"
  calls="n/a (no strace)"
  if command -v strace >/dev/null; then
    strace -f -c -o "$work/plan.strace" "$BIN" -chdir="$dir" plan > /dev/null
    calls=$(awk '$NF == "total" { t = $4 } $NF == "openat" { o = $4 } $NF ~ /stat/ { st += $4 } $NF == "getdents64" { g = $4 } END { printf "%d (openat %d, stat %d, getdents64 %d)", t, o, st, g }' "$work/plan.strace")
  fi
  echo "  $label: best of 5 = ${best} s (target < ${target} s), CPU $(awk -v u="$u" -v s="$sy" 'BEGIN { printf "%.2f", u + s }') s, peak RSS $((kb / 1024)) MB, syscalls per plan $calls  load $(cut -d' ' -f1 /proc/loadavg)"
}
# A real apply of 10,000 trivial trials. Each trial waits while the file
# hold exists (so that trials can be kept running below), then reports.
real="$work/real10k"
mkdir -p "$real"
cat > "$real/main.hcl" <<HCL
search_space "s" {
  param "x" { randint = [0, 1000000000] }
}
experiment "bench" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = 10000
  concurrency = 64
  trial {
    command = "while [ -e hold ]; do sleep 0.2; done; echo 'trialform: {\"default\": '\${param.x}'}'"
  }
}
HCL
t0=$(now)
"$BIN" -chdir="$real" apply -auto-approve -wait -parallelism 64 > "$work/real10k.log" 2>&1
echo "plan over states of real applies (the apply of 10,000 trials took $(elapsed "$t0" "$(now)") s):"
planbench "finished 10,000 (real apply)" "$real" 0.3
# 2a. 100,000 finished: the real trials' files and records copied.
"$GENSTATE" -like "$real" -n 100000 -dir "$work/real100k" > /dev/null
planbench "finished 100,000 (genstate -like: the 10,000 real trials' files and records copied)" "$work/real100k" 2
LOADSTATE="$PWD/bin/loadstate"
[ -x "$LOADSTATE" ] || go build -o "$LOADSTATE" ./bench/loadstate
echo "  state load alone, 100,000 trials: $("$LOADSTATE" -dir "$work/real100k/.trialform") (target < 1 s)"
# real100k (a million files) is left to the trap: deleting it here would
# slow every file creation below (see internal/topdir).
# 2b. 64 trials running among 10,064: the budget raised by 64, the
# trials held running by the hold file, apply without -wait starts them.
touch "$real/hold"
sed -i 's/max_trials  = 10000/max_trials  = 10064/' "$real/main.hcl"
"$BIN" -chdir="$real" apply -auto-approve -parallelism 64 > "$work/real64.log" 2>&1
running=$("$BIN" -chdir="$real" trials bench -json | grep -c '"status": "RUNNING"' || true)
planbench "$running running among 10,064 (real apply)" "$real" 0.4
rm -f "$real/hold"
"$BIN" -chdir="$real" apply -auto-approve -wait > /dev/null 2>&1
# Generated states (bench/genstate without -like: records only, no trial
# directories), the figures before issue 30, kept beside the above.
echo "plan over generated states (records only, no trial directories):"
for tuner in random tpe; do
  "$GENSTATE" -n 10000 -tuner "$tuner" -dir "$work/big-$tuner" >/dev/null
  planbench "finished 10,000 (generated, tuner $tuner)" "$work/big-$tuner" 0.3
done
"$GENSTATE" -n 100000 -tuner random -dir "$work/huge" >/dev/null
planbench "finished 100,000 (generated, tuner random)" "$work/huge" 2
rm -rf "$work/huge"
[ "${BENCH_ONLY:-}" != plan ] || exit 0

# 2c. Results over 10,000 trials with 100 intermediate points each:
# trials -q -sort, and export -o json (time and the peak RSS of the process).
"$GENSTATE" -n 10000 -intermediate 100 -dir "$work/results" >/dev/null
runrss() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
best = None
for _ in range(5):
    t = time.time()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
    d = time.time() - t
    best = d if best is None else min(best, d)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wall best of 5 = %.3f s, CPU (user+sys) mean = %.3f s, peak RSS %.0f MB" % (best, (ru.ru_utime + ru.ru_stime) / 5, ru.ru_maxrss / 1024))
PY
}
echo "trials -q -sort over 10,000 trials (target < 0.3 s):"
echo "  $(runrss "$BIN" -chdir="$work/results" trials big -q 'status:succeeded, params.opt:adam|sgd, metrics.loss:<=0.5, params.layers:2..6' -sort '-metrics.loss,params.lr' -o csv)"
echo "export -o json, 10,000 trials x 100 intermediate points (target < 2 s, < 200 MB RSS):"
echo "  $(runrss "$BIN" -chdir="$work/results" export big -o json)"
echo "  output size: $("$BIN" -chdir="$work/results" export big -o json | wc -c) bytes"

# 3. watch: latency from a file save to the new plan printed.
"$WATCHLAT" -bin "$BIN" -n "${BENCH_WATCH_SAVES:-20}"

# 3b. the controller: see section 0.
"$CTLLAT" -bin "$BIN" -genstate "$GENSTATE" -n "${BENCH_CTL_COMMITS:-5}"

# 4. Early stopping: assessors on crossing learning curves (pure simulation).
if command -v go >/dev/null; then go run ./bench/earlystop; fi

# 5. Go micro-benchmarks.
command -v go >/dev/null && go test -run '^$' -bench . -benchtime 20x ./plan/... ./state/... ./tuner/... ./internal/query/ 2>/dev/null | grep -E '^(Benchmark|ok|PASS)' || true

# 4. Trial launch latency over SSH: Start on the remote platform against
# real sshd on 127.0.0.1, code and helpers already uploaded.
if [ -x /usr/sbin/sshd ]; then
  echo "remote launch over SSH (sshd on 127.0.0.1; target < 100 ms per trial):"
  go test -run '^$' -bench 'Launch' -benchtime 100x ./providers/remote/ 2>/dev/null | grep -E '^Benchmark' || true
else
  echo "remote launch over SSH: skipped (no /usr/sbin/sshd; make deps installs openssh-server)"
fi
