"""Golden tests: every fixtures/sglang/X.log against its hand-written X.expected.json."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from parsers import parse_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sglang"
LOGS = sorted(FIXTURES.glob("*.log"))


def test_every_fixture_has_a_golden_file() -> None:
    assert len(LOGS) >= 5
    for log in LOGS:
        assert log.with_suffix(".expected.json").exists(), log.name


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
    if isinstance(expected, float) or isinstance(actual, float):
        return isinstance(actual, (int, float)) and not isinstance(actual, bool) and math.isclose(actual, expected, rel_tol=1e-9)
    if isinstance(expected, list):
        return isinstance(actual, (list, tuple)) and len(actual) == len(expected) and all(
            _same(a, e) for a, e in zip(actual, expected)
        )
    return type(actual) is type(expected) and actual == expected


def check_run(run: Any, want: dict[str, Any], *, samples: bool) -> None:
    assert run.kind == want["kind"]
    assert (run.first_line, run.last_line) == (want["first_line"], want["last_line"])
    assert run.start_text == want["start_text"]
    assert _iso(run.start) == want["start"]
    assert _iso(run.end) == want["end"]
    assert run.nccl_versions == want["nccl_versions"]
    assert len(run.config) == want["config_field_count"]
    for key, value in want["config"].items():
        got = _lookup(run.config, key)
        assert _same(got, value), (key, got, value)
    for key in want.get("config_absent", []):
        assert key not in run.config

    decode = list(run.series.get("decode_throughput", []))
    assert len(decode) == want["decode_count"]
    if decode:
        assert run.units["decode_throughput"] == "tok/s"
        assert statistics.median(decode) == pytest.approx(want["median_gen_throughput"], rel=1e-12)
    assert _same(list(run.series.get("accept_len", [])), want["accept_len"])
    if want["accept_len"]:
        assert run.units["accept_len"] == "tokens"
    assert _same(list(run.series.get("prefill_input_throughput", [])), want["prefill_input_throughput"])

    if not samples:
        assert run.samples is None
        return
    assert len(run.samples["decode"]) == want["decode_samples"]
    assert len(run.samples["prefill"]) == want["prefill_samples"]
    first = want.get("first_decode_sample")
    if first:
        sample = run.samples["decode"][0]
        for key, value in first.items():
            got = _iso(sample[key]) if key == "time" else sample[key]
            assert _same(got, value), (key, got, value)
    for sample in run.samples["decode"] + run.samples["prefill"]:
        assert list(sample)[:3] == ["time", "line", "rank"]
        assert run.first_line <= sample["line"] <= run.last_line


def check_file(parsed: Any, want: dict[str, Any], *, samples: bool) -> None:
    assert len(parsed.runs) == len(want["runs"])
    for run, wanted in zip(parsed.runs, want["runs"]):
        check_run(run, wanted, samples=samples)
    assert len(parsed.diagnostics) == len(want["diagnostics"]), [str(d) for d in parsed.diagnostics]
    for diag, wanted in zip(parsed.diagnostics, want["diagnostics"]):
        assert diag.line == wanted["line"], str(diag)
        for text in wanted["contains"]:
            assert text in diag.message, (text, str(diag))
        assert diag.source == parsed.source


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
def test_golden(log: Path, samples: bool) -> None:
    parsed = parse_file(log, keep_samples=samples)
    assert parsed.source == str(log)
    check_file(parsed, _expected(log), samples=samples)


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
@pytest.mark.parametrize("name", ["sglang-noise.log", "sglang-appended-two-launches.log"])
def test_compressed_fixture_gives_the_same_result(tmp_path: Path, opener: Any, suffix: str, name: str) -> None:
    log = FIXTURES / name
    # The suffix is deliberately wrong for one case: compression is found by magic bytes.
    packed = tmp_path / (name + (suffix if suffix != ".xz" else ".txt"))
    with opener(packed, "wb") as out:
        out.write(log.read_bytes())
    parsed = parse_file(packed, source="given/" + name, keep_samples=True)
    assert parsed.source == "given/" + name
    check_file(parsed, _expected(log), samples=True)


def test_series_do_not_depend_on_samples() -> None:
    for log in LOGS:
        plain, full = parse_file(log), parse_file(log, keep_samples=True)
        assert [r.series for r in plain.runs] == [r.series for r in full.runs]
        for run in full.runs:
            gen = [s["gen_throughput"] for s in run.samples["decode"] if isinstance(s.get("gen_throughput"), float)]
            assert gen == list(run.series.get("decode_throughput", []))
