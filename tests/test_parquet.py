"""``timeline build --parquet DIR`` (``timeline/parquet.py``): the frames as Parquet, read back by DuckDB."""

from __future__ import annotations

import json
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import timeline
from timeline.cli import app
from timeline.parquet import ParquetUnavailable, write_parquet

runner = CliRunner()


def build_args(demo, *more: str) -> list[str]:
    return ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", *more]


@pytest.fixture(scope="module")
def tables(demo, tmp_path_factory):
    folder = tmp_path_factory.mktemp("parquet") / "tables"
    document = folder.parent / "t.json"
    result = runner.invoke(app, build_args(demo, "--parquet", str(folder), "--json", str(document)))
    assert result.exit_code == 0, result.output
    return folder, json.loads(document.read_text())


def test_the_four_tables_are_written(tables):
    folder, document = tables
    assert sorted(p.name for p in folder.iterdir()) == [
        "events.parquet",
        "runs.parquet",
        "samples.parquet",
        "shifts.parquet",
    ]  # and no temporary left
    assert all("samples" not in run for run in document["runs"])  # kept for Parquet, not put in the JSON


def test_duckdb_finds_the_same_medians(tables):
    folder, document = tables
    db = duckdb.connect()
    samples, runs = folder / "samples.parquet", folder / "runs.parquet"
    from_lines = dict(
        db.execute(
            f"SELECT run_id, median(gen_throughput) FROM '{samples}' WHERE kind = 'decode' GROUP BY run_id"
        ).fetchall()
    )
    from_runs = dict(db.execute(f"SELECT run_id, decode_throughput_median FROM '{runs}'").fetchall())
    from_json = {run["id"]: run["metrics"]["decode_throughput"]["median"] for run in document["runs"]}
    assert from_lines == pytest.approx(from_json) and from_runs == pytest.approx(from_json)
    joined = db.execute(f"SELECT count(*) FROM '{samples}' JOIN '{runs}' USING (run_id, commit, \"group\")").fetchone()
    assert joined == db.execute(f"SELECT count(*) FROM '{samples}'").fetchone()
    subjects = db.execute(f"SELECT commit_subject FROM '{folder / 'events.parquet'}' ORDER BY time").fetchall()
    assert [s for (s,) in subjects] == [
        "Tune NCCL allreduce for PCIe",
        "Fix PCG MoE Error",
        "Feat/add fi selective state update kernel call",
    ]
    shifts = db.execute(f"SELECT shift_id, verdict, \"end\" > start FROM '{folder / 'shifts.parquet'}'").fetchall()
    assert shifts == [("s1", "regression", True), ("s2", "improvement", True)]


def test_the_samples_are_typed_columns(tables):
    schema = pq.read_schema(tables[0] / "samples.parquet")
    assert schema.field("time").type == pa.timestamp("ns", tz="UTC")
    assert schema.field("gen_throughput").type == pa.float64() and schema.field("line").type == pa.int64()
    assert schema.field("cuda_graph").type == pa.bool_()
    for name in ("run_id", "commit", "commit_short", "commit_subject", "group", "kind", "rank"):
        assert pa.types.is_dictionary(schema.field(name).type), name  # a label stored once, not a text a row
    assert not [f.name for f in schema if f.type in (pa.string(), pa.large_string())]


def test_a_timeline_without_samples_writes_the_other_three(demo, tmp_path):
    built = timeline.build(demo.logs, repo=demo.repo, log_tz="UTC")
    written = write_parquet(built, tmp_path / "out")
    assert [p.name for p in written] == ["runs.parquet", "events.parquet", "shifts.parquet"]
    confounders = pq.read_table(written[2]).column("confounders").to_pylist()
    assert confounders == ["[]", "[]"]  # JSON text: their values mix types


def test_without_pyarrow_it_says_so_in_one_line_before_any_work(demo, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    result = runner.invoke(app, build_args(demo, "--parquet", str(tmp_path / "tables")))
    assert result.exit_code == 1
    assert result.stderr == "timeline: error: writing Parquet needs pyarrow: pip install 'timeline[parquet]'\n"
    assert result.stdout == "" and not (tmp_path / "tables").exists()
    with pytest.raises(ParquetUnavailable):
        write_parquet(timeline.build(demo.logs, log_tz="UTC"), tmp_path / "t")


def test_the_readme_query_runs_on_the_files(tables):
    from pathlib import Path

    folder, document = tables
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    query = readme.split("```sql\n", 1)[1].split("\n```", 1)[0].replace("'tables/", f"'{folder}/")
    rows = duckdb.connect().execute(query).fetchall()
    assert [(run_id, median) for _, _, run_id, median in rows] == [
        (run["id"], pytest.approx(run["metrics"]["decode_throughput"]["median"])) for run in document["runs"]
    ]
    assert rows[2][:2] == (document["shifts"][0]["to"]["commit"][:9], "Fix PCG MoE Error")


def test_a_field_of_mixed_types_is_written_as_text(tmp_path):
    # a field no parser knows, a number in one line and a word in the next: Arrow cannot type it
    log = tmp_path / "mixed.log"
    stats = "Decode batch. #running-req: 1, #token: {}, gen throughput (token/s): {}, #queue-req: 0, mode: {}"
    log.write_text(
        "[2026-04-07 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        + "".join(
            f"[2026-04-07 10:00:{10 * i}] " + stats.format(100 + i, 100.5 + i, mode) + "\n"
            for i, mode in enumerate(["3", "fast", "4"], 1)
        ),
        encoding="utf-8",
    )
    built = timeline.build(log, log_tz="UTC", keep_samples=True, cache=False)
    frame = timeline.samples_frame(built)
    assert frame["mode"].tolist() == [3, "fast", 4]
    written = write_parquet(built, tmp_path / "tables")
    column = pq.read_table(written[1]).column("mode")
    assert column.type == pa.string()
    assert column.to_pylist() == ["3", "fast", "4"]
