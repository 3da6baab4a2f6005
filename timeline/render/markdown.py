"""The timeline as GitHub-flavoured markdown, to paste in an issue: one table each for the runs, the
code events, the shifts, the suspects, the confounders and the culprits.

Every value is text from someone else's files (commit subjects, reflog messages, log lines,
file names), so none of it is markup here: the markdown and HTML characters are
backslash-escaped (a subject ``<script>`` shows as text), ``@name`` and ``#123`` get a zero-width
space so GitHub neither notifies nor cross-links (as Renovate does, renovatebot/renovate
lib/util/markdown.ts), code spans are fenced by more backticks than they hold. Paths show relative
to the folder given (``logs/a.log`` for ``/tmp/tmpab12/logs``), the checkout by its name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime

from timeline.clock import iso
from timeline.model import Run, Timeline
from timeline.render.safe import visible
from timeline.render.shifts import (
    fmt_change,
    fmt_p,
    fmt_value,
    side_text,
    suspect_status,
    verdict_detail,
    verdict_word,
)
from timeline.render.window import view
from timeline.render.wording import (
    DATE_SOURCE_NOTE,
    attribution_text,
    checkout_note,
    counted,
    equal_flags_text,
    event_message,
    evidence_mark,
    evidence_text,
    run_outcome,
    shift_notes,
    zone_readings_text,
)
from timeline.suspects import knob_linked, short_sha
from timeline.workload import workload_label

__all__ = ["Markdown", "code", "lines", "shown_path", "text", "timeline_markdown"]


class Markdown(str):
    """Markdown this module wrote (emphasis, code spans, line breaks), not to be escaped again."""


_INLINE = re.compile(r"([\\`*_\[\]<>&~])")  # what starts emphasis, code, links, HTML or entities
_MENTION = re.compile(r"@|#(?=\d)")  # @user, @org/team and #123: GitHub notifies and cross-links


def text(value: object) -> Markdown:
    """``value`` as plain text in markdown: shown, never obeyed."""
    escaped = _INLINE.sub(r"\\\1", str(value))
    return Markdown(_MENTION.sub(lambda m: m.group() + "&#8203;", escaped))


def code(value: object) -> Markdown:
    """``value`` in a code span, fenced by more backticks than any run of them inside it."""
    content = str(value)
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", content)), default=0))
    pad = " " if content.startswith("`") or content.endswith("`") else ""
    return Markdown(f"{fence}{pad}{content}{pad}{fence}")


def lines(items: Iterable[object]) -> Markdown:
    """One line each, in one cell."""
    return Markdown("<br>".join(item if isinstance(item, Markdown) else text(item) for item in items))


def shown_path(path: str, inputs: Sequence[str]) -> str:
    """``path`` relative to the folder given that holds it, that folder's name first
    (``/tmp/tmpab12/logs/a.log`` given as ``/tmp/tmpab12/logs``: ``logs/a.log``); a file given
    by itself: its name."""
    for given in inputs:
        root = os.path.normpath(given)
        if os.path.normpath(path) == root:
            return os.path.basename(root) or path
        if path.startswith(root.rstrip(os.sep) + os.sep):
            name = os.path.basename(os.path.abspath(root))
            return os.path.join(name, os.path.relpath(path, root)) if name else os.path.relpath(path, root)
    return path


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-"
    markdown = value if isinstance(value, Markdown) else text(value)
    # a table's own escape, inside code spans too (GFM); the line breaks are ours (displayable
    # escaped any in the data)
    return markdown.replace("|", "\\|").replace("\n", "<br>")


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


def timeline_markdown(timeline: Timeline, all_events: bool = False, all_runs: bool = False) -> str:
    """Runs (``render.window``, or all), events (those around the runs, or all), shifts, suspects,
    confounders and culprits, one markdown table each."""
    whole = timeline
    timeline, runs_note, events_note = view(timeline, all_events, all_runs)
    out: list[str] = ["# Timeline", ""]
    if timeline.repo is not None:
        checkout = os.path.basename(os.path.normpath(timeline.repo.path)) or timeline.repo.path
        out += [
            f"Checkout {code(checkout)}, HEAD {code(short_sha(timeline.repo.head))}; log times read in "
            f"{text(timeline.log_tz)}.",
            "",
        ]
    else:
        out += [text(visible(checkout_note(whole) or "")), ""]  # of every run's machine, shown or not

    out += ["## Runs", ""]
    given = [] if timeline.provenance is None else timeline.provenance.options.get("paths", [])
    rows: list[list[object]] = []
    for run in timeline.runs:
        source = shown_path(run.source, given)
        where = source if run.first_line is None else f"{source}:{run.first_line}-{run.last_line}"
        steady = run.steady
        dates = DATE_SOURCE_NOTE.get(run.date_source or "")
        rows.append(
            [
                run.id,
                _time(run.start) + (f" ({dates})" if dates and run.start is not None else ""),
                short_sha(run.commit) if run.commit else "-",
                _attribution(run),
                code(where),
                workload_label(run.config, run.machine) or "-",
                ", ".join(run.nccl_versions) or "-",
                "-" if steady is None else f"{fmt_value(steady.value)} {steady.unit} (n={steady.n})",
                run_outcome(run.status, run.error, run.error_line),
            ]
        )
    out += _table(
        ["Run", "Start", "Commit", "Attribution", "Source", "Workload", "NCCL", "Steady decode", "Status"], rows
    )
    if runs_note:
        out += ["", f"_{text(runs_note)}_"]

    out += ["", "## Code events", ""]
    rows = []
    for event in timeline.events:
        move = f"{short_sha(event.old)} → {short_sha(event.new)}" if event.changes_commit else short_sha(event.new)
        commits = [f"+ {short_sha(c.sha)} {c.subject}" for c in event.commits]
        commits += [f"- {short_sha(c.sha)} {c.subject}" for c in event.commits_removed]
        rows.append([event.id, _time(event.time), event.kind, move, event_message(event), lines(commits)])
    out += _table(["Event", "Time", "Kind", "Move", "Message", "Commits"], rows)
    if events_note:
        out += ["", f"_{text(events_note)}_"]

    out += ["", "## Shifts", ""]
    rows = []
    for shift in timeline.shifts:
        verdict = (
            f"**{text(verdict_word(shift))}**"
            if shift.verdict in ("regression", "improvement", "confounded")
            else text(verdict_word(shift))
        )
        detail = verdict_detail(shift)
        if detail:
            verdict += f" ({text(detail)})"
        rows.append(
            [
                shift.id,
                shift.group,
                side_text(shift.from_side.commit, shift.from_side.runs, shift.from_side.value, shift.unit),
                side_text(shift.to_side.commit, shift.to_side.runs, shift.to_side.value, shift.unit),
                fmt_change(shift.change_pct),
                fmt_p(shift.p_value),
                Markdown(verdict),
                ", ".join(shift.events) or "-",
                lines(filter(None, [equal_flags_text(shift), *shift_notes(shift)])),
            ]
        )
    out += _table(["Shift", "Workload", "From", "To", "Change", "p", "Verdict", "Events", "Notes"], rows)
    bisects = [s for s in timeline.shifts if s.bisect is not None]
    if bisects:
        out.append("")
        for shift in bisects:
            assert shift.bisect is not None
            out.append(
                f"- {text(shift.id)}: {code(shift.bisect.command)} "
                f"({counted(shift.bisect.commits, 'commit')}, about {counted(shift.bisect.steps, 'step')})"
            )

    out += ["", "## Suspects", ""]
    rows = []
    culprits = {c.sha: c for c in timeline.culprits}
    for shift in timeline.shifts:
        for suspect in shift.suspects:
            rows.append(
                [
                    shift.id,
                    code(short_sha(suspect.sha)),
                    suspect.subject,
                    suspect.change,
                    _time(suspect.author_date) if suspect.author_date is not None else "-",
                    "-" if suspect.paths is None else lines(code(p) for p in suspect.paths),
                    suspect_status(suspect, culprits.get(suspect.sha)),
                ]
            )
    out += _table(["Shift", "Commit", "Subject", "Change", "Author date", "Paths", "Status"], rows)

    out += ["", "## Confounders", ""]
    rows = [
        [
            shift.id,
            code(c.field),
            repr(c.from_value),
            repr(c.to_value),
            Markdown(", ".join(code(short_sha(sha)) for sha in knob_linked(timeline.culprits, shift, c))),
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
            code(short_sha(c.sha)),
            c.subject,
            c.likelihood,
            ", ".join(c.shifts),
            lines(f"{evidence_mark(e)} {evidence_text(e, c, shifts)}" for e in c.evidence),
        ]
        for number, c in enumerate(timeline.culprits, 1)
    ]
    out += _table(["#", "Commit", "Subject", "Likelihood", "Shifts", "Evidence"], rows)
    return "\n".join(out) + "\n"
