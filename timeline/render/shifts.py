"""The "Shifts" section of the table view, and the wording every view shares (table, markdown).

One place formats a change, a p-value and a verdict, so that the table, the markdown and the
JSON (which holds the same rounded numbers) always agree.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from timeline.detect import DEFAULT_MIN_EFFECT
from timeline.model import Culprit, Shift, Suspect, Timeline
from timeline.suspects import short_sha

VERDICT_STYLE = {"regression": "bold red", "improvement": "bold green", "inconclusive": "yellow"}
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
    return "no change" if abs(shift.change_pct) < DEFAULT_MIN_EFFECT * 100 else "no verdict"


def verdict_detail(shift: Shift) -> str | None:
    """The line under the verdict: rerun to confirm, or how many more runs would decide it."""
    if shift.single_run:
        return RERUN
    if shift.verdict == "inconclusive":
        if shift.more_runs is None:
            return "too close to the noise to decide"
        a, b = shift.more_runs
        return f"+{a} run{'s' if a != 1 else ''} before, +{b} after would decide it"
    return None


def side_text(commit: str, runs: list[str], value: float, unit: str) -> str:
    return f"{short_sha(commit)} ({', '.join(runs)}) {fmt_value(value)} {unit}"


def suspect_status(suspect: Suspect) -> str:
    if suspect.cleared:
        return f"cleared: {suspect.cleared}"
    if suspect.unlikely:
        return "unlikely: docs, tests or CI only"
    return "suspect"


def culprit_line(number: int, culprit: Culprit) -> str:
    return f"{number}. {short_sha(culprit.sha)} {culprit.subject} [{culprit.likelihood}; {', '.join(culprit.shifts)}]: {culprit.reason}"


def shift_details(shift: Shift) -> list[str]:
    """What the views list under a shift: suspects (with a verdict), confounders, bisect, notes."""
    lines: list[str] = []
    if shift.verdict is not None:
        for suspect in shift.suspects:
            mark = "+" if suspect.change == "arrived" else "-"
            status = "" if suspect_status(suspect) == "suspect" else f" ({suspect_status(suspect)})"
            lines.append(f"{mark} {short_sha(suspect.sha)} {suspect.subject}{status}")
    for confounder in shift.confounders:
        lines.append(f"confounder: {confounder.field} {confounder.from_value!r} → {confounder.to_value!r}")
    if shift.bisect is not None:
        lines.append(f"bisect: {shift.bisect.command}  ({shift.bisect.commits} commits, about {shift.bisect.steps} steps)")
    lines.extend(f"note: {note}" for note in shift.notes)
    return lines


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
    """The Shifts table, each shift's suspects and notes, and the culprits (nothing without shifts)."""
    if not timeline.shifts:
        return
    console.print(shifts_table(timeline))
    for shift in timeline.shifts:
        lines = shift_details(shift)
        if not lines:
            continue
        head = Text(f"{shift.id} ", style="bold")
        head.append(f"{verdict_word(shift)}, {fmt_change(shift.change_pct)}:",
                    style=VERDICT_STYLE.get(shift.verdict or "", "dim"))
        console.print(head)
        for line in lines:
            console.print(Text("  " + line, style="dim" if line.startswith("note:") else ""), highlight=False)
    if timeline.culprits:
        console.print(Text("Culprits, most likely first:", style="bold"))
        for number, culprit in enumerate(timeline.culprits, 1):
            console.print(culprit_line(number, culprit), markup=False, highlight=False)
