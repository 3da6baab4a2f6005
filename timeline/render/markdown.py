"""The timeline as GitHub-flavoured markdown, to paste in an issue: one table each for the runs, the
code events, the shifts, the suspects, the confounders and the culprits.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from timeline.clock import iso
from timeline.model import Run, Timeline
from timeline.render.shifts import (
    fmt_change,
    fmt_p,
    fmt_value,
    side_text,
    suspect_status,
    verdict_detail,
    verdict_word,
)
from timeline.render.window import event_window
from timeline.render.wording import (
    attribution_text,
    equal_flags_text,
    evidence_mark,
    evidence_text,
    shift_notes,
    zone_readings_text,
)
from timeline.suspects import knob_linked, short_sha
from timeline.workload import workload_label

__all__ = ["timeline_markdown"]


def _cell(value: object) -> str:
    text = "-" if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def _table(headers: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    if not rows:
        return ["_none_"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _attribution(run: Run) -> str:
    """``ambiguous (zone assumed)``, and what each span of offsets would make of it."""
    readings = zone_readings_text(run)
    return attribution_text(run) + (f"\n{readings}" if readings else "")


def _time(moment: datetime | None) -> str:
    return "-" if moment is None else iso(moment).replace("T", " ")


def timeline_markdown(timeline: Timeline, all_events: bool = False) -> str:
    """Runs, events (those around the runs, ``render.window``, or all), shifts, suspects,
    confounders and culprits, one markdown table each."""
    out: list[str] = ["# Timeline", ""]
    if timeline.repo is not None:
        out += [
            f"Checkout `{timeline.repo.path}`, HEAD `{short_sha(timeline.repo.head)}`; log times read in "
            f"{timeline.log_tz}.",
            "",
        ]
    else:
        out += ["No --repo given: runs are listed without commits.", ""]

    out += ["## Runs", ""]
    rows: list[list[object]] = []
    for run in timeline.runs:
        where = run.source if run.first_line is None else f"{run.source}:{run.first_line}-{run.last_line}"
        steady = run.steady
        rows.append(
            [
                run.id,
                _time(run.start),
                short_sha(run.commit) if run.commit else "-",
                _attribution(run),
                f"`{where}`",
                workload_label(run.config) or "-",
                ", ".join(run.nccl_versions) or "-",
                "-" if steady is None else f"{fmt_value(steady.value)} {steady.unit} (n={steady.n})",
            ]
        )
    out += _table(["Run", "Start", "Commit", "Attribution", "Source", "Workload", "NCCL", "Steady decode"], rows)

    out += ["", "## Code events", ""]
    rows = []
    window = event_window(timeline, all_events)
    for event in window.events:
        move = f"{short_sha(event.old)} → {short_sha(event.new)}" if event.changes_commit else short_sha(event.new)
        commits = [f"+ {short_sha(c.sha)} {c.subject}" for c in event.commits]
        commits += [f"- {short_sha(c.sha)} {c.subject}" for c in event.commits_removed]
        rows.append([event.id, _time(event.time), event.kind, move, event.message, "\n".join(commits) or "-"])
    out += _table(["Event", "Time", "Kind", "Move", "Message", "Commits"], rows)
    note = window.note()
    if note:
        out += ["", f"_{note}_"]

    out += ["", "## Shifts", ""]
    rows = []
    for shift in timeline.shifts:
        verdict = (
            f"**{verdict_word(shift)}**"
            if shift.verdict in ("regression", "improvement", "confounded")
            else verdict_word(shift)
        )
        detail = verdict_detail(shift)
        if detail:
            verdict += f" ({detail})"
        rows.append(
            [
                shift.id,
                shift.group,
                side_text(shift.from_side.commit, shift.from_side.runs, shift.from_side.value, shift.unit),
                side_text(shift.to_side.commit, shift.to_side.runs, shift.to_side.value, shift.unit),
                fmt_change(shift.change_pct),
                fmt_p(shift.p_value),
                verdict,
                ", ".join(shift.events) or "-",
                "\n".join(filter(None, [equal_flags_text(shift), *shift_notes(shift)])) or "-",
            ]
        )
    out += _table(["Shift", "Workload", "From", "To", "Change", "p", "Verdict", "Events", "Notes"], rows)
    bisects = [s for s in timeline.shifts if s.bisect is not None]
    if bisects:
        out.append("")
        for shift in bisects:
            assert shift.bisect is not None
            out.append(
                f"- {shift.id}: `{shift.bisect.command}` "
                f"({shift.bisect.commits} commits, about {shift.bisect.steps} steps)"
            )

    out += ["", "## Suspects", ""]
    rows = []
    culprits = {c.sha: c for c in timeline.culprits}
    for shift in timeline.shifts:
        for suspect in shift.suspects:
            rows.append(
                [
                    shift.id,
                    f"`{short_sha(suspect.sha)}`",
                    suspect.subject,
                    suspect.change,
                    _time(suspect.author_date) if suspect.author_date is not None else "-",
                    "-" if suspect.paths is None else "\n".join(f"`{p}`" for p in suspect.paths) or "-",
                    suspect_status(suspect, culprits.get(suspect.sha)),
                ]
            )
    out += _table(["Shift", "Commit", "Subject", "Change", "Author date", "Paths", "Status"], rows)

    out += ["", "## Confounders", ""]
    rows = [
        [
            shift.id,
            f"`{c.field}`",
            repr(c.from_value),
            repr(c.to_value),
            ", ".join(f"`{short_sha(sha)}`" for sha in knob_linked(timeline.culprits, shift, c)) or "-",
        ]
        for shift in timeline.shifts
        for c in shift.confounders
    ]
    out += _table(["Shift", "Field", "From", "To", "Its code touched by"], rows)

    out += ["", "## Culprits", ""]
    shifts = {s.id: s for s in timeline.shifts}
    rows = [
        [
            number,
            f"`{short_sha(c.sha)}`",
            c.subject,
            c.likelihood,
            ", ".join(c.shifts),
            "\n".join(f"{evidence_mark(e)} {evidence_text(e, c, shifts)}" for e in c.evidence),
        ]
        for number, c in enumerate(timeline.culprits, 1)
    ]
    out += _table(["#", "Commit", "Subject", "Likelihood", "Shifts", "Evidence"], rows)
    return "\n".join(out) + "\n"
