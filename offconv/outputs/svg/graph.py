"""The SVG renderer (``FORMAT``): ``render(profile, out, opts)`` is the renderer contract;
fields of ``opts.flame`` left None are chosen from the profile (see ``resolve_style``).
"""
from __future__ import annotations

from typing import TextIO

from offconv.model import gcpause
from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat
from offconv.model.records import OFFCPU_MODES, ONCPU_FRAME, WALLCLOCK, Profile
from offconv.model.units import human_us
from offconv.model.labels import Labels
from offconv.model.naming import merge_by
from offconv.model.options import FlameOptions, NamingOptions, Options
from offconv.outputs.svg import levels
from offconv.outputs.svg.layout import layout, prune_threshold
from offconv.outputs.svg.palette import background, check_palette
from offconv.outputs.svg.write import Style, write_svg



def _default_title(profile: Profile, flame: FlameOptions) -> str:
    if flame.flamechart:
        kind = "Flame Chart"
    elif flame.inverted:
        kind = "Icicle Graph"
    else:
        kind = "Flame Graph"
    if profile.before is not None:
        return f"Differential {kind}"
    if profile.mode == "critical-path":
        return f"Wake-up Critical Path {kind}"
    if profile.mode == WALLCLOCK:
        return f"Wall-Clock Time {kind}"
    if profile.mode in OFFCPU_MODES:
        return f"Off-CPU Time {kind}"
    return kind


def wallclock_subtitle(profile: Profile) -> str:
    """The three kinds' totals of a wall-clock profile, and what the colours mean."""
    on = blocked = runq = 0
    for stack, w in profile.samples.items():
        kind = stack[1].name if len(stack) > 1 else ""
        if kind == ONCPU_FRAME.name:
            on += w
        elif kind.startswith("[blocked"):
            blocked += w
        else:
            runq += w
    total = on + blocked + runq or 1
    return (f"on-CPU {human_us(on)} ({on / total:.0%}) · blocked {human_us(blocked)} "
            f"({blocked / total:.0%}) · run queue {human_us(runq)} ({runq / total:.0%}) — "
            "red/yellow: on CPU ([on-CPU], sampled) · blue: blocked ([blocked S], "
            "[blocked D], ...) · green: waiting for a CPU ([run queue], [preempted])")


def _default_palette(profile: Profile) -> str:
    if profile.mode == WALLCLOCK:
        return "hot"
    if profile.mode == "wakeup":
        return "chain"
    if profile.mode in OFFCPU_MODES:
        return "io"
    return "hot"


def resolve_style(profile: Profile, flame: FlameOptions) -> Style:
    """FlameOptions + profile -> Style, choosing what the user left None."""
    palette = check_palette(flame.colors) if flame.colors else _default_palette(profile)
    if flame.width <= 2 * 10 or flame.height < 2 or flame.fontsize <= 0 or flame.fontwidth <= 0:
        raise OffconvError("--width, --height, --fontsize and --fontwidth must be positive "
                           "(width above 20 px, height at least 2 px)")
    if not flame.factor > 0:
        raise OffconvError(f"--factor: expected a positive number, got {flame.factor}")
    countname = flame.countname
    if countname is None:
        countname = profile.unit if profile.unit else "samples"
        if countname == "us":
            countname = "µs"  # as the report (units.human_us); an explicit --countname wins
    return Style(
        title=flame.title if flame.title is not None else _default_title(profile, flame),
        subtitle=flame.subtitle or (wallclock_subtitle(profile) if profile.mode == WALLCLOCK
                                    and profile.before is None else ""),
        width=int(flame.width), frame_height=int(flame.height),
        fonttype=flame.fonttype, fontsize=float(flame.fontsize),
        fontwidth=float(flame.fontwidth), countname=countname, nametype=flame.nametype,
        palette=palette, background=background(flame.bgcolors, palette),
        use_hash=bool(flame.hash), inverted=bool(flame.inverted), negate=bool(flame.negate),
        notes=flame.notes or "", factor=float(flame.factor),
        state_split=flame.colors is None and profile.before is None,
    )


def render(profile: Profile, out: TextIO, opts: Options) -> None:
    """Write ``profile`` as an interactive SVG flame graph. Raises OffconvError
    ("nothing to draw: ...") when no stack has a positive weight."""
    flame = opts.flame if isinstance(opts, Options) else (opts or FlameOptions())
    style = resolve_style(profile, flame)
    naming = opts.naming if isinstance(opts, Options) else NamingOptions()
    total = sum(w for w in profile.samples.values() if w > 0)
    known = _known(profile, naming)
    if known is not None:  # a split's second part, named only
        total += sum(w for w in known.named.values() if w > 0)
    if not total > 0:
        raise OffconvError("nothing to draw: the profile has no stack with a positive weight")
    timemax = max(total, flame.total or 0)
    min_value = prune_threshold(flame.minwidth, style.width, timemax)
    with gcpause.paused():  # what the drawing makes is freed as _draw returns
        _draw(profile, out, flame, style, naming, min_value)


def _draw(profile: Profile, out: TextIO, flame: FlameOptions, style: Style, naming: NamingOptions,
          min_value: float) -> None:
    known = _known(profile, naming)
    if flame.flamechart and profile.sequence is not None and profile.before is None:
        labels = Labels(naming)
        rows = [(labels.stack(s), w) for s, w in profile.sequence]  # interval data in time order
    elif known is not None:
        labels = known.labels  # its first stacks were named ahead, by this labeller
        rows = merge_by(profile.samples, None, known.keys(profile.samples, labels.stack))
        for name, w in known.named.items():  # and a second part named only: after them
            rows[name] = rows.get(name, 0) + w
    elif profile.before is None and not flame.flamechart and levels.usable(profile.samples):
        # many unique stacks: found depth by depth, no stack named whole (same Layout)
        labels = Labels(naming)
        name_of = levels.name_all(labels, profile.samples)
        lay = levels.layout_levels(profile.samples, name_of, reverse=flame.reverse,
                                   min_value=min_value, total=flame.total,
                                   flags=labels.flags, max_depth=flame.max_depth)
        write_svg(out, lay, style, differential=False)
        return
    else:
        labels = Labels(naming)
        rows = labels.merge(profile.samples)
    before = labels.merge(profile.before) if profile.before is not None else None
    lay = layout(rows, before, reverse=flame.reverse, flamechart=flame.flamechart,
                 min_value=min_value, total=flame.total, flags=labels.flags,
                 max_depth=flame.max_depth)
    write_svg(out, lay, style, differential=profile.before is not None)


def _known(profile: Profile, naming: NamingOptions):
    """The profile's names made ahead (naming.StackNames) if made under ``naming``: the
    drawing's rows and its total both take them, or neither."""
    known = profile.stack_names
    return known if known is not None and known.opts == naming else None


FORMAT = OutputFormat(name="svg", suffixes=(".svg",), render=render, state_split=True,
                      by_name=True, ahead=("svg",), empty="nothing to draw",
                      description="interactive SVG flame graph (flamegraph.pl-compatible)")
