"""timeline.git.runner: every git process on a repository runs under a memory ceiling (1 GiB plus
twice the repository's packs, or ``TIMELINE_GIT_MEMORY_MB``), and git stopped by it is one line
naming the repository and the variable. On real repositories built with git."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from timeline.cli import app
from timeline.errors import UsageError
from timeline.exitcodes import ExitCode
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.git.runner import BASE_MEMORY, MEMORY_VARIABLE, memory_ceiling

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux only")
MIB = 1 << 20


@linux_only
def test_the_ceiling_grows_with_the_packs_and_the_variable_sets_it():
    assert memory_ceiling(0, {}) == BASE_MEMORY == 1024 * MIB
    assert memory_ceiling(300 * MIB, {}) == (1024 + 600) * MIB
    assert memory_ceiling(300 * MIB, {MEMORY_VARIABLE: " 64 "}) == 64 * MIB
    assert memory_ceiling(300 * MIB, {MEMORY_VARIABLE: "0"}) is None  # no ceiling
    assert memory_ceiling(300 * MIB, {MEMORY_VARIABLE: ""}) == (1024 + 600) * MIB
    for wrong in ("1.5", "-1", "64M", "lots"):
        with pytest.raises(UsageError, match=f"^{MEMORY_VARIABLE}="):
            memory_ceiling(0, {MEMORY_VARIABLE: wrong})


@pytest.fixture
def inflating(bench):
    """A repository whose last commit adds 1.5 million times one line: 9 MiB that take 10 kB of
    the object store and about 100 MiB of the memory of a git that diffs them (git's diff keeps a
    record a line): an archive bomb's shape, at a size a test can afford."""
    repo = bench.init()
    bench.commit("server", file="python/sglang/server.py", content="print('serving')\n")
    bench.commit("vendored table", file="python/sglang/table.py", content="X = 0\n" * (3 * MIB // 2))
    return repo, bench.sha()


@linux_only
def test_git_stopped_by_the_ceiling_is_one_line_naming_the_repository(inflating, monkeypatch):
    repo, commit = inflating
    with ObjectStore(repo / ".git") as store:  # the default ceiling: a GiB and more
        assert store.memory is not None and store.memory >= BASE_MEMORY
        (line,) = store.changed_lines([commit])[commit][:1]
        assert line.path == "python/sglang/table.py"
    monkeypatch.setenv(MEMORY_VARIABLE, "48")
    with ObjectStore(repo / ".git") as store:
        assert store.memory == 48 * MIB
        assert store.object_types([commit]) == {commit: "commit"}  # git itself fits in 48 MiB
        with pytest.raises(ObjectStoreError) as stopped:
            store.changed_lines([commit])
    assert str(stopped.value) == (
        f"git log ran out of memory on {repo / '.git'}: each git process may use 48 MiB here "
        f"({MEMORY_VARIABLE} sets the ceiling; 0 for none)"
    )
    monkeypatch.setenv(MEMORY_VARIABLE, "0")  # no ceiling
    with ObjectStore(repo / ".git") as store:
        assert store.memory is None and commit in store.changed_lines([commit])


@linux_only
def test_a_build_under_a_tiny_ceiling_says_so_on_one_line(demo):
    """A ceiling git cannot even start under: the build still ends, each git failure a warning of
    one line that names the repository and the variable."""
    result = CliRunner().invoke(
        app,
        ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--no-cache"],
        env={MEMORY_VARIABLE: "2", "COLUMNS": "400"},
    )
    assert result.exit_code == ExitCode.OK and "Traceback" not in result.output
    said = [line for line in result.stderr.splitlines() if "ran out of memory" in line]
    assert said and all(
        line.startswith("warning: ")
        and f"ran out of memory on {demo.repo / '.git'}: " in line
        and MEMORY_VARIABLE in line
        for line in said
    )


def test_a_value_of_the_variable_that_is_no_number_is_a_usage_error(demo):
    result = CliRunner().invoke(
        app, ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC"], env={MEMORY_VARIABLE: "1G"}
    )
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr == f"timeline: error: {MEMORY_VARIABLE}='1G': not a whole number of MiB (0: no ceiling)\n"
