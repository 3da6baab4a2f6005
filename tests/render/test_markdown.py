"""timeline.render.markdown: one table each for runs, events, shifts, suspects, confounders, culprits."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from shift_stories import pull_and_reset

from timeline.builder import build
from timeline.export import timeline_to_dict
from timeline.model import (
    Bisect,
    CodeEvent,
    CommitInfo,
    Confounder,
    Culprit,
    Evidence,
    RepoInfo,
    Run,
    Shift,
    ShiftNotes,
    ShiftSide,
    SteadyValue,
    Suspect,
    Timeline,
)
from timeline.render.markdown import timeline_markdown

SECTIONS = ["## Runs", "## Code events", "## Shifts", "## Suspects", "## Confounders", "## Culprits"]
A, B = "a" * 40, "b" * 40


def section(text: str, title: str) -> list[str]:
    body = text.split(title + "\n", 1)[1]
    return body.split("\n## ", 1)[0].strip().splitlines()


def table_rows(lines: list[str]) -> list[list[str]]:
    """The cells of a markdown table's body rows (header and rule dropped), unescaped pipes kept."""
    rows = []
    for line in [line for line in lines if line.startswith("|")][2:]:
        cells, current, escaped = [], "", False
        for char in line.strip()[1:-1]:
            if char == "|" and not escaped:
                cells.append(current.strip())
                current = ""
            else:
                current += char
            escaped = char == "\\" and not escaped
        cells.append(current.strip())
        rows.append(cells)
    return rows


def empty_timeline(**kwargs) -> Timeline:
    moment = datetime(2026, 4, 7, 12, tzinfo=timezone.utc)
    base = dict(generated_at=moment, log_tz="UTC", log_tz_source="flag", repo=None, events=[], runs=[], warnings=[])
    base.update(kwargs)
    return Timeline(**base)


def hand_made() -> Timeline:
    moment = datetime(2026, 4, 7, 12, tzinfo=timezone.utc)
    run = Run(
        "r1",
        "logs/a|b.log",
        "sglang-server",
        moment,
        moment,
        "2026-04-07 12:00:00",
        "UTC",
        "flag",
        1,
        9,
        A,
        "exact",
        config={"model_path": "Qwen/Qwen3-8B", "tp_size": 2},
        nccl_versions=["2.27.5"],
        steady=SteadyValue("decode_throughput", "tok/s", 94.06, 30, 1, 0.01, "decode-lines"),
    )
    event = CodeEvent(
        "e1",
        moment,
        int(moment.timestamp()),
        "pull",
        "pull origin main: Fast-forward",
        A,
        B,
        True,
        commits=[CommitInfo(B, "Fix | the\nMoE path")],
    )
    suspect = Suspect(B, "Fix | the\nMoE path", "arrived", "e1", moment, ["python/moe.py", "docs/x.md"], False, None)
    shift = Shift(
        "s1",
        "Qwen3-8B tp2",
        "decode_throughput",
        "tok/s",
        ShiftSide(A, ["r1"], 94.06, [A]),
        ShiftSide(B, ["r2"], 60.4, [B]),
        -35.79,
        0.0021,
        "regression",
        "pooled-t",
        events=["e1"],
        suspects=[suspect],
        confounders=[Confounder("disable_custom_all_reduce", False, True)],
        bisect=Bisect(f"git bisect start {B[:12]} {A[:12]}", 2, 3),
        notes=ShiftNotes(left_out=[("r9", "mixed")]),
    )
    culprit = Culprit(B, "Fix | the\nMoE path", ["s1"], "sole", [Evidence("sole", "raises", ("s1",), count=0)])
    return empty_timeline(
        repo=RepoInfo("/src/sglang", B), events=[event], runs=[run], shifts=[shift], culprits=[culprit]
    )


def test_every_section_is_there_in_order():
    text = timeline_markdown(hand_made())
    positions = [text.index(title) for title in SECTIONS]
    assert positions == sorted(positions)
    assert text.startswith("# Timeline\n") and text.endswith("\n")


def test_pipes_and_newlines_cannot_break_a_table():
    text = timeline_markdown(hand_made())
    (event,) = table_rows(section(text, "## Code events"))
    assert event[-1] == "+ bbbbbbbbb Fix \\| the\\\\x0aMoE path"  # a newline in a subject: shown, escaped
    (run,) = table_rows(section(text, "## Runs"))
    assert len(run) == 9 and run[4] == "`logs/a\\|b.log:1-9`"
    for title in SECTIONS:
        lines = [line for line in section(text, title) if line.startswith("|")]
        widths = {len(cells) for cells in table_rows(lines)} | {len(table_rows([lines[0], lines[0], lines[0]])[0])}
        assert len(widths) == 1, title


def test_the_cells_say_what_the_shift_says():
    text = timeline_markdown(hand_made())
    (shift,) = table_rows(section(text, "## Shifts"))
    assert shift[:8] == [
        "s1",
        "Qwen3-8B tp2",
        "aaaaaaaaa (r1) 94.1 tok/s",
        "bbbbbbbbb (r2) 60.4 tok/s",
        "-35.8%",
        "0.0021",
        "**regression**",
        "e1",
    ]
    assert "- s1: `git bisect start bbbbbbbbbbbb aaaaaaaaaaaa` (3 commits, about 2 steps)" in text
    (suspect,) = table_rows(section(text, "## Suspects"))
    assert suspect[3:] == ["arrived", "2026-04-07 12:00:00+00:00", "`python/moe.py`<br>`docs/x.md`", "sole"]
    (confounder,) = table_rows(section(text, "## Confounders"))
    assert confounder == ["s1", "`disable_custom_all_reduce`", "False", "True", "-"]
    (culprit,) = table_rows(section(text, "## Culprits"))
    assert culprit[:5] == ["1", "`bbbbbbbbb`", "Fix \\| the\\\\x0aMoE path", "sole", "s1"]


def test_empty_sections_say_none():
    text = timeline_markdown(empty_timeline())
    for title in SECTIONS:
        assert section(text, title) == ["_none_"]
    assert "No --repo given" in text


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    return pull_and_reset(tmp_path_factory.mktemp("markdown"))


def test_markdown_of_a_real_story_agrees_with_the_json(story):
    timeline = build([story.logs], repo=story.repo, log_tz="UTC")
    document = timeline_to_dict(timeline)
    text = timeline_markdown(timeline)
    shifts = table_rows(section(text, "## Shifts"))
    assert [row[0] for row in shifts] == [s["id"] for s in document["shifts"]]
    for row, shift in zip(shifts, document["shifts"], strict=False):
        assert row[4] == f"{shift['change_pct']:+.1f}%"
        assert shift["verdict"] in row[6]
        assert row[7] == ", ".join(shift["events"])
    suspects = table_rows(section(text, "## Suspects"))
    assert [(row[0], row[1].strip("`")) for row in suspects] == [
        (shift["id"], s["sha"][:9]) for shift in document["shifts"] for s in shift["suspects"]
    ]
    culprits = table_rows(section(text, "## Culprits"))
    assert [row[1].strip("`") for row in culprits] == [c["sha"][:9] for c in document["culprits"]]
    assert culprits[0][1] == f"`{story.shas['c5'][:9]}`"
    runs = table_rows(section(text, "## Runs"))
    assert [row[0] for row in runs] == [r["id"] for r in document["runs"]]


def test_untrusted_text_is_text_in_markdown():
    from timeline.render.markdown import code, text

    assert text("<img src=x onerror=alert(1)>") == "\\<img src=x onerror=alert(1)\\>"
    assert text("**bold** _it_ [link](http://x) ~~s~~ &amp;") == (
        "\\*\\*bold\\*\\* \\_it\\_ \\[link\\](http://x) \\~\\~s\\~\\~ \\&amp;"
    )
    assert text("cc @octocat and @org/team, fixes #12, not a#b") == (
        "cc @&#8203;octocat and @&#8203;org/team, fixes #&#8203;12, not a#b"
    )
    assert text("back\\slash") == "back\\\\slash"
    assert code("a`b") == "``a`b``" and code("`x`") == "`` `x` ``"


def test_a_pipe_in_a_code_span_does_not_split_the_cell():
    from timeline.render.markdown import _cell, code

    assert _cell(code("a|b")) == "`a\\|b`"


def test_paths_show_relative_to_the_folder_given():
    from timeline.render.markdown import shown_path

    assert shown_path("/tmp/tmpab12/logs/a/b.log", ["/tmp/tmpab12/logs"]) == "logs/a/b.log"
    assert shown_path("/tmp/tmpab12/logs/a/b.log", ["/tmp/tmpab12/logs/"]) == "logs/a/b.log"
    assert shown_path("/tmp/tmpab12/one.log", ["/tmp/tmpab12/one.log"]) == "one.log"
    assert shown_path("logs/x.log", ["logs"]) == "logs/x.log"
    assert shown_path("./x.log", ["."]) == "x.log" or shown_path("./x.log", ["."]).endswith("x.log")
    assert shown_path("/elsewhere/x.log", ["/tmp/logs"]) == "/elsewhere/x.log"


def test_counts_take_the_singular_for_one():
    from timeline.render.wording import counted

    assert (counted(1, "step"), counted(2, "step"), counted(0, "commit")) == ("1 step", "2 steps", "0 commits")
