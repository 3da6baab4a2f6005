"""Which commits could have moved the throughput, and which one did: suspects, narrowing, bisect.

Pure: reads ``CodeEvent``s and ``Shift``s, never git. The rules are in docs/shifts.md:

* **Suspects** of a shift are the commits that differ between its two sides, read from the reflog
  events in between: what the moves brought in (``arrived``) and what they took away (``left``),
  net (a commit that came and went again in between is no suspect).
* A suspect whose paths are all documentation, tests or CI configuration is ``unlikely``.
* **Narrowing** combines the shifts of one workload:

  1. a commit that arrived with a regression and left with an improvement of a similar size
     (or the reverse) is the **prime** suspect of both; the other suspects of the first shift
     that were still in after the second are cleared (the level came back without them leaving);
  2. a commit that arrived or left at a boundary where nothing moved (a change under the
     minimum effect) is cleared;
  3. a shift with one suspect left names it (**sole**); with several, each is **possible** and
     the shift gets a ``git bisect start`` line with its number of steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from timeline.model import Bisect, CodeEvent, Culprit, Shift, Suspect

__all__ = ["path_kind", "is_unlikely", "net_suspects", "bisect_for", "narrow", "short_sha"]

DECISIVE = ("regression", "improvement")
SIMILAR_SIZE = 0.5  # the smaller of two opposite changes is at least half the larger (in log terms)

_DOC_DIRS = frozenset({"doc", "docs", "documentation"})
_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "__tests__"})
_CI_DIRS = frozenset({".github", ".gitlab", ".circleci", ".buildkite", ".ci", ".azure-pipelines", ".devcontainer"})
_CI_FILES = frozenset({
    ".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "jenkinsfile", ".pre-commit-config.yaml",
    "codecov.yml", ".codecov.yml", "appveyor.yml", ".cirrus.yml", "tox.ini", "noxfile.py",
})
_DOC_SUFFIXES = (".md", ".rst", ".adoc", ".markdown")
_DOC_STEMS = ("readme", "changelog", "changes", "license", "licence", "contributing", "authors", "notice",
              "codeowners", "code_of_conduct", "security")


def short_sha(sha: str | None) -> str:
    """The 9-character form the views show (the timeline table's)."""
    return (sha or "-")[:9]


def _bisect_sha(sha: str) -> str:
    return sha[:12]


def path_kind(path: str) -> str | None:
    """``"docs"``, ``"tests"`` or ``"ci"`` for a path that cannot change what the server runs, else None."""
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
    return None


def is_unlikely(paths: Sequence[str] | None) -> bool:
    """True when the commit's paths are known and all of them are docs, tests or CI."""
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
                    author_date=when if hasattr(when, "isoformat") else None,
                    paths=paths,
                    unlikely=is_unlikely(paths),
                )
    return list(arrived.values()) + list(left.values())


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
    steps = max(1, math.ceil(math.log2(count)))
    if new_is_worse:
        command = f"git bisect start {_bisect_sha(new)} {_bisect_sha(old)}"
    else:
        command = f"git bisect start --term-old=slow --term-new=fast {_bisect_sha(new)} {_bisect_sha(old)}"
    return Bisect(command=command, steps=steps, commits=count)


def _similar(a: float, b: float) -> bool:
    la, lb = abs(math.log1p(a / 100)), abs(math.log1p(b / 100))
    return min(la, lb) >= SIMILAR_SIZE * max(la, lb) > 0


def _describe(shift: Shift) -> str:
    return f"{shift.id} ({shift.change_pct:+.1f}%, {shift.verdict})"


def narrow(shifts: Sequence[Shift], quiet: set[str], higher_is_better: bool = True) -> list[Culprit]:
    """Narrow the suspects of one workload's shifts (see the module docstring).

    ``quiet`` holds the ids of shifts where nothing moved (change under the minimum effect).
    Marks cleared suspects and sets ``bisect`` on the shifts in place; returns the culprits,
    most likely first.
    """
    decisive = [s for s in shifts if s.verdict in DECISIVE]
    cleared: dict[tuple[str, str], str] = {}  # (shift id, sha) -> why
    prime: dict[str, tuple[Shift, Shift]] = {}

    for i, first in enumerate(decisive):
        for second in decisive[i + 1:]:
            if first.verdict == second.verdict or not _similar(first.change_pct, second.change_pct):
                continue
            there = {s.sha: s.change for s in first.suspects}
            back = {s.sha for s in second.suspects if there.get(s.sha) not in (None, s.change)}
            for sha in back:
                prime.setdefault(sha, (first, second))
            if back:
                for suspect in first.suspects:
                    if suspect.sha not in back:
                        cleared.setdefault((first.id, suspect.sha), f"stayed when {second.id} undid {first.id}")

    for calm in shifts:
        if calm.id not in quiet:
            continue
        for suspect in calm.suspects:
            for shift in decisive:
                if suspect.sha in prime or all(s.sha != suspect.sha for s in shift.suspects):
                    continue
                verb = "came" if suspect.change == "arrived" else "went"
                cleared.setdefault((shift.id, suspect.sha), f"{verb} at {calm.id} with no change ({calm.change_pct:+.1f}%)")

    for shift in shifts:
        shift.suspects = [
            replace(s, cleared=cleared[(shift.id, s.sha)]) if (shift.id, s.sha) in cleared else s
            for s in shift.suspects
        ]

    found: dict[str, dict] = {}

    def add(sha: str, subject: str, shift_ids: list[str], reason: str, likelihood: str, order: tuple) -> None:
        entry = found.get(sha)
        if entry is None:
            found[sha] = {"sha": sha, "subject": subject, "shifts": list(shift_ids), "reason": reason,
                          "likelihood": likelihood, "order": order}
        else:
            entry["shifts"] += [i for i in shift_ids if i not in entry["shifts"]]

    rank = {"prime": 0, "sole": 1, "possible": 2}
    positions = {s.id: n for n, s in enumerate(shifts)}
    for sha, (first, second) in prime.items():
        subject = next(s.subject for s in first.suspects if s.sha == sha)
        came = next(s.change for s in first.suspects if s.sha == sha)
        verbs = ("arrived", "left") if came == "arrived" else ("left", "came back")
        reason = (
            f"{verbs[0]} with {_describe(first)} and {verbs[1]} with {_describe(second)}, "
            "a change of similar size: the level moved with it"
        )
        if first.single_run or second.single_run:
            reason += " (judged on line spread: rerun to confirm)"
        regression = "regression" in (first.verdict, second.verdict)
        add(sha, subject, [first.id, second.id], reason, "prime", (rank["prime"], not regression, positions[first.id]))

    for shift in decisive:
        if any(s.sha in prime for s in shift.suspects):
            continue
        remaining = [s for s in shift.suspects if s.cleared is None and not s.unlikely]
        if not remaining:
            remaining = [s for s in shift.suspects if s.cleared is None]
        if not remaining:
            continue
        note = " (judged on line spread: rerun to confirm)" if shift.single_run else ""
        set_aside = len(shift.suspects) - len(remaining)
        order_base = shift.verdict != "regression"
        if len(remaining) == 1:
            (suspect,) = remaining
            if len(shift.suspects) == 1:
                reason = f"the only commit between the two sides of {_describe(shift)}"
            else:
                reason = f"the only suspect of {_describe(shift)} left after narrowing ({set_aside} set aside)"
            if suspect.unlikely:
                reason += "; it touches only docs, tests or CI"
            add(suspect.sha, suspect.subject, [shift.id], reason + note, "sole", (rank["sole"], order_base, positions[shift.id]))
            continue
        shift.bisect = bisect_for(shift, higher_is_better)
        for suspect in remaining:
            reason = f"one of {len(remaining)} suspects of {_describe(shift)}"
            if shift.bisect is not None:
                reason += f": bisect in about {shift.bisect.steps} steps"
            add(suspect.sha, suspect.subject, [shift.id], reason + note, "possible",
                (rank["possible"], order_base, positions[shift.id]))

    ordered = sorted(found.values(), key=lambda e: e["order"])
    return [Culprit(e["sha"], e["subject"], e["shifts"], e["reason"], e["likelihood"]) for e in ordered]
