"""Which commits could have moved the throughput, and which one did: suspects, narrowing, ranking.

Pure: reads ``CodeEvent``s, ``Shift``s and the code facts the git module read (``CodeFacts``),
never git itself. The rules are in docs/shifts.md, sections 4 and 5:

* **Suspects** of a shift are the commits that differ between its two sides, read from the reflog
  events in between: what the moves brought in (``arrived``) and what they took away (``left``),
  net (a commit that came and went again in between is no suspect).
* **Narrowing** (``narrow``) combines the shifts of one workload: a commit that arrived with a
  change and left with the opposite one of a similar size is the **prime** suspect of both (the
  other suspects of the first shift, still in after the second, are cleared); a commit that came
  or went where nothing moved is cleared.
* **Ranking** (``rank_culprits``) lists every suspect of every decisive shift once, with the
  evidence that raised or lowered it, strongest first; each piece of evidence has a function of
  its own here (``knob_link``, ``changed_what_ran``, ``not_imported``, ``harmless_kind``,
  ``same_boundary``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, Protocol, cast

from timeline.model import (
    Bisect,
    Clearing,
    CodeEvent,
    Confounder,
    Culprit,
    Evidence,
    Likelihood,
    Shift,
    Suspect,
)
from timeline.records import ChangedLine

__all__ = [
    "path_kind",
    "is_unlikely",
    "net_suspects",
    "bisect_for",
    "bisect_steps",
    "narrow",
    "short_sha",
    "rank_culprits",
    "knob_link",
    "knob_words",
    "changed_what_ran",
    "message_printed_by",
    "not_imported",
    "same_boundary",
    "signed_effect",
    "knob_linked",
    "DECISIVE",
    "LIKELIHOOD_ORDER",
]

# Verdicts whose suspects are culprits: the test saw a change (confounded: a flag differs too).
DECISIVE = ("regression", "improvement", "confounded")
SIMILAR_SIZE = 0.5  # the smaller of two opposite changes is at least half the larger (in log terms)
LIKELIHOOD_ORDER = ("prime", "sole", "likely", "possible", "unlikely", "cleared")

_DOC_DIRS = frozenset({"doc", "docs", "documentation"})
# Scripts that measure or show the server: run by hand, never imported by it.
_BENCH_DIRS = frozenset({"benchmark", "benchmarks", "bench"})
_EXAMPLE_DIRS = frozenset({"example", "examples"})
_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "__tests__"})
_CI_DIRS = frozenset({".github", ".gitlab", ".circleci", ".buildkite", ".ci", ".azure-pipelines", ".devcontainer"})
_CI_FILES = frozenset(
    {
        ".gitlab-ci.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "jenkinsfile",
        ".pre-commit-config.yaml",
        "codecov.yml",
        ".codecov.yml",
        "appveyor.yml",
        ".cirrus.yml",
        "tox.ini",
        "noxfile.py",
    }
)
_DOC_SUFFIXES = (".md", ".rst", ".adoc", ".markdown")
_DOC_STEMS = (
    "readme",
    "changelog",
    "changes",
    "license",
    "licence",
    "contributing",
    "authors",
    "notice",
    "codeowners",
    "code_of_conduct",
    "security",
)


def short_sha(sha: str | None) -> str:
    """The 9-character form the views show (the timeline table's)."""
    return (sha or "-")[:9]


def _bisect_sha(sha: str) -> str:
    return sha[:12]


def path_kind(path: str) -> str | None:
    """``"docs"``, ``"tests"``, ``"ci"``, ``"benchmarks"`` or ``"examples"`` for a path that cannot
    change what the server runs, else None."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not parts:
        return None
    name = parts[-1].lower()
    folders = {p.lower() for p in parts[:-1]}
    if folders & _CI_DIRS or name in _CI_FILES:
        return "ci"
    if (
        folders & _TEST_DIRS
        or name.startswith("test_")
        or name == "conftest.py"
        or any(name.endswith(s) for s in ("_test.py", "_tests.py", "_test.go", "_test.cc", "_test.cpp"))
        or ".test." in name
        or ".spec." in name
    ):
        return "tests"
    if folders & _DOC_DIRS or name.endswith(_DOC_SUFFIXES) or name.split(".")[0] in _DOC_STEMS:
        return "docs"
    if folders & _BENCH_DIRS:
        return "benchmarks"
    if folders & _EXAMPLE_DIRS:
        return "examples"
    return None


def is_unlikely(paths: Sequence[str] | None) -> bool:
    """True when the commit's paths are known and all of them are docs, tests, CI, benchmarks or examples."""
    return bool(paths) and all(path_kind(p) is not None for p in paths or ())


def _commit_facts(commit) -> tuple[object, list[str] | None]:
    """The author date and paths the git module provides, when it does (older CommitInfo has neither)."""
    when = getattr(commit, "author_date", None)
    if when is None:
        when = getattr(commit, "date", None)
    paths = getattr(commit, "paths", None)
    if paths is None:
        paths = getattr(commit, "files", None)
    return when, (list(paths) if paths is not None else None)


def net_suspects(events: Iterable[CodeEvent]) -> list[Suspect]:
    """The commits the events brought in and took away, net, in event order (arrived first)."""
    arrived: dict[str, Suspect] = {}
    left: dict[str, Suspect] = {}
    for event in events:
        for commits, change, mine, other in (
            (event.commits, "arrived", arrived, left),
            (event.commits_removed, "left", left, arrived),
        ):
            for commit in commits:
                if commit.sha in other:  # came back, or went away again: no net difference
                    del other[commit.sha]
                    continue
                when, paths = _commit_facts(commit)
                mine[commit.sha] = Suspect(
                    sha=commit.sha,
                    subject=commit.subject,
                    change=change,
                    event=event.id,
                    # a CommitInfo's author_date (or an older commit's date): a datetime
                    author_date=cast(datetime, when) if hasattr(when, "isoformat") else None,
                    paths=paths,
                    unlikely=is_unlikely(paths),
                )
    return list(arrived.values()) + list(left.values())


def bisect_steps(count: int) -> int:
    """About how many steps a bisection of ``count`` candidates takes: ceil(log2(count)); none for one."""
    return math.ceil(math.log2(count)) if count > 1 else 0


def bisect_for(shift: Shift, higher_is_better: bool = True) -> Bisect | None:
    """``git bisect start`` over a shift's commit range, or None when the range is not a line.

    When the newer side is worse: ``git bisect start NEW OLD`` (bad, good). When it is better, the
    terms are renamed so that git still walks towards the first changed commit.
    """
    changes = {s.change for s in shift.suspects}
    if len(shift.suspects) < 2 or len(changes) != 1:
        return None
    if changes == {"arrived"}:
        old, new, new_is_to = shift.from_side.commit, shift.to_side.commit, True
    else:
        old, new, new_is_to = shift.to_side.commit, shift.from_side.commit, False
    to_is_worse = (shift.change_pct < 0) == higher_is_better
    new_is_worse = to_is_worse if new_is_to else not to_is_worse
    count = len(shift.suspects)
    steps = bisect_steps(count)
    if new_is_worse:
        command = f"git bisect start {_bisect_sha(new)} {_bisect_sha(old)}"
    else:
        command = f"git bisect start --term-old=slow --term-new=fast {_bisect_sha(new)} {_bisect_sha(old)}"
    return Bisect(command=command, steps=steps, commits=count)


def _similar(a: float, b: float) -> bool:
    la, lb = abs(math.log1p(a / 100)), abs(math.log1p(b / 100))
    return min(la, lb) >= SIMILAR_SIZE * max(la, lb) > 0


def narrow(shifts: Sequence[Shift]) -> None:
    """Mark the suspects of one workload's shifts, in place (docs/shifts.md, section 5).

    A commit that arrived with one decisive shift and left with an opposite one of similar size
    gets ``undone_by`` on both (prime); the other suspects of the first shift, still in after the
    second, are cleared; so is a commit that came or went at a shift where nothing moved (``quiet``).
    """
    decisive = [s for s in shifts if s.verdict in DECISIVE]
    cleared: dict[tuple[str, str], Clearing] = {}  # (shift id, sha) -> why
    undone: dict[tuple[str, str], str] = {}  # (shift id, sha) -> the other shift of the pair
    prime = _pair_undone(decisive, cleared, undone)
    _clear_quiet(shifts, decisive, prime, cleared)
    for shift in shifts:
        shift.suspects = [
            replace(s, cleared=cleared.get((shift.id, s.sha)), undone_by=undone.get((shift.id, s.sha)))
            for s in shift.suspects
        ]


def _pair_undone(
    decisive: Sequence[Shift], cleared: dict[tuple[str, str], Clearing], undone: dict[tuple[str, str], str]
) -> set[str]:
    """Fill ``undone`` with the commits a later opposite shift of similar size took back, and
    ``cleared`` with the first shift's other suspects, which stayed; return the prime shas.
    Runs before ``_clear_quiet`` so a pair's clearing wins over a quiet one."""
    prime: set[str] = set()
    for i, first in enumerate(decisive):
        for second in decisive[i + 1 :]:
            if _direction(first) == _direction(second) or not _similar(first.change_pct, second.change_pct):
                continue
            there = {s.sha: s.change for s in first.suspects}
            back = {s.sha for s in second.suspects if there.get(s.sha) not in (None, s.change)}
            for sha in back - prime:
                undone[(first.id, sha)], undone[(second.id, sha)] = second.id, first.id
            prime |= back
            if back:
                _clear_stayed(first, second, back, cleared)
    return prime


def _clear_stayed(first: Shift, second: Shift, back: set[str], cleared: dict[tuple[str, str], Clearing]) -> None:
    """Clear the suspects of ``first`` that ``second`` did not take back: they stayed in while
    the metric returned, so they cannot explain ``first``."""
    for suspect in first.suspects:
        if suspect.sha not in back:
            cleared.setdefault(
                (first.id, suspect.sha),
                Clearing("stayed-when-undone", first.id, second.id, suspect.change, second.change_pct),
            )


def _clear_quiet(
    shifts: Sequence[Shift], decisive: Sequence[Shift], prime: set[str], cleared: dict[tuple[str, str], Clearing]
) -> None:
    """Clear, at each decisive shift, the non-prime suspects that also came or went at a quiet
    shift: the metric did not move when they did."""
    for calm in shifts:
        if not calm.quiet:
            continue
        for suspect in calm.suspects:
            for shift in decisive:
                if suspect.sha in prime or all(s.sha != suspect.sha for s in shift.suspects):
                    continue
                cleared.setdefault(
                    (shift.id, suspect.sha),
                    Clearing("moved-with-no-change", shift.id, calm.id, suspect.change, calm.change_pct),
                )


def _direction(shift: Shift) -> int:
    return 1 if shift.change_pct > 0 else -1


# --------------------------------------------------------------------------- evidence, one piece each


class _Reach(Protocol):
    def judge(self, path: str) -> bool | None: ...


_FLAG_PREFIXES = ("disable_", "enable_", "no_", "use_", "skip_")
_WORD = re.compile(r"^[a-z][a-z0-9_]{3,}$")


# Values too common to name any code ("auto" is in "autotune", "autoscaler"...).
_PLAIN_VALUES = frozenset(
    {
        "auto",
        "none",
        "null",
        "true",
        "false",
        "default",
        "enabled",
        "disabled",
        "half",
        "float",
        "float16",
        "bfloat16",
        "float32",
        "bf16",
        "fp16",
        "fp32",
    }
)
_TOKEN = re.compile(r"[^a-z0-9]+")


def knob_words(confounder: Confounder) -> tuple[str, tuple[str, ...]]:
    """The words that name the code behind a flag: its core, the flag without ``disable_``/
    ``enable_``... (``disable_custom_all_reduce`` -> ``custom_all_reduce``; ``nccl`` for the NCCL
    version), and the string values that read like names (``attention_backend`` ``flashinfer``
    -> ``triton``: both backends), common ones (``auto``, dtypes) left out."""
    if confounder.field == "nccl_version":
        return "nccl", ()
    if confounder.field == "cuda_driver_version":
        return "cuda_driver", ()
    core = confounder.field
    for prefix in _FLAG_PREFIXES:
        if core.startswith(prefix) and len(core) > len(prefix) + 3:
            core = core[len(prefix) :]
            break
    values = []
    for value in (confounder.from_value, confounder.to_value):
        for item in value if isinstance(value, list) else [value]:
            word = item.lower().replace("-", "_") if isinstance(item, str) else ""
            if _WORD.match(word) and word not in _PLAIN_VALUES:
                values.append(word)
    return core, tuple(dict.fromkeys(values))


def _names(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def knob_link(confounder: Confounder, suspect: Suspect, changed: Sequence[ChangedLine] = ()) -> tuple[str, ...]:
    """The suspect's paths that touch the code behind ``confounder``: a path holding its core
    (``custom_all_reduce.py``, ``pynccl.py``) or one of its values as a whole word of a file or
    folder name (``triton_backend.py``, not ``autotune.py``), or a changed line naming the flag
    or its core. Docs, tests, CI, benchmarks and examples never link. Empty: no link."""
    core, values = knob_words(confounder)

    def names_it(path: str) -> bool:
        lowered = path.lower().replace("-", "_")
        return core in lowered or bool(set(values) & set(_TOKEN.split(lowered)))

    code = [path for path in suspect.paths or () if path_kind(path) is None]
    found = [path for path in code if names_it(path)]
    for line in changed:
        if (
            line.path not in found
            and path_kind(line.path) is None
            and (_names(line.text, confounder.field) or _names(line.text.lower(), core))
        ):
            found.append(line.path)
    return tuple(found)


def changed_what_ran(
    shift: Shift, suspect: Suspect, changed: Sequence[ChangedLine] = ()
) -> tuple[str | None, str | None]:
    """What the suspect added that the logs show only on its side of the shift: a server
    argument its added lines name, or a log message one of its added string literals prints
    (``message_printed_by``). Evidence that its code ran, not blame. ``(argument, message)``,
    each None when not found."""
    added = [line for line in changed if line.added]
    arrived = suspect.change == "arrived"
    argument = next(
        (
            name
            for name in (shift.arguments_added if arrived else shift.arguments_gone)
            if any(_names(line.text, name) for line in added)
        ),
        None,
    )
    message = next(
        (
            text
            for text in (shift.messages_added if arrived else shift.messages_gone)
            if any(message_printed_by(text, line.text) for line in added)
        ),
        None,
    )
    return argument, message


_LITERAL = re.compile(r"""[rbfuRBFU]{0,2}("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0]*\d*(?:\.\d+)?[sdifrxXeEgG%]")
_DIGITS = re.compile(r"\d+")
MIN_FRAGMENT = 12  # shorter literal pieces ("Done", "%s: %s") match too many messages


def message_printed_by(message: str, line: str) -> bool:
    """True when a string literal on ``line`` (a line of Python source) prints ``message`` (a
    log message with digits masked to 0, as ``ParsedRun.messages`` keeps them): one of the
    literal's pieces between placeholders (``{x}``, ``%s``), at least ``MIN_FRAGMENT`` characters,
    is in the message."""
    for literal in _LITERAL.findall(line):
        for piece in _PLACEHOLDER.split(literal[1:-1]):
            piece = " ".join(_DIGITS.sub("0", piece).split())
            if len(piece) >= MIN_FRAGMENT and piece in message:
                return True
    return False


def not_imported(suspect: Suspect, reaches: Sequence[_Reach]) -> tuple[str, ...]:
    """The suspect's paths that no static import from the server's entry point reaches in any of
    ``reaches`` (the versions that ran), when every other path of it is docs, tests, CI,
    benchmarks or examples; empty when any path is reached or cannot be judged (a kernel source,
    a build file) or when nothing is known."""
    if not suspect.paths or not reaches:
        return ()
    unreached = []
    for path in suspect.paths:
        if path_kind(path) is not None:
            continue
        judged = [reach.judge(path) for reach in reaches]
        if True in judged or False not in judged:
            return ()
        unreached.append(path)
    return tuple(unreached)


def signed_effect(shift: Shift, suspect: Suspect) -> int:
    """+1 when the commit's coming made the metric go up (or its leaving, down), -1 otherwise:
    what the shift says the commit did, if it did it."""
    return _direction(shift) * (1 if suspect.change == "arrived" else -1)


def same_boundary(shifts: Sequence[Shift]) -> dict[str, tuple[str, ...]]:
    """sha -> the decisive shifts of two or more workloads that it is an uncleared suspect of,
    each saying the commit moved the metric the same way (its ``signed_effect``): one code
    change likely moved them all."""
    seen: dict[tuple[str, int], list[Shift]] = {}
    for shift in shifts:
        if shift.verdict not in DECISIVE:
            continue
        for suspect in shift.suspects:
            if suspect.cleared is None:
                seen.setdefault((suspect.sha, signed_effect(shift, suspect)), []).append(shift)
    return {sha: tuple(s.id for s in found) for (sha, _), found in seen.items() if len({s.group for s in found}) > 1}


# --------------------------------------------------------------------------- the ranking


class _Facts(Protocol):
    @property
    def reach(self) -> Mapping[str, Any]: ...

    @property
    def changes(self) -> Mapping[str, Sequence[Any]]: ...


class _Ledger:
    """The suspects seen so far, by sha in the order first seen, each with its subject, the shifts
    it stays a suspect of, those it was cleared at, its evidence as noted and its sort order."""

    def __init__(self, positions: dict[str, int]) -> None:
        self.positions = positions
        self.found: dict[str, dict[str, Any]] = {}

    def note(self, suspect: Suspect, shift: Shift, evidence: Evidence | None = None, cleared: bool = False) -> None:
        entry = self.found.setdefault(
            suspect.sha,
            {
                "subject": suspect.subject,
                "shifts": [],
                "cleared": [],
                "evidence": [],
                "order": (self.positions[shift.id], len(self.found)),
            },
        )
        target = entry["cleared"] if cleared else entry["shifts"]
        if shift.id not in target:
            target.append(shift.id)
        if evidence is not None:
            entry["evidence"].append(evidence)


def rank_culprits(shifts: Sequence[Shift], code: _Facts | None = None, higher_is_better: bool = True) -> list[Culprit]:
    """Every uncleared suspect of every decisive shift once, with its evidence, strongest first.

    Likelihood: ``prime`` (undone by an opposite shift), ``sole`` (the only suspect of a shift
    left once the cleared and lowered ones are set aside), ``cleared`` (cleared wherever it is a
    suspect), ``unlikely`` (only docs/tests/CI or files the server does not import), ``likely``
    (touches the code behind a differing flag), else ``possible``. Within a likelihood: more
    raising evidence first, then regressions before improvements, then the shifts' order, then
    git's order of the commits. Sets ``bisect`` on shifts with several suspects left, in place
    (how many are left depends on the evidence).
    """
    reach = code.reach if code is not None else {}
    changes = code.changes if code is not None else {}
    ledger = _Ledger({s.id: n for n, s in enumerate(shifts)})
    shared = same_boundary(shifts)

    for shift in shifts:
        if shift.verdict not in DECISIVE:
            continue
        reaches = [reach[c] for c in (shift.from_side.commit, shift.to_side.commit) if c in reach]
        lowered = {
            suspect.sha
            for suspect in shift.suspects
            if _note_suspect(ledger, shift, suspect, reaches, changes.get(suspect.sha, ()), shared)
        }
        _note_knob_links(ledger, shift, changes)
        if any(s.undone_by is not None for s in shift.suspects):
            continue  # the prime suspect explains it
        _note_remaining(ledger, shift, lowered, higher_is_better)

    culprits = [_culprit(sha, entry, shifts, ledger.positions) for sha, entry in ledger.found.items()]
    culprits.sort(key=lambda item: item[0])
    return [culprit for _, culprit in culprits]


def _note_suspect(
    ledger: _Ledger,
    shift: Shift,
    suspect: Suspect,
    reaches: Sequence[_Reach],
    changed: Sequence[Any],
    shared: Mapping[str, tuple[str, ...]],
) -> bool:
    """Note one suspect of a decisive shift with the evidence about it alone; True when that
    evidence lowers it (so it does not count towards the shift's sole suspect)."""
    here = (shift.id,)
    if suspect.cleared is not None:
        ledger.note(suspect, shift, Evidence("cleared", "lowers", here, clearing=suspect.cleared), cleared=True)
        return False
    ledger.note(suspect, shift)
    if suspect.undone_by is not None:
        pair = tuple(sorted((shift.id, suspect.undone_by), key=ledger.positions.__getitem__))
        ledger.note(suspect, shift, Evidence("undone", "raises", pair))
    lowered = False
    if suspect.unlikely:
        lowered = True
        ledger.note(suspect, shift, Evidence("docs-tests-ci", "lowers", here))
    else:
        paths = not_imported(suspect, reaches)
        if paths:
            lowered = True
            ledger.note(suspect, shift, Evidence("not-imported", "lowers", here, paths=paths))
    argument, message = changed_what_ran(shift, suspect, changed)
    if argument is not None or message is not None:
        ledger.note(suspect, shift, Evidence("changed-what-ran", "shown", here, field=argument, message=message))
    if suspect.sha in shared:
        ledger.note(suspect, shift, Evidence("same-boundary", "shown", shared[suspect.sha]))
    if shift.single_run:
        ledger.note(suspect, shift, Evidence("single-run", "shown", here))
    return lowered


def _note_knob_links(ledger: _Ledger, shift: Shift, changes: Mapping[str, Sequence[Any]]) -> None:
    """Raise the uncleared suspects whose changes touch the code behind one of the shift's
    differing flags (confounders): the flag may have made their code run or not."""
    for confounder in shift.confounders:
        for suspect in shift.suspects:
            if suspect.cleared is not None:
                continue
            paths = knob_link(confounder, suspect, changes.get(suspect.sha, ()))
            if paths:
                ledger.note(
                    suspect, shift, Evidence("knob-link", "raises", (shift.id,), field=confounder.field, paths=paths)
                )


def _note_remaining(ledger: _Ledger, shift: Shift, lowered: set[str], higher_is_better: bool) -> None:
    """Raise the one suspect left once the cleared and lowered ones are set aside (``sole``), or,
    with several left, mark each ``one-of`` and set the shift's ``bisect``."""
    here = (shift.id,)
    uncleared = [s for s in shift.suspects if s.cleared is None]
    remaining = [s for s in uncleared if s.sha not in lowered] or uncleared
    if len(remaining) == 1:
        ledger.note(remaining[0], shift, Evidence("sole", "raises", here, count=len(shift.suspects) - 1))
    elif remaining:
        shift.bisect = bisect_for(shift, higher_is_better)
        for suspect in remaining:
            ledger.note(suspect, shift, Evidence("one-of", "shown", here, count=len(remaining)))


def _likelihood(kinds: set[str], still_suspect: bool) -> Likelihood:
    """The strongest likelihood the evidence kinds support, in the order rank_culprits documents."""
    if "undone" in kinds:
        return "prime"
    if "sole" in kinds:
        return "sole"
    if not still_suspect:
        return "cleared"
    if kinds & {"docs-tests-ci", "not-imported"}:
        return "unlikely"
    if "knob-link" in kinds:
        return "likely"
    return "possible"


def _culprit(
    sha: str, entry: Mapping[str, Any], shifts: Sequence[Shift], positions: dict[str, int]
) -> tuple[tuple[Any, ...], Culprit]:
    """One ledger entry as a culprit, with its sort key: likelihood, then more raising evidence,
    then regressions before improvements, then the order it was first seen in."""
    evidence = _merged(entry["evidence"], positions)
    likelihood = _likelihood({e.kind for e in evidence}, bool(entry["shifts"]))
    raises = sum(e.effect == "raises" for e in evidence)
    named = entry["shifts"] or entry["cleared"]
    regression = any(s.verdict == "regression" or s.measured == "regression" for s in shifts if s.id in named)
    key = (LIKELIHOOD_ORDER.index(likelihood), -raises, not regression, *entry["order"])
    return key, Culprit(sha, entry["subject"], sorted(named, key=positions.__getitem__), likelihood, evidence)


def knob_linked(culprits: Sequence[Culprit], shift: Shift, confounder: Confounder) -> tuple[str, ...]:
    """The culprits whose evidence links them to ``confounder`` of ``shift`` (knob link), by sha."""
    return tuple(
        c.sha
        for c in culprits
        if any(e.kind == "knob-link" and e.field == confounder.field and shift.id in e.shifts for e in c.evidence)
    )


def _merged(evidence: list[Evidence], positions: dict[str, int]) -> list[Evidence]:
    """One entry per fact, with every shift it was seen in; raising evidence first."""
    merged: dict[tuple, Evidence] = {}
    for item in evidence:
        key = (item.kind, item.effect, item.field, item.message, item.paths, item.count, item.clearing)
        if key in merged:
            shifts = tuple(sorted(set(merged[key].shifts) | set(item.shifts), key=positions.__getitem__))
            merged[key] = replace(merged[key], shifts=shifts)
        else:
            merged[key] = item
    order = {"raises": 0, "shown": 1, "lowers": 2}
    return sorted(merged.values(), key=lambda e: order[e.effect])
