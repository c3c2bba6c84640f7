#!/usr/bin/env bash
# make bench: trialform's overhead next to xargs, and plan time on a long
# history. Prints numbers; asserts nothing (targets are in README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/bin/trialform"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
N=${BENCH_TRIALS:-300}
P=${BENCH_CONCURRENCY:-16}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== machine: $(nproc) cores, $(uname -sr), $(command -v go >/dev/null && go version | cut -d' ' -f3)"
GENSTATE="$PWD/bin/genstate"
[ -x "$GENSTATE" ] || go build -o "$GENSTATE" ./bench/genstate
WATCHLAT="$PWD/bin/watchlat"
[ -x "$WATCHLAT" ] || go build -o "$WATCHLAT" ./bench/watchlat

# 1. N trivial trials at concurrency P, next to xargs -P running the same commands.
mkdir -p "$work/launch"
cat > "$work/launch/main.hcl" <<HCL
search_space "s" {
  param "x" { randint = [0, 1000000000] }
}
experiment "bench" {
  search_space = search_space.s
  tuner "random" {
    seed = 1
  }
  max_trials  = $N
  concurrency = $P
  trial {
    command = "echo 'trialform: {\"default\": '\${param.x}'}'"
  }
}
HCL
t0=$(now)
seq "$N" | xargs -P "$P" -I{} sh -c "echo 'trialform: {\"default\": {}}' > /dev/null"
t1=$(now)
xargs_s=$(elapsed "$t0" "$t1")

t0=$(now)
"$BIN" -chdir="$work/launch" apply -auto-approve -wait -parallelism "$P" > "$work/launch.log"
t1=$(now)
tf_s=$(elapsed "$t0" "$t1")
done_n=$("$BIN" -chdir="$work/launch" trials bench -json | grep -c '"status": "SUCCEEDED"' || true)
echo "launch: $N trials of a trivial command, concurrency $P"
echo "  xargs -P $P:          ${xargs_s} s"
echo "  trialform apply -wait: ${tf_s} s  ($done_n SUCCEEDED)"
awk -v a="$tf_s" -v b="$xargs_s" 'BEGIN { printf "  overhead ratio:        %.2fx (target <= 3x)\n", a / b }'

# 2. plan with 10,000 trials in state.
for tuner in random tpe; do
  "$GENSTATE" -n 10000 -tuner "$tuner" -dir "$work/big-$tuner" >/dev/null
  best=""
  for i in 1 2 3 4 5; do
    t0=$(now)
    "$BIN" -chdir="$work/big-$tuner" plan > /dev/null
    t1=$(now)
    s=$(elapsed "$t0" "$t1")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$s; fi
  done
  echo "plan with 10,000 trials in state (tuner $tuner): best of 5 = ${best} s (target < 0.5 s)"
done

# 2b. Results over 10,000 trials with 100 intermediate points each:
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
