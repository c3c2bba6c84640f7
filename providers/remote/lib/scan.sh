#!/bin/sh
# trialform: list the live trials under TRIALS_DIR, one "EXP/TRIAL GPUS"
# line each (for slot counting), after an "ncpu N" line.
#   sh scan.sh TRIALS_DIR
echo "ncpu $(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
cd "$1" 2>/dev/null || exit 0
for s in */*/status; do
	[ -f "$s" ] || continue
	state= sup= pid= gpus=
	while IFS='=' read -r k v; do
		case $k in
		state) state=$v ;;
		sup_pid) sup=$v ;;
		pid) pid=$v ;;
		gpus) gpus=$v ;;
		esac
	done <"$s"
	[ "$state" = running ] || continue
	if { [ -n "$sup" ] && kill -0 "$sup" 2>/dev/null; } || { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }; then
		echo "${s%/status} $gpus"
	fi
done
exit 0
