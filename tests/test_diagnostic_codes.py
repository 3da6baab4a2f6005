"""``Diagnostic.code``: what acts on a diagnostic reads its code, never its wording.

The diagnostics below carry a message no producer writes: the behaviour must follow the code.
The parse cache's transient codes are tested in test_cache.py.
"""

from __future__ import annotations

import ast
import typing
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from timeline.git import history
from timeline.git.events import context_events
from timeline.git.locate import HeadState
from timeline.git.merge import merge_branch_moves
from timeline.git.reflog import ReflogEntry, load_reflog, parse_reflog
from timeline.model import CodeEvent
from timeline.parsers.framing import NotTextError
from timeline.parsers.reading import NOTHING_FOUND, parse_file
from timeline.records import Diagnostic, DiagnosticCode

ROOT = Path(__file__).resolve().parents[1]
REWORDED = "a message no producer writes"
A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)


def entry(old: str, new: str, ts: int, line: int) -> ReflogEntry:
    return ReflogEntry(
        old=old, new=new, name="Ann", email="ann@example.com", ts=ts, tz="+0000", message="commit: x", line=line
    )


class FakeLogs:
    """The ``read``/``source``/``context_refs`` of a reflog store, from a table."""

    def __init__(self, logs: dict[str, tuple[list[ReflogEntry] | None, list[Diagnostic]]]):
        self.logs = logs

    def source(self, ref: str) -> str:
        return f"logs/{ref}"

    def read(self, ref: str):
        return self.logs[ref]

    def context_refs(self, diags):
        return list(self.logs)


def test_the_vocabulary_has_a_default_and_the_producers_use_it():
    codes = set(typing.get_args(DiagnosticCode))
    assert Diagnostic("f", None, "m").code == "other" and "other" in codes
    assert NotTextError("binary").code == "not-text"


def test_no_reflog_file(tmp_path):
    (tmp_path / "logs").mkdir()
    _, said = load_reflog(tmp_path / "logs" / "HEAD", (tmp_path,))
    assert [d.code for d in said] == ["no-reflog"]

    # HEAD has no log, the branch neither: neither says so, HEAD's log falls back to the branch's
    logs = FakeLogs(
        {
            "HEAD": (None, [Diagnostic("logs/HEAD", None, REWORDED, "no-reflog")]),
            "refs/heads/main": (
                [entry(A, B, 100, 1)],
                [Diagnostic("logs/refs/heads/main", None, REWORDED, "no-reflog")],
            ),
        }
    )
    diags: list[Diagnostic] = []
    log = history._read_head_log(logs, HeadState(B, "refs/heads/main"), diags)
    assert log.fallback and not log.refused
    assert [d.message.split(":")[0] for d in diags] == ["HEAD's reflog is missing"]


def test_no_reflog_file_is_dropped_when_approximate_events_stand_in(monkeypatch):
    stand_in = CodeEvent(
        id="",
        time=datetime(2024, 1, 1, tzinfo=timezone.utc),
        ts=0,
        kind="other",
        message="",
        old=A,
        new=B,
        changes_commit=True,
    )
    monkeypatch.setattr(history, "approximate_events", lambda loc, head, diags: ([stand_in], []))
    kept = Diagnostic("logs/HEAD", None, REWORDED)
    diags = [Diagnostic("logs/HEAD", None, REWORDED, "no-reflog"), kept]
    history._approximation(None, HeadState(B, None), "logs/HEAD", diags)
    assert diags == [kept]


def test_empty_reflog():
    assert [d.code for d in parse_reflog(b"", "logs/HEAD").diagnostics] == ["reflog-empty"]

    logs = FakeLogs(
        {
            "HEAD": ([], [Diagnostic("logs/HEAD", None, REWORDED, "reflog-empty")]),
            "refs/heads/main": ([entry(A, B, 100, 1)], []),
        }
    )
    diags: list[Diagnostic] = []
    log = history._read_head_log(logs, HeadState(B, "refs/heads/main"), diags)
    assert log.fallback and not log.refused
    assert "HEAD's reflog is empty" in diags[-1].message


def test_context_logs_missing_or_empty_are_not_worth_a_warning():
    damaged = Diagnostic("logs/refs/remotes/origin/main", 1, REWORDED, "reflog-damaged-line")
    logs = FakeLogs(
        {
            "refs/remotes/origin/main": ([], [damaged, Diagnostic("x", None, REWORDED, "reflog-empty")]),
            "refs/stash": (None, [Diagnostic("y", None, REWORDED, "no-reflog")]),
        }
    )
    diags: list[Diagnostic] = []
    assert context_events(logs, diags) == ([], [])
    assert diags == [damaged]


def test_unreadable_reflog(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "elsewhere").write_bytes(b"")
    (tmp_path / "logs" / "HEAD").symlink_to(tmp_path / "elsewhere")
    _, said = load_reflog(tmp_path / "logs" / "HEAD", (tmp_path,))
    assert [d.code for d in said] == ["reflog-unreadable"]

    logs = FakeLogs(
        {
            "HEAD": (None, [Diagnostic("logs/HEAD", None, REWORDED, "reflog-unreadable")]),
            "refs/heads/main": ([entry(A, B, 100, 1)], []),
        }
    )
    diags: list[Diagnostic] = []
    log = history._read_head_log(logs, HeadState(B, "refs/heads/main"), diags)
    assert log.refused
    assert "HEAD's reflog is unreadable (see above)" in diags[-1].message


@pytest.mark.parametrize("code", ["reflog-empty", "reflog-damaged-line", "other"])
def test_only_an_unreadable_reflog_counts_as_refused(code):
    assert not history._refused([Diagnostic("logs/HEAD", None, "reflog " + REWORDED, code)])


def test_reflog_chain_gap():
    said: list[Diagnostic] = []
    loc = SimpleNamespace(sha_length=40, object_format="sha1")
    history._check_entries([entry(A, B, 100, 1), entry(C, D, 300, 2)], loc, "logs/HEAD", said)
    assert [(d.line, d.code) for d in said] == [(2, "reflog-chain-gap")]

    # the branch's move B -> C fills the gap before HEAD's second entry: its chain-gap goes
    events = [
        CodeEvent(
            id="",
            time=datetime.fromtimestamp(ts, timezone.utc),
            ts=ts,
            kind="commit",
            message="commit: x",
            old=old,
            new=new,
            changes_commit=True,
            source="logs/HEAD",
            line=line,
        )
        for old, new, ts, line in ((A, B, 100, 1), (C, D, 300, 2))
    ]
    kept = Diagnostic("logs/HEAD", 2, REWORDED)
    diags = [Diagnostic("logs/HEAD", 2, REWORDED, "reflog-chain-gap"), kept]
    merged, _ = merge_branch_moves(
        events, [], [entry(B, C, 200, 7)], "refs/heads/main", "logs/refs/heads/main", D, diags, False
    )
    assert [e.line for e in merged] == [1, 7, 2]
    assert diags == [kept]


def test_a_log_of_no_run_says_nothing_was_found(tmp_path):
    log = tmp_path / "notes.log"
    log.write_text("nothing a parser reads\n")
    assert parse_file(log).diagnostics == [Diagnostic(str(log), None, NOTHING_FOUND, "nothing-found")]


def test_the_cache_key_covers_the_diagnostic_record():
    # cache.code_version digests the sources a parse depends on: a changed Diagnostic is a new key
    import timeline.records as records
    from timeline.cache import parse_sources

    assert Path(records.__file__).resolve() in parse_sources()


def _message_tests(path: Path) -> list[str]:
    """``x.message`` tested with ``startswith``/``endswith``, ``in`` or ``==`` in ``path``."""
    found = []

    def is_message(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "message"

    for node in ast.walk(ast.parse(path.read_bytes())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
            and is_message(node.func.value)
        ) or (
            isinstance(node, ast.Compare)
            and any(isinstance(op, (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for op in node.ops)
            and (any(map(is_message, [node.left, *node.comparators])))
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_nothing_decides_by_the_wording_of_a_message():
    # classify reads git's own reflog messages ("reset: moving to HEAD"): input, not diagnostics
    allowed = {ROOT / "timeline" / "git" / "classify.py"}
    sources = [p for folder in ("timeline", "parsers") for p in sorted((ROOT / folder).rglob("*.py"))]
    assert [hit for p in sources if p not in allowed for hit in _message_tests(p)] == []


def test_the_command_line_adds_its_flag_by_code_not_by_message():
    import io

    from rich.console import Console

    from timeline.commands.build import FLAG_HINTS
    from timeline.model import Timeline
    from timeline.render.table import render_warnings

    warnings = [
        Diagnostic("a.log", None, REWORDED, "zone-inferred"),
        Diagnostic("b.log", 3, "no zone given: inferred UTC+01:00 from the file's mtime"),  # code "other"
        Diagnostic("repo", None, REWORDED, "entry-not-found"),
    ]
    built = Timeline(datetime(2026, 3, 2, tzinfo=timezone.utc), "UTC", "flag", None, [], [], warnings)
    stream = io.StringIO()
    render_warnings(built, Console(file=stream), FLAG_HINTS)
    assert stream.getvalue().splitlines() == [
        f"warning: a.log: {REWORDED} (--log-tz sets it)",
        "warning: b.log:3: no zone given: inferred UTC+01:00 from the file's mtime",
        f"warning: repo: {REWORDED} (--entry names the server's)",
    ]


def test_a_missing_entry_module_is_coded_and_said_with_its_flag(tmp_path, reflog_repo, timeline_build):
    from typer.testing import CliRunner

    from timeline.cli import app
    from timeline.scenario import Launch, write_sglang_log

    at = lambda hour: datetime(2026, 3, 2, hour, tzinfo=timezone.utc)  # noqa: E731
    repo = reflog_repo([("clone", at(9), 2), ("pull", at(12), 3)])  # a checkout with no sglang package
    logs = tmp_path / "logs"
    write_sglang_log(logs / "a.log", [Launch(datetime(2026, 3, 2, 10), 10, 94.0)], seed=1)
    write_sglang_log(logs / "b.log", [Launch(datetime(2026, 3, 2, 13), 10, 60.0)], seed=2)
    built = timeline_build(logs, repo=repo.path)
    lacking = [w for w in built.warnings if w.code == "entry-not-found"]
    assert len(lacking) == 1 and lacking[0].message.endswith("; imports not judged")
    result = CliRunner().invoke(app, ["build", str(logs), "--repo", str(repo.path), "--log-tz", "UTC"])
    assert f"warning: {lacking[0]} (--entry names the server's)\n" in result.stderr


def test_the_library_names_no_flag_in_a_diagnostic():
    """A ``Diagnostic(...)`` built outside the command line names none of its flags."""
    import typer

    from timeline.cli import app

    group = typer.main.get_command(app)
    flags = {
        option
        for command in group.commands.values()  # type: ignore[attr-defined]
        for param in command.params
        for option in param.opts
        if option.startswith("--")
    }
    assert {"--log-tz", "--entry"} <= flags
    command_line = {ROOT / "timeline" / "cli.py", *(ROOT / "timeline" / "commands").rglob("*.py")}
    found = []
    for path in [p for folder in ("timeline", "parsers") for p in sorted((ROOT / folder).rglob("*.py"))]:
        if path in command_line:
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Diagnostic":
                texts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {flag}" for flag in flags if any(flag in t for t in texts)
                ]
    assert found == []
