"""The lark grammars of the text formats (``grammars/*.lark``): located in the installed
package ``offconv.grammars`` (wheel or editable install) or, running from a source tree,
beside the package. Parsers are built once per grammar and start symbol."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from offconv.model.errors import OffconvError


def grammar_text(name: str) -> str:
    try:
        from importlib.resources import files
        return (files("offconv.grammars") / f"{name}.lark").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    path = Path(__file__).resolve().parents[2] / "grammars" / f"{name}.lark"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise OffconvError(f"grammar {name}.lark not found (broken installation?)") from None


@lru_cache(maxsize=None)
def parser(name: str, start: str):
    import lark
    return lark.Lark(grammar_text(name), start=start, parser="lalr",
                     propagate_positions=True, maybe_placeholders=False)
