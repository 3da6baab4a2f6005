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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

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

__all__ = ["Bisection", "Failure", "Judgement", "Levels", "LineSearch", "Noise", "Progress", "Sample", "Step",
           "bisect", "classify", "judge_levels", "noise_of"]

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

    def plus(self, more: "Sample") -> "Sample":
        spreads = (*(self.spreads or (None,) * len(self.values)), *(more.spreads or (None,) * len(more.values)))
        return Sample((*self.values, *more.values), spreads)


@dataclass(frozen=True)
class Failure:
    """Why a commit gave no number: the command failed, or its log has no steady value."""

    reason: str


@dataclass(frozen=True)
class Noise:
    """The run-to-run noise in natural-log units (about a relative standard deviation)."""

    sigma: float | None
    df: int | None  # the pooled degrees of freedom; None for the line-spread floor
    method: str  # "pooled", "line-spread" or "unknown"

    def p_value(self, statistic: float) -> float:
        """Two-sided p of a standardised difference: Student's t at ``df``, else normal."""
        return t_two_sided_p(statistic, self.df) if self.df else normal_two_sided_p(statistic)

    def describe(self) -> str:
        if self.sigma is None:
            return "noise unknown"
        how = f"pooled, {self.df} df" if self.method == "pooled" else "the runs' decode-line spread"
        return f"noise {self.sigma:.2%} ({how})"


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
    apart: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"good": self.good, "bad": self.bad, "change_pct": round(100 * self.change, 2),
                "sigma": self.noise.sigma, "df": self.noise.df, "noise_method": self.noise.method,
                "statistic": self.statistic, "p_value": self.p_value, "separation": self.separation,
                "apart": self.apart, "reason": self.reason}


def judge_levels(good: Sample, bad: Sample, noise: Noise, *, alpha: float = DEFAULT_ALPHA,
                 min_effect: float = DEFAULT_MIN_EFFECT) -> Levels:
    """Are the good and bad ends clearly apart given the noise? (see the module docstring)"""
    delta = bad.mean_log - good.mean_log
    change = math.expm1(delta)

    def levels(apart: bool, reason: str, statistic=None, p_value=None, separation=None) -> Levels:
        return Levels(good.value, bad.value, change, noise, statistic, p_value, separation, apart, reason)

    if noise.sigma is None:
        return levels(False, "the noise is unknown: one run a commit and a run with fewer than 3 steady decode "
                             "lines (measure more runs with --runs)")
    statistic = delta / (noise.sigma * math.sqrt(1 / len(good.values) + 1 / len(bad.values)))
    p_value = noise.p_value(statistic)
    separation = abs(delta) / noise.sigma
    numbers = f"{change:+.1%}, {noise.describe()}, {separation:.1f} noise widths, p = {p_value:.2g}"
    effect = min_effect * (SINGLE_RUN_EFFECT_FACTOR if noise.method == "line-spread" else 1.0)
    if delta >= 0:
        reason = f"the bad commit is not slower than the good one ({numbers})"
    elif abs(change) < effect:
        reason = f"the levels differ by less than the minimum effect of {effect:.0%} ({numbers})"
    elif p_value >= alpha:
        reason = f"the difference is not significant at p < {alpha:g} ({numbers})"
    elif separation < SEPARATION:
        reason = f"the levels are less than {SEPARATION:g} noise widths apart ({numbers})"
    else:
        return levels(True, f"apart ({numbers})", statistic, p_value, separation)
    return levels(False, reason, statistic, p_value, separation)


@dataclass(frozen=True)
class Judgement:
    """Where a step's mean falls between the two levels."""

    decision: str  # "good", "bad" or "unclear"
    value: float  # the step's geometric mean
    z_good: float  # standardised distance to each level
    z_bad: float
    log_ratio: float  # log of the likelihood ratio, good : bad
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "z_good": self.z_good, "z_bad": self.z_bad,
                "log_likelihood_ratio": self.log_ratio}


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
    # 0 at the good level, 1 at the bad one
    position = (sample.mean_log - good.mean_log) / (bad.mean_log - good.mean_log)
    needed = math.log(1 / alpha)
    numbers = (f"log LR {log_ratio:+.1f} (good : bad), z {z_good:+.1f} from good, {z_bad:+.1f} from bad, "
               f"{position:.0%} of the way to bad")
    off_good = noise.p_value(z_good) < alpha
    off_bad = noise.p_value(z_bad) < alpha
    if log_ratio >= needed and not (off_good and position >= THIRD_LEVEL):
        decision, note = "good", " (faster than the good level)" if off_good else ""
    elif log_ratio <= -needed and not (off_bad and position <= 1 - THIRD_LEVEL):
        decision, note = "bad", " (slower than the bad level)" if off_bad else ""
    else:
        return Judgement("unclear", sample.value, z_good, z_bad, log_ratio, f"between the levels: {numbers}")
    return Judgement(decision, sample.value, z_good, z_bad, log_ratio, f"at the {decision} level{note}: {numbers}")


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

    def mark(self, index: int, decision: str) -> None:
        """``decision``: "old" (at the older end's level), "new" or "skip"."""
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
    """One candidate tested: its runs, the decision ("good", "bad" or "skip") and why."""

    commit: str
    values: tuple[float, ...]
    decision: str
    reason: str
    judgement: Judgement | None = None
    reran: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "values": list(self.values), "decision": self.decision,
                "reason": self.reason, "reran": self.reran,
                "judgement": self.judgement.to_dict() if self.judgement else None}


@dataclass
class Bisection:
    """The whole bisection. ``outcome``: "found" (``commits`` holds the first commit at the newer
    end's level), "range" (skips left ``commits``, one of which it is), or "undecided" (nothing
    named: ``reason`` says why)."""

    good: str
    bad: str
    newer: str  # "bad" (a regression hunt) or "good" (an improvement hunt)
    candidates: list[str]  # oldest first; the last is the newer end
    runs: int
    good_values: tuple[float, ...] = ()
    bad_values: tuple[float, ...] = ()
    levels: Levels | None = None
    steps: list[Step] = field(default_factory=list)
    outcome: str = "undecided"
    commits: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def found(self) -> str | None:
        return self.commits[0] if self.outcome == "found" else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "good": {"commit": self.good, "values": list(self.good_values)},
            "bad": {"commit": self.bad, "values": list(self.bad_values)},
            "newer": self.newer, "candidates": len(self.candidates), "runs_per_step": self.runs,
            "levels": self.levels.to_dict() if self.levels else None,
            "steps": [step.to_dict() for step in self.steps],
            "result": {"outcome": self.outcome, "commits": list(self.commits), "reason": self.reason},
        }


class Progress:
    """What ``bisect`` reports as it goes; nothing here (the command line prints it)."""

    def start(self, result: "Bisection") -> None:
        """The bisection is set up (``result.candidates``, ``runs``), nothing measured yet."""

    def end(self, name: str, commit: str, measured: Sample | Failure) -> None:
        """``name`` ("good" or "bad") end measured."""

    def judged(self, levels: Levels) -> None:
        """The levels judged, at the start (and again at the end when they no longer hold)."""

    def step(self, number: int, step: Step, left: int) -> None:
        """A candidate tested; ``left`` candidates remain untested in the stretch searched."""


Measure = Callable[[str, int], "Sample | Failure"]


def bisect(good: str, bad: str, candidates: Sequence[str], measure: Measure, *, runs: int = 2,
           newer: str = "bad", alpha: float = DEFAULT_ALPHA, min_effect: float = DEFAULT_MIN_EFFECT,
           progress: Progress | None = None) -> Bisection:
    """Find the first commit of ``candidates`` (oldest first, the last is the newer end) at the
    newer end's level, measuring each commit ``runs`` times with ``measure(commit, runs)``."""
    if newer not in ("good", "bad"):
        raise ValueError("newer is 'good' or 'bad'")
    if runs < 1:
        raise ValueError("runs must be at least 1")
    progress = progress or Progress()
    result = Bisection(good, bad, newer, list(candidates), runs)
    progress.start(result)
    ends: dict[str, Sample] = {}
    for name, commit in (("good", good), ("bad", bad)):
        measured = measure(commit, runs)
        progress.end(name, commit, measured)
        if isinstance(measured, Failure):
            result.reason = f"the {name} commit gave no number: {measured.reason}"
            return result
        ends[name] = measured
    result.good_values, result.bad_values = ends["good"].values, ends["bad"].values
    measured_samples = [ends["good"], ends["bad"]]
    result.levels = judge_levels(ends["good"], ends["bad"], noise_of(measured_samples), alpha=alpha,
                                 min_effect=min_effect)
    progress.judged(result.levels)
    if not result.levels.apart:
        result.reason = f"cannot decide: {result.levels.reason}"
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
        result.reason = f"cannot decide: with every run of the bisection pooled, {final.reason}"
        return result
    suspects = [candidates[i] for i in search.suspects()]
    result.commits = suspects
    word = "bad" if newer == "bad" else "good"
    if len(suspects) == 1:
        result.outcome = "found"
        result.reason = f"the first {word} commit"
    else:
        result.outcome = "range"
        result.reason = (f"only skipped commits are left to test: the first {word} commit is one of these "
                         f"{len(suspects)} commits")
    return result


def _test(commit: str, runs: int, measure: Measure, ends: dict[str, Sample], measured: list[Sample],
          alpha: float) -> tuple[Step, Sample | None]:
    """Measure one candidate (``runs`` more times once when unclear) and decide: ``(step, its sample)``."""
    sample: Sample | None = None
    judgement: Judgement | None = None
    for attempt in range(2):
        more = measure(commit, runs)
        if isinstance(more, Failure):
            values = sample.values if sample else ()
            return Step(commit, values, "skip", more.reason, judgement, attempt > 0), sample
        sample = more if sample is None else sample.plus(more)
        judgement = classify(sample, ends["good"], ends["bad"], noise_of([*measured, sample]), alpha=alpha)
        if judgement.decision != "unclear":
            return Step(commit, sample.values, judgement.decision, judgement.reason, judgement, attempt > 0), sample
    assert sample is not None and judgement is not None
    return Step(commit, sample.values, "skip", f"{judgement.reason}, after {len(sample.values)} runs", judgement,
                True), sample
