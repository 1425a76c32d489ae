"""One sched input over two processes (offconv.run.sched_split): the second part is read
by a ``TailMachine``, which sets aside what depends on the state at the cut; the first
part's machine then replays that on its own state (``join``, where ``joins`` says it can).
The machine is intervals' own, extended. May import offconv.model."""
from __future__ import annotations

from typing import Optional

from offconv.model.records import SchedEvent, Task
from offconv.sched.intervals import ON, _key, _Machine, _missing_payload, _Thread, _thread_counts, is_dead


# what the second part leaves to the first part's machine, in file order
OP_OUT, OP_HANDOVER, OP_IN, OP_WAKE, OP_EXIT, OP_SEEN, OP_MISSED, OP_GIVE, OP_SIGHT = range(9)


class TailMachine(_Machine):
    """The second part of an input cut in two, in the process that reads it: the threads'
    and CPUs' states at the cut are the first part's, unknown here.

    A thread's state is this part's own from its first switch-out here on (the key is
    ``owned``): the switch-out sets every field of it (a thread marked dead before is
    checked by the first part), or from its creation here (sched_wakeup_new before any
    other event of it here: the first part is checked to have no such thread). Until
    then, every event of that thread goes to ``ops``,
    which the first part's machine replays on its own state after its last event (``join``):
    its switch-in, wakeup, exit, and what its first switch-out here ends (its time on CPU, or
    its off-CPU period if the switch-in was lost). An exit among them leaves the thread to
    the first part for the rest of the input (its later switch-out may end it as dead). A
    CPU's previous switch is known here after its first switch in this part: before, an
    inferred switch-in reads the first part's (``OP_MISSED``), and so does a task seen
    running there (``OP_SIGHT``: whether that CPU had gone idle); a thread of this part's
    seen so goes back to the first part (``OP_GIVE``) until its next switch-out."""

    def __init__(self, path: str, lenient: bool, stats: dict, emit=None, oncpu: bool = True,
                 per_thread: bool = True):
        for key in ("threads", "parents", "exits", "by_tid"):
            stats.setdefault(key, {})
        super().__init__(path, lenient, stats, False, emit, oncpu, per_thread)
        stats.setdefault("command", set())
        self.owned: set = set()
        self.born: set = set()     # owned from a sched_wakeup_new
        self.touched: set = set()  # keys with ops
        self.left: set = set()     # keys with an exit in ops: the first part's to the end
        self.ops: list = []
        self.marks: tuple = (None, [])  # probe_marks of the part's first records

    def _cpu_state(self, cpu) -> Optional[tuple]:
        if cpu is None or cpu not in self.cpu_last:
            return None
        return self.cpu_last[cpu], self.cpu_idle.get(cpu, False)

    def _seen_running(self, task: Task, t: int) -> None:
        if task.tid in self.owned:
            super()._seen_running(task, t)
        else:
            self.ops.append((OP_SEEN, task, t))
            self.touched.add(task.tid)

    def _switch_out(self, ev: SchedEvent, prev: Task, t: int) -> None:
        key = _key(prev, ev.cpu)
        if key in self.owned:
            super()._switch_out(ev, prev, t)
            return
        self.touched.add(key)
        if key in self.left:
            self.ops.append((OP_OUT, ev, prev, t, self._cpu_state(ev.cpu)))
            return
        self.ops.append((OP_HANDOVER, prev, key, ev.cpu, t, self._cpu_state(ev.cpu),
                         is_dead(ev.prev_state)))
        self.owned.add(key)
        self._off(ev, prev, key, t, False)

    def _missed_switch_in(self, st: _Thread, key, cpu, t: int, seen: bool = False) -> None:
        if cpu is not None and cpu not in self.cpu_last:
            self.ops.append((OP_MISSED, st, key, cpu, t))
        else:
            super()._missed_switch_in(st, key, cpu, t, seen)

    def _on_idle(self, cpu) -> bool:
        # a CPU not yet switched in this part: the first part's last switch there decides
        return cpu not in self.cpu_last or self.cpu_idle.get(cpu, False)

    def _seen_after_idle(self, task: Task, cpu, t: int) -> None:
        key = task.tid
        if key in self.owned:
            if cpu in self.cpu_last:
                super()._seen_after_idle(task, cpu, t)
                return
            st = self.threads.get(key)
            if st is None or st.phase == ON:
                return
            # whether it was switched in depends on the first part's state: it goes back
            del self.threads[key]
            self.owned.discard(key)
            self.ops.append((OP_GIVE, key, st))
        self.touched.add(key)
        self.ops.append((OP_SIGHT, task, cpu, t, self._cpu_state(cpu)))

    def _switch_in(self, task: Task, key, t: int, from_idle: bool) -> None:
        if key in self.owned:
            super()._switch_in(task, key, t, from_idle)
        else:
            self.ops.append((OP_IN, task, key, t, from_idle))
            self.touched.add(key)

    def _wakeup(self, ev: SchedEvent, t: int) -> None:
        if ev.target is None:
            raise _missing_payload(self.path, ev)
        key = _key(ev.target, ev.cpu)
        if key not in self.owned and ev.new and key not in self.touched:
            self.owned.add(key)   # a thread created here
            self.born.add(key)
        if key in self.owned:
            super()._wakeup(ev, t)
        else:
            self.ops.append((OP_WAKE, ev, t))
            self.touched.add(key)

    def _exit(self, ev: SchedEvent) -> None:
        key = _key(ev.target or ev.task, ev.cpu)
        if key in self.owned:
            super()._exit(ev)
        else:
            self.ops.append((OP_EXIT, ev))
            self.left.add(key)
            self.touched.add(key)

    def part(self) -> dict:
        """What the first part's machine needs to go on from this part's end."""
        return {"ops": self.ops, "born": self.born, "marks": self.marks, "threads": self.threads,
                "cpu_last": self.cpu_last, "cpu_idle": self.cpu_idle, "stats": self.stats,
                "wakeups": self.wakeups, "wakeups_not_waking": self.wakeups_not_waking,
                "wakings": self.wakings,
                "first_ns": self.first_ns, "last_ns": self.last_ns}


def joins(machine: _Machine, part: dict) -> bool:
    """Whether ``part`` (TailMachine.part) can follow ``machine``'s last event as it is:
    no `perf record -p` recording, no event of the part before that one, no thread it
    took over that the first part had marked dead (the part took it for alive), and none
    it saw created that the first part still has."""
    if machine.per_process:
        return False
    first = part["first_ns"]
    if first is not None and machine.last_ns is not None and first < machine.last_ns:
        return False
    threads = machine.threads
    for op in part["ops"]:
        if op[0] == OP_HANDOVER and not op[6]:
            st = threads.get(op[2])
            if st is not None and st.dead:
                return False
    return not any(key in threads for key in part["born"])


def join(machine: _Machine, part: dict) -> None:
    """The records ``part`` leaves to ``machine`` (its ops replayed in order, each with
    the CPU's previous switch as it was then), and then its states and counts taken over:
    as if ``machine`` had read the part's events itself. Call ``joins`` first."""
    last, idle = dict(machine.cpu_last), dict(machine.cpu_idle)

    def cpu_then(cpu, state) -> None:
        if state is None:   # no switch on that CPU in the part before this op
            state = (last[cpu], idle.get(cpu, False)) if cpu in last else None
        if state is None:
            machine.cpu_last.pop(cpu, None)
            machine.cpu_idle.pop(cpu, None)
        else:
            machine.cpu_last[cpu], machine.cpu_idle[cpu] = state

    for op in part["ops"]:
        kind = op[0]
        if kind == OP_HANDOVER:   # the part goes on with this thread from here
            _, prev, key, cpu, t, state, _ = op
            cpu_then(cpu, state)
            machine._run_ended(machine.threads.pop(key, None), prev, key, cpu, t)
        elif kind == OP_OUT:
            _, ev, prev, t, state = op
            cpu_then(ev.cpu, state)
            machine._switch_out(ev, prev, t)
        elif kind == OP_IN:
            machine._switch_in(*op[1:])
        elif kind == OP_WAKE:
            machine._wakeup(*op[1:])
        elif kind == OP_EXIT:
            machine._exit(op[1])
        elif kind == OP_SEEN:
            machine._seen_running(*op[1:])
        elif kind == OP_GIVE:
            machine.threads[op[1]] = op[2]
        elif kind == OP_SIGHT:
            _, task, cpu, t, state = op
            cpu_then(cpu, state)
            if machine.cpu_idle.get(cpu, False):
                machine._seen_after_idle(task, cpu, t)
        else:
            _, st, key, cpu, t = op
            cpu_then(cpu, None)
            machine._missed_switch_in(st, key, cpu, t)
    machine.threads.update(part["threads"])
    machine.cpu_last.update(last)
    machine.cpu_idle.update(idle)
    machine.cpu_last.update(part["cpu_last"])
    machine.cpu_idle.update(part["cpu_idle"])
    machine.wakeups += part["wakeups"]
    machine.wakeups_not_waking += part["wakeups_not_waking"]
    machine.wakings += part["wakings"]
    if part["last_ns"] is not None:
        machine.first_ns = machine.first_ns if machine.first_ns is not None else part["first_ns"]
        machine.last_ns = part["last_ns"]
    merge_stats(machine.stats, part["stats"])


def merge_stats(stats: dict, later: dict) -> None:
    """Interval stats of a later part of the same input into ``stats``, in place: counts
    add up, per-thread counts too, a thread's end is its latest, sets join."""
    for key, value in later.items():
        if key == "threads":
            for tid, c in value.items():
                row = _thread_counts(stats, tid)
                row.switches += c.switches
                row.inferred += c.inferred
                row.no_wakeup += c.no_wakeup
        elif key == "by_tid":
            rows = stats.setdefault("by_tid", {})
            for tid, counts in value.items():
                row = rows.setdefault(tid, {})
                for name, n in counts.items():
                    row[name] = row.get(name, 0) + n
        elif key == "exits":
            exits = stats.setdefault("exits", {})
            for tid, t in value.items():
                exits[tid] = max(t, exits.get(tid, t))
        elif key == "parents":
            stats.setdefault("parents", {}).update(value)
        elif key == "command":
            stats.setdefault("command", set()).update(value)
        else:
            stats[key] = stats.get(key, 0) + value
