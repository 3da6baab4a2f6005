"""`timeline build --format table|json|csv|markdown`, and --csv FILE / --json FILE written atomically."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from timeline.cli import app
from timeline.frames import runs_frame

runner = CliRunner()


def invoke(*args: str, **kwargs):
    return runner.invoke(app, list(args), catch_exceptions=False, **kwargs)


def demo_args(demo) -> list[str]:
    return ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC"]


def test_csv_has_one_row_per_run_and_loads_with_pandas(demo):
    result = invoke(*demo_args(demo), "--format", "csv")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout), parse_dates=["start", "end"])
    document = json.loads(invoke(*demo_args(demo), "--format", "json").stdout)
    assert list(frame["run_id"]) == [run["id"] for run in document["runs"]]
    assert list(frame["commit"]) == [run["commit"] for run in document["runs"]]
    assert list(frame["attribution"]) == ["exact", "mixed", "exact", "exact"]
    assert str(frame["start"].dt.tz) == "UTC"
    assert frame["start"].iloc[0] == pd.Timestamp("2026-03-02T16:42:00Z")
    assert set(frame["group"]) == {"Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3"}
    assert frame["tp_size"].tolist() == [8] * 4 and set(frame["speculative_algorithm"]) == {"EAGLE3"}
    medians = [run["metrics"]["decode_throughput"]["median"] for run in document["runs"]]
    assert frame["decode_throughput_median"].tolist() == pytest.approx(medians, abs=1e-12)
    assert frame["decode_throughput_n"].dtype == "int64"
    assert frame["nccl_versions"].tolist() == ["2.27.5"] * 4
    assert frame.loc[1, "events_during"] == "e2"


def test_csv_and_runs_frame_agree(demo):
    import timeline

    built = timeline.build([demo.logs], repo=demo.repo, log_tz="UTC")
    from timeline.render.csv import timeline_csv

    from_csv = pd.read_csv(io.StringIO(timeline_csv(built)))
    frame = runs_frame(built)
    assert list(from_csv.columns) == list(frame.columns)
    assert from_csv["decode_throughput_mean"].tolist() == frame["decode_throughput_mean"].tolist()


def test_csv_file_is_written_atomically_next_to_the_table(demo, tmp_path):
    target = tmp_path / "out" / "runs.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    result = invoke(*demo_args(demo), "--csv", str(target), "--json", str(tmp_path / "out" / "t.json"))
    assert result.exit_code == 0
    assert "Timeline" in result.stdout  # the table is still printed
    assert target.read_text().startswith("run_id,source,")
    assert sorted(p.name for p in target.parent.iterdir()) == ["runs.csv", "t.json"]  # no temporary left


def test_csv_dash_is_standard_output_only(demo):
    result = invoke(*demo_args(demo), "--csv", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith("run_id,source,") and "Timeline" not in result.stdout


def test_format_json_is_the_json_document(demo):
    result = invoke(*demo_args(demo), "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["schema_version"] == 3


def test_format_markdown_prints_markdown(demo):
    import importlib.util

    result = invoke(*demo_args(demo), "--format", "markdown")
    if importlib.util.find_spec("timeline.render.markdown") is None:  # wired before the renderer lands
        assert result.exit_code == 2 and "--format markdown is not available" in result.stderr
        return
    assert result.exit_code == 0, result.output
    assert "|" in result.stdout and "Fix PCG MoE Error" in result.stdout
    assert "┏" not in result.stdout  # not the rich table


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "yaml"], "unknown --format 'yaml'"),
        (["--format", "json", "--csv", "-"], "--csv - and --format json both write to standard output"),
        (["--json", "-", "--csv", "-"], "--csv - and --json - both write to standard output"),
    ],
)
def test_clashing_or_unknown_formats_are_usage_errors(demo, args, message):
    result = invoke(*demo_args(demo), *args)
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert result.stdout == ""
