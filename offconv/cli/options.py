"""The command line's options: those the commands share (``input_options``,
``flame_options``), and the ``Options`` they build (``build_options``)."""
from __future__ import annotations

from dataclasses import fields
from typing import Optional

import click

from offconv.model import registry as formats
from offconv.model.errors import OffconvError
from offconv.model.options import KINDS, MODES, UNITS, AggregateOptions, FlameOptions, NamingOptions, Options, ParseOptions, ReportOptions
from offconv.outputs.svg.palette import BGCOLORS, PALETTES


_A = AggregateOptions()


_F = FlameOptions()


_R = ReportOptions()


def _int_list(ctx, param, values) -> frozenset:
    out = set()
    for v in values or ():
        for part in v.split(","):
            part = part.strip()
            if not part:
                continue
            if not part.lstrip("-").isdigit():
                raise click.BadParameter(f"expected a number or comma-separated numbers, got '{part}'")
            out.add(int(part))
    return frozenset(out)


def _states(ctx, param, value) -> Optional[frozenset]:
    """offcputime's bitmask (0 = preempted/R, 2 = D, ...) or letters ('D', 'SD', 'S,D')."""
    if value is None:
        return None
    from offconv.model.states import parse_state
    try:
        return parse_state(value)
    except OffconvError as e:
        raise click.BadParameter(e.message.removeprefix("--state: ")) from None


def input_options(f):
    """Options shared by the default command and ``report``: parsing, naming, filters."""
    opts = [
        click.argument("inputs", nargs=-1, required=True, metavar="INPUT..."),
        click.option("--from", "from_format", default="auto", show_default=True,
                     type=click.Choice(["auto"] + formats.input_names()),
                     help="Input format (default: detected from the content)."),
        click.option("--mode", default=_A.mode, show_default=True, type=click.Choice(MODES),
                     help="offcpu = blocked + run-queue (bcc offcputime); blocked; runq; "
                          "oncpu (samples, like stackcollapse-perf.pl); wakeup (offwaketime); "
                          "critical-path (blocked time along its wake-ups); wallclock (on-CPU "
                          "samples, blocked and run-queue time in one profile: record "
                          "--wallclock). auto: offcpu when the input has sched_switch events."),
        click.option("--pid", "name_pid", is_flag=True, help="Root frame comm-PID (stackcollapse-perf.pl)."),
        click.option("--tid", "name_tid", is_flag=True, help="Root frame comm-PID/TID."),
        click.option("--kernel", is_flag=True, help="Annotate kernel frames with _[k]."),
        click.option("--jit", is_flag=True, help="Annotate JIT frames with _[j]."),
        click.option("--all", "all_", is_flag=True, help="--kernel and --jit."),
        click.option("--addrs", is_flag=True, help="Unknown frames as [dso <addr>]."),
        click.option("--event-filter", metavar="EVENT",
                     help="Only events of this type (default: the first type seen); of "
                          "bpftrace output, the stack map @NAME (default: the first)."),
        click.option("-p", "--filter-pid", "filter_pids", multiple=True, callback=_int_list,
                     metavar="PID[,PID]", help="Only these processes (repeatable)."),
        click.option("--filter-tid", "filter_tids", multiple=True, callback=_int_list,
                     metavar="TID[,TID]", help="Only these threads (repeatable)."),
        click.option("--comm", metavar="REGEX",
                     help="Only threads whose name matches (searched): the name each thread "
                          "ends the trace with, so its fork->exec period under the parent's "
                          "name is kept."),
        click.option("-m", "--min-block-time", "min_block_us", type=click.IntRange(min=0),
                     metavar="US", help="Ignore off-CPU intervals shorter than US µs."),
        click.option("-M", "--max-block-time", "max_block_us", type=click.IntRange(min=0),
                     metavar="US", help="Ignore off-CPU intervals longer than US µs."),
        click.option("--state", "states", callback=_states, metavar="MASK|LETTERS",
                     help="Only switch-outs in these states: offcputime's bitmask of the task "
                          "state, decimal or hex, any value (0 = preempted; 2 = D and I, as "
                          "prev->__state & 2; 0x402 = I), or letters, exactly those (D, S,D, I)."),
        click.option("-U", "--user-stacks-only", is_flag=True, help="User frames only."),
        click.option("-K", "--kernel-stacks-only", is_flag=True, help="Kernel frames only."),
        click.option("-d", "--delimited", is_flag=True, help="A '-' frame between user and kernel frames."),
        click.option("--include-idle", is_flag=True, help="Keep pid 0 (swapper/idle)."),
        click.option("--include-open", is_flag=True, help="Clip intervals still open at the end of the trace."),
        click.option("--state-split/--no-state-split", default=None,
                     help="A frame naming the kind ([run queue], [blocked D], ...) below the thread "
                          "name (default: on for svg/speedscope, off for folded)."),
        click.option("--lenient", is_flag=True, help="Skip and count malformed lines instead of failing."),
        click.option("--unit", type=click.Choice(UNITS),
                     help="What folded / stack-map weights are in (default: us for bcc's "
                          "offcputime/offwaketime -f, else samples; a map name like @us says it)."),
        click.option("--kind", type=click.Choice(KINDS),
                     help="What histograms measure (default: from the name: runq/rq -> run "
                          "queue, block/off/sleep -> blocked)."),
        click.option("--demangle", is_flag=True,
                     help="Demangle legacy Rust symbols left mangled by older perf "
                          "(off: byte-identical to stackcollapse-perf.pl)."),
        click.option("--kallsyms", metavar="FILE",
                     type=click.Path(exists=True, dir_okay=False),
                     help="perf.data input: kernel symbols from FILE, the recording machine's "
                          "/proc/kallsyms saved while it ran the recorded kernel (perf script "
                          "--kallsyms; without it, a recording of another kernel build has "
                          "[unknown] kernel frames)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def flame_options(f):
    """flamegraph.pl's options, same names and defaults."""
    opts = [
        click.option("--title", help="Title (default: by mode)."),
        click.option("--subtitle", default=_F.subtitle, help="Second title line."),
        click.option("--width", default=_F.width, show_default=True, type=click.IntRange(min=10)),
        click.option("--height", default=_F.height, show_default=True, type=click.IntRange(min=1),
                     help="Frame height (px)."),
        click.option("--minwidth", default=_F.minwidth, show_default=True,
                     help="Omit frames narrower than this many pixels, or N% of the total."),
        click.option("--max-depth", "max_depth", default=_F.max_depth, show_default=True,
                     type=click.IntRange(min=1),
                     help="Draw at most this many frames of a stack (below 'all'); deeper "
                          "stacks are cut there, and the subtitle says how many."),
        click.option("--fonttype", default=_F.fonttype, show_default=True),
        click.option("--fontsize", default=_F.fontsize, show_default=True, type=float),
        click.option("--fontwidth", default=_F.fontwidth, show_default=True, type=float),
        click.option("--countname", help="Unit label (default: us off-CPU, samples on-CPU)."),
        click.option("--nametype", default=_F.nametype, show_default=True),
        click.option("--colors", "--color", "colors",
                     help=f"Palette: {' '.join(PALETTES)} (default: io off-CPU, hot on-CPU)."),
        click.option("--bgcolors", help=f"Background: {' '.join(BGCOLORS)} or #rrggbb."),
        click.option("--hash", "hash_", is_flag=True, help="Colour by name hash (stable)."),
        click.option("--reverse", is_flag=True, help="Reverse stacks (merge at the leaf end)."),
        click.option("--inverted", is_flag=True, help="Icicle graph."),
        click.option("--flamechart", is_flag=True,
                     help="Keep time order (do not sort); off-CPU periods by start time."),
        click.option("--negate", is_flag=True, help="Swap red/blue in differentials."),
        click.option("--notes", default=_F.notes, help="Notes embedded in the SVG."),
        click.option("--factor", default=_F.factor, type=float, help="Scale displayed counts."),
        click.option("--total", type=float, help="Override the total."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def build_options(kw: dict) -> Options:
    unit = kw.get("unit")
    if unit is None and kw.get("countname") in ("us", "ms", "ns"):
        unit = kw["countname"]  # flamegraph.pl's --countname names the unit of folded input
    parse = ParseOptions(addrs=kw["addrs"], event_filter=kw["event_filter"], lenient=kw["lenient"],
                         unit=unit, kind=kw.get("kind"), demangle=bool(kw.get("demangle")),
                         kallsyms=kw.get("kallsyms"))
    naming = NamingOptions(pid=kw["name_pid"], tid=kw["name_tid"],
                           kernel=kw["kernel"] or kw["all_"], jit=kw["jit"] or kw["all_"])
    agg = AggregateOptions(
        mode=kw["mode"], filter_pids=kw["filter_pids"], filter_tids=kw["filter_tids"], comm=kw["comm"],
        min_block_us=kw["min_block_us"], max_block_us=kw["max_block_us"], states=kw["states"],
        user_stacks_only=kw["user_stacks_only"], kernel_stacks_only=kw["kernel_stacks_only"],
        delimited=kw["delimited"], include_idle=kw["include_idle"],
        include_open=kw["include_open"], state_split=kw["state_split"],
        timeline=bool(kw.get("flamechart")))
    if agg.user_stacks_only and agg.kernel_stacks_only:
        raise click.UsageError("-U/--user-stacks-only and -K/--kernel-stacks-only exclude each other")
    if agg.comm is not None:
        import re
        try:
            re.compile(agg.comm)
        except re.error as e:
            raise click.BadParameter(f"not a regular expression: {e}", param_hint="--comm")
    flame = FlameOptions(**{f.name: kw[_FLAME_KW.get(f.name, f.name)] for f in fields(FlameOptions)
                            if _FLAME_KW.get(f.name, f.name) in kw})
    return Options(parse=parse, naming=naming, aggregate=agg, flame=flame, report=ReportOptions())


_FLAME_KW = {"hash": "hash_"}
