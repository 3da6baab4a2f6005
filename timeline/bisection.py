"""Bisection with a benchmark: which commit on a line of history moved the throughput.

PURE: no I/O, no git, no clock, no randomness. ``bisect`` asks a ``measure(commit, runs)``
callable for the numbers (``timeline.commands.bisect`` checks the commit out in a scratch folder
and runs the user's benchmark there); everything else, the statistics and the search, is here.
docs/bisect.md explains the method to users.

* **Numbers.** Each run gives one number, its steady throughput (``timeline.shifts.steady_of``,
  the number ``build`` compares). All the statistics work on natural logs, as
  ``timeline.detect`` does: changes are relative and the noise is about a relative standard
  deviation.
* **Noise** (``noise_of``): the within-commit standard deviation of the runs, pooled over every
  commit measured so far (the good and bad ends, then each step: Student's pooled standard
  deviation, ``sqrt(sum SS_i / (N - K))``, ``timeline.detect.pooled_sigma``). With one run a
  commit there is no replicate: the runs' own decode-line spread (``steady.spread``) is the
  noise, as a floor, as ``detect``'s single-run rule does.
* **Are the levels apart?** (``judge_levels``) The good and bad ends are measured ``runs`` times
  each first. Their difference is tested with the pooled two-sample t-test at the project's
  alpha (0.01; a normal test on the line-spread floor with one run a commit), it must be at
  least the minimum effect (3%; twice that with one run a commit), and at least ``SEPARATION``
  (5) noise widths, so that a single step's mean can tell the two levels apart. Otherwise the
  bisection stops and names nothing.
* **Classifying a step** (``classify``): the likelihood ratio of the step's mean log under the
  two levels (Gaussian model, each level's mean uncertain too: standard error
  ``sigma * sqrt(1/n + 1/n_level)``), the most powerful test between two simple hypotheses
  (Neyman-Pearson lemma, https://en.wikipedia.org/wiki/Neyman%E2%80%93Pearson_lemma). A step is
  good (bad) when the ratio favours that level by at least ``1 / alpha`` (100 to 1), unless the
  step sits between the levels, away from the favoured one: significantly (p < alpha, Student's
  t at the pooled degrees of freedom) and by at least ``THIRD_LEVEL`` (a quarter) of the way to
  the other (a third level, where a partial change is; both conditions, as ``detect`` asks of a
  shift both significance and a minimum effect: one level's mean comes from a few runs and is
  off for every step compared with it, so significance alone would call steps between far
  more often than alpha). A step beyond a level (faster than good, slower than bad) is at that
  level. Anything else is ``unclear``: measured ``runs`` more times once, then skipped.
* **The search** (``LineSearch``): ``git bisect --first-parent`` on the candidate line
  (https://git-scm.com/docs/git-bisect): the untested commit nearest the middle of the stretch
  between the last commit at the old end's level and the first at the new end's. A skipped
  commit is stepped around, the nearest untested one is taken instead; when only skipped
  commits are left in the stretch the answer is that range, as ``git bisect skip`` does
  (https://git-scm.com/docs/git-bisect#_bisect_skip).
* **Last check**: at the end the levels are judged again with the noise pooled over every run of
  the bisection; a noise that turned out larger than the first runs showed makes it undecided.

The good end runs faster than the bad one. The search is on the line from the older end to the
newer one (``bisect(..., newer=...)`` says which it is): a regression hunt (the newer end is bad)
finds the first bad commit; an improvement hunt (the newer end is good) the first good one.

What it finds are codes and numbers (``Levels.verdict``, ``Judgement.side_note``, ``Step.why``,
``Bisection.why``, ``Failure.code``); the views word them (``timeline.render.bisect_wording``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from timeline.detect import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    MIN_POOLED_DF,
    SINGLE_RUN_EFFECT_FACTOR,
    SPREAD_FLOOR,
    Version,
    normal_two_sided_p,
    pooled_sigma,
    t_two_sided_p,
)

__all__ = [
    "Bisection",
    "Failure",
    "Judgement",
    "Levels",
    "LineSearch",
    "Noise",
    "Progress",
    "Sample",
    "Step",
    "bisect",
    "classify",
    "judge_levels",
    "noise_of",
    "BisectionWhy",
    "FailureCode",
    "JudgementDecision",
    "Level",
    "LevelsVerdict",
    "NoiseMethod",
    "Outcome",
    "SearchMark",
    "SideNote",
    "StepDecision",
    "StepWhy",
]

Level = Literal["good", "bad"]  # an end; also which end is the newer one
NoiseMethod = Literal["pooled", "line-spread", "unknown"]
# Why the levels are not apart enough to bisect, in the order judge_levels tests them; or apart.
LevelsVerdict = Literal["noise-unknown", "not-slower", "under-min-effect", "not-significant", "too-close", "apart"]
JudgementDecision = Literal["good", "bad", "unclear"]
SideNote = Literal["beyond-good", "beyond-bad"]  # a step faster than good, or slower than bad
StepDecision = Literal["good", "bad", "skip"]
# at-level: judged good or bad; between-levels: unclear even after the runs again; failed: no number.
StepWhy = Literal["at-level", "between-levels", "failed"]
SearchMark = Literal["old", "new", "skip"]  # at the older end's level, the newer end's, or skipped
Outcome = Literal["found", "range", "undecided"]
# end-failed: an end gave no number; not-apart: the ends' levels are not apart; not-apart-pooled:
# no longer apart with every run of the bisection pooled; found; only-skips-left: a range.
BisectionWhy = Literal["end-failed", "not-apart", "not-apart-pooled", "found", "only-skips-left"]
# checkout-failed: git could not check the commit out; log-outside-before-run and
# log-outside-after-run: --log leads out of the checkout (a symlink of the tree, or one the command
# made), so it is not deleted or read; command-failed: a non-zero exit or a signal; no-log: the
# command wrote no --log file; no-steady-value: the log has no steady throughput.
FailureCode = Literal[
    "checkout-failed", "log-outside-before-run", "log-outside-after-run", "command-failed", "no-log", "no-steady-value"
]

# Noise widths between the levels: a step of 2 runs then sits at least 2.5 standard errors from
# the midpoint between them, so a step at either level is rarely unclear.
SEPARATION = 5.0
# Below this the noise is taken as this (a benchmark printing the same number every run): about
# what two printed decimals resolve at 100 tok/s.
MIN_SIGMA = 1e-4
# A step significantly this far (of the way from one level to the other) from the level it is
# nearer to sits between them: a third level, neither good nor bad.
THIRD_LEVEL = 0.25


@dataclass(frozen=True)
class Sample:
    """One commit's runs: each run's steady value (positive) and its decode-line spread (or None)."""

    values: tuple[float, ...]
    spreads: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.values or any(not (v > 0 and math.isfinite(v)) for v in self.values):
            raise ValueError("a sample needs at least one positive finite value")
        if self.spreads and len(self.spreads) != len(self.values):
            raise ValueError("one spread per value")

    @property
    def mean_log(self) -> float:
        return math.fsum(math.log(v) for v in self.values) / len(self.values)

    @property
    def value(self) -> float:
        """The geometric mean of the runs."""
        return math.exp(self.mean_log)

    def plus(self, more: Sample) -> Sample:
        spreads = (*(self.spreads or (None,) * len(self.values)), *(more.spreads or (None,) * len(more.values)))
        return Sample((*self.values, *more.values), spreads)


@dataclass(frozen=True)
class Failure:
    """Why a commit gave no number (``code``), with the facts the views show."""

    code: FailureCode
    exit_status: int | None = None  # command-failed: the status it exited with
    signal: int | None = None  # command-failed: the signal that killed it
    last_line: str | None = None  # the last line of the command's output (no-steady-value: of the log)
    log: str | None = None  # the --log path, as given
    error: str | None = None  # checkout-failed: git's message


@dataclass(frozen=True)
class Noise:
    """The run-to-run noise in natural-log units (about a relative standard deviation)."""

    sigma: float | None
    df: int | None  # the pooled degrees of freedom; None for the line-spread floor
    method: NoiseMethod

    def p_value(self, statistic: float) -> float:
        """Two-sided p of a standardised difference: Student's t at ``df``, else normal."""
        return t_two_sided_p(statistic, self.df) if self.df else normal_two_sided_p(statistic)


def noise_of(samples: Sequence[Sample]) -> Noise:
    """The noise of the runs of ``samples`` (see the module docstring)."""
    sigma, df = pooled_sigma([Version(s.values) for s in samples])
    if sigma is not None and df >= MIN_POOLED_DF:
        return Noise(max(sigma, MIN_SIGMA), df, "pooled")
    spreads = [spread for s in samples for spread in (s.spreads or (None,) * len(s.values))]
    if spreads and all(spread is not None for spread in spreads):
        floor = max(SPREAD_FLOOR, *(spread for spread in spreads if spread is not None))
        return Noise(max(floor, sigma or 0.0), None, "line-spread")
    return Noise(None, None, "unknown")


@dataclass(frozen=True)
class Levels:
    """The good and bad ends' levels and whether they are apart enough to bisect."""

    good: float  # geometric means of the runs
    bad: float
    change: float  # bad / good - 1
    noise: Noise
    statistic: float | None  # t (pooled) or z (line spread) of the difference
    p_value: float | None
    separation: float | None  # |difference of the logs| / sigma: noise widths between the levels
    verdict: LevelsVerdict
    alpha: float  # the thresholds judged against
    min_effect: float  # as applied: doubled on the line-spread floor

    @property
    def apart(self) -> bool:
        return self.verdict == "apart"

    def to_dict(self, reason: str) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "change_pct": round(100 * self.change, 2),
            "sigma": self.noise.sigma,
            "df": self.noise.df,
            "noise_method": self.noise.method,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "separation": self.separation,
            "apart": self.apart,
            "reason": reason,
        }


def judge_levels(
    good: Sample, bad: Sample, noise: Noise, *, alpha: float = DEFAULT_ALPHA, min_effect: float = DEFAULT_MIN_EFFECT
) -> Levels:
    """Are the good and bad ends clearly apart given the noise? (see the module docstring)"""
    delta = bad.mean_log - good.mean_log
    change = math.expm1(delta)
    effect = min_effect * (SINGLE_RUN_EFFECT_FACTOR if noise.method == "line-spread" else 1.0)
    if noise.sigma is None:
        return Levels(good.value, bad.value, change, noise, None, None, None, "noise-unknown", alpha, effect)
    statistic = delta / (noise.sigma * math.sqrt(1 / len(good.values) + 1 / len(bad.values)))
    p_value = noise.p_value(statistic)
    separation = abs(delta) / noise.sigma
    verdict: LevelsVerdict
    if delta >= 0:
        verdict = "not-slower"
    elif abs(change) < effect:
        verdict = "under-min-effect"
    elif p_value >= alpha:
        verdict = "not-significant"
    elif separation < SEPARATION:
        verdict = "too-close"
    else:
        verdict = "apart"
    return Levels(good.value, bad.value, change, noise, statistic, p_value, separation, verdict, alpha, effect)


@dataclass(frozen=True)
class Judgement:
    """Where a step's mean falls between the two levels."""

    decision: JudgementDecision
    value: float  # the step's geometric mean
    z_good: float  # standardised distance to each level
    z_bad: float
    log_ratio: float  # log of the likelihood ratio, good : bad
    position: float  # 0 at the good level, 1 at the bad one
    side_note: SideNote | None = None  # at a level while significantly beyond it

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "z_good": self.z_good, "z_bad": self.z_bad, "log_likelihood_ratio": self.log_ratio}


def classify(sample: Sample, good: Sample, bad: Sample, noise: Noise, *, alpha: float = DEFAULT_ALPHA) -> Judgement:
    """Good, bad or unclear: the likelihood ratio of the two levels, and whether the step sits
    between them, away from both (see the module docstring). ``noise`` must be known."""
    if noise.sigma is None:
        raise ValueError("classify needs a known noise")
    n = len(sample.values)
    se_good = noise.sigma * math.sqrt(1 / n + 1 / len(good.values))
    se_bad = noise.sigma * math.sqrt(1 / n + 1 / len(bad.values))
    z_good = (sample.mean_log - good.mean_log) / se_good
    z_bad = (sample.mean_log - bad.mean_log) / se_bad
    log_ratio = (z_bad * z_bad - z_good * z_good) / 2 + math.log(se_bad / se_good)
    position = (sample.mean_log - good.mean_log) / (bad.mean_log - good.mean_log)
    needed = math.log(1 / alpha)
    off_good = noise.p_value(z_good) < alpha
    off_bad = noise.p_value(z_bad) < alpha
    if log_ratio >= needed and not (off_good and position >= THIRD_LEVEL):
        return Judgement("good", sample.value, z_good, z_bad, log_ratio, position, "beyond-good" if off_good else None)
    if log_ratio <= -needed and not (off_bad and position <= 1 - THIRD_LEVEL):
        return Judgement("bad", sample.value, z_good, z_bad, log_ratio, position, "beyond-bad" if off_bad else None)
    return Judgement("unclear", sample.value, z_good, z_bad, log_ratio, position)


class LineSearch:
    """``git bisect`` on a line of ``count`` candidates, oldest first; the last one is the newer
    end, known to be at its level (https://git-scm.com/docs/git-bisect)."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("a line search needs at least one candidate")
        self.old = -1  # the last index known at the older end's level (-1: the older end itself)
        self.new = count - 1  # the first index known at the newer end's level
        self.skipped: set[int] = set()

    def untested(self) -> list[int]:
        return [i for i in range(self.old + 1, self.new) if i not in self.skipped]

    def next(self) -> int | None:
        """The candidate to test next: the untested one nearest the middle (the older of two);
        None when the search is over."""
        untested = self.untested()
        if not untested:
            return None
        middle = (self.old + self.new) / 2
        return min(untested, key=lambda i: (abs(i - middle), i))

    def mark(self, index: int, decision: SearchMark) -> None:
        if not self.old < index < self.new:
            raise ValueError(f"candidate {index} is outside the stretch still searched")
        if decision == "old":
            self.old = index
        elif decision == "new":
            self.new = index
        elif decision == "skip":
            self.skipped.add(index)
        else:
            raise ValueError(f"unknown decision {decision!r}")

    def suspects(self) -> list[int]:
        """The candidates the first changed commit can be: one when found, a range otherwise."""
        return list(range(self.old + 1, self.new + 1))


@dataclass
class Step:
    """One candidate tested: its runs, the decision and why (``failure``: the one that made it
    a skip)."""

    commit: str
    values: tuple[float, ...]
    decision: StepDecision
    why: StepWhy
    judgement: Judgement | None = None
    reran: bool = False
    failure: Failure | None = None

    def to_dict(self, reason: str) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "values": list(self.values),
            "decision": self.decision,
            "reason": reason,
            "reran": self.reran,
            "judgement": self.judgement.to_dict() if self.judgement else None,
        }


@dataclass
class Bisection:
    """The whole bisection. ``outcome``: "found" (``commits`` holds the first commit at the newer
    end's level), "range" (skips left ``commits``, one of which it is), or "undecided" (nothing
    named). ``why`` is set when it ends: with end-failed, ``failed_end`` and ``failure`` say which
    end and how; with not-apart and not-apart-pooled, ``levels`` holds the judgement."""

    good: str
    bad: str
    newer: Level  # "bad": a regression hunt; "good": an improvement hunt
    candidates: list[str]  # oldest first; the last is the newer end
    runs: int
    good_values: tuple[float, ...] = ()
    bad_values: tuple[float, ...] = ()
    levels: Levels | None = None
    steps: list[Step] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    why: BisectionWhy | None = None
    failed_end: Level | None = None
    failure: Failure | None = None

    @property
    def outcome(self) -> Outcome:
        """What ``why`` comes to: a commit named, a range of them, or nothing."""
        return {"found": "found", "only-skips-left": "range"}.get(self.why or "", "undecided")  # type: ignore[return-value]

    @property
    def found(self) -> str | None:
        return self.commits[0] if self.outcome == "found" else None

    def to_dict(
        self,
        *,
        levels_text: Callable[[Levels], str],
        step_text: Callable[[Step], str],
        bisection_text: Callable[[Bisection], str],
    ) -> dict[str, Any]:
        """The bisection as JSON, with each ``reason`` worded by the view's functions."""
        return {
            "good": {"commit": self.good, "values": list(self.good_values)},
            "bad": {"commit": self.bad, "values": list(self.bad_values)},
            "newer": self.newer,
            "candidates": len(self.candidates),
            "runs_per_step": self.runs,
            "levels": self.levels.to_dict(levels_text(self.levels)) if self.levels else None,
            "steps": [step.to_dict(step_text(step)) for step in self.steps],
            "result": {"outcome": self.outcome, "commits": list(self.commits), "reason": bisection_text(self)},
        }


class Progress:
    """What ``bisect`` reports as it goes; nothing here (the command line prints it)."""

    def start(self, result: Bisection) -> None:
        """The bisection is set up (``result.candidates``, ``runs``), nothing measured yet."""

    def end(self, name: Level, commit: str, measured: Sample | Failure) -> None:
        """``name`` ("good" or "bad") end measured."""

    def judged(self, levels: Levels) -> None:
        """The levels judged, at the start (and again at the end when they no longer hold)."""

    def step(self, number: int, step: Step, left: int) -> None:
        """A candidate tested; ``left`` candidates remain untested in the stretch searched."""


Measure = Callable[[str, int], "Sample | Failure"]


def bisect(
    good: str,
    bad: str,
    candidates: Sequence[str],
    measure: Measure,
    *,
    runs: int = 2,
    newer: Level = "bad",
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    progress: Progress | None = None,
) -> Bisection:
    """Find the first commit of ``candidates`` (oldest first, the last is the newer end) at the
    newer end's level, measuring each commit ``runs`` times with ``measure(commit, runs)``."""
    if newer not in ("good", "bad"):
        raise ValueError("newer is 'good' or 'bad'")
    if runs < 1:
        raise ValueError("runs must be at least 1")
    progress = progress or Progress()
    result = Bisection(good, bad, newer, list(candidates), runs)
    progress.start(result)
    ends: dict[Level, Sample] = {}
    sides: tuple[tuple[Level, str], ...] = (("good", good), ("bad", bad))
    for name, commit in sides:
        measured = measure(commit, runs)
        progress.end(name, commit, measured)
        if isinstance(measured, Failure):
            result.why, result.failed_end, result.failure = "end-failed", name, measured
            return result
        ends[name] = measured
    result.good_values, result.bad_values = ends["good"].values, ends["bad"].values
    measured_samples = [ends["good"], ends["bad"]]
    result.levels = judge_levels(
        ends["good"], ends["bad"], noise_of(measured_samples), alpha=alpha, min_effect=min_effect
    )
    progress.judged(result.levels)
    if not result.levels.apart:
        result.why = "not-apart"
        return result

    search = LineSearch(len(candidates))
    while (index := search.next()) is not None:
        commit = candidates[index]
        step, sample = _test(commit, runs, measure, ends, measured_samples, alpha)
        if sample is not None:
            measured_samples.append(sample)
        result.steps.append(step)
        if step.decision == "skip":
            search.mark(index, "skip")
        else:
            search.mark(index, "new" if step.decision == newer else "old")
        progress.step(len(result.steps), step, len(search.untested()))

    final = judge_levels(ends["good"], ends["bad"], noise_of(measured_samples), alpha=alpha, min_effect=min_effect)
    if not final.apart:
        result.levels = final
        progress.judged(final)
        result.why = "not-apart-pooled"
        return result
    result.commits = [candidates[i] for i in search.suspects()]
    if len(result.commits) == 1:
        result.why = "found"
    else:
        result.why = "only-skips-left"
    return result


def _test(
    commit: str, runs: int, measure: Measure, ends: dict[Level, Sample], measured: list[Sample], alpha: float
) -> tuple[Step, Sample | None]:
    """Measure one candidate (``runs`` more times once when unclear) and decide: ``(step, its sample)``."""
    sample: Sample | None = None
    judgement: Judgement | None = None
    for attempt in range(2):
        more = measure(commit, runs)
        if isinstance(more, Failure):
            values = sample.values if sample else ()
            return Step(commit, values, "skip", "failed", judgement, attempt > 0, more), sample
        sample = more if sample is None else sample.plus(more)
        judgement = classify(sample, ends["good"], ends["bad"], noise_of([*measured, sample]), alpha=alpha)
        if judgement.decision != "unclear":
            return Step(commit, sample.values, judgement.decision, "at-level", judgement, attempt > 0), sample
    assert sample is not None and judgement is not None
    return Step(commit, sample.values, "skip", "between-levels", judgement, True), sample
