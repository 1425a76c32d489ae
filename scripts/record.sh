#!/usr/bin/env bash
# scripts/record.sh -- records sched tracepoints for offconv (not available yet).
# Meanwhile, record by hand:
#   perf record -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new -g -a -- CMD
#   perf script > perf.txt && offconv perf.txt -o flame.svg
echo "record.sh: not available yet (see the comment at the top of this script for a manual recipe)" >&2
exit 2
