"""Errors with the message form of DESIGN.md: ``offconv: FILE:LINE: expected ..., got ...``."""
from __future__ import annotations


# Exit codes (DESIGN.md "CLI contract")
EXIT_OK = 0
EXIT_THRESHOLD = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in offconv (an unexpected exception)


class OffconvError(Exception):
    """Any error reported to the user as one line (plus an optional quoted line); exit 2."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.detail = detail

    def lines(self) -> list[str]:
        out = [f"offconv: {self.message}"]
        if self.detail is not None:
            out.append(f"  | {_printable(self.detail)}")
        return out


class ParseError(OffconvError):
    """Bad input at a known place: ``FILE:LINE: expected X, got Y`` + the offending text."""

    def __init__(self, path: str, lineno: int | None, expected: str,
                 got: str | None = None, line: str | None = None):
        where = f"{path}:{lineno}" if lineno else f"{path}"
        msg = f"{where}: expected {expected}"
        if got is not None:
            msg += f", got {got}"
        super().__init__(msg, line)
        self.path = path
        self.lineno = lineno
        self.expected = expected


def _printable(text: str, limit: int = 200) -> str:
    text = text.rstrip("\n")
    if len(text) > limit:
        text = text[:limit] + "..."
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)
