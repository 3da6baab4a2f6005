"""Generate the CLI reference (docs/cli.md) from the commands' own ``--help``.

    python -m timeline.docgen            # rewrite docs/cli.md
    python -m timeline.docgen --check    # exit 1 if docs/cli.md is out of date

tests/test_cli_polish.py fails when the file and ``--help`` drift apart. The help is rendered as an
80-column terminal without colour would show it, whatever the terminal running this is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = 80
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

HEADER = """# Command-line reference

Generated from `timeline --help` by `python -m timeline.docgen`; do not edit by hand (a test fails
when this file and the commands' help drift apart). Every command also answers `--help`.

Environment: `NO_COLOR` turns colours off; `COLUMNS` sets the width (tables fit 80 columns).
"""


def commands() -> list[list[str]]:
    """Every command path: the top level, then each command in the order ``--help`` lists them."""
    import typer.main

    from timeline.cli import app

    group = typer.main.get_command(app)
    names = list(getattr(group, "commands", {}))
    return [[]] + [[name] for name in names]


def help_text(path: list[str]) -> str:
    from typer import rich_utils
    from typer.testing import CliRunner

    from timeline.cli import app

    saved = rich_utils.MAX_WIDTH, rich_utils.FORCE_TERMINAL
    rich_utils.MAX_WIDTH, rich_utils.FORCE_TERMINAL = WIDTH, False
    try:
        result = CliRunner().invoke(
            app,
            [*path, "--help"],
            prog_name="timeline",
            color=False,
            env={
                "COLUMNS": str(WIDTH),
                "LINES": "50",
                "NO_COLOR": "1",
                "TERMINAL_WIDTH": str(WIDTH),
                "FORCE_COLOR": None,
                "PY_COLORS": None,
                "GITHUB_ACTIONS": None,
            },
        )
    finally:
        rich_utils.MAX_WIDTH, rich_utils.FORCE_TERMINAL = saved
    if result.exit_code != 0:
        raise RuntimeError(f"timeline {' '.join(path)} --help failed: {result.output}")
    lines = [ANSI.sub("", line).rstrip() for line in result.stdout.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def generate() -> str:
    parts = [HEADER]
    for path in commands():
        title = " ".join(["timeline", *path])
        parts.append(f"## `{title}`\n\n```\n{help_text(path)}\n```\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = generate()
    if "--check" in args:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python -m timeline.docgen", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
