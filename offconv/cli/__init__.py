"""The command line (the only package that imports click): the commands, their options
(``options``) and where their output goes (``output``).

``offconv INPUT... [-o OUT]`` is the default command (a group that routes an unknown first
argument to ``convert``); ``report``, ``diff`` and ``record`` are subcommands."""
from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from typing import Optional

import click

from offconv.model import registry as formats, gcpause
from offconv.model.errors import EXIT_INTERNAL, OffconvError
from offconv.model.options import FAIL_ON_CHOICES, Options, ReportOptions
from offconv.cli.options import _R, build_options, flame_options, input_options
from offconv.cli.output import check_output, choose_output, write_output, writing_stdout


class DefaultGroup(click.Group):
    """A group whose unknown first argument means the default command, ``convert``."""

    default = "convert"

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args.insert(0, self.default)
        elif not args and not ctx.resilient_parsing:  # plain `offconv`: the top-level help,
            # but no input is a usage error (shell completion parses resiliently: commands)
            click.echo(ctx.get_help(), err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's standalone handling, except usage errors: one line and a hint
        (``offconv: No such option: --bogus`` / ``Try 'offconv --help' for help.``)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as e:
            sub = e.ctx.command.name if e.ctx is not None and e.ctx.parent is not None else None
            where = "offconv" if sub in (None, self.default) else f"offconv {sub}"
            click.echo(f"offconv: {e.format_message()}", err=True)
            click.echo(f"Try '{where} --help' for help.", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            with gcpause.paused():  # a command's objects hold no cycles (offconv.model.gcpause)
                return super().invoke(ctx)
        except OffconvError as e:
            for line in e.lines():
                click.echo(line, err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("offconv: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:  # a bug: one line and its own exit code, not a traceback
            if os.environ.get("OFFCONV_TRACEBACK"):
                raise
            msg = str(e).splitlines()[0] if str(e) else ""
            click.echo(f"offconv: internal error: {type(e).__name__}: {msg} "
                       "(please report it with the command line)", err=True)
            ctx.exit(EXIT_INTERNAL)

    def format_usage(self, ctx, formatter):
        formatter.write_usage("offconv", "INPUT... [-o OUT] [OPTIONS]\n"
                              "       offconv COMMAND [ARGS]...")


def _warn(profile) -> None:
    for w in profile.warnings:
        click.echo(f"offconv: {w}", err=True)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="offconv", prog_name="offconv")
def app():
    """Turn Linux scheduler traces into answers: where does it wait, and is it waiting for
    a CPU (run-queue latency) or for something else (blocked time)?

    \b
      offconv perf.txt -o flame.svg       perf script text (or perf.data) -> flame graph
      offconv perf.txt > out.folded       folded stacks (stackcollapse-perf.pl compatible)
      offconv report perf.txt [--json]    blocked vs run-queue, causes, verdict

    \b
    Record: offconv record -a -d 10 -o rec.txt (scheduler events, bounded; record --help).
    Compare two recordings: offconv diff BEFORE AFTER [-o diff.svg] [--fail-above PCT].
    Options of the default command: offconv convert --help.
    Exit codes: 0 ok, 1 diff --fail-above exceeded, 2 usage or input error,
    70 internal error (a bug in offconv: please report it with the command line).
    Shell completion (bash; zsh and fish alike): eval "$(_OFFCONV_COMPLETE=bash_source offconv)"
    """


@app.command("convert", context_settings={"help_option_names": ["-h", "--help"]})
@input_options
@click.option("-o", "--output", "out", metavar="OUT",
              help=f"Output file; the suffix picks the format ({formats.suffix_help()}). "
                   "Default: folded text on stdout.")
@click.option("--to", "to", type=click.Choice(formats.output_names()),
              help="Output format (wins over the suffix).")
@flame_options
def convert(inputs, out, to, **kw):
    """Convert INPUT... (perf script text, perf.data, folded, bcc, bpftrace) into folded stacks, an SVG
    flame graph, histograms or a report. Several inputs are merged."""
    from offconv.run import pipeline
    opts = build_options(kw)
    fmt = choose_output(out, to)
    check_output(out, inputs)
    if fmt.timeline:
        opts = replace(opts, aggregate=replace(opts.aggregate, timeline=True))
    if not fmt.analysis:   # a stack output: no per-thread analysis
        opts = replace(opts, aggregate=replace(opts.aggregate, analyse=False,
                                               **{flag: True for flag in fmt.ahead}))
    if fmt.by_name:
        opts = _by_name(opts)
    profile = pipeline.load(inputs, opts, kw["from_format"], state_split_default=fmt.state_split)
    profile.sources = tuple(inputs)
    if not (fmt.own_warnings and out in (None, "-")):
        _warn(profile)
    named = getattr(profile.folded_names, "named", None)  # a split's part summed by name
    if not profile.samples and not named and not fmt.analysis:
        # (the off-CPU path makes its own, empty, latency histograms: not input ones)
        if profile.histograms and profile.analysis is None:
            raise OffconvError(f"{', '.join(inputs)}: only histograms, no stacks: {fmt.name} "
                               "needs stacks; use --to hist, or offconv report")
        why = _why_no_stacks(profile, opts)
        if fmt.empty_ok:
            click.echo(f"offconv: warning: {', '.join(inputs)}: {fmt.empty}: {why}", err=True)
        else:   # an SVG, speedscope or pprof of nothing is no answer: exit 2, saying why
            raise OffconvError(f"{', '.join(inputs)}: {fmt.empty}: {why}")
    write_output(fmt, profile, opts, out)


_KIND_WORDS = {"offcpu": "off-CPU", "blocked": "blocked", "runq": "run-queue",
               "wakeup": "blocked (wakeup)", "critical-path": "blocked (critical path)"}


def _why_no_stacks(profile, opts: Options) -> str:
    """Why a recognised input gave no stack: the thread filters matched no thread, the
    interval filters kept none, every interval was still open at the end, or the input
    has no events."""
    agg = opts.aggregate
    threads = []
    if agg.comm is not None:
        threads.append(f"--comm '{agg.comm}'")
    if agg.filter_pids:
        threads.append("-p " + ",".join(map(str, sorted(agg.filter_pids))))
    if agg.filter_tids:
        threads.append("--filter-tid " + ",".join(map(str, sorted(agg.filter_tids))))
    spans = [o for o, v in (("-m", agg.min_block_us), ("-M", agg.max_block_us),
                            ("--state", agg.states)) if v is not None]
    an = profile.analysis
    if an is None:
        return (f"no stack matched {' '.join(threads)}" if threads else
                "the input has no events (no samples or stacks)")
    kind = _KIND_WORDS.get(profile.mode, "off-CPU")
    if threads and not an.dropped:
        return f"the filter {' '.join(threads)} matched no thread"
    if spans:
        return f"no {kind} interval passed {', '.join(spans)}"
    open_ = an.dropped.get("open", 0)
    if open_:
        return (f"no complete {kind} interval ({open_} still open at the end "
                f"{'was' if open_ == 1 else 'were'} dropped; --include-open clips them)")
    return f"no complete {kind} interval in the input"


@app.command("report", context_settings={"help_option_names": ["-h", "--help"]})
@input_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object (keys in DESIGN.md).")
@click.option("-o", "--output", "out", metavar="OUT", help="Write to OUT instead of stdout.")
@click.option("--runq-p99", "runq_p99_long_us", type=click.IntRange(min=0), metavar="US",
              default=_R.runq_p99_long_us, show_default=True,
              help="A run-queue p99 at or above this is a long tail.")
@click.option("--runq-share", "runq_share_long", type=click.FloatRange(0, 1), metavar="FRACTION",
              default=_R.runq_share_long, show_default=True,
              help="Run-queue time at or above this share of a thread's wall time is long.")
@click.option("--blocked-p99", "blocked_p99_long_us", type=click.IntRange(min=0), metavar="US",
              default=_R.blocked_p99_long_us, show_default=True,
              help="A blocked p99 at or above this is a long tail.")
@click.option("--blocked-share", "blocked_share_long", type=click.FloatRange(0, 1), metavar="FRACTION",
              default=_R.blocked_share_long, show_default=True,
              help="Blocked time at or above this share of a thread's wall time is long.")
@click.option("--top", type=click.IntRange(min=1), default=_R.top, show_default=True,
              help="Stacks listed per kind.")
@click.option("--critical-path", "critical_path", multiple=True, metavar="COMM|TID",
              help="Also follow this thread's waits to their roots (a tid, or every thread of "
                   "that name; repeatable). The verdict's thread is always followed.")
@click.option("--no-critical-path", "no_critical_path", is_flag=True,
              help="Keep no per-interval timeline (less memory on long traces): no "
                   "'where the wait went'.")
def report(inputs, as_json, out, runq_p99_long_us, runq_share_long, blocked_p99_long_us,
           blocked_share_long, top, critical_path, no_critical_path, **kw):
    """Blocked time vs run-queue latency per thread, causes, percentiles, top stacks, and
    the verdict: capacity (add cores), waiting (fix the I/O, lock or dependency), both, or
    on-cpu (go back to the CPU profiler). The thresholds that define a long tail are options."""
    from offconv.run import pipeline
    opts = replace(build_options(kw), report=ReportOptions(
        runq_p99_long_us=runq_p99_long_us, runq_share_long=runq_share_long,
        blocked_p99_long_us=blocked_p99_long_us, blocked_share_long=blocked_share_long, top=top,
        critical_path=tuple(critical_path)))
    if no_critical_path:
        opts = replace(opts, aggregate=replace(opts.aggregate, critical=False))
    fmt = formats.output_format("json" if as_json or _report_suffix(out) == "json" else "report")
    check_output(out, inputs)
    profile = pipeline.load(inputs, _by_name(opts), kw["from_format"])
    if as_json or out not in (None, "-"):  # the text report on stdout shows them itself
        _warn(profile)
    write_output(fmt, profile, opts, out)


def _by_name(opts: Options) -> Options:
    """The outputs that print a thread by its name alone (folded, SVG, the report's
    stacks, hist) without --pid/--tid: the off-CPU path sums the stacks by thread name
    (AggregateOptions.by_name); the report's per-thread table stays per thread."""
    if opts.naming.pid or opts.naming.tid:
        return opts
    return replace(opts, aggregate=replace(opts.aggregate, by_name=True))


def _report_suffix(out: Optional[str]) -> Optional[str]:
    """``report -o OUT``: the suffix decides, as for convert: ``.json`` (also
    ``.speedscope.json``) -> the report JSON; another output's suffix (``.svg``, ...) is an
    error; anything else (``.txt``, no suffix) the text report."""
    if out in (None, "-"):
        return None
    if out.lower().endswith(".json"):
        return "json"
    what = f"{out}: report writes text or JSON (-o x.txt, -o x.json)"
    try:
        fmt = formats.output_for_path(out)
    except OffconvError:  # a planned output (pprof, ...): not a report either
        raise OffconvError(what) from None
    if fmt is not None and not fmt.text_suffixes:
        raise OffconvError(f"{what}; for {fmt.name} output: offconv INPUT... -o {out}")
    return None


@app.command("diff", context_settings={"help_option_names": ["-h", "--help"]})
@input_options
@click.option("-o", "--output", "out", metavar="OUT",
              help="Output file; .svg, .json (the diff report), .folded/.txt. Default: "
                   "three-column folded text (stack before after) on stdout.")
@click.option("--to", "to", type=click.Choice(["folded", "svg", "report", "json"]),
              help="Output format (wins over the suffix).")
@click.option("-n", "--normalize", is_flag=True,
              help="Scale BEFORE to AFTER's total (difffolded.pl -n).")
@click.option("-s", "--strip-hex", is_flag=True,
              help="Replace hex addresses with 0x... before matching (difffolded.pl -s).")
@click.option("--fail-above", type=click.FloatRange(min=0), metavar="PCT",
              help="Exit 1 when what --fail-on names grew by more than PCT percent.")
@click.option("--fail-on", multiple=True, metavar="WHAT",
              type=click.Choice(list(FAIL_ON_CHOICES)),
              help="What --fail-above compares (repeatable; default total): total, blocked, "
                   "runq, p99 (blocked and run-queue), or a cause (lock, disk, ...).")
@click.option("--quiet", "-q", is_flag=True, help="No warnings or summary line on stderr.")
@click.option("--json", "as_json", is_flag=True,
              help="The diff report as JSON on stdout (with -o: besides OUT).")
@click.option("--top", type=click.IntRange(min=1), default=_R.top, show_default=True,
              help="Stacks listed as grown / shrunk most.")
@flame_options
def diff(inputs, out, to, normalize, strip_hex, fail_above, fail_on, quiet, as_json, top, **kw):
    """Compare BEFORE and AFTER (any input offconv reads, both loaded with the same
    options): a differential folded file (difffolded.pl's layout), a differential flame
    graph (widths from AFTER, red = grew, blue = shrank; --negate: BEFORE's widths), or a
    report of what changed. Exit 1 with --fail-above when it grew too much (CI)."""
    from offconv.run import pipeline
    from offconv.analysis import diff as differ
    from offconv.outputs import diff_report
    if len(inputs) != 2:
        raise click.UsageError(f"diff takes two inputs, BEFORE and AFTER (got {len(inputs)})")
    opts = build_options(kw)
    if to is None and out not in (None, "-"):
        low = out.lower()
        to = ("svg" if low.endswith(".svg") else "json" if low.endswith(".json")
              else "folded" if low.endswith((".folded", ".collapsed", ".txt")) else None)
        if to is None:
            raise OffconvError(f"{out}: cannot tell the output format from the file name: "
                               "give --to (folded, svg, report, json)")
    if to is None:
        to = "json" if as_json else "folded"
    check_output(out, inputs)
    split = formats.output_format("svg").state_split if to == "svg" else False
    from offconv.run.pair import load_pair  # BEFORE in a second process while AFTER loads here
    sides = load_pair(list(inputs), lambda p: pipeline.load([p], opts, kw["from_format"],
                                                           state_split_default=split))
    if not quiet:
        for p in sides:
            _warn(p)
    kinds = (None, None)
    if sides[0].unit != sides[1].unit:  # an error: say which side is folded (--unit fixes it)
        kinds = tuple(_input_format_name(p, kw["from_format"]) for p in inputs)
    d = differ.compare(sides[0], sides[1], opts.naming, normalize, strip_hex, kinds)
    data = differ.report(d, opts, tuple(inputs), top)
    checks = []
    if fail_above is not None:
        checks = differ.check(d, data, fail_above, tuple(fail_on),
                              diff_report.value_formatter(d.profile.unit))
        data["fail_above"] = differ._num(fail_above)
        data["checks"] = [{k: v for k, v in c.items() if k != "message"} for c in checks]
        if not quiet:
            for c in checks:
                if "not_compared" in c:
                    click.echo(f"offconv: warning: diff: --fail-on {c['on']}: {c['what']} not "
                               f"compared: {c['not_compared']}", err=True)
    if to == "svg":
        prof = d.profile
        if kw["negate"]:  # flamegraph.pl's way: difffolded AFTER BEFORE | flamegraph.pl --negate
            prof = replace(prof, samples=prof.before or {}, before=prof.samples)
        write_output(formats.output_format("svg"), prof, opts, out)
    elif to == "folded":
        write_output(formats.output_format("folded"), d.profile, opts, out)
    else:
        render = diff_report.render_json if to == "json" else diff_report.render_text
        write_output(_DiffReportFormat(render, data), None, opts, out)
    if as_json and not (to == "json" and out in (None, "-")):
        with writing_stdout():
            diff_report.render_json(data, sys.stdout)
            sys.stdout.flush()
    if not quiet:
        t = data["totals"]["total"]
        fmt = diff_report.value_formatter(d.profile.unit)
        click.echo(f"offconv: diff: total {fmt(t['before'])} -> {fmt(t['after'])} "
                   f"({diff_report._delta(t, fmt)}); {data['verdict'] or 'no verdict (no sched events)'}",
                   err=True)
    failed = [c for c in checks if c["failed"]]
    if failed:
        for c in failed:
            click.echo(f"offconv: {c['message']}", err=True)
        sys.exit(1)


def _input_format_name(path: str, from_format: str) -> Optional[str]:
    """The input format a path is read as ("folded", "perf-script", ...), or None when it
    cannot be told again (stdin, read once already)."""
    if from_format != "auto":
        return from_format
    if path == "-":
        return None
    from offconv.run.pipeline import open_input
    try:
        src, fmt = open_input(path)
    except (OffconvError, OSError):
        return None
    src.close()
    return fmt.name


# diff reuses the input options; its two inputs read as what they are in the usage line
next(p for p in diff.params if p.name == "inputs").metavar = "BEFORE AFTER"


class _DiffReportFormat:
    """write_output's view of the diff report renderers (text, not binary)."""

    binary = False

    def __init__(self, render, data):
        self._render, self._data = render, data

    def render(self, profile, out, opts):
        self._render(self._data, out)


class _PassThrough(click.Command):
    """Keeps the raw arguments: click would drop the ``--`` before ``CMD ARGS...``."""

    def parse_args(self, ctx, args):
        ctx.meta["offconv.record.args"] = list(args)
        return super().parse_args(ctx, args)


@app.command("record", cls=_PassThrough, add_help_option=False,
             context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def record(args):
    """Record scheduler events for a bounded window (runs scripts/record.sh; --help for options)."""
    from offconv import recorder
    ctx = click.get_current_context()
    ctx.exit(recorder.main(ctx.meta.get("offconv.record.args", list(args))))


def main(argv=None) -> None:
    """Console entry point. One-line errors, exit 2, no tracebacks; a closed pipe
    (``offconv ... | head``) ends quietly."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    app.main(args=argv, prog_name="offconv")
