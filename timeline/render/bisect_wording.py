"""The words for a bisection's facts: the levels' verdict, each step, the result, a failed run.

``timeline.bisection`` returns codes and numbers; ``timeline bisect``'s progress lines, its
answer and the JSON's ``reason`` texts are all worded here, so they say the same.
"""

from __future__ import annotations

from timeline.bisection import SEPARATION, Bisection, Failure, Judgement, Levels, Noise, Step

__all__ = ["bisection_text", "failure_text", "judgement_text", "levels_text", "noise_text", "step_text"]

SIDE_NOTES = {"beyond-good": " (faster than the good level)", "beyond-bad": " (slower than the bad level)"}


def noise_text(noise: Noise) -> str:
    """``noise 1.11% (pooled, 2 df)``."""
    if noise.sigma is None:
        return "noise unknown"
    how = f"pooled, {noise.df} df" if noise.method == "pooled" else "the runs' decode-line spread"
    return f"noise {noise.sigma:.2%} ({how})"


def levels_text(levels: Levels) -> str:
    """``apart (-19.7%, noise 1.11% (pooled, 2 df), 19.8 noise widths, p = 0.0025)``, or why not."""
    verdict = levels.verdict
    if verdict == "noise-unknown":
        return (
            "the noise is unknown: one run a commit and a run with fewer than 3 steady decode lines "
            "(measure more runs with --runs)"
        )
    numbers = (
        f"{levels.change:+.1%}, {noise_text(levels.noise)}, {levels.separation:.1f} noise widths, "
        f"p = {levels.p_value:.2g}"
    )
    if verdict == "apart":
        return f"apart ({numbers})"
    if verdict == "not-slower":
        return f"the bad commit is not slower than the good one ({numbers})"
    if verdict == "under-min-effect":
        return f"the levels differ by less than the minimum effect of {levels.min_effect:.0%} ({numbers})"
    if verdict == "not-significant":
        return f"the difference is not significant at p < {levels.alpha:g} ({numbers})"
    if verdict == "too-close":
        return f"the levels are less than {SEPARATION:g} noise widths apart ({numbers})"
    raise ValueError(f"unknown levels verdict {verdict!r}")


def judgement_text(judgement: Judgement) -> str:
    """``at the good level: log LR +192.7 (good : bad), z +0.6 from good, ...``."""
    numbers = (
        f"log LR {judgement.log_ratio:+.1f} (good : bad), z {judgement.z_good:+.1f} from good, "
        f"{judgement.z_bad:+.1f} from bad, {judgement.position:.0%} of the way to bad"
    )
    if judgement.decision == "unclear":
        return f"between the levels: {numbers}"
    note = SIDE_NOTES[judgement.side_note] if judgement.side_note else ""
    return f"at the {judgement.decision} level{note}: {numbers}"


def failure_text(failure: Failure) -> str:
    """Why a commit gave no number: ``the command exited with status 1: <its last line>``."""
    code = failure.code
    last_line = f": {failure.last_line}" if failure.last_line is not None else ""
    if code == "checkout-failed":
        return f"could not check it out: {failure.error}"
    if code == "log-outside-before-run":
        return f"{failure.log} leads outside the checkout of this commit (a symlink); not used"
    if code == "log-outside-after-run":
        return f"{failure.log} leads outside the checkout of this commit (a symlink); not read"
    if code == "command-failed":
        how = (
            f"killed by signal {failure.signal}"
            if failure.signal is not None
            else f"exited with status {failure.exit_status}"
        )
        return f"the command {how}{last_line}"
    if code == "no-log":
        return f"the command wrote no log {failure.log}"
    if code == "no-steady-value":
        return f"no steady throughput in the log (no Decode batch lines with a throughput){last_line}"
    raise ValueError(f"unknown failure code {code!r}")


def step_text(step: Step) -> str:
    """Why the step was decided as it was."""
    if step.why == "failed":
        assert step.failure is not None
        return failure_text(step.failure)
    assert step.judgement is not None
    if step.why == "between-levels":
        return f"{judgement_text(step.judgement)}, after {len(step.values)} runs"
    return judgement_text(step.judgement)


def bisection_text(result: Bisection) -> str:
    """The answer in one line: what was found, or why nothing was."""
    why = result.why
    if why == "end-failed":
        assert result.failure is not None
        return f"the {result.failed_end} commit gave no number: {failure_text(result.failure)}"
    if why in ("not-apart", "not-apart-pooled"):
        assert result.levels is not None
        pooled = "with every run of the bisection pooled, " if why == "not-apart-pooled" else ""
        return f"cannot decide: {pooled}{levels_text(result.levels)}"
    if why == "found":
        return f"the first {result.newer} commit"
    if why == "only-skips-left":
        return (
            f"only skipped commits are left to test: the first {result.newer} commit is one of these "
            f"{len(result.commits)} commits"
        )
    raise ValueError(f"the bisection has not ended (why {why!r})")
