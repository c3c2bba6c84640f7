#!/bin/sh
# trialform: start attempt ATTEMPT of the trial in DIR (run.sh, the
# parameter files and spec.json are in place):
#   sh launch.sh DIR ATTEMPT CODE_SRC MAX_DURATION_S GRACE_S GPUS OUTPUT_LIMIT
# Copies CODE_SRC to DIR/code once, archives the previous attempt's NNI
# metric file, starts the supervisor detached (setsid + nohup: it outlives
# this SSH session) and prints DIR/status once the attempt runs or ended.
d=$1 a=$2 src=$3 maxdur=$4 grace=$5 gpus=$6 limit=$7
# (Builtins where they do: every fork is latency on a busy machine.)
lib=${0%/*}
cd "$d" || exit 1
[ -d output ] && [ -d .nni ] || mkdir -p output .nni || exit 1
if [ ! -d code ]; then
	[ ! -e code.tmp ] || rm -rf code.tmp
	cp -R "$src" code.tmp && mv code.tmp code || { echo "copy $src failed" >&2; exit 1; }
fi
if [ "$a" -gt 1 ] && [ -f .nni/metrics ]; then
	mv -f .nni/metrics ".nni/metrics.$((a - 1))" || exit 1
fi
if [ -e stop ] || [ -e timeout ]; then rm -f stop timeout; fi
: >>stdout && : >>stderr || exit 1
setsid nohup sh "$lib/supervise.sh" "$d" "$a" "$maxdur" "$grace" "$gpus" "$limit" </dev/null >>supervisor.log 2>&1 &
# started: the status records this attempt (builtins only: no fork).
started() {
	[ -f status ] || return 1
	out= ok=
	while IFS= read -r l; do
		out="$out$l
"
		[ "$l" = "attempt=$a" ] && ok=1
	done <status
	[ -n "$ok" ]
}
i=0
while :; do
	if started; then
		printf '%s' "$out"
		exit 0
	fi
	i=$((i + 1))
	if [ $i -gt 12000 ]; then
		echo "the supervisor did not start the trial within 60s:" >&2
		tail -c 2000 supervisor.log >&2
		exit 1
	fi
	sleep 0.005
done
