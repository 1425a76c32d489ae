#!/usr/bin/env bash
# record.sh -- bounded recording of Linux scheduler events for offconv.
# Run `record.sh --help` for the options; docs/runbook.md explains what to record and why.
# Functions are also called indirectly ("${b}_ok", "record_$backend", traps):
# shellcheck disable=SC2317
set -u
export LC_ALL=C

PROG=record.sh
# What docs/runbook.md was validated on (--check warns when this machine differs).
VALIDATED_DATE=2026-12-01
VALIDATED_KERNEL=6.18      # major.minor of `uname -r`
VALIDATED_PERF=6.1.187     # `perf version`
VALIDATED_BPFTRACE=0.17.0  # `bpftrace --version`

MAX_WINDOW=60                                   # seconds; more needs --force
WARN_MB=${OFFCONV_RECORD_WARN_MB:-256}          # warn when perf.data grows past this
MAX_MB=${OFFCONV_RECORD_MAX_MB:-1024}           # perf record --max-size: hard stop
BT_MAP_KEYS=${OFFCONV_RECORD_MAP_KEYS:-65536}   # BPFTRACE_MAP_KEYS_MAX
MMAP=${OFFCONV_RECORD_MMAP:-}                   # perf record -m (default: sized for the window)
WALLCLOCK_PERIOD_NS=1000000                     # --wallclock: cpu-clock's period (1 ms on CPU)
MARKER="offconv-record: attached"               # printed by the bpftrace program's BEGIN, removed from OUT

usage() {
  cat <<'EOF'
Usage: record.sh [--backend perf|bpftrace|auto] (-p PID | -a | -- CMD ARGS...)
                 [-d SECONDS] [-o OUT] [--comm NAME] [--wallclock] [--force]
       record.sh --check [--backend perf|bpftrace|auto]
       record.sh --overhead N [--backend ...] [-d SECONDS] -- CMD ARGS...
(also: offconv record ...)

Records the Linux scheduler for a bounded window so that offconv can tell whether
threads wait for a CPU (run-queue latency) or are blocked (I/O, locks, sleeps), and
where in the kernel. See docs/runbook.md.

What to record (exactly one):
  -p PID          the process PID: its threads (from /proc/PID/task) and the
                  threads and children it starts during the window
  -a              every task on the machine (system-wide)
  -- CMD ARGS...  run CMD and record it and its descendants; the window ends
                  when CMD exits or at -d, whichever is first (CMD and its
                  children are then stopped: SIGTERM, then SIGKILL)

Options:
  --backend B     perf | bpftrace | auto (default auto: perf when it can record
                  here, else bpftrace)
  -d SECONDS      length of the window (default 10; decimals allowed); more than
                  60 is refused without --force
  -o OUT          output file (default offconv-record-DATE-TIME.txt, or .data).
                  perf: `perf script` text; OUT ending in .data keeps perf.data
                  instead (read with `offconv OUT`; no post-filter then).
                  bpftrace: bpftrace's text output. OUT is written whole or not at
                  all; an existing OUT is refused without --force
  --comm NAME     only tasks whose name (comm, first 15 characters) is NAME;
                  glob characters * ? [ ] match patterns (bpftrace: NAME* only,
                  a prefix); implies -a
  --wallclock     also sample the CPUs (cpu-clock, one sample per ms on CPU: -e
                  cpu-clock/period=1000000/), for `offconv --mode wallclock`: on-CPU,
                  blocked and run-queue time in one profile (perf backend only)
  --force         allow a window over 60 s and overwriting OUT
  --check         print kernel, perf and bpftrace versions, privileges,
                  perf_event_paranoid, tracepoints, BTF; exit 0 when recording is
                  possible (with --backend B: with B), else 1 with the reason;
                  warns when versions differ from those the runbook was validated on
  --overhead N    run CMD N times untraced and N times traced (interleaved) for
                  each backend (the one given, or every usable one with auto) and
                  report medians, the difference and whether it is inside the
                  run-to-run spread; needs -- CMD; the recordings are discarded
  -h, --help      this help

Events (perf backend): sched:sched_switch, sched:sched_wakeup,
sched:sched_wakeup_new and sched:sched_waking (where the kernel has it: it fires
in the waker, so a wake-up queued for an idle CPU still names who woke the task)
with kernel+user call graphs (-g), system-wide (-a) with
in-kernel tracepoint filters on the target's thread ids (-p, -- CMD: also every
task created during the window, trimmed afterwards to the target's descendants
by following sched_wakeup_new) or names (--comm), so that switch-ins are
recorded and on-CPU and run-queue time can be measured. perf record -N (no
build-id cache), ring buffer (-m) sized for the window, --max-size cap, then
`perf script` into OUT.

Events (bpftrace backend): the same three tracepoints (plus sched_process_fork
to follow new tasks, and timer:hrtimer_expire_entry/exit to tell a timeout from a
release), aggregated in the kernel only -- no per-event output; the
program stops itself with an interval probe. OUT holds:
  @runq_us                       log2 hist: wakeup or preemption -> switch-in (us)
  @blocked_us                    log2 hist: switch-out asleep -> wakeup (us)
  @blocked_us_by_process[comm, pid]   sum of blocked us per task name and process
  @blocked_us_by_stack[kstack, comm, pid, tid]
                                 sum of blocked us per kernel stack at switch-out
                                 and thread
  @oncpu_ns_by_thread[comm, pid, tid] sum of on-CPU ns (switch-in -> switch-out)
  @runq_ns_by_thread[comm, tid]  sum of run-queue ns behind another task
  @runq_idle_ns_by_thread[comm, tid]  sum of run-queue ns ended by a switch from
                                 the idle task (an idle CPU waking up)
  @timer_blocked_us_by_thread[comm, tid]  count, average and total of blocked us
                                 (stats()) whose wakeup ran in a
                                 timer's expiry (timer:hrtimer_expire_entry/exit):
                                 a timed wait's timeout, not a release
The per-thread sums give each thread's shares of its wall time, so offconv's
verdict is the same rules as on perf's events (p99s: bucket estimates).

Environment: OFFCONV_RECORD_WARN_MB (perf.data warning, default 256),
OFFCONV_RECORD_MAX_MB (perf --max-size, default 1024), OFFCONV_RECORD_MMAP (perf
-m per-CPU ring buffer; default 4M for windows up to 5 s, 8M up to 20 s, else 16M),
OFFCONV_RECORD_MAP_KEYS (bpftrace map size, default 65536).

Exit: 0 recorded (or --check: possible), 1 recording impossible or failed (also:
CMD could not be run, status 126/127: no OUT), 2 usage error, 130 interrupted (OUT is still written when the tracer stopped
cleanly; a second interrupt leaves no OUT).
EOF
}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
# Until a recording starts, an interrupt just ends the script (nothing to clean up yet).
recording=0 interrupted=0
on_signal() {
  interrupted=$((interrupted + 1))
  if [ "$recording" = 0 ]; then say "interrupted before recording: nothing written"; exit 130; fi
  if [ "$interrupted" -ge 2 ] || [ -n "$post" ]; then
    say "interrupted: stopping; no OUT written"; exit 130
  fi
}
trap on_signal INT TERM HUP
usage_error() { say "$*"; exit 2; }
fail() { # a step killed by the interrupt (the signal reaches the whole group) is the interrupt
  if [ "$interrupted" -gt 0 ]; then say "interrupted before the recording started: no OUT written"; exit 130; fi
  say "$*"; exit 1
}

# ---------------------------------------------------------------- time helpers
now_us() { local t=$EPOCHREALTIME; NOW=${t/[.,]/}; NOW=$((10#$NOW)); }
fmt_s() { local us=$1 sign=""; if [ "$us" -lt 0 ]; then sign=-; us=$((-us)); fi
  printf '%s%d.%03d' "$sign" $((us / 1000000)) $((us % 1000000 / 1000)); }
# seconds ("2", "2.5") -> microseconds
secs_to_us() { local s=$1 int frac
  int=${s%%.*}; frac=""; [ "$int" != "$s" ] && frac=${s#*.}
  frac=${frac}000000; frac=${frac:0:6}
  echo $((10#${int:-0} * 1000000 + 10#$frac)); }

# ---------------------------------------------------------------- argument parsing
backend=auto target="" pid="" dur=10 out="" comm="" force=0 check=0 overhead=0 wallclock=0
cmd=()
need_arg() { [ "$2" -ge 2 ] || usage_error "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --backend) need_arg "$1" $#; backend=$2; shift 2 ;;
    --backend=*) backend=${1#*=}; shift ;;
    -p|--pid) need_arg "$1" $#; [ -z "$target" ] || usage_error "choose one of -p PID, -a, -- CMD"
      target=pid; pid=$2; shift 2 ;;
    -a|--all-cpus) [ -z "$target" ] || [ "$target" = all ] || usage_error "choose one of -p PID, -a, -- CMD"
      target=all; shift ;;
    -d|--duration) need_arg "$1" $#; dur=$2; shift 2 ;;
    -o|--output) need_arg "$1" $#; out=$2; shift 2 ;;
    --comm) need_arg "$1" $#; comm=$2; shift 2 ;;
    --comm=*) comm=${1#*=}; shift ;;
    --force) force=1; shift ;;
    --wallclock) wallclock=1; shift ;;
    --check) check=1; shift ;;
    --overhead) need_arg "$1" $#; overhead=$2; shift 2 ;;
    --overhead=*) overhead=${1#*=}; shift ;;
    --) shift; [ $# -gt 0 ] || usage_error "-- needs a command to run"
      [ -z "$target" ] || usage_error "choose one of -p PID, -a, -- CMD"
      target=cmd; cmd=("$@"); break ;;
    *) usage_error "unknown option '$1' (see --help)" ;;
  esac
done

case $backend in perf|bpftrace|auto) ;; *) usage_error "--backend must be perf, bpftrace or auto, not '$backend'" ;; esac
[[ $dur =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "-d needs a number of seconds, not '$dur'"
dur_us=$(secs_to_us "$dur")
[ "$dur_us" -ge 100000 ] || usage_error "-d $dur is too short (at least 0.1 s)"
if [ "$dur_us" -gt $((MAX_WINDOW * 1000000)) ] && [ "$force" = 0 ]; then
  usage_error "refusing a ${dur} s window (more than ${MAX_WINDOW} s can produce gigabytes and disturb the machine): pass --force if you mean it"
fi
if [ "$overhead" != 0 ]; then
  [[ $overhead =~ ^[1-9][0-9]*$ ]] || usage_error "--overhead needs a positive number of runs, not '$overhead'"
  [ "$target" = cmd ] || usage_error "--overhead needs -- CMD ARGS... (it runs the command N times with and without tracing)"
fi
if [ -n "$comm" ]; then
  if [ "$target" = pid ] || [ "$target" = cmd ]; then usage_error "--comm selects tasks system-wide; it cannot be combined with -p or -- CMD"; fi
  [[ $comm =~ [\"\\] ]] && usage_error "--comm NAME cannot contain quotes or backslashes"
  [ -n "$comm" ] || usage_error "--comm needs a name"
  if [ ${#comm} -gt 15 ]; then say "warning: task names are 15 characters long: matching '${comm:0:15}'"; comm=${comm:0:15}; fi
  target=all
fi
if [ "$check" = 0 ] && [ -z "$target" ]; then
  usage_error "say what to record: -p PID, -a, or -- CMD ARGS... (see --help)"
fi
if [ "$target" = pid ]; then
  [[ $pid =~ ^[1-9][0-9]*$ ]] || usage_error "-p needs a process id, not '$pid'"
fi
if [ "$wallclock" = 1 ] && [ "$backend" = bpftrace ]; then
  usage_error "--wallclock needs the perf backend (bpftrace's maps sum time in the kernel: no samples to weigh)"
fi
if [[ $out == *.data ]] && [ "$backend" = bpftrace ]; then
  usage_error "-o $out: a .data OUT keeps perf.data; the bpftrace backend writes text"
fi

# ---------------------------------------------------------------- machine facts
tracefs=""
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
  if [ -e "$d/events/sched" ]; then tracefs=$d; break; fi
done
kernel=$(uname -r)
kernel_mm=$(echo "$kernel" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
perf_ver="" bt_ver=""
if command -v perf >/dev/null 2>&1; then
  perf_ver=$(perf version 2>/dev/null | sed -nE 's/^perf version ([^ ]+).*/\1/p' | head -1)
fi
if command -v bpftrace >/dev/null 2>&1; then
  bt_ver=$(bpftrace --version 2>/dev/null | sed -nE 's/^bpftrace v?([0-9][^ ]*).*/\1/p' | head -1)
fi
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
has_cap() { [ -n "$capeff" ] && [ $(( (16#$capeff >> $1) & 1 )) = 1 ]; }
is_root=0; [ "$(id -u)" = 0 ] && is_root=1
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo "?")
btf=0; [ -e /sys/kernel/btf/vmlinux ] && btf=1
# bpftrace >= 0.19 spells tracepoint fields args.f (args->f still accepted); older only args->f
bt_args="args->"
ver_ge() { # ver_ge A B: version A >= B (numeric, dot-separated)
  local IFS=. i a b; read -ra a <<<"$1"; read -ra b <<<"$2"
  for i in 0 1 2; do
    [ "$((10#${a[i]:-0}))" -gt "$((10#${b[i]:-0}))" ] && return 0
    [ "$((10#${a[i]:-0}))" -lt "$((10#${b[i]:-0}))" ] && return 1
  done; return 0; }
if [ -n "$bt_ver" ] && ver_ge "${bt_ver%%[^0-9.]*}" 0.19; then bt_args="args."; fi

# Each check sets WHY (reason + what to do) and returns 1 when the backend cannot record here.
WHY=""
tracepoints_ok() {
  local e
  if [ -z "$tracefs" ]; then
    WHY="no tracefs with sched events (mount it: mount -t tracefs nodev /sys/kernel/tracing; kernel needs CONFIG_FTRACE)"; return 1
  fi
  for e in sched_switch sched_wakeup sched_wakeup_new; do
    [ -e "$tracefs/events/sched/$e" ] || { WHY="tracepoint sched:$e missing from $tracefs/events/sched (kernel without it cannot be recorded)"; return 1; }
  done
}
perf_ok() {
  [ -n "$perf_ver" ] || { WHY="perf is not installed or does not run for this kernel (Debian: apt-get install linux-perf)"; return 1; }
  tracepoints_ok || return 1
  if [ "$is_root" = 0 ] && ! has_cap 38 && ! has_cap 21 && [ "$paranoid" != -1 ]; then
    WHY="not root, no CAP_PERFMON, perf_event_paranoid=$paranoid (run as root, or grant CAP_PERFMON, or sysctl kernel.perf_event_paranoid=-1)"; return 1
  fi
  local err
  if ! err=$(perf stat -x, -e sched:sched_switch -a -- true 2>&1 >/dev/null); then
    WHY="perf cannot open sched:sched_switch system-wide: $(echo "$err" | grep -v '^$' | head -1)"; return 1
  fi
}
bpftrace_ok() {
  [ -n "$bt_ver" ] || { WHY="bpftrace is not installed (Debian: apt-get install bpftrace)"; return 1; }
  tracepoints_ok || return 1
  if [ "$is_root" = 0 ] && ! { has_cap 39 && has_cap 38; } && ! has_cap 21; then
    WHY="bpftrace needs root (or CAP_BPF and CAP_PERFMON): run with sudo"; return 1
  fi
  if [ "$btf" = 0 ] && ver_ge "${bt_ver%%[^0-9.]*}" 0.25; then
    WHY="bpftrace $bt_ver needs kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y) for tracepoint args"; return 1
  fi
  local err
  if ! err=$(timeout 30 bpftrace -e "tracepoint:sched:sched_switch { if (${bt_args}prev_pid >= 0) { exit(); } }" 2>&1 >/dev/null); then
    WHY="bpftrace cannot attach to sched:sched_switch: $(echo "$err" | grep -v -e RLIMIT_MEMLOCK -e '^$' | head -1)"; return 1
  fi
}

# ---------------------------------------------------------------- --check
if [ "$check" = 1 ]; then
  warns=0 possible=""
  echo "kernel:      $kernel"
  if [ "$kernel_mm" != "$VALIDATED_KERNEL" ]; then echo "  warning: the runbook was validated on kernel $VALIDATED_KERNEL ($VALIDATED_DATE): re-validate (docs/runbook.md)"; warns=$((warns+1)); fi
  if [ "$is_root" = 1 ]; then priv=root; else
    priv="uid $(id -u)"; has_cap 38 && priv="$priv CAP_PERFMON"; has_cap 39 && priv="$priv CAP_BPF"; has_cap 21 && priv="$priv CAP_SYS_ADMIN"; fi
  echo "privileges:  $priv"
  echo "perf_event_paranoid: $paranoid$([ "$is_root" = 1 ] && echo ' (root: not limiting)')"
  if [ -n "$tracefs" ]; then
    tps=""; for e in sched_switch sched_wakeup sched_wakeup_new sched_process_fork; do
      if [ -e "$tracefs/events/sched/$e" ]; then tps="$tps $e"; else tps="$tps $e(MISSING)"; fi; done
    echo "tracepoints:${tps} ($tracefs)"
  else echo "tracepoints: no tracefs with sched events found"; fi
  echo "BTF:         $([ "$btf" = 1 ] && echo "/sys/kernel/btf/vmlinux present" || echo "absent (bpftrace >= 0.25 needs it)")"
  for b in perf bpftrace; do
    [ "$backend" = auto ] || [ "$backend" = "$b" ] || continue
    if [ $b = perf ]; then v=$perf_ver vv=$VALIDATED_PERF; else v=$bt_ver vv=$VALIDATED_BPFTRACE; fi
    extra=""; [ $b = bpftrace ] && [ -n "$v" ] && extra=" (tracepoint fields as ${bt_args}field)"
    if ${b}_ok; then echo "$b:$( [ $b = perf ] && echo '       ' || echo '   ')$v: can record$extra"; possible="$possible $b"
    else echo "$b:$( [ $b = perf ] && echo '       ' || echo '   ')${v:-not found}: cannot record: $WHY"; fi
    if [ -n "$v" ] && [ "$v" != "$vv" ]; then echo "  warning: the runbook was validated with $b $vv ($VALIDATED_DATE): re-validate (docs/runbook.md)"; warns=$((warns+1)); fi
  done
  if [ -z "$possible" ]; then
    say "recording is not possible here with backend $backend (reasons above)"; exit 1
  fi
  echo "result:      recording possible with:$possible$([ $warns -gt 0 ] && echo " ($warns warning(s))")"
  exit 0
fi

# ---------------------------------------------------------------- choose the backend
if [ "$backend" = auto ]; then
  if perf_ok; then backend=perf
  else why_perf=$WHY
    if [[ $out != *.data ]] && bpftrace_ok; then backend=bpftrace
    else fail "cannot record: perf: $why_perf; bpftrace: ${WHY:-not usable for a .data OUT}"; fi
  fi
  backends=("$backend")
  if [ "$overhead" != 0 ]; then   # --overhead with auto: every usable backend
    backends=(); perf_ok && backends+=(perf); bpftrace_ok && backends+=(bpftrace)
  fi
else
  "${backend}_ok" || fail "cannot record with $backend: $WHY"
  backends=("$backend")
fi

if [[ " ${backends[*]} " == *" bpftrace "* ]] && [[ ${comm%'*'} == *[\*\?\[]* ]]; then
  usage_error "--comm '$comm': the bpftrace backend matches a name exactly or by a prefix (NAME*); other glob patterns need --backend perf"
fi
if [ "$target" = pid ]; then
  [ -d "/proc/$pid/task" ] || fail "no process $pid (check the pid: pgrep NAME)"
fi

# ---------------------------------------------------------------- state, cleanup, signals
tmpd="" tracer="" workload="" post="" child="" partial=""
kill_tree() { # kill_tree PID...: SIGTERM the processes and all their descendants, then SIGKILL
  local -a all=("$@") queue=("$@") kids; local p f s rest i
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}"); kids=()
    for f in /proc/[0-9]*/stat; do
      s=""; read -r s 2>/dev/null <"$f" || continue
      rest=${s##*) }; read -r _ ppid _ <<<"$rest"
      [ "$ppid" = "$p" ] && kids+=("$(basename "$(dirname "$f")")")
    done
    all+=("${kids[@]}"); queue+=("${kids[@]}")
  done
  kill -TERM "${all[@]}" 2>/dev/null
  for i in $(seq 20); do alive "${all[@]}" || return 0; tick; done
  kill -KILL "${all[@]}" 2>/dev/null
}
alive() { # alive PID...: true when one of them exists and is not a zombie (builtins only)
  local p s; for p in "$@"; do
    [ -n "$p" ] || continue
    s=""; read -r s 2>/dev/null <"/proc/$p/stat" || continue
    s=${s##*) }; [ "${s:0:1}" != Z ] && return 0
  done; return 1; }
# tick: sleep 0.1 s without forking (read with a timeout on a fifo nobody writes)
tick_fd=""
tick() { if [ -z "$tmpd" ]; then sleep "${1:-0.1}"; return; fi
  if [ -z "$tick_fd" ]; then mkfifo "$tmpd/tick" && exec {tick_fd}<>"$tmpd/tick"; fi
  read -r -t "${1:-0.1}" -u "$tick_fd" _; }
stop_tracer() { # SIGINT (tracers write their output on SIGINT), wait, SIGKILL after 60 s
  [ -n "$tracer" ] || return 0
  local i
  kill -INT "$tracer" 2>/dev/null
  for i in $(seq 600); do alive "$tracer" || break; tick; done
  if alive "$tracer"; then say "warning: tracer $tracer did not stop: killing it"; kill_tree "$tracer"; fi
  wait "$tracer" 2>/dev/null
  tracer=""
}
cleanup() {
  [ -n "$child" ] && { kill -INT "$child" 2>/dev/null; wait "$child" 2>/dev/null; }
  [ -n "$post" ] && kill_tree "$post"
  [ -n "$tracer" ] && { kill -INT "$tracer" 2>/dev/null; sleep 0.5; kill_tree "$tracer"; }
  [ -n "$workload" ] && kill_tree "$workload"
  [ -n "$partial" ] && rm -f "$partial"
  [ -n "$tmpd" ] && rm -rf "$tmpd"
}
trap cleanup EXIT
recording=1

# Start CMD held at a fifo so the tracer is attached before it runs; own process group,
# default signal dispositions (set -m), stdin inherited. TIMING_FILE: record its wall time.
TIMING_FILE=""
start_workload() {
  mkfifo "$tmpd/go" || fail "cannot create a fifo in $tmpd"
  set -m
  if [ -n "$TIMING_FILE" ]; then
    bash -c 'read -r _ < "$1"; f=$2; shift 2; s=$EPOCHREALTIME; "$@"; rc=$?; e=$EPOCHREALTIME; echo "$s $e $rc" > "$f"; exit "$rc"' \
      record-wrapper "$tmpd/go" "$TIMING_FILE" "${cmd[@]}" <&0 &
  else
    bash -c 'read -r _ < "$1"; shift; exec "$@"' record-wrapper "$tmpd/go" "${cmd[@]}" <&0 &
  fi
  workload=$!
  set +m
}
release_workload() { echo go > "$tmpd/go"; }

# Wait for the window: until the deadline, an interrupt, the tracer's own end, the
# workload's end (-- CMD) or the target's end (-p). Sets window_us and end_reason.
wait_window() { # wait_window START_US [DATAFILE]
  local start=$1 data=${2:-} warned=0 sz n=0
  end_reason=deadline
  while :; do
    now_us
    [ $((NOW - start)) -ge "$dur_us" ] && break
    if [ "$interrupted" -gt 0 ]; then end_reason=interrupted; break; fi
    if [ -n "$tracer" ] && ! alive "$tracer"; then end_reason=tracer; break; fi
    if [ -n "$workload" ] && ! alive "$workload"; then end_reason=cmd; break; fi
    if [ "$target" = pid ] && ! alive "$pid"; then end_reason=pid; break; fi
    n=$((n + 1))
    if [ -n "$data" ] && [ $warned = 0 ] && [ $((n % 10)) = 0 ]; then
      sz=$(stat -c %s "$data" 2>/dev/null || echo 0)
      if [ "$sz" -gt $((WARN_MB * 1048576)) ]; then
        say "warning: perf.data is past ${WARN_MB} MB after $(fmt_s $((NOW - start))) s (stops at ${MAX_MB} MB): narrow the target or shorten -d"; warned=1
      fi
    fi
    tick 0.05
  done
  now_us; window_us=$((NOW - start))
}

# ---------------------------------------------------------------- filters (perf)
# Compress sorted numbers into "a" and "lo-hi" ranges.
ranges() { sort -n -u | awk 'NR==1{lo=hi=$1;next} $1==hi+1{hi=$1;next} {print (lo==hi?lo:lo"-"hi); lo=hi=$1} END{if(NR)print (lo==hi?lo:lo"-"hi)}'; }
# pred FIELD RANGE...: "FIELD == a || (FIELD >= lo && FIELD <= hi) || ..."
pred() { local f=$1 r s=""; shift
  for r in "$@"; do
    if [[ $r == *-* ]]; then s="$s || ($f >= ${r%-*} && $f <= ${r#*-})"; else s="$s || $f == $r"; fi
  done; echo "${s# || }"; }

# Keep the events of the seed tids and of the tasks they create (sched_wakeup_new's
# header is the parent), in time order. Input: perf script text (blank-line separated).
# shellcheck disable=SC2016  # an awk program
POSTFILTER='
BEGIN { n = split(seeds, a, ","); for (i = 1; i <= n; i++) S[a[i]] = 1; RS = ""; ORS = "\n\n" }
function num(s, re,   t) { if (!match(s, re)) return ""; t = substr(s, RSTART, RLENGTH); sub(/^[^=]*=/, "", t); sub(/ .*/, "", t); return t }
{
  nl = index($0, "\n"); h = nl ? substr($0, 1, nl - 1) : $0; keep = 1
  if (index(h, " sched:sched_switch: ")) {
    keep = (num(h, " prev_pid=-?[0-9]+ prev_prio=") in S) || (num(h, " next_pid=-?[0-9]+ next_prio=") in S)
  } else if (index(h, " sched:sched_wakeup_new: ")) {
    c = num(h, " pid=-?[0-9]+ prio=-?[0-9]+ target_cpu=")
    if (match(h, / -?[0-9]+ +\[[0-9]+\] +[0-9]+\.[0-9]+: /)) { w = substr(h, RSTART + 1); sub(/ .*/, "", w); if (w in S) S[c] = 1 }
    keep = (c in S)
  } else if (index(h, " sched:sched_wakeup: ") || index(h, " sched:sched_waking: ")) {
    keep = (num(h, " pid=-?[0-9]+ prio=-?[0-9]+ target_cpu=") in S)
  }
  if (keep) { print; k++ }
}
END { if (cntfile != "") print k + 0 > cntfile }'

# ---------------------------------------------------------------- perf backend
record_perf() {
  local data="$tmpd/perf.data" mmap ceil="" seeds="" sw="" wk="" wn="" lastpid pidmax
  local -a tids=() rng=() fargs=()
  if [ "$dur_us" -le 5000000 ]; then mmap=4M; elif [ "$dur_us" -le 20000000 ]; then mmap=8M; else mmap=16M; fi
  [ -n "$MMAP" ] && mmap=$MMAP
  lastpid=$(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0)
  pidmax=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
  case $target in
    pid)
      ceil=$((lastpid + 1))
      mapfile -t tids < <(ls "/proc/$pid/task" 2>/dev/null)
      [ ${#tids[@]} -gt 0 ] || fail "process $pid is gone"
      mapfile -t rng < <(printf '%s\n' "${tids[@]}" | ranges)
      sw="$(pred prev_pid "${rng[@]}") || $(pred next_pid "${rng[@]}") || prev_pid >= $ceil || next_pid >= $ceil"
      wk="$(pred pid "${rng[@]}") || pid >= $ceil"; wn="pid >= $ceil"
      seeds=$(IFS=,; echo "${tids[*]}")
      [ ${#sw} -lt 3900 ] || fail "process $pid has ${#tids[@]} threads: too many for an in-kernel filter (4 KB); record -a --comm NAME instead" ;;
    cmd)
      start_workload; ceil=$workload; lastpid=$workload
      sw="prev_pid >= $ceil || next_pid >= $ceil"; wk="pid >= $ceil"; wn=$wk; seeds=$workload ;;
    all)
      if [ -n "$comm" ]; then
        local op='=='; [[ $comm == *[\*\?\[]* ]] && op='~'
        sw="prev_comm $op \"$comm\" || next_comm $op \"$comm\""; wk="comm $op \"$comm\""; wn=$wk
      fi ;;
  esac
  if [ -n "$ceil" ] && [ $((pidmax - lastpid)) -lt 2000 ]; then
    say "warning: pid numbers are close to pid_max ($lastpid of $pidmax): tasks created after the wrap-around are not followed"
  fi
  fargs=(-e sched:sched_switch); [ -n "$sw" ] && fargs+=(--filter "$sw")
  fargs+=(-e sched:sched_wakeup); [ -n "$wk" ] && fargs+=(--filter "$wk")
  fargs+=(-e sched:sched_wakeup_new); [ -n "$wn" ] && fargs+=(--filter "$wn")
  if [ -e "$tracefs/events/sched/sched_waking" ]; then   # Linux 4.3+
    fargs+=(-e sched:sched_waking); [ -n "$wk" ] && fargs+=(--filter "$wk")
  fi
  # --wallclock: the CPUs sampled too, a period of its own (a global -c would sample the
  # tracepoints too: every millionth switch)
  [ "$wallclock" = 1 ] && fargs+=(-e "cpu-clock/period=$WALLCLOCK_PERIOD_NS/")
  mkfifo "$tmpd/ctl" "$tmpd/ack" || fail "cannot create fifos in $tmpd"
  # The `sleep` workload is a dead man's switch: perf stops by itself even if this script is killed.
  set -m
  perf record -N -a -g -m "$mmap" --max-size "${MAX_MB}M" -D -1 --control "fifo:$tmpd/ctl,$tmpd/ack" \
    "${fargs[@]}" -o "$data" -- sleep $(( dur_us / 1000000 + 30 )) </dev/null >"$tmpd/record.log" 2>&1 &
  tracer=$!
  set +m
  local ctlfd ackfd reply="" part i
  exec {ctlfd}<>"$tmpd/ctl" {ackfd}<>"$tmpd/ack"
  echo enable >&"$ctlfd"
  for i in $(seq 300); do
    # a read that times out keeps what it read of the line: "ack" can come in two reads
    if read -r -t 0.1 part <&"$ackfd"; then reply+=$part; break; fi
    reply+=$part
    alive "$tracer" || break
    [ "$interrupted" -gt 0 ] && break
  done
  if [ "$reply" != ack ]; then
    if [ "$interrupted" -gt 0 ]; then say "interrupted before the recording started: no OUT written"; exit 130; fi
    say "perf record did not start:"; grep -v '^$' "$tmpd/record.log" | head -5 >&2; exit 1
  fi
  now_us; local t0=$NOW
  [ "$target" = cmd ] && release_workload
  wait_window "$t0" "$data"
  stop_tracer
  exec {ctlfd}>&- {ackfd}>&-
  if [ "$target" = cmd ] && alive "$workload"; then kill_tree "$workload"; fi
  if [ "$target" = cmd ]; then wait "$workload" 2>/dev/null; cmd_rc=$?; workload=""; fi
  [ -s "$data" ] || { say "perf record wrote nothing:"; grep -v '^$' "$tmpd/record.log" | head -5 >&2; exit 1; }
  # perf's own accounting (stderr): "Processed N events and lost M chunks!", "... lost P%!"
  lost_chunks=$(sed -nE 's/.*and lost ([0-9]+) chunks.*/\1/p' "$tmpd/record.log" | tail -1)
  lost_pct=$(sed -nE 's/.*samples and lost ([0-9.]+)%.*/\1/p' "$tmpd/record.log" | tail -1)
  nsamples=$(sed -nE 's/.*Captured and wrote .*\(([0-9]+) samples\).*/\1/p' "$tmpd/record.log" | tail -1)
  grep -q 'size limit reached' "$tmpd/record.log" && say "warning: perf.data reached ${MAX_MB} MB (--max-size): the recording stopped early"
  local lost_note="lost_chunks=${lost_chunks:-0} lost_samples_pct=${lost_pct:-0}"
  if [ -n "$lost_chunks" ] || [ -n "$lost_pct" ]; then
    say "warning: perf lost events: ${lost_chunks:-0} chunks, ${lost_pct:-0}% of samples (the ring buffer overflowed): times are incomplete; record a narrower target or a shorter window"
  fi
  if [ "$only_data" = 1 ]; then
    mv -f "$data" "$out" || fail "cannot write $out"
    kind="perf.data"
  else
    # with -p / -- CMD, the "every new task" part of the in-kernel filter is trimmed to the target's descendants
    partial="$out.partial.$$"
    {
      printf '# offconv-record: backend=perf target=%s window_s=%s %s perf_samples=%s\n' "$target_desc" "$(fmt_s "$window_us")" "$lost_note" "${nsamples:-?}"
      if [ -n "$seeds" ]; then perf script -i "$data" 2>"$tmpd/script.log" | awk -v seeds="$seeds" -v cntfile="$tmpd/kept" "$POSTFILTER"
      else perf script -i "$data" 2>"$tmpd/script.log"; fi
    } >"$partial" &
    post=$!
    wait "$post"; local rc=$?; post=""
    [ "$rc" = 0 ] || fail "perf script failed: $(grep -v -e '^$' -e Warning -e lost "$tmpd/script.log" | head -1)"
    mv -f "$partial" "$out" || fail "cannot write $out"; partial=""
    kind="perf script text"
    if [ -n "$seeds" ]; then
      nsamples=$(cat "$tmpd/kept" 2>/dev/null || echo 0)
      [ "$nsamples" = 0 ] && say "warning: no events of the target were recorded: it did not run, block or wake up during the window (an idle process? -p follows only threads and children created during the window)"
    fi
  fi
  summary_extra="${nsamples:-?} events; lost events: $([ -n "$lost_chunks$lost_pct" ] && echo "${lost_chunks:-0} chunks (${lost_pct:-0}% of samples)" || echo none)"
}

# ---------------------------------------------------------------- bpftrace backend
bt_program() { # bt_program MODE: the program text; $1 of the program = target pid
  local A=$bt_args mode=$1 sel selnext mark="" wakee fork=""
  case $mode in
    all) sel="1"; wakee="1"; selnext="1" ;;
    comm) if [[ $comm == *'*' ]] && [[ ${comm%'*'} != *[\*\?\[]* ]]; then
            # NAME*: bpftrace 0.17 has no glob match; a prefix is strncmp's
            local pre=${comm%'*'}
            sel="strncmp(${A}prev_comm, \"$pre\", ${#pre}) == 0"
            wakee="strncmp(${A}comm, \"$pre\", ${#pre}) == 0"
            selnext="strncmp(${A}next_comm, \"$pre\", ${#pre}) == 0"
          else
            sel="${A}prev_comm == \"$comm\""; wakee="${A}comm == \"$comm\""
            selnext="${A}next_comm == \"$comm\""
          fi ;;
    pid) sel="pid == \$1 || @mine[\$prev]"; wakee="@mine[\$p]"; selnext="@mine[\$next]"; mark="		@mine[\$prev] = 1;"
         fork="tracepoint:sched:sched_process_fork
/pid == \$1 || @mine[${A}parent_pid]/
{
	@mine[${A}child_pid] = 1;
}
" ;;
    cmd) sel="@mine[\$prev]"; wakee="@mine[\$p]"; selnext="@mine[\$next]"
         fork="tracepoint:sched:sched_process_fork
/@mine[${A}parent_pid]/
{
	@mine[${A}child_pid] = 1;
}
" ;;
  esac
  cat <<EOF
// offconv record.sh (bpftrace $bt_ver): in-kernel aggregation only, stops itself after ${dur} s.
//   @runq_us                      hist: wakeup / preemption (prev_state == 0) -> switch-in, us
//   @blocked_us                   hist: switch-out asleep (prev_state != 0) -> wakeup, us
//   @blocked_us_by_process[comm, pid]  sum of blocked us (pid = process id)
//   @blocked_us_by_stack[kstack, comm, pid, tid]  sum of blocked us by kernel stack at switch-out
//   @oncpu_ns_by_thread[comm, pid, tid]     sum of on-CPU ns (switch-in -> switch-out)
//   @runq_ns_by_thread[comm, tid]           sum of run-queue ns behind another task
//   @runq_idle_ns_by_thread[comm, tid]      sum of run-queue ns ended by a switch from idle
//   @timer_blocked_us_by_thread[comm, tid]  stats (count, average, total) of blocked us whose wakeup ran in a timer's expiry
// A task switched in with no wakeup seen counts as blocked until the switch-in.
BEGIN
{
	printf("$MARKER\n");
$( [ "$mode" = cmd ] && echo "	@mine[\$1] = 1;" )
}

${fork}tracepoint:sched:sched_switch
{
	\$prev = ${A}prev_pid;
	if (\$prev != 0 && ($sel)) {
$mark
		\$o = @ontime[\$prev];
		if (\$o != 0) {
			@oncpu_ns_by_thread[${A}prev_comm, pid, \$prev] = sum(nsecs - \$o);
			delete(@ontime[\$prev]);
		}
		if (${A}prev_state == 0) {
			@qtime[\$prev] = nsecs;
		} else {
			@btime[\$prev] = nsecs;
			@bstack[\$prev] = kstack;
			@btgid[\$prev] = pid;
		}
	}
	\$next = ${A}next_pid;
	\$b = @btime[\$next];
	if (\$b != 0) {
		\$d = (nsecs - \$b) / 1000;
		@blocked_us = hist(\$d);
		@blocked_us_by_process[${A}next_comm, @btgid[\$next]] = sum(\$d);
		@blocked_us_by_stack[@bstack[\$next], ${A}next_comm, @btgid[\$next], \$next] = sum(\$d);
		delete(@btime[\$next]);
		delete(@bstack[\$next]);
		delete(@btgid[\$next]);
	}
	\$q = @qtime[\$next];
	if (\$q != 0) {
		@runq_us = hist((nsecs - \$q) / 1000);
		if (\$prev == 0) {
			@runq_idle_ns_by_thread[${A}next_comm, \$next] = sum(nsecs - \$q);
		} else {
			@runq_ns_by_thread[${A}next_comm, \$next] = sum(nsecs - \$q);
		}
		delete(@qtime[\$next]);
	}
	if (\$next != 0 && ($selnext)) {
		@ontime[\$next] = nsecs;
	}
}

$( [ -e "$tracefs/events/timer/hrtimer_expire_entry" ] && [ -e "$tracefs/events/timer/hrtimer_expire_exit" ] && printf '%s\n' \
  'tracepoint:timer:hrtimer_expire_entry' '{' '	@intimer[cpu] = 1;' '}' '' \
  'tracepoint:timer:hrtimer_expire_exit' '{' '	delete(@intimer[cpu]);' '}' '')
tracepoint:sched:sched_wakeup,
tracepoint:sched:sched_wakeup_new
{
	\$p = ${A}pid;
	\$b = @btime[\$p];
	if (\$b != 0) {
		\$d = (nsecs - \$b) / 1000;
		@blocked_us = hist(\$d);
		if (@intimer[cpu]) {
			@timer_blocked_us_by_thread[${A}comm, \$p] = stats(\$d);
		}
		@blocked_us_by_process[${A}comm, @btgid[\$p]] = sum(\$d);
		@blocked_us_by_stack[@bstack[\$p], ${A}comm, @btgid[\$p], \$p] = sum(\$d);
		delete(@btime[\$p]);
		delete(@bstack[\$p]);
		delete(@btgid[\$p]);
		@qtime[\$p] = nsecs;
	} else if ($wakee) {
		@qtime[\$p] = nsecs;
	}
}

interval:ms:$((dur_us / 1000))
{
	exit();
}

END
{
	clear(@qtime);
	clear(@btime);
	clear(@bstack);
	clear(@btgid);
	clear(@ontime);
	clear(@intimer);
$( [ "$mode" = pid ] || [ "$mode" = cmd ] && echo "	clear(@mine);" )
}
EOF
}

record_bpftrace() {
  local mode=$target prog="$tmpd/record.bt" arg=0 i
  [ -n "$comm" ] && mode="comm"
  [ "$target" = cmd ] && start_workload
  [ "$target" = cmd ] && arg=$workload
  [ "$target" = pid ] && arg=$pid
  bt_program "$mode" >"$prog"
  set -m
  BPFTRACE_MAP_KEYS_MAX=$BT_MAP_KEYS bpftrace "$prog" "$arg" </dev/null >"$tmpd/bt.out" 2>"$tmpd/bt.err" &
  tracer=$!
  set +m
  for i in $(seq 600); do   # attach can take a few seconds: wait for BEGIN's marker
    grep -qx "$MARKER" "$tmpd/bt.out" 2>/dev/null && break
    alive "$tracer" || break
    [ "$interrupted" -gt 0 ] && break
    tick 0.05
  done
  if ! grep -qx "$MARKER" "$tmpd/bt.out" 2>/dev/null; then
    if [ "$interrupted" -gt 0 ]; then say "interrupted before the recording started: no OUT written"; exit 130; fi
    say "bpftrace did not start:"; grep -v -e RLIMIT_MEMLOCK -e '^$' "$tmpd/bt.err" | head -5 >&2; exit 1
  fi
  now_us; local t0=$NOW
  [ "$target" = cmd ] && release_workload
  wait_window "$t0"
  # at the deadline the interval probe ends bpftrace, which then prints its maps (resolving
  # the stacks' symbols can take seconds): a SIGINT while it prints cuts them short, so it
  # is left to finish. Otherwise (CMD or the process ended, Ctrl-C) SIGINT at once, before
  # the interval probe ends it too.
  if [ "$end_reason" = deadline ] || [ "$end_reason" = tracer ]; then
    for i in $(seq 1200); do alive "$tracer" || break; tick 0.05; done
  fi
  [ "$end_reason" = tracer ] && end_reason=deadline
  stop_tracer
  if [ "$target" = cmd ] && alive "$workload"; then kill_tree "$workload"; fi
  if [ "$target" = cmd ]; then wait "$workload" 2>/dev/null; cmd_rc=$?; workload=""; fi
  grep -q '^@' "$tmpd/bt.out" || { say "bpftrace printed no maps:"; grep -v -e RLIMIT_MEMLOCK -e '^$' "$tmpd/bt.err" | head -5 >&2; exit 1; }
  local lost
  lost=$(cat "$tmpd/bt.out" "$tmpd/bt.err" | sed -nE 's/^Lost ([0-9]+) events.*/\1/p' | awk '{s+=$1} END{print s+0}')
  [ "$lost" -gt 0 ] && say "warning: bpftrace lost $lost events"
  grep -v -e RLIMIT_MEMLOCK -e '^$' "$tmpd/bt.err" | head -3 | while read -r l; do say "bpftrace: $l"; done
  partial="$out.partial.$$"
  grep -v -x "$MARKER" "$tmpd/bt.out" >"$partial" || fail "cannot write $out"
  mv -f "$partial" "$out" || fail "cannot write $out"; partial=""
  kind="bpftrace text"
  summary_extra="$(grep -c '^\[' "$out") histogram rows, $(grep -c '^@blocked_us_by_stack\[' "$out") stacks; lost events: $([ "$lost" -gt 0 ] && echo "$lost" || echo none)"
}

# ---------------------------------------------------------------- --overhead
median_us() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2) }'; }
range_us() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END{print hi-lo}'; }
if [ "$overhead" != 0 ]; then
  [ ${#backends[@]} -gt 0 ] || fail "no backend can record here (record.sh --check)"
  tmpd=$(mktemp -d "${TMPDIR:-/tmp}/offconv-overhead.XXXXXX") || fail "cannot create a temporary directory"
  self=$(readlink -f "$0")
  elapsed_us() { awk '{split($1,s,/[.,]/); split($2,e,/[.,]/); print (e[1]-s[1])*1000000 + (e[2]-s[2])}' "$1"; }
  run_untraced() { # sets RUN_US
    TIMING_FILE="$tmpd/t"; rm -f "$TIMING_FILE" "$tmpd/go"
    start_workload; release_workload
    now_us; wait_window "$NOW"
    if alive "$workload"; then kill_tree "$workload"; say "warning: CMD ran past -d $dur and was stopped"; fi
    wait "$workload" 2>/dev/null; workload=""
    [ "$interrupted" -gt 0 ] && exit 130
    [ -s "$TIMING_FILE" ] || fail "the untraced run of CMD left no timing"
    RUN_US=$(elapsed_us "$TIMING_FILE"); }
  run_traced() { # run_traced BACKEND N: sets RUN_US
    local f="$tmpd/tt" o="$tmpd/rec$2"; rm -f "$f"
    if [ "$1" = perf ]; then o="$o.data"; else o="$o.txt"; fi
    # shellcheck disable=SC2016  # $EPOCHREALTIME etc. expand in the inner bash
    "$self" --backend "$1" -d "$dur" --force -o "$o" -- \
      bash -c 's=$EPOCHREALTIME; "$@"; rc=$?; e=$EPOCHREALTIME; echo "$s $e $rc" > "$0"; exit "$rc"' "$f" "${cmd[@]}" \
      2>"$tmpd/rec.log" &
    child=$!
    wait "$child"; while alive "$child"; do wait "$child"; done; child=""
    [ "$interrupted" -gt 0 ] && exit 130
    [ -s "$f" ] || { say "traced run with $1 failed:"; tail -3 "$tmpd/rec.log" >&2; exit 1; }
    rm -f "$o"
    RUN_US=$(elapsed_us "$f"); }
  printf 'overhead of tracing: %s run(s) each, interleaved; command: %s\n' "$overhead" "${cmd[*]}"
  printf '%-9s %-16s %-16s %-22s %-12s %s\n' backend untraced-median traced-median difference spread verdict
  for b in "${backends[@]}"; do
    un=() tr=()
    for i in $(seq "$overhead"); do
      [ "$interrupted" -gt 0 ] && exit 130
      run_untraced; un+=("$RUN_US")
      run_traced "$b" "$i"; tr+=("$RUN_US")
    done
    mu=$(printf '%s\n' "${un[@]}" | median_us); mt=$(printf '%s\n' "${tr[@]}" | median_us)
    ru=$(printf '%s\n' "${un[@]}" | range_us); rt=$(printf '%s\n' "${tr[@]}" | range_us)
    spread=$ru; [ "$rt" -gt "$spread" ] && spread=$rt
    diff=$((mt - mu)); adiff=${diff#-}
    pct=$(awk -v d="$diff" -v m="$mu" 'BEGIN{ if (m > 0) printf "%+.1f%%", 100*d/m; else print "?" }')
    if [ "$adiff" -le "$spread" ]; then verdict="inside the run-to-run spread: the tracer's cost is not measurable"
    elif [ "$diff" -gt 0 ]; then verdict="OUTSIDE the run-to-run spread: the histogram is a picture of the tracer as much as of the workload"
    else verdict="traced runs were faster by more than the spread: noise dominates, use more runs"; fi
    printf '%-9s %-16s %-16s %-22s %-12s %s\n' "$b" "$(fmt_s "$mu") s" "$(fmt_s "$mt") s" "$( [ $diff -ge 0 ] && echo +)$(fmt_s "$diff") s ($pct)" "$(fmt_s "$spread") s" "$verdict"
    printf '          untraced: %s\n          traced:   %s\n' "$(for x in "${un[@]}"; do printf '%s ' "$(fmt_s "$x")"; done)" "$(for x in "${tr[@]}"; do printf '%s ' "$(fmt_s "$x")"; done)"
  done
  echo "(spread = the larger of max-min over the untraced runs and over the traced runs; times are CMD's own wall clock)"
  exit 0
fi

# ---------------------------------------------------------------- record
backend=${backends[0]}
only_data=0
if [ -z "$out" ]; then
  out="offconv-record-$(date +%Y%m%d-%H%M%S).txt"
fi
[[ $out == *.data ]] && only_data=1
if [ -e "$out" ] && [ "$force" = 0 ]; then usage_error "$out exists: choose another -o or pass --force to overwrite it"; fi
outdir=$(dirname "$out")
if ! [ -d "$outdir" ] || ! [ -w "$outdir" ]; then fail "cannot write into $outdir"; fi
tmpd=$(mktemp -d "$outdir/.offconv-record.XXXXXX") || fail "cannot create a temporary directory in $outdir"
case $target in
  pid) target_desc="-p:$pid" ;; cmd) target_desc="cmd:$(basename "${cmd[0]}")" ;;
  *) target_desc="-a${comm:+:comm=$comm}" ;;
esac
say "recording with $backend for $(fmt_s "$dur_us") s ($target_desc) into $out"
cmd_rc="" kind="" summary_extra=""
"record_$backend"
extra=""
case $end_reason in
  cmd) extra=" (CMD exited with status $cmd_rc after $(fmt_s "$window_us") s)" ;;
  pid) extra=" (process $pid exited)" ;;
  tracer) extra=" (the tracer ended the window itself)" ;;
  interrupted) extra=" (interrupted)" ;;
  deadline) [ -n "$cmd_rc" ] && extra=" (CMD stopped at the end of the window)" ;;
esac
if [ "$end_reason" = cmd ] && { [ "$cmd_rc" = 126 ] || [ "$cmd_rc" = 127 ]; }; then
  # the shell could not run CMD (127: not found, 126: not executable): what was recorded is
  # the wrapper, not the command; a report of it would describe the wrong thing
  rm -f -- "$out"
  say "CMD could not be run (status $cmd_rc: $([ "$cmd_rc" = 127 ] && echo "not found" || echo "not executable")): no OUT written"
  exit 1
fi
size=$(stat -c %s "$out")
say "wrote $out: $kind, window $(fmt_s "$window_us") s$extra, $(awk -v s="$size" 'BEGIN{printf "%.1f", s/1048576}') MB, $summary_extra"
if [ "$end_reason" = interrupted ]; then exit 130; fi
exit 0
