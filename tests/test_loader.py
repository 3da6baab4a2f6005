"""``timeline.load``: a JSON export read back into a Timeline gives the same JSON and the same frames."""

from __future__ import annotations

import json

import pandas.testing as pdt
import pytest
from test_culprits import nine_commit_pull
from typer.testing import CliRunner

import timeline
from timeline.cli import app
from timeline.export import dumps
from timeline.frames import SamplesNotKeptError, events_frame, runs_frame, samples_frame, shifts_frame
from timeline.loader import DocumentError, from_document, load

FRAMES = (runs_frame, events_frame, shifts_frame)


def assert_same_frames(built, loaded, frames=FRAMES):
    for frame in frames:
        pdt.assert_frame_equal(frame(loaded), frame(built), obj=frame.__name__)


def test_the_demo_with_samples_round_trips(demo, tmp_path):
    target = tmp_path / "timeline.json"
    args = ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--samples", "--json", str(target)]
    assert CliRunner().invoke(app, args).exit_code == 0
    loaded = timeline.load(target)
    assert dumps(loaded) == target.read_text(encoding="utf-8")  # byte for byte, generated_at included
    built = timeline.build(demo.logs, repo=demo.repo, log_tz="UTC", keep_samples=True)
    assert_same_frames(built, loaded, (*FRAMES, samples_frame))
    left_out = loaded.shifts[0].notes.left_out
    assert left_out == [("r2", "mixed")] and loaded.shifts[0].notes == built.shifts[0].notes
    assert [s.cleared for s in loaded.shifts[0].suspects] == [s.cleared for s in built.shifts[0].suspects]
    assert any(s.cleared is not None for s in loaded.shifts[0].suspects)
    assert [w.code for w in loaded.warnings] == [w.code for w in built.warnings]


def test_confounders_reruns_and_ranked_evidence_round_trip(tmp_path):
    repo, logs, _ = nine_commit_pull(tmp_path, True, False)
    built = timeline.build(logs, repo=repo, log_tz="UTC")
    assert built.shifts[0].verdict == "confounded" and built.shifts[0].reruns  # the story has them all
    path = tmp_path / "t.json"
    path.write_text(dumps(built), encoding="utf-8")
    loaded = load(path)
    assert dumps(loaded) == dumps(built)
    assert loaded.shifts == built.shifts and loaded.culprits == built.culprits
    assert_same_frames(built, loaded)
    with pytest.raises(SamplesNotKeptError):  # written without --samples: none to give
        samples_frame(loaded)


def test_a_document_from_to_dict_loads_too(demo):
    built = timeline.build(demo.logs, repo=demo.repo, log_tz="UTC")
    loaded = from_document(json.loads(json.dumps(timeline.to_dict(built))))
    assert [(r.id, r.commit, r.steady) for r in loaded.runs] == [(r.id, r.commit, r.steady) for r in built.runs]
    assert loaded.events[1].commits == built.events[1].commits and loaded.events[1].ts == built.events[1].ts


def _older(document: dict, version: int) -> dict:
    """A version 3 document as version 2 wrote it (``commits`` keyed by sha, events list shas)
    or version 1 (each event lists its commits whole, no ``commits``)."""
    commits = document.pop("commits")
    document["schema_version"] = version
    if version == 2:
        document["commits"] = {c["sha"]: {k: v for k, v in c.items() if k != "sha"} for c in commits}
    for event in document["events"]:
        for key in ("commits", "commits_removed"):
            event[key] = [commits[i]["sha"] if version == 2 else commits[i] for i in event[key]]
    return document


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_version_loads_too(demo, version):
    """Version 1 gave each event its commits whole; version 2 listed shas, described once in an
    object keyed by sha; version 3 lists positions in the ``commits`` array."""
    built = timeline.build(demo.logs, repo=demo.repo, log_tz="UTC")
    document = _older(json.loads(json.dumps(timeline.to_dict(built))), version)
    assert any(e["commits_removed"] for e in document["events"])
    loaded = from_document(document)
    assert [e.commits for e in loaded.events] == [e.commits for e in built.events]
    assert [e.commits_removed for e in loaded.events] == [e.commits_removed for e in built.events]
    assert dumps(loaded) == dumps(built)  # written back as version 3


def test_a_position_past_the_end_of_commits_is_said_in_one_line(demo):
    document = json.loads(json.dumps(timeline.to_dict(timeline.build(demo.logs, repo=demo.repo, log_tz="UTC"))))
    document["events"][1]["commits"] = [len(document["commits"])]
    said = r"^doc: not a valid timeline JSON document \(ValueError: event e2 lists commit 4, which commits does not"
    with pytest.raises(DocumentError, match=said + r" describe\)$"):
        from_document(document, "doc")


@pytest.mark.parametrize(
    "content, said",
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a timeline JSON document (no schema_version)"),
        (b'{"schema_version": 4}', "schema_version 4, this timeline reads 1, 2 and 3"),
        (b'{"schema_version": 3, "runs": []}', "not a valid timeline JSON document (KeyError: 'generated_at')"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_what_is_not_a_document_is_said_in_one_line_naming_the_file(tmp_path, content, said):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(DocumentError) as raised:
        load(path)
    assert str(raised.value).startswith(f"{path}: {said}") and "\n" not in str(raised.value)


def test_a_missing_file_is_said_naming_it(tmp_path):
    with pytest.raises(DocumentError, match=r"gone\.json: cannot read: No such file"):
        load(tmp_path / "gone.json")


def test_the_machine_of_runs_and_events_round_trips_and_splits_the_workloads(demo, exported_documents):
    """A timeline of several machines (timeline history) names each run's and event's machine;
    build's document has no such field; a workload is one machine's."""
    from timeline.shifts import workload_groups

    built = timeline.build(demo.logs, repo=demo.repo, log_tz="UTC")
    assert "machine" not in json.loads(dumps(built))["runs"][0]
    for run in built.runs:
        run.machine = "gpu-a" if run.id in ("r1", "r2") else "gpu-b"
    for event in built.events:
        event.machine = "gpu-a"
    document = json.loads(dumps(built))  # checked against the schema when the test ends
    assert [r["machine"] for r in document["runs"]] == ["gpu-a", "gpu-a", "gpu-b", "gpu-b"]
    assert {e["machine"] for e in document["events"]} == {"gpu-a"}
    loaded = from_document(document)
    assert [(r.id, r.machine) for r in loaded.runs] == [(r.id, r.machine) for r in built.runs]
    assert [e.machine for e in loaded.events] == [e.machine for e in built.events]
    groups = workload_groups(built.runs)
    assert {label: [r.id for r in runs] for label, runs in groups.items()} == {
        "gpu-a: Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3": ["r1", "r2"],
        "gpu-b: Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3": ["r3", "r4"],
    }
    exported_documents.append(document)
