#!/bin/sh
# trialform's remote supervisor (POSIX sh, started detached by launch.sh):
#   sh supervise.sh DIR ATTEMPT MAX_DURATION_S GRACE_S GPUS OUTPUT_LIMIT
# Runs DIR/run.sh in its own session (process group = its pid), records
# the attempt in DIR/status (key=value lines, replaced atomically) and, when
# it exits, its exit code and why. A watchdog enforces max_duration.
d=$1 a=$2 maxdur=$3 grace=$4 gpus=$5 limit=${6:-67108864}
lib=${0%/*}
. "$lib/reap.sh"
cd "$d" || exit 1

now() { date +%s.%N; }
# pstart PID: sets ps_start to the process start time (field 22 of
# /proc/PID/stat), which tells a live process from a later one reusing the
# pid. Builtins only: no fork.
pstart() {
	ps_start=
	IFS= read -r line <"/proc/$1/stat" 2>/dev/null || return 0
	rest=${line##*) }
	set -- $rest
	ps_start=${20}
}
status() {
	{
		echo "state=$1"
		echo "attempt=$a"
		echo "sup_pid=$$"
		echo "sup_start=$sup_start"
		echo "pid=$pid"
		echo "pid_start=$pid_start"
		echo "gpus=$gpus"
		echo "started=$started"
		echo "stdout_off=$stdout_off"
		if [ "$1" = ended ]; then
			echo "ended=$ended"
			echo "exit=$code"
			echo "outcome=$outcome"
			echo "reason=$reason"
		fi
	} >status.tmp && mv -f status.tmp status
}

pstart $$
sup_start=$ps_start
pid= pid_start= code= outcome= reason= ended=
# An earlier attempt's unfinished last line is ended, so that this
# attempt's first line does not run into it (a secret at its end stays a
# whole word for masking, a metric line stays a line).
for f in stdout stderr; do
	[ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ] && echo >>"$f"
done
stdout_off=$(wc -c <stdout 2>/dev/null || echo 0)
stdout_off=$((stdout_off + 0))
started=$(now)
TRIALFORM_SESSION="$d/$a" setsid sh ./run.sh >>stdout 2>>stderr </dev/null &
pid=$!
pstart $pid
pid_start=$ps_start

# cap FILE SIZE: keeps FILE (stdout or stderr, SIZE bytes long) within the output limit on disk:
# the first and the latest half are kept, the middle is freed with a hole
# (fallocate --punch-hole: offsets stay valid). Before stdout's middle goes,
# its metric lines ("trialform: ", NNI's "NNISDK_MEb'", split at CR as the
# reader does) are appended to stdout.kept as "OFFSET NEWLINE TEXT" lines,
# with the first and last piece of the freed range (lines that cross its
# edges); a line over 1 MiB (not read) as \036trialform-overlong\036 and its first 4096 bytes. FILE.cut, "FROM TO LIMIT KEPT_LEN", is written before the hole is
# punched: the reader takes [FROM, TO) from stdout.kept's first KEPT_LEN
# bytes. A pass cut short (kill -9) leaves the cut file as it was.
keep_awk='{
	off = base + pos; pos += length($0) + 1; nl = (base + pos <= end)
	if (NR == 1 || index($0, "trialform: ") == 1 || index($0, "NNISDK_MEb'"'"'") > 0) {
		if (length($0) > 1048576) { $0 = "\036trialform-overlong\036" substr($0, 1, 4096); nl = 1 }
		print off, nl, $0; shown = NR
	}
	last = $0; lastoff = off
}
END {
	if (NR > 0 && shown != NR) {
		nl = (base + pos <= end)
		if (length(last) > 1048576) { last = "\036trialform-overlong\036" substr(last, 1, 4096); nl = 1 }
		print lastoff, nl, last
	}
}'
capfailed=
cap() {
	[ -z "$capfailed" ] && [ "$limit" -gt 0 ] || return 0
	f=$1 size=$2 half=$((limit / 2))
	[ "$size" -gt "$limit" ] || return 0
	from=$(((half + 4095) / 4096 * 4096))
	to=$(((size - half) / 4096 * 4096))
	cfrom= cto= klen=0
	[ -f "$f.cut" ] && read -r cfrom cto climit klen <"$f.cut"
	[ -n "$cto" ] && [ "$cto" -gt "$from" ] && from=$cto
	[ $((to - from)) -ge $((limit / 16 + 65536)) ] || return 0
	if [ "$f" = stdout ]; then
		[ -f stdout.kept ] && truncate -s "${klen:-0}" stdout.kept
		tail -c +$((from + 1)) stdout | head -c $((to - from)) | tr '\r' '\n' |
			LC_ALL=C awk -v base="$from" -v end="$to" "$keep_awk" >>stdout.kept || { capfailed=1; return 1; }
		set -- $(stat -c %s stdout.kept)
		klen=$1
	fi
	echo "${cfrom:-$from} $to $limit ${klen:-0}" >"$f.cut.tmp" && mv -f "$f.cut.tmp" "$f.cut" || { capfailed=1; return 1; }
	fallocate -p -o "$from" -l $((to - from)) "$f" || {
		capfailed=1
		echo "trialform supervisor: cannot free the middle of $f: it is not capped" >&2
		return 1
	}
}

# tick: appends "STDOUT_SIZE NNI_FILE_SIZE" to ticks when either grew, so
# that the order of a final result on stdout and one in NNI's file is
# known (to a tick, 100 ms; the reader counts stdout as later within one),
# and "STDOUT_SIZE NNI_FILE_SIZE STDOUT_MTIME NNI_FILE_MTIME" to
# tick-times, so that the reader dates a result by the last write that
# reached it (seconds since the epoch: to the microsecond where stat can,
# GNU coreutils, else whole seconds); and caps the output files. One fork
# (stat) a tick.
tfmt='%s %Y'
case $(stat -c '%.6Y' . 2>/dev/null) in
[0-9]*.[0-9]*) tfmt='%s %.6Y' ;;
esac
last=
tick() {
	set -- $(stat -c "$tfmt" stdout stderr .nni/metrics 2>/dev/null) 0 0 0 0 0 0
	if [ "$1 $5" != "$last" ]; then
		last="$1 $5"
		echo "$last" >>ticks
		echo "$last $2 $6" >>tick-times
	fi
	cap stdout "$1"
	cap stderr "$3"
}
# trial_runs: whether the trial's process runs: not ended, even when no
# one has reaped it yet (a zombie: kill -0 still finds it) or its pid went
# to another process (builtins only; kill -0 where /proc is not there).
trial_runs() {
	[ -n "$pid_start" ] || {
		kill -0 "$pid" 2>/dev/null
		return
	}
	IFS= read -r line <"/proc/$pid/stat" 2>/dev/null || return 1
	set -- ${line##*) }
	[ "$1" != Z ] && [ "$1" != X ] && [ "${20}" = "$pid_start" ]
}
: >ticks
: >tick-times
# The ticker is a child, so that the cap goes on if the supervisor alone is
# killed (kill -9, the OOM killer); started before the status says
# running, so that a running trial has one. Its last tick, once the trial
# ended, caps what the trial wrote after the tick before.
( while trial_runs; do tick; sleep 0.1; done; tick ) </dev/null >>supervisor.log 2>&1 &
ticker=$!
status running

wd=
if [ "$maxdur" != 0 ]; then
	setsid sh -c 'sleep "$1"; [ -e stop ] || echo "max_duration $1s exceeded" >timeout
kill -TERM "-$2" 2>/dev/null; sleep "$3"; kill -KILL "-$2" 2>/dev/null' watchdog "$maxdur" "$pid" "$grace" </dev/null >/dev/null 2>&1 &
	wd=$!
fi

wait "$pid"
code=$?
ended=$(now)
# The ticker ends by itself after its last tick (killing it could leave a
# cap pass's pipeline writing to stdout.kept).
wait "$ticker" 2>/dev/null
[ -n "$wd" ] && kill -KILL "-$wd" 2>/dev/null
# What the trial left running (background jobs, daemons in a new session)
# does not outlive it.
reap "$d/$a" 50
if [ -e stop ]; then
	outcome=stopped reason=$(head -c 300 stop | tr '\n' ' ')
elif [ -e timeout ]; then
	outcome=max_duration reason=$(head -c 300 timeout | tr '\n' ' ')
elif [ "$code" -gt 128 ]; then
	outcome=signaled reason="killed by signal $((code - 128))"
else
	outcome=exited reason="exit status $code"
fi
status ended
