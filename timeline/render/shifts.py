"""The "Shifts" section of the table view, and the wording every view shares (table, markdown).

One place formats a change, a p-value and a verdict, so that the table, the markdown and the
JSON (which holds the same rounded numbers) always agree.
"""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.table import Table
from rich.text import Text

from timeline.model import Culprit, Shift, Suspect, Timeline
from timeline.render.wording import (
    HARMLESS,
    clearing_text,
    confounded_text,
    confounder_text,
    counted,
    equal_flags_text,
    evidence_mark,
    evidence_text,
    rerun_text,
    shift_notes,
)
from timeline.suspects import knob_linked, short_sha

VERDICT_STYLE = {
    "regression": "bold red",
    "improvement": "bold green",
    "inconclusive": "yellow",
    "confounded": "bold magenta",
}
RERUN = "no between-run noise yet: rerun to confirm"


def fmt_value(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def fmt_change(change_pct: float) -> str:
    return f"{change_pct:+.1f}%"


def fmt_p(p_value: float | None) -> str:
    return "-" if p_value is None else f"{p_value:.2g}"


def verdict_word(shift: Shift) -> str:
    if shift.verdict is not None:
        return shift.verdict
    return "no change" if shift.quiet else "no verdict"


def verdict_detail(shift: Shift) -> str | None:
    """The line under the verdict: the rerun that would settle a confounded shift, rerun to
    confirm, or how many more runs would decide it."""
    if shift.verdict == "confounded":
        said = confounded_text(shift)
        if shift.reruns:
            said += ": " + "; ".join(rerun_text(r, shift) for r in shift.reruns)
        return said + (f" ({RERUN})" if shift.single_run else "")
    if shift.single_run:
        return RERUN
    if shift.verdict == "inconclusive":
        if shift.more_runs is None:
            return "too close to the noise to decide"
        a, b = shift.more_runs
        return f"+{counted(a, 'run')} before, +{b} after would decide it"
    return None


RUNS_NAMED = 6  # more runs on a side: the first, the last and how many (weeks of nightly runs pool dozens)


def side_text(commit: str, runs: list[str], value: float, unit: str) -> str:
    named = ", ".join(runs) if len(runs) <= RUNS_NAMED else f"{runs[0]}, {runs[1]} ... {runs[-1]}: {len(runs)} runs"
    return f"{short_sha(commit)} ({named}) {fmt_value(value)} {unit}"


def suspect_status(suspect: Suspect, culprit: Culprit | None = None) -> str:
    """``suspect``, or why it is less (cleared, unlikely: and which evidence), or more (likely)."""
    if suspect.cleared:
        return f"cleared: {clearing_text(suspect.cleared)}"
    kinds = {e.kind for e in culprit.evidence} if culprit is not None else set()
    if "not-imported" in kinds:
        return "unlikely: not imported by the server"
    if suspect.unlikely:
        return f"unlikely: {HARMLESS} only"
    if culprit is not None and culprit.likelihood in ("prime", "sole", "likely"):
        return culprit.likelihood
    return "suspect"


def culprit_head(number: int, culprit: Culprit) -> str:
    """``1. 0be30d4a1 Fix PCG MoE Error [likely; s1, s2]``."""
    return f"{number}. {short_sha(culprit.sha)} {culprit.subject} [{culprit.likelihood}; {', '.join(culprit.shifts)}]"


def culprit_lines(timeline: Timeline, width: int) -> list[str]:
    """Each culprit's head line, then one line per piece of evidence (``+`` raised it, ``-``
    lowered it, ``·`` shown), wrapped to ``width`` under its own text."""
    shifts = {s.id: s for s in timeline.shifts}
    lines: list[str] = []
    for number, culprit in enumerate(timeline.culprits, 1):
        lines.append(culprit_head(number, culprit))
        for evidence in culprit.evidence:
            lines += textwrap.wrap(
                evidence_text(evidence, culprit, shifts),
                max(width, 40),
                initial_indent=f"   {evidence_mark(evidence)} ",
                subsequent_indent="     ",
                break_on_hyphens=False,
            )
    return lines


def shift_details(shift: Shift, culprits: dict[str, Culprit] | None = None) -> list[str]:
    """What the views list under a shift: suspects (with a verdict), confounders, reruns, notes."""
    lines: list[str] = []
    culprits = culprits or {}
    if shift.verdict is not None:
        for suspect in shift.suspects:
            mark = "+" if suspect.change == "arrived" else "-"
            status = suspect_status(suspect, culprits.get(suspect.sha))
            lines.append(
                f"{mark} {short_sha(suspect.sha)} {suspect.subject}" + ("" if status == "suspect" else f" ({status})")
            )
    for confounder in shift.confounders:
        lines.append(
            f"confounder: {confounder_text(confounder, knob_linked(list(culprits.values()), shift, confounder))}"
        )
    settled = equal_flags_text(shift)
    if settled:
        lines.append(f"note: {settled}")
    lines.extend(f"note: {note}" for note in shift_notes(shift))
    return lines


def bisect_lines(shift: Shift) -> list[str]:
    """The bisect hint under a shift: what it costs, then the command alone on its line (to copy)."""
    if shift.bisect is None:
        return []
    cost = f"{counted(shift.bisect.commits, 'commit')}, about {counted(shift.bisect.steps, 'step')}"
    return [f"bisect ({cost}):", shift.bisect.command]


def shifts_table(timeline: Timeline) -> Table:
    groups = list(dict.fromkeys(s.group for s in timeline.shifts))
    title = "Shifts (steady decode throughput; higher is better)"
    if len(groups) == 1:
        title += f"\n{groups[0]}"
    table = Table(title=title, expand=False, show_lines=True)
    table.add_column("Shift", no_wrap=True)
    if len(groups) > 1:
        table.add_column("Workload", overflow="fold", max_width=24)
    table.add_column("From → To", no_wrap=True)
    table.add_column("Change", justify="right", no_wrap=True)
    table.add_column("p", justify="right", no_wrap=True)
    table.add_column("Verdict", overflow="fold")
    for shift in timeline.shifts:
        verdict = Text(verdict_word(shift), style=VERDICT_STYLE.get(shift.verdict or "", "dim"))
        detail = verdict_detail(shift)
        if detail:
            verdict.append(f"\n{detail}", style="yellow")
        cells: list = [shift.id] + ([shift.group] if len(groups) > 1 else [])
        table.add_row(
            *cells,
            side_text(shift.from_side.commit, shift.from_side.runs, shift.from_side.value, shift.unit)
            + "\n→ "
            + side_text(shift.to_side.commit, shift.to_side.runs, shift.to_side.value, shift.unit),
            fmt_change(shift.change_pct),
            fmt_p(shift.p_value),
            verdict,
        )
    return table


def render_shifts(timeline: Timeline, console: Console) -> None:
    """The Shifts table, each shift's suspects and notes, and the culprits (nothing without
    shifts), of a timeline already made ``displayable`` (render.table.render_timeline)."""
    if not timeline.shifts:
        return
    console.print(shifts_table(timeline))
    culprits = {c.sha: c for c in timeline.culprits}
    several = len({s.group for s in timeline.shifts}) > 1  # say which workload (and machine) each is of
    for shift in timeline.shifts:
        lines = shift_details(shift, culprits)
        bisect = bisect_lines(shift)
        if not lines and not bisect:
            continue
        head = Text(f"{shift.id} ", style="bold")
        if several:
            head.append(f"{shift.group}: ", style="bold")
        head.append(
            f"{verdict_word(shift)}, {fmt_change(shift.change_pct)}:",
            style=VERDICT_STYLE.get(shift.verdict or "", "dim"),
        )
        console.print(head)
        for line in lines:
            console.print(Text("  " + line, style="dim" if line.startswith("note:") else ""), highlight=False)
        if bisect:
            cost, command = bisect
            console.print(Text("  " + cost), highlight=False)
            # never wrapped, even piped at 80 columns: a wrapped command cannot be pasted
            console.print(Text("    " + command), highlight=False, soft_wrap=True)
    if timeline.culprits:
        console.print(Text("Culprits, most likely first:", style="bold"))
        for line in culprit_lines(timeline, console.width):
            console.print(Text(line), soft_wrap=True)
