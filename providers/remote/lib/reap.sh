# trialform: sourced by supervise.sh and stop.sh. The supervisor starts a
# trial with TRIALFORM_SESSION=DIR/ATTEMPT in its environment, which every
# process the trial starts inherits, in its process group or in a new
# session (setsid) alike. reap ends them all by that mark (Linux's /proc;
# a no-op where there is none).

# session_pids TOKEN: the pids (space separated) whose environment holds
# TRIALFORM_SESSION=TOKEN, this shell left out.
session_pids() {
	for f in $(grep -lsxzF "TRIALFORM_SESSION=$1" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/environ}
		[ "$p" = "$$" ] || printf '%s ' "$p"
	done
}

# reap TOKEN STEPS: SIGTERM to every process of the trial, then SIGKILL to
# what is left after STEPS x 20ms.
reap() {
	pids=$(session_pids "$1")
	[ -n "$pids" ] || return 0
	kill -TERM $pids 2>/dev/null
	i=0
	while [ $i -lt "$2" ]; do
		pids=$(session_pids "$1")
		[ -n "$pids" ] || return 0
		sleep 0.02
		i=$((i + 1))
	done
	pids=$(session_pids "$1")
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null
}
