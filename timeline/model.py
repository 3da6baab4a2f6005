"""Plain data shared by the core: what a timeline is made of.

Data flows one way: parsers produce records (``timeline.records``), the git module produces
``CodeEvent``s, the correlator turns parsed runs into ``Run``s tied to commits, and the
exporters and renderers read a ``Timeline``. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from timeline.columns import SampleRows
from timeline.records import DateSource, Diagnostic, RunStatus
from timeline.render.safe import visible

__all__ = [
    "Diagnostic",
    "AmbiguousReason",
    "ZoneReading",
    "CommitInfo",
    "CodeEvent",
    "MetricSummary",
    "Run",
    "RepoInfo",
    "Timeline",
    "is_zero_sha",
    "SteadyValue",
    "ShiftSide",
    "Suspect",
    "Clearing",
    "Confounder",
    "Rerun",
    "Bisect",
    "Shift",
    "Culprit",
    "Evidence",
    "Verdict",
    "Likelihood",
    "EvidenceKind",
    "Effect",
    "ClearingReason",
    "BoundaryNote",
    "LeftOutReason",
    "ShiftNotes",
]

# A shift's verdict (docs/shifts.md, section 4). "confounded": the change passed the test, but
# a server flag or the NCCL version differs between the sides and no pair of runs with equal
# flags saw the same change; None: the change is under the minimum effect.
Verdict = Literal["regression", "improvement", "inconclusive", "confounded"]
# How likely a commit is to have caused a shift, most likely first (docs/shifts.md, section 5).
Likelihood = Literal["prime", "sole", "likely", "possible", "unlikely", "cleared"]
# One piece of evidence about a culprit; each is computed and tested on its own.
EvidenceKind = Literal[
    "undone",  # arrived with one shift and left with the opposite one of similar size
    "sole",  # the only suspect of a shift left after narrowing
    "one-of",  # one of several suspects of a shift
    "knob-link",  # touches the code behind a server flag that differs between the sides
    "changed-what-ran",  # added a server argument or log message seen only on its side of the move
    "same-boundary",  # several workloads moved at the same code change: one cause is likely
    "not-imported",  # its files cannot be reached by imports from the server's entry point
    "docs-tests-ci",  # touches only docs, tests, CI, benchmarks or examples
    "cleared",  # narrowing set it aside (see Clearing)
    "single-run",  # a shift judged on line spread only: rerun to confirm
]
Effect = Literal["raises", "lowers", "shown"]
# What the test of one boundary says about itself (timeline.detect.Boundary.notes).
BoundaryNote = Literal["spread-unknown", "too-noisy"]
# Why a run in a shift's gap is left out: its attribution, or it has no value: "crashed",
# "no-stats" (its status), "no-steady" (no decode throughput).
LeftOutReason = Literal[
    "mixed",
    "ambiguous",
    "zone-assumed",
    "before-reflog",
    "no-repo",
    "no-time",
    "approximate",
    "crashed",
    "no-stats",
    "no-steady",
]
# Why a run is "ambiguous": its start is within the clock tolerance of a HEAD move
# ("clock-tolerance"), is a wall-clock time that happens twice or never ("dst"), or was read in
# an assumed zone (the machine's) and another real-world offset puts it on another commit
# ("zone-assumed").
AmbiguousReason = Literal["clock-tolerance", "dst", "zone-assumed", "reflog-clock-step"]
ClearingReason = Literal["stayed-when-undone", "moved-with-no-change"]


def is_zero_sha(sha: str | None) -> bool:
    """True for git's "no commit" placeholder (all zeros, SHA-1 or SHA-256 length)."""
    return not sha or not sha.strip("0")


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit brought in (or taken away) by a code event."""

    sha: str
    subject: str
    # From the commit object (git module, ``timeline.git.objects``); None = not known.
    author: str | None = None
    author_email: str | None = None
    author_date: datetime | None = None  # aware, in the author's recorded offset
    committer_date: datetime | None = None  # aware, in the committer's recorded offset
    # Paths the commit touched versus its first parent (all of them for a root commit);
    # None = not known (object query failed, or a shallow-clone boundary commit).
    paths: tuple[str, ...] | None = None


@dataclass(slots=True)
class CodeEvent:
    """One move of HEAD, read from the reflog (several entries when a rebase burst collapses).

    ``time`` is aware, in the offset the reflog writer recorded; ``ts`` is UTC epoch seconds.
    ``changes_commit`` is False when HEAD pointed at the same commit before and after
    (a branch switch at the same commit, ``reset: moving to HEAD``...).
    """

    id: str
    time: datetime
    ts: int
    kind: str
    message: str
    old: str
    new: str
    changes_commit: bool
    ref: str = "HEAD"
    commits: list[CommitInfo] = field(default_factory=list)
    # Commits that left HEAD's history on a backward or divergent move ("what left").
    commits_removed: list[CommitInfo] = field(default_factory=list)
    source: str = ""
    line: int | None = None
    # The files on disk may not match ``new``: a reset (--soft/--mixed keep the files, the
    # reflog does not say which), a stash, ``reset: moving to HEAD``, a rebase stopped on a
    # conflict, or a branch moved from elsewhere (HEAD moved, files did not).
    files_may_differ: bool = False
    # The time comes from a file's modification time, not from a reflog entry (no reflog).
    approximate: bool = False
    # Sub-kind: pull/merge "fast-forward" | "merge" | "rebase"; rebase "aborted" | "unfinished".
    detail: str | None = None
    # A sentence for people on what is special about this event (or None).
    note: str | None = None
    # ``old`` was not recorded but taken from the next-older entry (reftable via git reflog).
    old_inferred: bool = False
    # The machine whose checkout moved, in a timeline of several (timeline.history); None: one checkout.
    machine: str | None = None


@dataclass(frozen=True)
class ZoneReading:
    """The commit HEAD held at a run's start had its log been written at any UTC offset from
    ``min_offset`` to ``max_offset`` (the real-world offsets in that span; None: before the reflog)."""

    commit: str | None
    min_offset: timedelta
    max_offset: timedelta


@dataclass(frozen=True)
class MetricSummary:
    """One metric over a run's lines. The spread: ``stddev`` (sample, n - 1; None for one line),
    the 10th/25th/75th/90th percentiles (linear interpolation between order statistics, Hyndman
    and Fan's definition 7, numpy's default) and ``iqr`` = p75 - p25."""

    unit: str
    n: int
    median: float
    mean: float
    min: float
    max: float
    stddev: float | None = None
    p10: float | None = None
    p25: float | None = None
    p75: float | None = None
    p90: float | None = None
    iqr: float | None = None


@dataclass
class Run:
    """One server launch (or benchmark client run), tied to the commit it ran on."""

    id: str
    source: str
    kind: str
    start: datetime | None
    end: datetime | None
    start_local: str | None
    tz: str | None
    tz_source: str | None
    first_line: int | None
    last_line: int | None
    commit: str | None
    attribution: str
    events_during: list[str] = field(default_factory=list)
    # With attribution "ambiguous": every commit the run may have started on, and why.
    candidate_commits: list[str] = field(default_factory=list)
    ambiguous_reasons: list[AmbiguousReason] = field(default_factory=list)
    # With the reason "zone-assumed": the commit under each span of real-world offsets, west to east.
    zone_readings: list[ZoneReading] = field(default_factory=list)
    # The move that put ``commit`` in place may have left other files on disk (reset of
    # unknown mode, stash, a branch moved from another worktree).
    files_may_differ: bool = False
    nccl_versions: list[str] = field(default_factory=list)
    # The GPU driver's CUDA version, as NCCL logs it under NCCL_DEBUG=INFO (timeline.records.ParsedRun).
    cuda_driver_versions: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    samples: dict[str, SampleRows] | None = None  # by kind: decode, prefill, result
    # The run's one number for comparisons (timeline.detect.steady_decode; docs/shifts.md).
    steady: SteadyValue | None = None
    # The distinct messages it printed besides stats lines, digits masked (timeline.records.ParsedRun).
    messages: list[str] = field(default_factory=list)
    # How the launch ended: ok, crashed (``error``: its last error line, at ``error_line``), no-stats.
    status: RunStatus = "ok"
    error: str | None = None
    error_line: int | None = None
    # Where the date of its times comes from; "mtime" is a guess (the file's modification time).
    date_source: DateSource | None = None
    # The machine it ran on, in a timeline of several (timeline.history); None: one machine's logs.
    machine: str | None = None


def run_order(run: Run) -> tuple[bool, float, str, str, int]:
    """The order runs are listed and numbered in (``r1``, ``r2``...): by start (runs without one
    last), then machine (runs of several machines at one start), log and line."""
    start = run.start.timestamp() if run.start else 0.0
    return (run.start is None, start, run.machine or "", run.source, run.first_line or 0)


@dataclass(frozen=True)
class SteadyValue:
    """One number per run: the median of the steady decode lines (or the bench client's result).

    ``spread`` is the robust spread of those lines, 1.4826 x MAD of their natural logs (about a
    relative standard deviation); None with fewer than 3 lines or for a bench client result.

    ``ranks``: when several ranks logged their own decode lines (``ParsedRun.rank_series``), each
    rank's steady value; ``value`` is then their sum, ``n`` and ``skipped`` the ranks' together and
    ``spread`` their spreads weighted by value (timeline.detect.steady_sum).
    """

    metric: str
    unit: str
    value: float
    n: int
    skipped: int
    spread: float | None
    source: str  # "decode-lines" or "bench-client"
    ranks: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ShiftSide:
    """One side of a shift: the version next to the boundary and the runs pooled on that side."""

    commit: str
    runs: list[str]
    value: float  # geometric mean of the runs' steady values
    commits: list[str] = field(default_factory=list)  # every version pooled, nearest last/first


@dataclass(frozen=True)
class Suspect:
    """A commit that differs between the two sides of a shift."""

    sha: str
    subject: str
    change: str  # "arrived" (in the newer side only) or "left"
    event: str  # the event id that brought it in or took it away
    author_date: datetime | None = None
    paths: list[str] | None = None  # None when the git module did not provide them
    unlikely: bool = False  # touches only docs, tests, CI, benchmarks or examples
    cleared: Clearing | None = None  # why narrowing set it aside, if it did
    undone_by: str | None = None  # the shift that undid this one when the commit came and went (prime)


@dataclass(frozen=True)
class Clearing:
    """Why narrowing set a suspect aside.

    ``stayed-when-undone``: ``by`` undid ``shift`` while the suspect stayed in;
    ``moved-with-no-change``: the suspect came or went at ``by``, where nothing moved.
    """

    reason: ClearingReason
    shift: str  # the shift it was a suspect of
    by: str  # the shift id that cleared it
    change: str  # the suspect's change at ``by`` ("arrived" or "left")
    change_pct: float  # the change measured at ``by``


@dataclass(frozen=True)
class Confounder:
    """Another difference between the two sides: a server argument, the NCCL version
    (``nccl_version``) or the CUDA version of the GPU driver (``cuda_driver_version``)."""

    field: str
    from_value: Any
    to_value: Any


@dataclass(frozen=True)
class Rerun:
    """The run that would settle a confounded shift: ``side`` launched with ``settings``
    (field -> value: the other side's), so that only the code differs."""

    side: Literal["from", "to"]
    settings: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Bisect:
    command: str
    steps: int
    commits: int


@dataclass
class ShiftNotes:
    """What is special about a shift, as facts (the views word them: timeline.render.wording)."""

    absorbed_by: str | None = None  # the shift that kept the verdict for the same change (the window)
    pooled: dict[str, list[str]] = field(default_factory=dict)  # side ("from"/"to") -> versions pooled
    left_out: list[tuple[str, LeftOutReason]] = field(default_factory=list)  # (run id, why)
    no_event: bool = False  # no code event between the two sides in the reflog
    boundary: list[BoundaryNote] = field(default_factory=list)


@dataclass
class Shift:
    """The test at one boundary between two versions of one workload (docs/shifts.md)."""

    id: str
    group: str
    metric: str
    unit: str
    from_side: ShiftSide
    to_side: ShiftSide
    change_pct: float
    p_value: float | None
    verdict: Verdict | None  # None: under the minimum effect
    method: str  # "pooled-t" or "line-spread"
    single_run: bool = False
    more_runs: tuple[int, int] | None = None  # extra runs (from side, to side) that would decide it
    events: list[str] = field(default_factory=list)
    suspects: list[Suspect] = field(default_factory=list)
    confounders: list[Confounder] = field(default_factory=list)
    bisect: Bisect | None = None
    notes: ShiftNotes = field(default_factory=ShiftNotes)
    # |change| under the minimum effect: nothing moved here (verdict None).
    quiet: bool = False
    # With the verdict "confounded": the reruns that would settle it.
    reruns: list[Rerun] = field(default_factory=list)
    # The verdict the test gave before confounders were weighed ("regression" or "improvement").
    measured: Verdict | None = None
    # Confounders that did not make it "confounded": the same change was seen with equal flags,
    # between runs of this shift ("runs") or by another workload's shift (its id).
    equal_flags: str | None = None
    # Server arguments every run of one side prints and no run of the other: the code change
    # added them (arguments_added: the to side's) or took them away (arguments_gone).
    arguments_added: list[str] = field(default_factory=list)
    arguments_gone: list[str] = field(default_factory=list)
    # Log messages (digits masked) every run of one side printed and no run of the other.
    messages_added: list[str] = field(default_factory=list)
    messages_gone: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Evidence:
    """One reason a culprit ranks where it does. ``shifts``: the shifts it is about; the other
    fields are the facts behind it (the views word them: timeline.render.wording)."""

    kind: EvidenceKind
    effect: Effect
    shifts: tuple[str, ...] = ()
    field: str | None = None  # knob-link: the differing flag; changed-what-ran: the new argument
    message: str | None = None  # changed-what-ran: the new log message its diff adds
    paths: tuple[str, ...] = ()  # knob-link / not-imported: the paths behind it
    count: int | None = None  # sole: suspects set aside; one-of: suspects left
    clearing: Clearing | None = None  # cleared: why


@dataclass(frozen=True)
class Culprit:
    """One commit that may have caused one or more shifts: each appears once in
    ``Timeline.culprits``, strongest evidence first (timeline.suspects.rank_culprits)."""

    sha: str
    subject: str
    shifts: list[str]
    likelihood: Likelihood
    evidence: list[Evidence] = field(default_factory=list)


@dataclass(frozen=True)
class RepoInfo:
    path: str
    head: str | None
    # Where the reflog's record starts (timeline.git.history.Coverage): runs before it are
    # "before-reflog". reason: clone, repository-created, worktree-created, expired-or-deleted,
    # branch-log, unknown, approximate, no-reflog, unread.
    coverage_reason: str | None = None
    coverage_start: datetime | None = None
    coverage_description: str = ""


@dataclass(frozen=True)
class Provenance:
    """What made the document, with which options, where: enough to tell two answers apart
    (asv and pytest-benchmark record the same of their results)."""

    version: str  # timeline's
    python: str
    platform: str
    host: str | None  # None when the user left it out
    options: dict[str, Any]  # build()'s options that shape the answer, as given


@dataclass
class Timeline:
    """The answer: code events and runs in one time-ordered story, plus what went wrong."""

    generated_at: datetime
    log_tz: str
    log_tz_source: str
    repo: RepoInfo | None
    events: list[CodeEvent]
    runs: list[Run]
    warnings: list[Diagnostic]
    # Moves of other refs, for context only (fetches, stashes): they never move HEAD.
    context: list[CodeEvent] = field(default_factory=list)
    # Filled by timeline.shifts.find_shifts (docs/shifts.md).
    shifts: list[Shift] = field(default_factory=list)
    culprits: list[Culprit] = field(default_factory=list)
    provenance: Provenance | None = None  # None for a timeline made by hand

    # What a notebook or a debugger shows: counts and the runs at a glance, not every field (the
    # dataclass's own repr of the demo's timeline runs to 15,000 characters).
    REPR_HTML_RUNS = 20

    def __repr__(self) -> str:
        repo = "no repo" if self.repo is None else f"repo {self.repo.path} at {(self.repo.head or '-')[:9]}"
        counts = ", ".join(
            f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
            for items, noun in (
                (self.runs, "run"),
                (self.events, "event"),
                (self.shifts, "shift"),
                (self.culprits, "culprit"),
                (self.warnings, "warning"),
            )
        )
        return visible(f"<Timeline: {counts}; {repo}; log zone {self.log_tz}>")

    def _repr_html_(self) -> str:
        """A compact runs table (Jupyter's rich display): every text made visible (escape
        sequences and bidi controls written out, as in every view), then HTML-escaped."""
        from html import escape

        def cell(value: object) -> str:
            return escape(visible(str(value)))

        rows = []
        for run in self.runs[: self.REPR_HTML_RUNS]:
            start = "-" if run.start is None else run.start.isoformat(sep=" ", timespec="seconds")
            steady = "-" if run.steady is None else f"{run.steady.value:.4g} {run.steady.unit}"
            cells = (run.id, start, (run.commit or "-")[:9], run.attribution, steady, run.source)
            rows.append("<tr>" + "".join(f"<td>{cell(value)}</td>" for value in cells) + "</tr>")
        more = len(self.runs) - self.REPR_HTML_RUNS
        if more > 0:
            rows.append(f'<tr><td colspan="6">... and {more} more runs (timeline.runs_frame)</td></tr>')
        head = "".join(f"<th>{name}</th>" for name in ("run", "start", "commit", "attribution", "steady", "log"))
        return f"<p>{cell(repr(self))}</p><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
