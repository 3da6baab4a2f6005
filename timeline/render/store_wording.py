"""The words for what the store did: ``timeline ingest``'s one line of counts."""

from __future__ import annotations

from timeline.render.wording import counted
from timeline.store import IngestResult


def ingest_text(result: IngestResult, machine: str, store: str) -> str:
    """``node-1: 45 runs added, 0 known; 16 code events added, 0 known; 25 commits added (URL)``;
    ``..., 1 completed, ...`` when a run stored while still being written was read whole."""
    completed = f", {result.runs_replaced} completed" if result.runs_replaced else ""
    return (
        f"{machine}: {counted(result.runs_added, 'run')} added{completed}, {result.runs_known} known; "
        f"{counted(result.events_added, 'code event')} added, {result.events_known} known; "
        f"{counted(result.commits_added, 'commit')} added ({store})"
    )
