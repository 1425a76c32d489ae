#!/bin/sh
# ci-offcpu-check.sh: offconv as a CI step (docs/ci.md). Takes a trace of the test run
# (perf script text, perf.data, folded, ...) or records one, writes the report and the
# differential flame graph against a stored baseline as artifacts, and fails (exit 1)
# when the off-CPU time grew by more than the limit.
#
#   ci-offcpu-check.sh [-b BASELINE] [-o ARTIFACT_DIR] [-l PCT] [-f WHAT]... (-t TRACE | -- CMD...)
#                      [-x OFFCONV_OPTION]...
#   -b BASELINE   stored baseline trace (default: offcpu-baseline.txt.gz)
#   -o DIR        artifacts: report.json, report.txt, diff.svg, diff.json, diff.txt (default: offcpu-artifacts)
#   -l PCT        --fail-above PCT (default: 10)
#   -f WHAT       --fail-on WHAT (total, blocked, runq, p99, a cause such as lock; repeatable)
#   -t TRACE      the current run's trace; without it, record CMD with perf (needs root)
#   -x OPTION     an option passed to every offconv call (e.g. -x --comm -x '^victim')
#   OFFCONV       how to run offconv (default: offconv)
# Exit: 0 no regression, 1 regression (the one-line reason is printed), 2 usage or input error.
set -eu

baseline=offcpu-baseline.txt.gz
artifacts=offcpu-artifacts
limit=10
trace=
fail_on=
extra=
OFFCONV=${OFFCONV:-offconv}

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while getopts b:o:l:f:t:x:h opt; do
  case $opt in
    b) baseline=$OPTARG ;;
    o) artifacts=$OPTARG ;;
    l) limit=$OPTARG ;;
    f) fail_on="$fail_on --fail-on $OPTARG" ;;
    t) trace=$OPTARG ;;
    x) extra="$extra $OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))

mkdir -p "$artifacts"
if [ -z "$trace" ]; then
  [ $# -gt 0 ] || usage
  trace=$artifacts/current.perf-script.txt
  perf record -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new -g -a \
    -o "$artifacts/perf.data" -- "$@"
  perf script -i "$artifacts/perf.data" > "$trace"
fi
[ -r "$baseline" ] || { echo "ci-offcpu-check: $baseline: no baseline (store one: cp TRACE $baseline)" >&2; exit 2; }

# shellcheck disable=SC2086  # $extra and $fail_on are word lists on purpose
$OFFCONV report "$trace" --json -o "$artifacts/report.json" $extra
$OFFCONV report "$trace" -o "$artifacts/report.txt" $extra
$OFFCONV diff "$baseline" "$trace" --to report -o "$artifacts/diff.txt" --quiet $extra
$OFFCONV diff "$baseline" "$trace" -o "$artifacts/diff.svg" --quiet $extra
set +e
$OFFCONV diff "$baseline" "$trace" -o "$artifacts/diff.json" --fail-above "$limit" $fail_on $extra
rc=$?
set -e
case $rc in
  0) echo "ci-offcpu-check: no off-CPU regression above $limit% (artifacts in $artifacts/)" ;;
  1) echo "ci-offcpu-check: off-CPU regression (see $artifacts/diff.svg and $artifacts/diff.txt)" >&2 ;;
esac
exit $rc
