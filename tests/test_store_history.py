"""``timeline history``: 30 nights of two machines ingested one night at a time, the logs and
checkouts deleted, then the one regression found from the store alone (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.errors import UsageError
from timeline.history import EmptyStoreError, history, parse_since
from timeline.scenario import NIGHTLY_CULPRIT, NIGHTLY_REGRESSION_NIGHT, NIGHTLY_START, NightlyScenario
from timeline.store import machine_of, open_store

WORKLOAD = "Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3"
# ``timeline ARGS`` as the installed script runs it (timeline.__main__:main), with a function of its
# own for the interpreter to run at exit
ENTRY_POINT_WITH_AN_ATEXIT_LINE = """
import atexit, sys
atexit.register(print, "exit")
sys.argv = ["timeline", *sys.argv[1:]]
from timeline.__main__ import main
main()
"""


def ingest_nightly(root: Path, url: str) -> NightlyScenario:
    """Every night: build that night's logs with the checkout as it is then, ingest, delete the
    logs; at the end delete the checkouts and the upstream too."""
    scenario = NightlyScenario(root)
    with open_store(url, {}) as store:
        for night in scenario.nights():
            built = build(night.logs, repo=night.repo, log_tz="UTC", cache=False, analyse_shifts=False)
            result = store.ingest(built, machine_of(built, night.machine.name, f"node-{night.machine.name}"))
            assert result.runs_added == 2
            shutil.rmtree(night.logs)
    for folder in (*scenario.checkouts.values(), scenario.upstream):
        shutil.rmtree(folder)
    return scenario


def test_thirty_nights_of_two_machines_one_regression_from_the_store_alone(tmp_path: Path, store_url: str) -> None:
    scenario = ingest_nightly(tmp_path / "ci", store_url)
    assert not list((tmp_path / "ci").rglob("*.log")) and not list((tmp_path / "ci").rglob("HEAD"))

    found = history(store_url)
    timeline = found.timeline
    assert [(m.name, m.nccl_versions, m.gpu_count, m.runs, m.matching) for m in found.machines] == [
        ("gpu-a", ("2.27.5",), 8, 60, ()),
        ("gpu-b", ("2.26.2",), 8, 60, ()),
    ]
    assert len(timeline.runs) == 120 and [r.id for r in timeline.runs] == [f"r{n}" for n in range(1, 121)]
    assert {r.machine for r in timeline.runs} == {"gpu-a", "gpu-b"}
    assert len({e.id for e in timeline.events}) == len(timeline.events) == 2 * 10  # a clone and 9 pulls each
    decisive = [s for s in timeline.shifts if s.verdict is not None]
    assert [(s.group, s.verdict) for s in decisive] == [(f"gpu-a: {WORKLOAD}", "regression")]
    (shift,) = decisive
    assert not shift.single_run and -15 < shift.change_pct < -13
    assert {timeline.runs[int(r[1:]) - 1].machine for r in shift.from_side.runs + shift.to_side.runs} == {"gpu-a"}
    pulled = [e for e in timeline.events if e.id in shift.events]
    assert [(e.machine, e.time.date()) for e in pulled] == [
        ("gpu-a", (NIGHTLY_START + timedelta(days=NIGHTLY_REGRESSION_NIGHT - 1)).date())
    ]
    culprit = scenario.shas[NIGHTLY_CULPRIT]
    assert {s.sha for s in shift.suspects} == {
        culprit,
        scenario.shas["MoE: fused top-k for FP8"],
        scenario.shas["Docs: NCCL tuning"],
    }
    ranked = [(c.subject, c.likelihood, c.shifts) for c in timeline.culprits]
    # without the checkout: no import or flag evidence; the docs commit is set aside on its paths
    assert sorted(ranked[:2]) == [
        ("MoE: fused top-k for FP8", "possible", [shift.id]),
        (NIGHTLY_CULPRIT, "possible", [shift.id]),
    ]
    assert ranked[2] == ("Docs: NCCL tuning", "unlikely", [shift.id])
    assert all(w.code != "entry-not-found" for w in timeline.warnings)

    # one machine, and the nights before the regression, have nothing to say
    assert [s for s in history(store_url, machine="gpu-b").timeline.shifts if s.verdict] == []
    before = NIGHTLY_START + timedelta(days=NIGHTLY_REGRESSION_NIGHT - 1)
    early = history(store_url, since=NIGHTLY_START + timedelta(days=5)).timeline
    assert [s.group for s in early.shifts if s.verdict] == [f"gpu-a: {WORKLOAD}"]
    late = history(store_url, since=before + timedelta(days=1)).timeline
    assert [s for s in late.shifts if s.verdict] == [] and all(r.start >= before for r in late.runs)
    with pytest.raises(UsageError, match="'gpu-c': no such machine .*gpu-a, gpu-b"):
        history(store_url, machine="gpu-c")
    with pytest.raises(UsageError, match="'Llama'.*" + WORKLOAD):
        history(store_url, group="Llama")
    with pytest.raises(EmptyStoreError, match="no run stored since"):
        history(store_url, since=datetime(2027, 1, 1, tzinfo=timezone.utc))

    # the command line, as a nightly job reads it
    runner = CliRunner()
    shown = runner.invoke(app, ["history", "--store", store_url], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "gpu-a" in shown.output and "NCCL 2.27.5" in shown.output and "NCCL 2.26.2" in shown.output
    assert f"gpu-a: {WORKLOAD}" in shown.output and "regression" in shown.output
    assert f"{culprit[:9]} {NIGHTLY_CULPRIT}" in shown.output
    gate = ["history", "--store", store_url, "--fail-on-regression", "--confirmed-only", "--json", "-"]
    gated = runner.invoke(app, gate)
    assert gated.exit_code == 3
    document = json.loads(gated.stdout)
    assert [s["group"] for s in document["shifts"] if s["verdict"]] == [f"gpu-a: {WORKLOAD}"]
    assert document["options"]["machines"]["gpu-b"]["nccl_versions"] == ["2.26.2"]
    quiet = runner.invoke(app, [*gate, "--machine", "gpu-b"])
    assert quiet.exit_code == 0
    # the console entry point ends the process without freeing the answer: the same document,
    # whole, the same exit status, and the atexit functions run (an 'exit' line of its own)
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    ran = subprocess.run(
        [sys.executable, "-c", ENTRY_POINT_WITH_AN_ATEXIT_LINE, *gate],
        capture_output=True,
        text=True,
        timeout=120,
        env=buffered,
    )
    assert ran.returncode == 3, ran.stderr
    assert ran.stdout.endswith("}\nexit\n")
    printed = json.loads(ran.stdout.removesuffix("exit\n"))
    assert {**printed, "generated_at": None} == {**document, "generated_at": None}
    page = tmp_path / "history.html"
    rows = runner.invoke(app, ["history", "--store", store_url, "--csv", "-", "--html", str(page)])
    assert rows.exit_code == 0 and rows.stdout.count(f"gpu-b: {WORKLOAD}") == 60
    assert f"gpu-a: {WORKLOAD}" in page.read_text(encoding="utf-8")
    markdown = runner.invoke(app, ["history", "--store", store_url, "-f", "markdown"])
    assert "Runs and code events of 2 machines (gpu-a, gpu-b)" in markdown.stdout
    assert "gpu-a: pull -q origin main" in markdown.stdout
    wrong = runner.invoke(app, ["history", "--store", store_url, "--group", "Llama"])
    assert wrong.exit_code == 2 and "timeline: error: --group 'Llama'" in wrong.stderr


def test_since_reads_dates_times_and_spans_back() -> None:
    now = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)
    assert parse_since("2026-05-01", now) == datetime(2026, 5, 1, tzinfo=timezone.utc)
    assert parse_since("2026-05-01T08:00+02:00", now) == datetime(2026, 5, 1, 6, tzinfo=timezone.utc)
    assert parse_since("30d", now) == now - timedelta(days=30)
    assert parse_since("2w", now) == now - timedelta(weeks=2)
    assert parse_since("12h", now) == now - timedelta(hours=12)
    with pytest.raises(UsageError, match="since 'last month': not a date"):
        parse_since("last month", now)


def test_an_empty_store_says_so_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["history", "--store", str(tmp_path / "empty.sqlite")])
    assert result.exit_code == 1
    assert result.stderr.startswith("timeline: error: ") and "no run stored: ingest a build first" in result.stderr


def test_history_starts_without_what_only_an_ingest_imports(tmp_path: Path) -> None:
    """Writing and keying runs (SQLAlchemy's PostgreSQL dialect for ON CONFLICT, the log framing)
    are an ingest's: ``timeline history`` does not import them (0.1 s of its start)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "timeline", "history", "--store", f"sqlite:///{tmp_path / 's.db'}"],
        capture_output=True,
        text=True,
    )
    assert "no run stored" in done.stderr and re.search(r"\|\s+timeline\.store\.reading$", done.stderr, re.MULTILINE)
    imported = re.findall(
        r"\|\s+(timeline\.store\.writing|timeline\.store\.keys|timeline\.parsers\.framing)$", done.stderr, re.MULTILINE
    )
    assert not imported
