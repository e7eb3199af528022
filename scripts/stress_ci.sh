#!/usr/bin/env bash
# Run the README's test command (or any command given) while a CPU hog keeps every core busy, as on a loaded CI
# runner or a teacher's shared server. The hog is bounded (HOG_SECONDS, default 2 h) and is stopped when the
# command ends; the exit status is the command's.
#   bash scripts/stress_ci.sh                               the whole test command, under load
#   bash scripts/stress_ci.sh bash scripts/build_book.sh    the build alone, under load
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ $# -gt 0 ] || set -- bash scripts/test_all.sh
cores="$(getconf _NPROCESSORS_ONLN)"  # not nproc: it obeys OMP_NUM_THREADS, which the test command sets to 1
seconds="${HOG_SECONDS:-7200}"
hogs=()
for _ in $(seq "$cores"); do
    timeout "$seconds" sh -c 'while :; do :; done' &   # one busy loop per core, killed after $seconds at most
    hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
echo "stress_ci: $cores busy loop(s) running; now: $*"
start=$(date +%s)
"$@"
status=$?
echo "stress_ci: '$*' exited $status after $(( $(date +%s) - start )) s under load"
exit $status
