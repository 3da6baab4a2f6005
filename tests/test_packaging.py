"""What the installed distribution is: one import name, the dependencies the code imports."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path


def test_a_folder_with_its_own_parsers_package_does_not_shadow_ours(tmp_path: Path):
    """A notebook or test folder may hold a ``parsers/`` of its own: ``timeline`` never imports it."""
    own = tmp_path / "parsers"
    own.mkdir()
    (own / "__init__.py").write_text("raise ImportError('the user\\'s own parsers package was imported')\n")
    code = "import timeline.builder; from timeline.parsers import parse_file; print(parse_file.__module__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timeline.parsers"


def test_the_dependencies_are_what_the_code_imports():
    needed = {
        r.split(";")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()
        for r in requires("timeline")
        if "extra ==" not in r
    }
    assert {"numpy", "pandas", "rich", "typer", "pyparsing"} <= needed
    assert "gitpython" not in needed  # the reflog and objects are read without it (README, "Safety")
    extras = {r.split("extra ==")[1].strip().strip("'\"") for r in requires("timeline") if "extra ==" in r}
    assert {"zstd", "schema", "test"} <= extras


def test_the_package_says_it_is_typed():
    import timeline

    assert (Path(timeline.__file__).parent / "py.typed").is_file()


def test_each_parser_module_can_be_imported_first(tmp_path: Path):
    """``import timeline.parsers.vllm`` in a fresh interpreter, before anything else, works for
    every module of the package (the package's lazy names must not import a module half-made)."""
    import timeline.parsers

    folder = Path(timeline.parsers.__file__).parent
    names = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module('timeline.parsers.' + name)\n"
    failed = [
        name
        for name in names
        if subprocess.run([sys.executable, "-c", code, name], cwd=tmp_path, capture_output=True).returncode
    ]
    assert failed == []
