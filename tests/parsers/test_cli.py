"""``timeline build FILE --json - --samples`` on every kind of log, through typer's CliRunner.

The JSON document (docs/json.md) must carry what the parsers read: ``samples.decode[]``
with ``gen_throughput`` / ``accept_len``, ``metrics.output_throughput.median`` for a bench_serving
block, ``nccl_versions``, ``config``. (tests/conftest.py checks every document against the schema.)
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline.cli import app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
runner = CliRunner()


def place(tmp_path: Path, name: str, folder: Path | None = None) -> Path:
    """A copy of fixtures/NAME carrying its golden file's mtime (local wall-clock time)."""
    source = FIXTURES / name
    target = (folder or tmp_path) / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    golden = json.loads(source.with_suffix(".expected.json").read_text(encoding="utf-8"))
    if "mtime" in golden:
        stamp = datetime.fromisoformat(golden["mtime"]).timestamp()
        os.utime(target, (stamp, stamp))
    return target


def build(*args: str) -> dict:
    result = runner.invoke(app, ["build", *args, "--json", "-", "--samples", "--log-tz", "UTC"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def only_run(document: dict, kind: str) -> dict:
    runs = [r for r in document["runs"] if r["kind"] == kind]
    assert len(runs) == 1, [r["kind"] for r in document["runs"]]
    return runs[0]


def test_sglang_server(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "sglang/sglang-0.5.22-pd-decode-dp-attention.log")))
    run = only_run(document, "sglang-server")
    assert run["start"] == "2026-05-10T12:00:00.018+00:00" and run["tz_source"] == "flag"
    assert run["nccl_versions"] == ["2.28.9"]
    assert run["config"]["cuda_graph_config"]["decode"]["max_bs"] == 128
    assert [s["gen_throughput"] for s in run["samples"]["decode"]] == [2512.30, 2488.75, 2530.10, 2401.66]
    assert [s["accept_len"] for s in run["samples"]["decode"]] == [2.84, 2.90, 2.79, 2.81]
    assert run["samples"]["decode"][0]["time"] == "2026-05-10T12:10:00.250+00:00"
    assert run["metrics"]["decode_throughput"]["median"] == pytest.approx(2500.525)
    assert run["metrics"]["accept_len"] == {
        "unit": "tokens",
        "n": 4,
        "median": pytest.approx(2.825),
        "mean": pytest.approx(2.835),
        "min": 2.79,
        "max": 2.90,
        # the spread of 2.79, 2.81, 2.84, 2.90 by hand: positions 0.3, 0.75, 2.25, 2.7 between them
        "stddev": pytest.approx(0.047958, rel=1e-4),
        "p10": pytest.approx(2.796),
        "p25": pytest.approx(2.805),
        "p75": pytest.approx(2.855),
        "p90": pytest.approx(2.882),
        "iqr": pytest.approx(0.05),
    }


def test_sglang_time_only_log_is_dated_from_its_mtime(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "sglang/sglang-0.2-dp-midnight.log")))
    run = only_run(document, "sglang-server")
    assert (run["start"], run["end"]) == ("2024-08-15T23:58:01+00:00", "2024-08-16T00:00:18+00:00")
    assert run["samples"]["decode"][2]["time"] == "2024-08-16T00:00:05+00:00"
    assert any("mtime" in w["message"] and "midnight" in w["message"] for w in document["warnings"])


def test_vllm_server(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "vllm/vllm-0.8.5-v1-spec-decode.log")))
    run = only_run(document, "vllm-server")
    assert run["start"] == "2025-05-06T11:59:10+00:00" and run["start_local"] == "05-06 11:59:10"
    assert (
        run["config"]["vllm_version"] == "0.8.5" and run["config"]["model_path"] == "meta-llama/Llama-3.1-8B-Instruct"
    )
    decode = run["samples"]["decode"]
    assert [s["gen_throughput"] for s in decode if "gen_throughput" in s] == [456.8, 489.1]
    assert [s["accept_len"] for s in decode if "accept_len" in s] == [2.86, 2.76]
    assert run["metrics"]["decode_throughput"]["median"] == pytest.approx(472.95)
    assert run["metrics"]["accept_len"]["median"] == pytest.approx(2.81)
    assert run["steady"]["metric"] == "decode_throughput"
    messages = " ".join(w["message"] for w in document["warnings"])
    assert "no year" in messages and "0.8.5" in messages


def test_bench_serving(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "bench/bench-serving-sglang-0.5-appended.log")))
    first, second = document["runs"]
    assert (first["kind"], second["kind"]) == ("bench-serving", "bench-serving")
    assert first["metrics"]["output_throughput"] == {
        "unit": "tok/s",
        "n": 1,
        "median": 836.19,
        "mean": 836.19,
        "min": 836.19,
        "max": 836.19,
        "stddev": None,  # one result row: no spread
        "p10": 836.19,
        "p25": 836.19,
        "p75": 836.19,
        "p90": 836.19,
        "iqr": 0.0,
    }
    assert second["metrics"]["output_throughput"]["median"] == 1462.44
    assert first["metrics"]["ttft_median"]["unit"] == "ms" and first["metrics"]["ttft_median"]["median"] == 110.0
    assert first["metrics"]["accept_length"]["median"] == 3.12
    assert (
        second["metrics"]["tpot_p99"]["median"] == 25.44 and second["metrics"]["e2e_latency_p99"]["median"] == 7020.66
    )
    assert first["config"]["request_rate"] == "inf" and first["config"]["max_concurrency"] == 16
    assert first["start"] is None and first["attribution"] == "no-repo" and first["steady"]["source"] == "bench-client"
    (row,) = first["samples"]["result"]
    assert row["output_throughput"] == 836.19 and row["line"] == 7
    assert first["samples"]["decode"] == [] and first["samples"]["prefill"] == []


def test_bench_in_a_server_log_is_its_own_run_at_the_servers_time(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "bench/bench-serving-in-server-log.log")))
    server = only_run(document, "sglang-server")
    bench = only_run(document, "bench-serving")
    assert bench["start"] == "2026-02-01T10:00:33+00:00" and bench["end"] == "2026-02-01T10:01:16+00:00"
    assert bench["tz"] == server["tz"] == "UTC"
    assert bench["metrics"]["output_throughput"]["median"] == 829.99
    assert server["metrics"]["decode_throughput"]["n"] == 3


@pytest.mark.parametrize(
    "name,kind,metric,value",
    [
        ("bench/bench-one-batch-0.5.log", "bench-one-batch", "decode_median_throughput", 154.80),
        ("bench/bench-one-batch-server-0.5.log", "bench-one-batch-server", "output_throughput", 263.92),
        ("bench/bench-offline-throughput.log", "bench-offline-throughput", "output_throughput", 2249.82),
        ("bench/bench-serving-vllm-0.8-0.18-0.33.log", "bench-serving", "total_throughput", 9105.19),
    ],
)
def test_other_bench_clients(tmp_path: Path, name: str, kind: str, metric: str, value: float) -> None:
    document = build(str(place(tmp_path, name)))
    runs = [r for r in document["runs"] if r["kind"] == kind]
    assert runs and runs[0]["metrics"][metric]["median"] == value
    assert "result" in runs[0]["samples"]


def test_docker_stamps_are_in_line_times(tmp_path: Path) -> None:
    document = build(str(place(tmp_path, "wrappers/wrappers-docker-logs-t.log")))
    run = only_run(document, "sglang-server")
    assert run["tz_source"] == "in-line"
    assert run["start"] == "2026-02-01T10:00:00.120+00:00"
    assert run["samples"]["decode"][0]["time"] == "2026-02-01T10:06:00.123+00:00"


def test_a_mix_of_every_kind_in_one_call(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    names = [
        "sglang/sglang-0.4.5-eagle-trailing.log",
        "vllm/vllm-0.11-dp-engines.log",
        "bench/bench-serving-sglang-0.4.1.log",
        "bench/bench-one-batch-0.3-bench-latency.log",
        "bench/bench-one-batch-server-0.5.log",
        "bench/bench-offline-throughput.log",
    ]
    for name in names:
        place(tmp_path, name, logs)
    rotated = logs / "server.log.1"  # a rotated log is found in a folder too
    shutil.copyfile(FIXTURES / "wrappers/wrappers-ray-actor.log", rotated)
    document = build(str(logs))
    kinds = sorted({r["kind"] for r in document["runs"]})
    assert kinds == [
        "bench-offline-throughput",
        "bench-one-batch",
        "bench-one-batch-server",
        "bench-serving",
        "sglang-server",
        "vllm-server",
    ]
    assert any(r["source"].endswith("server.log.1") for r in document["runs"])


def test_table_shows_a_bench_runs_main_metric(tmp_path: Path) -> None:
    log = place(tmp_path, "bench/bench-serving-in-server-log.log")
    result = runner.invoke(app, ["build", str(log), "--log-tz", "UTC"], catch_exceptions=False, env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "output 830.0 tok/s" in result.stdout and "TTFT median 80.5 ms" in result.stdout


FIXTURE_LOGS = sorted((Path(__file__).resolve().parents[2] / "fixtures").glob("*/*.log"))


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=[p.name for p in FIXTURE_LOGS])
def test_every_fixtures_samples_hold_numbers_where_the_schema_says(log: Path) -> None:
    """No sample of any fixture has text in a numeric field: the schema lists the measurements as
    numbers (null for a damaged value) and the strict validation enforces it."""
    import timeline
    from timeline.schema import load_schema, validate

    document = timeline.to_dict(timeline.build([str(log)], log_tz="UTC", keep_samples=True))
    validate(json.loads(json.dumps(document)), strict=True)
    properties = load_schema()["$defs"]["sample"]["properties"]
    numeric = [name for name, spec in properties.items() if spec.get("$ref") == "#/$defs/measurement"]
    assert "gen_throughput" in numeric and "running_req" in numeric
    for run in document["runs"]:
        for rows in (run.get("samples") or {}).values():
            for row in rows:
                for name in numeric:
                    value = row.get(name)
                    assert not isinstance(value, str) or value in ("inf", "-inf", "nan"), (log.name, name, value)
