"""The JSON document is written in pieces (a ``--samples`` build of a big log is never one string):
a run's samples a batch at a time, the same
text as encoding the whole document at once."""

from __future__ import annotations

import json
from array import array
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from timeline import build
from timeline.cli import app
from timeline.clock import iso
from timeline.export import SAMPLE_BATCH, _iso_texts, dumps, json_pieces, timeline_to_dict
from timeline.scenario import Launch, write_sglang_log

LINES = 3 * SAMPLE_BATCH + 17


def whole(document: dict) -> str:
    """The document's text from ``timeline_to_dict`` in one go: the top level indented, each
    item of a list on a line of its own (``export.json_pieces``' layout)."""

    def compact(value) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)

    fields = []
    for key, value in document.items():
        if isinstance(value, list) and value:
            text = "[\n" + ",\n".join(f"    {compact(item)}" for item in value) + "\n  ]"
        elif key == "commits" and value:
            text = "{\n" + ",\n".join(f"    {compact(sha)}: {compact(item)}" for sha, item in value.items()) + "\n  }"
        else:
            text = compact(value)
        fields.append(f"  {compact(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def busy_log(path: Path) -> Path:
    start = datetime(2026, 3, 29, 0, 30)  # Europe/Berlin springs forward at 02:00 during it
    lines = ["[2026-03-29 00:29:58] server_args=ServerArgs(model_path='m', tp_size=1)"]
    for i in range(LINES):
        stamp = (start + timedelta(seconds=2 * i)).strftime("%Y-%m-%d %H:%M:%S")
        gen = {5: "inf", 9: "-inf", 11: "nan"}.get(i, f"{90 + i % 11}.{i % 100:02d}")
        lines.append(
            f"[{stamp} TP{i % 2}] Decode batch. #running-req: {1 + i % 4}, #token: {100 + i}, "
            f"token usage: 0.{i % 90 + 10}, cuda graph: {i % 3 == 0}, gen throughput (token/s): {gen}, "
            f"#queue-req: 0"
        )
        if i % 1000 == 0:
            lines.append(
                f"[{stamp} TP0] Prefill batch. #new-seq: 1, #new-token: {i + 8}, #cached-token: 0, "
                f"token usage: 0.01, #running-req: 1, #queue-req: 0"
            )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pieces_are_the_whole_document_in_batches(tmp_path: Path) -> None:
    log = busy_log(tmp_path / "server.log")
    timeline = build([log], log_tz="Europe/Berlin", keep_samples=True, cache=False)
    pieces = list(json_pieces(timeline))
    text = "".join(pieces)
    assert text == whole(timeline_to_dict(timeline)) == dumps(timeline)
    (run,) = json.loads(text)["runs"]
    decode = run["samples"]["decode"]
    assert [decode[i]["gen_throughput"] for i in (5, 9, 11)] == ["inf", "-inf", "nan"]
    assert len(decode) == LINES and decode[6]["cuda_graph"] is True
    assert len(run["samples"]["prefill"]) == 13
    # After 02:00 local the offset is +02:00: the times went through the zone, row by row.
    assert decode[0]["time"] == "2026-03-29T00:30:00+01:00" and decode[-1]["time"].endswith("+02:00")
    # No piece holds more than a batch of samples.
    batch_text = max(len(p) for p in pieces)
    assert len(pieces) > LINES // SAMPLE_BATCH and batch_text < len(text) / 2


def test_each_commit_is_described_once_and_events_name_it(demo) -> None:
    result = build([demo.logs], repo=demo.repo, log_tz="UTC")
    document = timeline_to_dict(result)
    assert dumps(result) == whole(document)
    listed = [i for event in document["events"] for key in ("commits", "commits_removed") for i in event[key]]
    assert len(listed) > len(set(listed))  # the reset takes away a commit the pull brought in...
    assert list(dict.fromkeys(listed)) == list(range(len(document["commits"])))  # ...described once, in order
    shas = [c["sha"] for c in document["commits"]]
    assert len(set(shas)) == len(shas)
    reset = next(e for e in result.events if e.kind == "reset")
    (position,) = next(e for e in document["events"] if e["id"] == reset.id)["commits_removed"]
    removed = reset.commits_removed[0]
    assert document["commits"][position] == {
        "sha": removed.sha,
        "subject": removed.subject,
        "author": removed.author,
        "author_email": removed.author_email,
        "author_date": iso(removed.author_date),
        "committer_date": iso(removed.committer_date),
        "paths": list(removed.paths or ()),
    }


def test_events_written_from_their_fields_are_their_dicts_text(demo) -> None:
    # every field of an event in each of its forms: text JSON must escape, text it need not,
    # None, the flags set, a machine's name (timeline.history), commit lists shared by events
    result = build([demo.logs], repo=demo.repo, log_tz="UTC")
    first, *others = result.events
    odd = replace(
        first,
        message='reset: "moving" to \\HEAD\x1b[2J \u202e\u00fcber \ud83d\ude80',
        source="/logs/\udcff/HEAD",
        line=None,
        detail="fast-forward",
        note="files \u201cmay\u201d differ",
        approximate=True,
        files_may_differ=True,
        old_inferred=True,
        machine="gpu-\u00e9\t1",
    )
    shared = replace(others[-1], commits=odd.commits, commits_removed=odd.commits)
    changed = replace(result, events=[odd, *others, shared], context=[replace(others[0], machine="m")])
    document = timeline_to_dict(changed)
    assert dumps(changed) == whole(document)
    assert document["events"][0]["message"] == odd.message and document["events"][0]["machine"] == odd.machine
    assert document["events"][-1]["commits_removed"] == document["events"][0]["commits"]


def test_the_cli_writes_the_same_document(tmp_path: Path) -> None:
    log = busy_log(tmp_path / "server.log")
    out = tmp_path / "timeline.json"
    result = CliRunner().invoke(
        app,
        ["build", str(log), "--log-tz", "Europe/Berlin", "--samples", "--json", str(out), "--no-cache"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    again = build([log], log_tz="Europe/Berlin", keep_samples=True, cache=False)
    written, expected = json.loads(out.read_text()), json.loads(dumps(again))
    written.pop("generated_at"), expected.pop("generated_at")
    assert written == expected


@settings(max_examples=200, deadline=None)
@given(
    walls=st.lists(
        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)), min_size=1, max_size=30
    ),
    near=st.booleans(),
    zone=st.sampled_from(
        [
            None,
            timezone.utc,
            timezone(timedelta(hours=-3, minutes=-30)),
            ZoneInfo("Europe/Berlin"),
            ZoneInfo("Asia/Kolkata"),
        ]
    ),
)
def test_times_written_at_once_are_iso_of_each(walls, near, zone) -> None:
    """``_iso_texts`` (numpy's datetime64 text) writes what ``iso`` writes of each time: seconds
    or milliseconds, years before 1970 and 1000, the zone's offset (one for all, or each its own)."""
    if near:  # times a few hours apart, as a run's are (the zone's offset is then mostly steady)
        walls = [walls[0] + timedelta(seconds=37.123457 * i) for i in range(len(walls)) if walls[0].year < 9999]
    numbers = array("q", [(wall - datetime.min) // timedelta(microseconds=1) for wall in walls])
    expected = [json.dumps(iso(wall.replace(tzinfo=zone))) for wall in walls]
    assert _iso_texts(numbers, zone) == expected


def test_the_document_records_its_provenance(tmp_path: Path) -> None:
    import platform

    import timeline
    from timeline.environment import Environment

    log = busy_log(tmp_path / "server.log")
    env = Environment(host=lambda: "gpu-node-7")
    document = timeline_to_dict(build(log, log_tz="UTC", cache=False, env=env, min_effect=0.05))
    assert document["generator"] == {
        "name": "timeline",
        "version": timeline.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    assert document["host"] == "gpu-node-7"
    assert document["options"] == {
        "paths": [str(log)],
        "repo": None,
        "log_tz": ["UTC"],
        "tolerance_s": 60.0,
        "min_effect": 0.05,
        "samples": False,
        "entries": [],
    }
    left_out = timeline_to_dict(build(log, log_tz="UTC", cache=False, env=env, record_host=False))
    assert left_out["host"] is None and left_out["generator"] == document["generator"]


def test_no_host_leaves_the_machine_out_of_the_json(tmp_path: Path) -> None:
    log = busy_log(tmp_path / "server.log")
    args = ["build", str(log), "--log-tz", "UTC", "--no-cache", "--json", "-"]
    named = json.loads(CliRunner().invoke(app, args, catch_exceptions=False).stdout)
    assert isinstance(named["host"], str) and named["host"]
    result = CliRunner().invoke(app, [*args, "--no-host", "--min-effect", "5"], catch_exceptions=False)
    document = json.loads(result.stdout)
    assert document["host"] is None and document["options"]["min_effect"] == 0.05


def test_runs_are_made_into_json_one_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """A run's dict is made when its text is written, not all of them first: ten thousand runs'
    dicts are never held at once (peak memory flat in the number of runs)."""
    from timeline import export

    log = tmp_path / "server.log"
    write_sglang_log(log, [Launch(datetime(2026, 3, 2, 10 + h, 0), 5, 90.0) for h in range(3)])
    timeline = build([log], log_tz="UTC", cache=False)
    made: list[str] = []
    real = export.run_to_dict
    monkeypatch.setattr(export, "run_to_dict", lambda run, **kw: made.append(run.id) or real(run, **kw))
    pieces = []
    for piece in json_pieces(timeline):
        pieces.append(piece)
        if '"id": "r1"' in piece:
            assert made == ["r1"]
    assert made == ["r1", "r2", "r3"] and "".join(pieces) == whole(timeline_to_dict(timeline))
