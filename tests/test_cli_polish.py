"""The command line as a user meets it: --version, --help with examples, docs/cli.md, NO_COLOR, 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

import timeline
from timeline import docgen
from timeline.cli import app

COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;[25];[0-9;]+)m")


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"timeline {timeline.__version__}\n"


def test_short_version_and_help_flags():
    assert CliRunner().invoke(app, ["-V"]).stdout == f"timeline {timeline.__version__}\n"
    for args in (["-h"], ["build", "-h"], ["bisect", "-h"]):
        result = CliRunner().invoke(app, args)
        long = CliRunner().invoke(app, [*args[:-1], "--help"])
        assert result.exit_code == 0 and result.stdout == long.stdout


def test_shell_completion_script_names_the_command(monkeypatch):
    # typer otherwise finds the shell among the test's parent processes and ignores "bash": a run
    # with no shell above it (started in the background, by a CI runner) says "Shell  not supported"
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result = CliRunner().invoke(app, ["--show-completion", "bash"], prog_name="timeline")
    assert result.exit_code == 0 and "_timeline_completion" in result.stdout


def test_version_as_an_installed_command_starts_fast():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "timeline", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("timeline ")
    assert not re.search(r"\|\s+(pandas|numpy|jsonschema|git)$", done.stderr, flags=re.MULTILINE)


AT_EXIT = """
import atexit, gc, sys
from timeline import cli
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))
sys.argv[0] = "timeline"
cli.main()
"""


def test_the_objects_left_at_exit_are_not_walked_by_the_collector():
    """What ``timeline`` leaves once its command is over is frozen (``cli.main``): the interpreter's
    collections on the way out would walk it only for the process to end. atexit still runs."""
    done = subprocess.run([sys.executable, "-c", AT_EXIT, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == f"timeline {timeline.__version__}\nfrozen True\n"


BLAS_THREADS = """
import atexit, os, sys
from timeline import cli
atexit.register(lambda: print(os.environ.get("OPENBLAS_NUM_THREADS")))
sys.argv[0] = "timeline"
cli.main()
"""


@pytest.mark.parametrize("given, kept", [(None, "1"), ("4", "4")])
def test_numpy_is_imported_without_a_blas_thread_a_core(given, kept):
    """numpy's OpenBLAS starts one thread (the command multiplies no matrix), unless the user says."""
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", BLAS_THREADS, "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == kept


@pytest.mark.parametrize("command", [path for path in docgen.commands()], ids=lambda p: " ".join(p) or "timeline")
def test_every_command_has_help_with_examples(command):
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "Usage:" in result.stdout and "Examples:" in result.stdout
    examples = result.stdout.split("Examples:", 1)[1].split("\n\n", 1)[0].strip().splitlines()
    assert examples and all(line.strip().startswith("timeline ") for line in examples)
    assert max(cell_len(line) for line in result.stdout.splitlines()) <= 80


def test_docs_cli_md_is_generated_from_help():
    assert docgen.DOC.read_text(encoding="utf-8") == docgen.generate(), (
        "docs/cli.md and `timeline --help` drifted apart: run `python -m timeline.docgen`"
    )


def test_docgen_check_mode(tmp_path, monkeypatch):
    monkeypatch.setattr(docgen, "DOC", tmp_path / "cli.md")
    assert docgen.main(["--check"]) == 1
    assert docgen.main([]) == 0 and docgen.main(["--check"]) == 0


def test_no_color_is_respected(demo):
    args = ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC"]
    coloured = CliRunner().invoke(app, args, env={"FORCE_COLOR": "1", "NO_COLOR": None, "COLUMNS": "80"})
    assert COLOUR.search(coloured.stdout), "a forced terminal shows colours"
    plain = CliRunner().invoke(app, args, env={"FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "80"})
    assert plain.exit_code == 0 and "Fix PCG MoE Error" in plain.stdout
    assert not COLOUR.search(plain.stdout) and not COLOUR.search(plain.stderr)


def test_tables_fit_an_80_column_terminal(demo):
    result = CliRunner().invoke(
        app, ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0
    widths = [cell_len(line) for line in result.stdout.splitlines()]
    assert widths and max(widths) <= 80, max(widths)
    assert "Fix PCG MoE Error" in result.stdout


@pytest.mark.parametrize("command", [[], ["build"], ["demo"], ["bisect"], ["schema"]])
def test_every_help_ends_with_the_exit_status_table_of_the_enum(command):
    from timeline.exitcodes import ExitCode

    text = docgen.help_text(command)
    table = text.split("Exit status:\n", 1)[1]
    listed = [
        int(line.split()[0]) for line in table.splitlines() if line.startswith("  ") and line.split()[0].isdigit()
    ]
    assert listed == [int(code) for code in ExitCode]
    flat = " ".join(table.split())
    for code in ExitCode:
        assert f"{int(code)} {code.meaning}" in flat
    assert max(map(len, text.splitlines())) <= docgen.WIDTH


def test_the_readme_exit_status_table_is_the_enum():
    from pathlib import Path

    from timeline.exitcodes import exit_code_table

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\d+)` \| (.+) \|$", readme, flags=re.MULTILINE)
    assert [(int(code), meaning) for code, meaning in rows] == exit_code_table()
