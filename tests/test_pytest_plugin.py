"""timeline's pytest plugin (entry point pytest11): captured_log, reflog_repo, timeline_build."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from timeline.scenario import Launch, write_sglang_log

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
T = lambda hh, mm: datetime(2026, 3, 2, hh, mm, tzinfo=timezone.utc)  # noqa: E731


def test_captured_log_names_and_paths(captured_log):
    names = captured_log.names()
    assert "sglang-0.5-eagle3" in names and names == sorted(names)
    sources = {p.name for p in (ROOT / "fixtures").rglob("*.log")}
    assert {captured_log(name).name for name in names} == sources  # every log of fixtures/, no other
    path = captured_log("sglang-0.5-eagle3")
    assert path.is_file() and path == captured_log("sglang-0.5-eagle3.log")
    assert "server_args=" in path.read_text(encoding="utf-8")


def test_captured_log_unknown_name_lists_the_known_ones(captured_log):
    with pytest.raises(LookupError, match="sglang-0.5-eagle3"):
        captured_log("vllm-9.9")


def test_captured_logs_parse_with_timeline_build(captured_log, timeline_build):
    built = timeline_build(captured_log("sglang-0.5-eagle3"))
    (run,) = built.runs
    assert run.config["speculative_algorithm"] == "EAGLE3" and run.attribution == "no-repo"
    expected = captured_log.expected("sglang-0.5-eagle3")
    if expected is not None:  # the parsers' golden values, when shipped next to the log
        assert isinstance(expected, dict)


def test_reflog_repo_builds_the_steps_with_real_git(reflog_repo, timeline_build, tmp_path):
    repo = reflog_repo([("clone", T(9, 0)), ("pull", T(12, 0), 3), ("reset", T(15, 0), "HEAD~1")])
    path, shas = repo
    assert list(shas) == ["c1", "c2", "c3", "c4"]
    assert repo.heads == [shas["c1"], shas["c4"], shas["c3"]] and repo.head == shas["c3"]
    assert (path / ".git" / "logs" / "HEAD").is_file()

    write_sglang_log(tmp_path / "logs" / "a.log", [Launch(datetime(2026, 3, 2, 13, 0), 5, 90.0)])
    built = timeline_build(tmp_path / "logs", repo=path)
    assert [(e.kind, e.time) for e in built.events] == [("clone", T(9, 0)), ("pull", T(12, 0)), ("reset", T(15, 0))]
    pull = built.events[1]
    assert [c.subject for c in pull.commits] == ["c4", "c3", "c2"]
    assert built.runs[0].commit == shas["c4"]


def test_reflog_repo_more_steps(reflog_repo):
    repo = reflog_repo(
        [
            ("clone", "2026-03-02T09:00:00+00:00", 2),
            ("pull", T(10, 0), ["Fix PCG MoE Error"]),
            ("commit", T(11, 0), "local tweak"),
            ("checkout", T(12, 0), "c1"),
            ("reset", T(13, 0), "c3"),
        ]
    )
    assert repo.subjects == {"c1": "c1", "c2": "c2", "c3": "Fix PCG MoE Error", "c4": "local tweak"}
    assert repo.heads == [repo.shas[c] for c in ("c2", "c3", "c4", "c1", "c3")]
    assert repo.name_of(repo.shas["c4"]) == "c4"


@pytest.mark.parametrize(
    "steps, message",
    [
        ([("pull", T(9, 0), 1)], "first step must be"),
        ([("clone", T(9, 0)), ("fetch", T(10, 0))], "unknown step 'fetch'"),
    ],
)
def test_reflog_repo_bad_steps(reflog_repo, steps, message):
    with pytest.raises(ValueError, match=message):
        reflog_repo(steps)


USER_TEST = """
from datetime import datetime, timezone

def test_with_timeline_fixtures(captured_log, reflog_repo, timeline_build):
    import timeline.pytest_plugin as plugin
    print("FIXTURES-ROOT", captured_log.root)
    print("PLUGIN-FILE", plugin.__file__)
    assert "sglang-0.4-tp2" in captured_log.names()
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    path, shas = reflog_repo([("clone", t0), ("pull", t0.replace(hour=10), 2)])
    built = timeline_build(captured_log("sglang-0.4-tp2"), repo=path)
    assert [e.kind for e in built.events] == ["clone", "pull"]
    assert built.runs and built.runs[0].attribution == "before-reflog"
"""


def _installed() -> bool:
    try:
        eps = importlib.metadata.entry_points(group="pytest11")
    except Exception:  # pragma: no cover
        return False
    return any(ep.name == "timeline" and ep.value == "timeline.pytest_plugin" for ep in eps)


@pytest.mark.skipif(not _installed(), reason="timeline is not installed (pip install -e .): no pytest11 entry point")
def test_another_project_gets_the_fixtures_through_the_entry_point(pytester):
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest_subprocess("-q", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_plain_install_ships_the_captured_logs(tmp_path):
    """What `pip install .` (not editable) puts in site-packages, built by setuptools' build_py
    into a folder, offline; then a user's test finds the captured logs inside that package."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("timeline", "parsers", "fixtures"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    lib = tmp_path / "site"
    build_py = [
        sys.executable,
        "-c",
        "import setuptools; setuptools.setup()",
        "-q",
        "build_py",
        "--build-lib",
        str(lib),
    ]
    done = subprocess.run(build_py, cwd=source, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shipped = sorted(p.name for p in (lib / "timeline" / "fixtures").rglob("*.log"))
    assert shipped == sorted(p.name for p in (ROOT / "fixtures").rglob("*.log")) and shipped
    assert (lib / "timeline" / "schema" / "timeline.schema.json").is_file()
    assert not (lib / "fixtures").exists()  # no top-level package named "fixtures"

    project = tmp_path / "user"
    project.mkdir()
    (project / "test_user.py").write_text(USER_TEST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(lib)
    plugin = [] if _installed() else ["-p", "timeline.pytest_plugin"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *plugin, str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"FIXTURES-ROOT {lib / 'timeline' / 'fixtures'}" in done.stdout


def test_the_readme_example_test_passes(pytester):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Testing your own tools: the pytest plugin", 1)[1]
    example = section.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert example.startswith("# test_my_tool.py")
    pytester.makepyfile(test_my_tool=example)
    plugin = [] if _installed() else ["-p", "timeline.pytest_plugin"]
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", *plugin)
    result.assert_outcomes(passed=2)
