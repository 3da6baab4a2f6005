"""Golden tests: every fixtures/<family>/X.log against its hand-written X.expected.json."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import os
import shutil
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from timeline.builder import digest_series
from timeline.parsers import parse_file, sglang_fast
from timeline.shifts import steady_of

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURES = ROOT / "sglang"
LOGS = sorted(ROOT.glob("*/*.log"))


def test_every_fixture_has_a_golden_file() -> None:
    assert len(LOGS) >= 30
    for log in LOGS:
        assert log.with_suffix(".expected.json").exists(), log.name
    names = [log.name for log in LOGS]
    assert len(names) == len(set(names)), "fixture names must be unique across folders (captured_log)"


def _expected(log: Path) -> dict[str, Any]:
    return json.loads(log.with_suffix(".expected.json").read_text(encoding="utf-8"))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _lookup(config: dict[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        assert isinstance(value, dict) and part in value, f"config has no {dotted!r}"
        value = value[part]
    return value


def _same(actual: Any, expected: Any) -> bool:
    if expected == "inf" and isinstance(actual, float):
        return math.isinf(actual) and actual > 0
    if isinstance(expected, float) or isinstance(actual, float):
        return (
            isinstance(actual, (int, float))
            and not isinstance(actual, bool)
            and math.isclose(actual, expected, rel_tol=1e-9)
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_same(a, e) for a, e in zip(actual, expected, strict=False))
        )
    return type(actual) is type(expected) and actual == expected


def _check_sample(sample: dict[str, Any], want: dict[str, Any]) -> None:
    for key, value in want.items():
        got = _iso(sample[key]) if key == "time" else sample.get(key, "<missing>")
        assert _same(got, value), (key, got, value)


def _check_steady(run: Any, want: dict[str, Any]) -> None:
    steady = steady_of(run)
    assert steady is not None
    assert _same(steady.value, want["value"]), steady
    assert steady.n == want["n"], steady
    assert sorted(steady.ranks) == sorted(want["ranks"]), steady.ranks
    for rank, value in want["ranks"].items():
        assert _same(steady.ranks[rank], value), (rank, steady.ranks[rank])


def check_run(run: Any, want: dict[str, Any], *, samples: bool) -> None:
    assert run.kind == want["kind"]
    assert (run.first_line, run.last_line) == (want["first_line"], want["last_line"])
    assert run.start_text == want["start_text"]
    assert _iso(run.start) == want["start"]
    assert _iso(run.end) == want["end"]
    assert run.nccl_versions == want["nccl_versions"]
    assert run.cuda_driver_versions == want.get("cuda_driver_versions", [])
    if "config_field_count" in want:
        assert len(run.config) == want["config_field_count"], sorted(run.config)
    for key, value in want.get("config", {}).items():
        got = _lookup(run.config, key)
        assert _same(got, value), (key, got, value)
    for key in want.get("config_absent", []):
        assert key not in run.config
    assert run.measures == want.get("measures")
    # How the launch ended, and where its dates come from: said in every golden that is not the usual.
    assert run.status == want.get("status", "ok")
    assert (run.error_line, run.error) == (want.get("error_line"), want.get("error"))
    assert run.date_source == want.get("date_source", None if want["start"] is None else "stamp")
    if run.kind.endswith("-server"):  # every server run's golden lists its messages, even none
        assert "messages" in want, "golden run without its messages"
    assert run.messages == want.get("messages", [])

    # Ranks that each log their own decode lines (DP ranks, vLLM engines): each rank's series, exactly.
    want_ranks = want.get("rank_series", {})
    assert sorted(run.rank_series) == sorted(want_ranks), sorted(run.rank_series)
    for rank, values in want_ranks.items():
        assert _same(list(run.rank_series[rank]), values), (rank, list(run.rank_series[rank]))

    if "series" in want:  # every series, exactly: {"name": {"unit": u, "values": [...]}}
        assert sorted(run.series) == sorted(want["series"]), sorted(run.series)
        for name, spec in want["series"].items():
            assert run.units[name] == spec["unit"], (name, run.units[name])
            if "values" in spec:
                assert _same(list(run.series[name]), spec["values"]), (name, list(run.series[name]))
            if "median" in spec:
                assert len(run.series[name]) == spec["n"], name
                assert statistics.median(run.series[name]) == pytest.approx(spec["median"], rel=1e-12)
    else:
        decode = list(run.series.get("decode_throughput", []))
        assert len(decode) == want["decode_count"]
        if decode:
            assert run.units["decode_throughput"] == "tok/s"
            assert statistics.median(decode) == pytest.approx(want["median_gen_throughput"], rel=1e-12)
        assert _same(list(run.series.get("accept_len", [])), want.get("accept_len", []))
        if want.get("accept_len"):
            assert run.units["accept_len"] == "tokens"
        assert _same(list(run.series.get("prefill_input_throughput", [])), want.get("prefill_input_throughput", []))

    if "steady" in want:  # the run's one number (timeline.shifts.steady_of), also once its series are digested
        _check_steady(run, want["steady"])
        if not samples:
            digest_series(run)
            _check_steady(run, want["steady"])

    if not samples:
        assert run.samples is None
        return
    counts = want.get("samples_count")
    if counts is None:
        counts = {"decode": want["decode_samples"], "prefill": want["prefill_samples"]}
    assert {k: len(v) for k, v in run.samples.items()} == counts
    first = want.get("first_decode_sample")
    if first:
        _check_sample(run.samples["decode"][0], first)
    for check in want.get("sample_checks", []):
        _check_sample(run.samples[check["kind"]][check["index"]], check["fields"])
    for rows in run.samples.values():
        for sample in rows:
            assert list(sample)[:3] == ["time", "line", "rank"]
            assert run.first_line <= sample["line"] <= run.last_line


def check_file(parsed: Any, want: dict[str, Any], *, samples: bool) -> None:
    assert len(parsed.runs) == len(want["runs"]), [(r.kind, r.first_line) for r in parsed.runs]
    for run, wanted in zip(parsed.runs, want["runs"], strict=False):
        check_run(run, wanted, samples=samples)
    assert len(parsed.diagnostics) == len(want["diagnostics"]), [str(d) for d in parsed.diagnostics]
    for diag, wanted in zip(parsed.diagnostics, want["diagnostics"], strict=False):
        assert diag.line == wanted["line"], str(diag)
        for text in wanted["contains"]:
            assert text in diag.message, (text, str(diag))
        assert diag.source == parsed.source


def placed(log: Path, tmp_path: Path, want: dict[str, Any], name: str | None = None) -> Path:
    """The log itself, or a copy carrying the golden file's ``mtime`` (local wall-clock time)."""
    if "mtime" not in want and name is None:
        return log
    copy = tmp_path / (name or log.name)
    shutil.copyfile(log, copy)
    if "mtime" in want:
        stamp = datetime.fromisoformat(want["mtime"]).timestamp()
        os.utime(copy, (stamp, stamp))
    return copy


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
@pytest.mark.parametrize("fast", [False, True], ids=["line-by-line", "fast-path"])
def test_golden(log: Path, samples: bool, fast: bool, tmp_path: Path, monkeypatch) -> None:
    """Each golden file holds on both readings of a log: line by line (small logs), and the
    fast path that logs of FAST_MIN_BYTES or more take (for speed), forced here on the small ones."""
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0 if fast else 1 << 62)
    want = _expected(log)
    parsed = parse_file(placed(log, tmp_path, want), source=str(log), keep_samples=samples)
    assert parsed.source == str(log)
    check_file(parsed, want, samples=samples)


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
@pytest.mark.parametrize(
    "name",
    [
        "sglang/sglang-noise.log",
        "sglang/sglang-appended-two-launches.log",
        "vllm/vllm-0.5.5-v0-new-year.log",
        "bench/bench-serving-in-server-log.log",
    ],
)
def test_compressed_fixture_gives_the_same_result(tmp_path: Path, opener: Any, suffix: str, name: str) -> None:
    log = ROOT / name
    want = _expected(log)
    # The suffix is deliberately wrong for one case: compression is found by magic bytes.
    packed = tmp_path / (log.name + (suffix if suffix != ".xz" else ".txt"))
    with opener(packed, "wb") as out:
        out.write(log.read_bytes())
    if "mtime" in want:
        stamp = datetime.fromisoformat(want["mtime"]).timestamp()
        os.utime(packed, (stamp, stamp))
    parsed = parse_file(packed, source="given/" + log.name, keep_samples=True)
    assert parsed.source == "given/" + log.name
    check_file(parsed, want, samples=True)


def test_series_do_not_depend_on_samples(tmp_path: Path) -> None:
    for log in LOGS:
        want = _expected(log)
        path = placed(log, tmp_path, want)
        plain, full = parse_file(path), parse_file(path, keep_samples=True)
        assert [r.series for r in plain.runs] == [r.series for r in full.runs], log.name
        for run in full.runs:
            if run.kind != "sglang-server":
                continue
            gen = [s["gen_throughput"] for s in run.samples["decode"] if isinstance(s.get("gen_throughput"), float)]
            assert gen == list(run.series.get("decode_throughput", [])), log.name
