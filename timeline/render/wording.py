"""The words for the analysis' facts: culprits' evidence, clearings, confounders, reruns.

The analysis (timeline.suspects, timeline.shifts) returns codes and numbers; every view (table,
markdown, HTML, the JSON's ``reason`` texts) words them here, so they all say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from operator import attrgetter
from typing import Any

from timeline.clock import format_offset
from timeline.detect import MAX_PLANNED_RUNS
from timeline.model import Clearing, CodeEvent, Confounder, Culprit, Evidence, Rerun, Run, Shift, Timeline
from timeline.suspects import short_sha

__all__ = [
    "counted",
    "HARMLESS",
    "EFFECT_MARK",
    "shift_notes",
    "shift_brief",
    "evidence_text",
    "evidence_mark",
    "culprit_reason",
    "clearing_text",
    "confounder_text",
    "rerun_text",
    "flag_text",
    "equal_flags_text",
    "MAX_PATHS_SAID",
    "attribution_text",
    "zone_readings_text",
    "RUN_STATUS",
    "DATE_SOURCE_NOTE",
    "run_outcome",
    "error_text",
]


def wall_time(moment: datetime, zone: tzinfo) -> str:
    """``moment`` on ``zone``'s clock; a moment past 9999-12-31 there is shown as recorded, with
    its offset (the same instant)."""
    try:
        return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")
    except OverflowError:
        return moment.strftime("%Y-%m-%d %H:%M:%S %z")


def counted(count: int, noun: str) -> str:
    """``1 step``, ``2 steps``: a count with its noun."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


MAX_PATHS_SAID = 3
EFFECT_MARK = {"raises": "+", "lowers": "-", "shown": "·"}
HARMLESS = "docs, tests, CI, benchmarks or examples"  # suspects.path_kind's kinds


LEFT_OUT = {
    "mixed": "HEAD moved during the run (mixed)",
    "ambiguous": "the commit it ran on is ambiguous",
    "zone-assumed": "the commit it ran on depends on its log's zone, which was assumed",
    "before-reflog": "it is older than the reflog",
    "no-repo": "no --repo",
    "no-time": "it has no time stamp",
    "crashed": "it crashed",
    "no-stats": "it logged no stats",
    "no-steady": "it has no decode throughput",
}
AMBIGUOUS_REASONS = {
    "clock-tolerance": "near a HEAD move",
    "dst": "DST",
    "zone-assumed": "zone assumed",
    "reflog-clock-step": "reflog clock stepped back",
}
BOUNDARY_NOTES = {
    "spread-unknown": "a run's own line spread is unknown (fewer than 3 steady decode lines)",
    "too-noisy": f"too close to the noise: even {MAX_PLANNED_RUNS} runs a side would hardly decide it",
}

RUN_STATUS = {"ok": "ok", "crashed": "crashed", "no-stats": "no stats"}
"""A run's status as the views say it."""
DATE_SOURCE_NOTE = {"mtime": "dates from file time"}
"""The date sources the views point out: a guess, not a reading."""
MAX_ERROR_SHOWN = 160  # characters of a crash's error line in the table and markdown (the JSON keeps it whole)


def event_message(event: CodeEvent) -> str:
    """The reflog's message, after its machine in a timeline of several (``timeline history``)."""
    return f"{event.machine}: {event.message}" if event.machine else event.message


def checkout_note(timeline: Timeline) -> str | None:
    """What the views say above the runs when there is no one checkout to name."""
    machines = sorted(name for name in set(map(attrgetter("machine"), timeline.runs)) if name)  # 100,000 runs
    if timeline.repo is None and machines:
        listed = ", ".join(machines)
        return f"Runs and code events of {counted(len(machines), 'machine')} ({listed}): each names its own."
    if timeline.repo is None:
        return "No --repo given: runs are listed without commits."
    return None


def error_text(error: str | None, error_line: int | None) -> str:
    """``line 22: RuntimeError: Not enough memory...`` (cut at ``MAX_ERROR_SHOWN``); empty without an error."""
    if not error:
        return ""
    shown = error if len(error) <= MAX_ERROR_SHOWN else error[: MAX_ERROR_SHOWN - 1].rstrip() + "…"
    return (f"line {error_line}: " if error_line is not None else "") + shown


def run_outcome(status: str, error: str | None, error_line: int | None) -> str:
    """``crashed (line 22: RuntimeError: ...)``, ``no stats``, ``ok``: a run's status with its error."""
    said = RUN_STATUS.get(status, status)
    detail = error_text(error, error_line) if status == "crashed" else ""
    return f"{said} ({detail})" if detail else said


def shift_notes(shift: Shift) -> list[str]:
    """The shift's notes, one sentence each, in the order the views list them."""
    notes = shift.notes
    said = []
    for side, commits in notes.pooled.items():
        said.append(
            f"the {side} side pools {len(commits)} versions at the same level "
            f"({', '.join(short_sha(c) for c in commits)})"
        )
    said += [f"{run} left out: {LEFT_OUT.get(why, why)}" for run, why in notes.left_out]
    if notes.no_event:
        said.append("no code event between the two sides in the reflog")
    said += [BOUNDARY_NOTES[code] for code in notes.boundary]
    if notes.absorbed_by:
        said.append(f"the same change as {notes.absorbed_by}, seen through the window")
    return said


def attribution_text(run: Run) -> str:
    """``exact``; ``ambiguous (zone assumed)``: an ambiguous run says why."""
    if run.attribution != "ambiguous" or not run.ambiguous_reasons:
        return run.attribution
    return f"{run.attribution} ({', '.join(AMBIGUOUS_REASONS[r] for r in run.ambiguous_reasons)})"


def zone_readings_text(run: Run) -> str | None:
    """``zone assumed (UTC): 095ee0112 at UTC-12:00 to -01:00, 8207398f9 at UTC+00:00 to +14:00;
    --log-tz settles it``:
    the commit under each span of real-world offsets, when the zone was assumed and it matters."""
    if not run.zone_readings:
        return None
    spans = []
    for reading in run.zone_readings:
        offsets = format_offset(reading.min_offset)
        if reading.max_offset != reading.min_offset:
            offsets += f" to {format_offset(reading.max_offset)}"
        commit = short_sha(reading.commit) if reading.commit else "before the reflog"
        spans.append(f"{commit} at UTC{offsets}")
    return f"zone assumed ({run.tz}): {', '.join(spans)}; --log-tz settles it"


def shift_brief(shift: Shift) -> str:
    """``s1 (-35.8%, regression)``."""
    return f"{shift.id} ({shift.change_pct:+.1f}%, {shift.verdict})"


def _paths(paths: tuple[str, ...]) -> str:
    said = ", ".join(paths[:MAX_PATHS_SAID])
    more = len(paths) - MAX_PATHS_SAID
    return said + (f" and {more} more" if more > 0 else "")


def clearing_text(clearing: Clearing) -> str:
    if clearing.reason == "stayed-when-undone":
        return f"stayed when {clearing.by} undid {clearing.shift}"
    verb = "came" if clearing.change == "arrived" else "went"
    return f"{verb} at {clearing.by} with no change ({clearing.change_pct:+.1f}%)"


# The confounders that are versions the runs logged, not server arguments (timeline.shifts): what
# differs, and the word before a value.
_VERSION_WORDS = {
    "nccl_version": ("the NCCL version", "NCCL"),
    "cuda_driver_version": ("the GPU driver", "driver CUDA"),
}


def confounded_text(shift: Shift) -> str:
    """``measured a regression, but a flag and the GPU driver differ between the sides``."""
    kinds = list(dict.fromkeys(_VERSION_WORDS.get(c.field, ("a flag",))[0] for c in shift.confounders)) or ["a flag"]
    article = "an" if shift.measured == "improvement" else "a"
    verb = "differs" if len(kinds) == 1 else "differ"
    return f"measured {article} {shift.measured}, but {' and '.join(kinds)} {verb} between the sides"


def flag_text(field: str, value: Any) -> str:
    """How a server argument is given on the command line: ``--disable-custom-all-reduce``."""
    if field in _VERSION_WORDS:
        return f"{_VERSION_WORDS[field][1]} {value}"
    flag = "--" + field.replace("_", "-")
    if value is True:
        return f"`{flag}`"
    if value is False or value is None:
        return f"without `{flag}`"
    return f"`{flag} {value}`"


def rerun_text(rerun: Rerun, shift: Shift) -> str:
    """``rerun the after side (0be30d4a1) with `--disable-custom-all-reduce```."""
    side = shift.to_side if rerun.side == "to" else shift.from_side
    name = "after" if rerun.side == "to" else "before"
    settings = " and ".join(flag_text(field, value) for field, value in rerun.settings)
    return f"rerun the {name} side ({short_sha(side.commit)}) with {settings}"


def confounder_text(confounder: Confounder, linked: tuple[str, ...] = ()) -> str:
    """``disable_custom_all_reduce True → False``, and the suspects touching its code (``linked``)."""
    text = f"{confounder.field} {confounder.from_value!r} → {confounder.to_value!r}"
    if linked:
        text += f"; its code is touched by {', '.join(short_sha(s) for s in linked)}"
    return text


def equal_flags_text(shift: Shift) -> str | None:
    """Why the confounders did not make the shift ``confounded``, or None."""
    if shift.equal_flags is None:
        return None
    where = "between runs of both sides" if shift.equal_flags == "runs" else f"by {shift.equal_flags}"
    return f"the same change is seen with equal flags ({where}): the confounders do not explain it"


def evidence_text(evidence: Evidence, culprit: Culprit, shifts: Mapping[str, Shift]) -> str:
    """One short phrase for one piece of evidence."""
    briefs = [shift_brief(shifts[i]) for i in evidence.shifts if i in shifts]
    kind = evidence.kind
    if kind == "undone":
        first, second = (shifts[i] for i in evidence.shifts)
        came = next((s.change for s in first.suspects if s.sha == culprit.sha), "arrived")
        verbs = ("arrived", "left") if came == "arrived" else ("left", "came back")
        return (
            f"{verbs[0]} with {shift_brief(first)} and {verbs[1]} with {shift_brief(second)}, "
            "a change of similar size: the level moved with it"
        )
    if kind == "sole":
        if not evidence.count:
            return f"the only commit between the two sides of {briefs[0]}"
        return f"the only suspect of {briefs[0]} left after narrowing ({evidence.count} set aside)"
    if kind == "one-of":
        text = f"one of {evidence.count} suspects of {', '.join(briefs)}"
        bisects = [b for b in (shifts[i].bisect for i in evidence.shifts) if b is not None]
        if bisects:
            text += f": bisect in about {counted(bisects[0].steps, 'step')}"
        return text
    if kind == "knob-link":
        return (
            f"touches the code behind `{evidence.field}`, which differs between the sides of "
            f"{', '.join(evidence.shifts)} ({_paths(evidence.paths)})"
        )
    if kind == "changed-what-ran":
        added = [f"the server argument `{evidence.field}`"] if evidence.field else []
        if evidence.message:
            said = evidence.message if len(evidence.message) <= 60 else evidence.message[:57] + "..."
            added.append(f'the log message "{said}"')
        return (
            f"added {' and '.join(added)}, seen in the logs only on its side of "
            f"{', '.join(evidence.shifts)}: its code ran (not blame)"
        )
    if kind == "same-boundary":
        moved = ", ".join(f"{s.id} {s.group} {s.change_pct:+.1f}%" for s in (shifts[i] for i in evidence.shifts))
        return f"{len(evidence.shifts)} workloads moved the same way across it ({moved}): one cause is likely"
    if kind == "not-imported":
        return f"unlikely: not imported by the server ({_paths(evidence.paths)})"
    if kind == "docs-tests-ci":
        return f"unlikely: touches only {HARMLESS}"
    if kind == "cleared":
        assert evidence.clearing is not None
        return f"cleared: {clearing_text(evidence.clearing)}"
    if kind == "single-run":
        return f"{', '.join(evidence.shifts)} judged on line spread: rerun to confirm"
    raise ValueError(f"unknown evidence kind {kind!r}")


def evidence_mark(evidence: Evidence) -> str:
    """``+`` raised it, ``-`` lowered it, ``·`` shown for what it is."""
    return EFFECT_MARK[evidence.effect]


def culprit_reason(culprit: Culprit, shifts: Mapping[str, Shift]) -> str:
    """Every piece of the culprit's evidence, strongest first, in one line."""
    return "; ".join(evidence_text(e, culprit, shifts) for e in culprit.evidence)
