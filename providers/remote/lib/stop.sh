#!/bin/sh
# trialform: stop the trial in DIR: SIGTERM to its process group, SIGKILL
# after GRACE_STEPS x 20ms, then make sure its end is recorded; PURGE=1
# removes DIR.
#   sh stop.sh DIR GRACE_STEPS PURGE REASON
d=$1 n=$2 purge=$3 reason=$4
lib=${0%/*}
. "$lib/reap.sh"
[ -d "$d" ] || exit 0
cd "$d" || exit 1
get() { sed -n "s/^$1=//p" status 2>/dev/null | head -n 1; }
alive() { [ -n "$1" ] && kill -0 "-$1" 2>/dev/null; }
state=$(get state)
if [ "$state" = running ]; then
	pgid=$(get pid)
	sup=$(get sup_pid)
	printf '%s\n' "$reason" >stop
	kill -TERM "-$pgid" 2>/dev/null
	# wait up to GRACE_STEPS x 20ms for the group to go
	i=0
	while alive "$pgid" && [ $i -lt "$n" ]; do sleep 0.02; i=$((i + 1)); done
	if alive "$pgid"; then
		kill -KILL "-$pgid" 2>/dev/null
		i=0
		while alive "$pgid" && [ $i -lt 250 ]; do sleep 0.02; i=$((i + 1)); done
	fi
	# and what the trial started in a new session
	reap "$d/$(get attempt)" "$n"
	# the supervisor records the end; wait up to 5s for it
	i=0
	while [ "$(get state)" = running ] && [ -n "$sup" ] && kill -0 "$sup" 2>/dev/null && [ $i -lt 250 ]; do
		sleep 0.02
		i=$((i + 1))
	done
	if [ "$(get state)" = running ]; then
		# no supervisor left: record the end in its place
		{
			grep -v '^state=' status
			echo "state=ended"
			echo "ended=$(date +%s.%N)"
			echo "outcome=stopped"
			echo "reason=$(printf '%s' "$reason" | tr '\n' ' ')"
		} >status.tmp && mv -f status.tmp status
	fi
fi
if [ "$purge" = 1 ]; then
	cd / && rm -rf "$d" && rmdir "$(dirname "$d")" 2>/dev/null
fi
exit 0
