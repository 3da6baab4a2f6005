"""GitHub Actions output: one workflow-command annotation per shift with a verdict, and the
markdown report as the job's step summary.

Workflow commands and their escaping follow GitHub's documentation
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands) and
``escapeData``/``escapeProperty`` in @actions/core
(https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts): a message or a
property must not end the command early or start another line.
"""

from __future__ import annotations

from timeline.model import Shift, Timeline
from timeline.render.safe import displayable
from timeline.render.shifts import fmt_change, side_text, verdict_detail
from timeline.suspects import short_sha

LEVEL = {"regression": "warning", "confounded": "warning", "improvement": "notice"}
TITLE = {
    "regression": "Throughput regression",
    "confounded": "Throughput shift, confounded",
    "improvement": "Throughput improvement",
}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(timeline: Timeline) -> str:
    """One ``::warning`` (regression, confounded) or ``::notice`` (improvement) line per shift
    with that verdict, in the order of the shifts; empty when there is none. The log viewer obeys
    ANSI escapes: untrusted text is shown escaped (``render.safe``)."""
    timeline = displayable(timeline)
    lines = []
    for shift in timeline.shifts:
        if shift.verdict not in LEVEL:
            continue
        title = f"{TITLE[shift.verdict]} ({shift.id}, {shift.group})"
        message = escape_data(_message(timeline, shift))
        lines.append(f"::{LEVEL[shift.verdict]} title={escape_property(title)}::{message}")
    return "".join(line + "\n" for line in lines)


def _message(timeline: Timeline, shift: Shift) -> str:
    said = (
        f"{shift.metric.replace('_', ' ')} {fmt_change(shift.change_pct)}: "
        f"{side_text(shift.from_side.commit, shift.from_side.runs, shift.from_side.value, shift.unit)} -> "
        f"{side_text(shift.to_side.commit, shift.to_side.runs, shift.to_side.value, shift.unit)}"
    )
    detail = verdict_detail(shift)
    if detail:
        said += f" ({detail})"
    ranked = [c for c in timeline.culprits if shift.id in c.shifts and c.likelihood != "cleared"]
    if ranked:
        top = ranked[0]
        said += f". Top suspect ({top.likelihood}): {short_sha(top.sha)} {top.subject}"
    if shift.bisect is not None:
        said += f". To bisect: {shift.bisect.command}"
    return said
