"""pprof: a gzipped ``perftools.profiles.Profile`` (google/pprof's profile.proto), the
format ``go tool pprof`` reads and the continuous-profiling engines ingest (Grafana
Pyroscope, Parca, Polar Signals). Encoded with the ``protobuf`` package from
``offconv/outputs/proto/profile.proto`` (see that file for the regeneration command).

- One Location per distinct frame (display name from offconv.model.naming, kind, module), each
  with one Line -> Function (name = display name, system_name = the name as the input
  gives it); the module (DSO) becomes a Mapping with its file name where known. The
  thread is the root frame of every stack, as in the folded output.
- Off-CPU sched input (state split on by default for this output): sample types
  ``offcpu/nanoseconds``, ``blocked/nanoseconds``, ``runqueue/nanoseconds``. The
  ``[blocked S]``/``[run queue]``/``[preempted]`` frame is taken out of the stack into
  the ``state`` label (``S``, ``D``, ``D|K``, ... for blocked time, ``runqueue`` for a
  wait after a wakeup, ``preempted`` for a preempted wait); a blocked sample has
  ``[offcpu, blocked, 0]``, a run-queue one ``[offcpu, 0, runqueue]``. Without the split
  (``--no-state-split``, modes blocked/runq/wakeup, bcc folded input) the one sample
  type says what the weights are (``offcpu``, ``blocked``, ``runqueue``, ``wakeup``).
- Values are offconv's µs (the numbers of every other output) times 1000.
- On-CPU input: the weights of the folded output, typed by what they are: ``cpu/nanoseconds``
  when perf printed the periods of ``cpu-clock``/``task-clock``, ``EVENT/count`` for the
  periods of another event (``cycles/count``), ``samples/count`` when each sample counts 1.
- Labels ``thread`` (comm), ``pid``, ``tid`` (numbers, where the input has them) and
  ``state``; ``duration_nanos`` is the trace span. ``time_nanos`` is left unset: perf
  script times are seconds since boot, not wall-clock time (engines take the time at
  upload: ``profilecli upload --override-timestamp``, ``parca-push --override-timestamp``).
- Deterministic bytes: tables in first-use order over the stacks sorted by display
  name, gzip with mtime 0.
"""
from __future__ import annotations

import gzip
from typing import BinaryIO

from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat
from offconv.model.records import BLOCKED, CLOCK_EVENTS, CRITICAL, OFFCPU, RUNQ, STATE, THREAD, TIME_UNITS, WAKEUP, WALLCLOCK, Profile
from offconv.model.naming import Namer
from offconv.model.options import NamingOptions

SINGLE_TYPE = {OFFCPU: "offcpu", BLOCKED: "blocked", RUNQ: "runqueue", WAKEUP: "wakeup", CRITICAL: "critical_path"}


def state_label(frame_name: str):
    """The ``state`` label of a state-split frame, and whether it is blocked time."""
    if frame_name.startswith("[blocked ") and frame_name.endswith("]"):
        return frame_name[9:-1], True
    if frame_name == "[run queue]":
        return "runqueue", False
    if frame_name == "[preempted]":
        return "preempted", False
    if frame_name == "[on-CPU]":
        return "oncpu", "cpu"
    return frame_name.strip("[]"), None


class _Strings:
    def __init__(self):
        self.table = [""]
        self.index = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


def build(profile: Profile, opts=None):
    """The Profile message (offconv.outputs.proto.profile_pb2.Profile) of ``profile``."""
    from offconv.outputs.proto import profile_pb2 as pb

    samples = {s: w for s, w in profile.samples.items() if w > 0}
    if not samples:
        raise OffconvError("nothing to export: the profile has no stack with a positive weight")
    namer = Namer(getattr(opts, "naming", None) or NamingOptions())
    strings = _Strings()
    msg = pb.Profile()
    timed = profile.unit in TIME_UNITS
    scale = TIME_UNITS.get(profile.unit, 1)
    wall = profile.mode == WALLCLOCK
    split = timed and profile.mode in (OFFCPU, WALLCLOCK) and any(
        len(s) > 1 and s[0].kind == THREAD and s[1].kind == STATE for s in samples)
    if split and wall:   # every kind of time, and each kind as a type of its own
        types = [("wall", "nanoseconds"), ("cpu", "nanoseconds"), ("blocked", "nanoseconds"),
                 ("runqueue", "nanoseconds")]
    elif split:
        types = [("offcpu", "nanoseconds"), ("blocked", "nanoseconds"), ("runqueue", "nanoseconds")]
    elif timed:
        types = [(SINGLE_TYPE.get(profile.mode, profile.mode or "offcpu"), "nanoseconds")]
    elif profile.event:   # perf's periods: nanoseconds of a clock event, else event counts
        ev = profile.event.split(":", 1)[0]
        types = [("cpu", "nanoseconds") if ev in CLOCK_EVENTS else (ev, "count")]
    else:
        types = [(profile.unit if profile.unit not in ("", None) else "samples", "count")]
    for t, u in types:
        msg.sample_type.add(type=strings(t), unit=strings(u))
    msg.period_type.type = strings(types[0][0])
    msg.period_type.unit = strings(types[0][1])
    msg.period = 1
    msg.default_sample_type = strings(types[0][0])
    k_thread, k_pid, k_tid, k_state = (strings(k) for k in ("thread", "pid", "tid", "state"))

    mappings: dict = {}
    functions: dict = {}
    locations: dict = {}
    frame_loc: dict = {}

    def location(frame, java: bool) -> int:
        got = frame_loc.get((frame, java))
        if got is not None:
            return got
        name = namer.label(frame, java)
        key = (name, frame.kind, frame.module)
        loc_id = locations.get(key)
        if loc_id is None:
            fkey = (name, frame.name, frame.module)
            fid = functions.get(fkey)
            if fid is None:
                fid = functions[fkey] = len(functions) + 1
                msg.function.add(id=fid, name=strings(name), system_name=strings(frame.name))
            mid = 0
            if frame.module:
                mid = mappings.get(frame.module)
                if mid is None:
                    mid = mappings[frame.module] = len(mappings) + 1
                    msg.mapping.add(id=mid, filename=strings(frame.module), has_functions=True)
            loc_id = locations[key] = len(locations) + 1
            loc = msg.location.add(id=loc_id, mapping_id=mid)
            loc.line.add(function_id=fid)
        frame_loc[(frame, java)] = loc_id
        return loc_id

    rows = []
    for stack, w in samples.items():
        java = bool(stack) and stack[0].kind == THREAD and stack[0].task is not None \
            and stack[0].task.comm == "java" and stack[0].task.tid is not None
        state = None
        if split and len(stack) > 1 and stack[0].kind == THREAD and stack[1].kind == STATE:
            state = stack[1].name
            stack = stack[:1] + stack[2:]
        rows.append((namer.stack(stack), state or "", stack, java, w))
    rows.sort(key=lambda r: (r[0], r[1]))
    for _, state, stack, java, w in rows:
        s = msg.sample.add()
        s.location_id.extend(location(f, java) for f in reversed(stack))
        v = round(w * scale)
        if split:
            label, blocked = state_label(state) if state else (None, None)
            parts = (v if blocked is True else 0, v if blocked is False else 0)
            s.value.extend(((v, v if blocked == "cpu" else 0) if wall else (v,)) + parts)
        else:
            label = None
            s.value.append(v)
        root = stack[0] if stack and stack[0].kind == THREAD else None
        task = root.task if root is not None else None
        if root is not None:
            s.label.add(key=k_thread, str=strings(task.comm if task is not None else root.name))
        if task is not None and task.pid is not None:
            s.label.add(key=k_pid, num=task.pid)
        if task is not None and task.tid is not None:
            s.label.add(key=k_tid, num=task.tid)
        if label is not None:
            s.label.add(key=k_state, str=strings(label))
    an = profile.analysis
    first, last = getattr(an, "first_ns", None), getattr(an, "last_ns", None)
    if first is not None and last is not None:
        msg.duration_nanos = last - first
    msg.string_table.extend(strings.table)
    return msg


def render(profile: Profile, out: BinaryIO, opts=None) -> None:
    data = build(profile, opts).SerializeToString(deterministic=True)
    out.write(gzip.compress(data, compresslevel=6, mtime=0))


FORMAT = OutputFormat(name="pprof", suffixes=(".pb.gz", ".pprof"), render=render, binary=True,
                      state_split=True,
                      description="pprof (gzipped profile.proto) for go tool pprof, "
                                  "Pyroscope, Parca")
