"""The README's two set-up commands: exactly two, and CI runs the test one verbatim."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_exactly_two_setup_commands():
    cmds = setup_commands()
    assert len(cmds) == 2
    assert all("\n" not in c for c in cmds)


def test_ci_runs_the_readme_test_command():
    test_cmd = setup_commands()[1]
    assert "pytest" in test_cmd
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_cmd in ci


def test_sample_of_main_command_ships():
    main_cmd = setup_commands()[0]
    sample = re.search(r"(tests/fixtures/\S+)", main_cmd).group(1)
    assert (ROOT / sample).exists()


def test_the_slow_modules_exist():
    """tests/conftest.py's SLOW_MODULES names test modules that exist (a renamed one would
    silently join the quick loop)."""
    from conftest import SLOW_MODULES
    here = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    assert SLOW_MODULES <= here
