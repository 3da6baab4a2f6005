"""Where the reflog's record starts: runs before it cannot be tied to a commit. A clone never
copies reflogs, and ``git gc`` expires old entries (``gc.reflogExpire``, 90 days;
``gc.reflogExpireUnreachable``, 30 days): https://git-scm.com/docs/git-reflog,
https://git-scm.com/docs/git-gc#_configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from timeline.model import CodeEvent, is_zero_sha
from timeline.records import Diagnostic

__all__ = ["Coverage", "coverage_of"]


@dataclass(frozen=True)
class Coverage:
    """Where the reflog's record starts. Runs before ``ts`` cannot be tied to a commit (the
    correlator marks them ``before-reflog``).

    ``reason``: ``clone`` (clones never copy reflogs), ``repository-created``,
    ``worktree-created``, ``expired-or-deleted`` (older entries were expired by gc or
    deleted), ``branch-log`` (HEAD's log was empty; the branch's log was read), ``unknown``
    (reftable: the oldest entry's old id is not recorded), ``approximate`` (no reflog: file
    modification times), ``no-reflog`` (nothing at all), ``unread`` (reftable without git >= 2.45).
    """

    reason: str
    ts: int | None = None
    time: datetime | None = None
    event: str | None = None  # id of the first event
    description: str = ""


def coverage_of(
    events: list[CodeEvent], fallback: bool, approximate: bool, old_inferred: bool, source: str, diags: list[Diagnostic]
) -> Coverage:
    if not events:
        return Coverage("no-reflog", description="no reflog entries: no run can be tied to a commit")
    first = events[0]
    if approximate:
        return Coverage(
            "approximate",
            description="no reflog: one approximate time from file modification times",
            ts=first.ts,
            time=first.time,
            event=first.id,
        )
    if fallback:
        reason = "branch-log"
        text = "HEAD's log was empty; coverage is that of the branch's log"
    elif old_inferred:
        reason = "unknown"
        text = "reftable: whether older entries were expired is not known"
    elif not is_zero_sha(first.old):
        reason = "expired-or-deleted"
        text = (
            "the reflog's first entry does not start from nothing: older entries were expired "
            "by git gc (after 90 days, or 30 days for unreachable commits) or deleted"
        )
        diags.append(
            Diagnostic(
                source,
                first.line,
                f"reflog coverage starts here ({first.time.isoformat()}): {text}; "
                "runs before it cannot be tied to a commit",
            )
        )
    elif first.kind == "clone":
        reason, text = "clone", "the checkout was cloned here; clones never copy reflogs"
    elif first.kind == "worktree":
        reason, text = "worktree-created", "this linked worktree was created here"
    else:
        reason, text = "repository-created", "HEAD's first commit (or first checkout) is here"
    return Coverage(reason, description=text, ts=first.ts, time=first.time, event=first.id)
