#!/bin/sh
# trialform's remote supervisor (POSIX sh, started detached by launch.sh):
#   sh supervise.sh DIR ATTEMPT MAX_DURATION_S GRACE_S GPUS
# Runs DIR/run.sh in its own session (process group = its pid), records
# the attempt in DIR/status (key=value lines, replaced atomically) and, when
# it exits, its exit code and why. A watchdog enforces max_duration.
d=$1 a=$2 maxdur=$3 grace=$4 gpus=$5
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
stdout_off=$(wc -c <stdout 2>/dev/null || echo 0)
stdout_off=$((stdout_off + 0))
started=$(now)
TRIALFORM_SESSION="$d/$a" setsid sh ./run.sh >>stdout 2>>stderr </dev/null &
pid=$!
pstart $pid
pid_start=$ps_start
status running

# tick: appends "STDOUT_SIZE NNI_FILE_SIZE" to ticks when either grew, so
# that the order of a final result on stdout and one in NNI's file is
# known (to a tick, 100 ms; the reader counts stdout as later within one).
last=
tick() {
	set -- $(stat -c %s stdout .nni/metrics 2>/dev/null) 0
	[ "$1 $2" = "$last" ] && return 0
	last="$1 $2"
	echo "$last" >>ticks
}
: >ticks
( while kill -0 "$pid" 2>/dev/null; do tick; sleep 0.1; done ) </dev/null >/dev/null 2>&1 &
ticker=$!

wd=
if [ "$maxdur" != 0 ]; then
	setsid sh -c 'sleep "$1"; [ -e stop ] || echo "max_duration $1s exceeded" >timeout
kill -TERM "-$2" 2>/dev/null; sleep "$3"; kill -KILL "-$2" 2>/dev/null' watchdog "$maxdur" "$pid" "$grace" </dev/null >/dev/null 2>&1 &
	wd=$!
fi

wait "$pid"
code=$?
ended=$(now)
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
tick
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
