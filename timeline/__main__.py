"""The ``timeline`` command, as ``python -m timeline`` and as the console script
(``pyproject.toml``) run it: the command line imported with the cycle collector held off, then run."""

from __future__ import annotations

from timeline.collector import uncollected


def main() -> None:
    # typer, rich and the command line's own modules make tens of thousands of objects that live
    # as long as the process; the collections their imports set off walked them again and again.
    # Held off, they go with the oldest objects at once (timeline.collector).
    with uncollected():
        from timeline.cli import main as command_line
    command_line()


if __name__ == "__main__":
    main()
