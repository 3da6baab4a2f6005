"""``timeline bisect``: check commits out in a scratch folder, run the user's benchmark on each,
and search the first-parent line for the commit that moved the throughput.

Unlike ``build``, this runs code on purpose: the user's COMMAND, in a checkout of each commit
tested. The user's own checkout is never touched (``timeline.git.checkout.ScratchCheckout``);
the statistics and the search are ``timeline.bisection``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any, TypeGuard

from rich.console import Console

from timeline.bisection import Bisection, Failure, Level, Levels, Progress, Sample, Step, bisect
from timeline.errors import Interrupted, TimelineError, UsageError
from timeline.exitcodes import ExitCode
from timeline.export import output_target, write_text_atomic
from timeline.git.checkout import ScratchCheckout
from timeline.git.locate import locate, path_inside, resolve_head
from timeline.git.objects import ObjectStoreError
from timeline.render.bisect_wording import bisection_text, failure_text, levels_text, step_text
from timeline.suspects import bisect_steps

__all__ = ["bisect_document", "bisect_repository", "ends_from_build", "run", "summary_lines"]

# The order a previous build's shifts are taken in for --from: the first of these verdicts.
FROM_VERDICTS = ("regression", "improvement", "confounded")
STOP_GRACE_S = 5.0  # after SIGTERM, a command still running has this long before SIGKILL
OUTPUT_FILE = "command.out"  # the command's stdout and stderr, in the scratch folder


def ends_from_build(path: str | os.PathLike) -> tuple[str, str]:
    """``(good, bad)`` from a ``timeline build --json`` document: the two sides of its first
    regression (else improvement, else confounded) shift; good is the faster side."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--from {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"--from {path}: not a JSON document ({exc})") from None
    shifts = document.get("shifts") if isinstance(document, dict) else None
    if not isinstance(shifts, list):
        raise UsageError(f"--from {path}: no 'shifts' list (write it with timeline build --json)")
    for verdict in FROM_VERDICTS:
        for shift in shifts:
            if not isinstance(shift, dict) or shift.get("verdict") != verdict:
                continue
            before, after = shift.get("from"), shift.get("to")
            if not (_has_commit(before) and _has_commit(after)):
                raise UsageError(f"--from {path}: shift {shift.get('id')} has no commit on one side")
            faster_after = _number(after.get("value")) > _number(before.get("value"))
            good, bad = (after, before) if faster_after else (before, after)
            return good["commit"], bad["commit"]
    raise UsageError(f"--from {path}: no shift with the verdict {', '.join(FROM_VERDICTS)} to bisect")


def _has_commit(side: object) -> TypeGuard[dict[str, Any]]:
    """A side of a shift of the JSON document, with its commit."""
    return isinstance(side, dict) and isinstance(side.get("commit"), str)


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")


def bisect_repository(
    repo: str | os.PathLike,
    command: Sequence[str],
    *,
    good: str | None = None,
    bad: str | None = None,
    from_path: str | os.PathLike | None = None,
    runs: int = 2,
    log_path: str | None = None,
    progress: Progress | None = None,
) -> tuple[Bisection, dict[str, str]]:
    """Bisect ``repo``'s first-parent line between ``good`` and ``bad`` (ids or unique prefixes;
    defaults from ``from_path``, a ``build --json`` document; ``bad`` defaults to HEAD), running
    ``command`` ``runs`` times on each commit tested, in a scratch checkout. Returns the
    bisection and the subject of each commit it names or tested. Raises ``UsageError`` for bad
    input, ``TimelineError`` when git fails."""
    if not command:
        raise UsageError("no COMMAND given: put the benchmark command after --")
    if runs < 1:
        raise UsageError("--runs must be 1 or more")
    log = _relative_log(log_path)
    if from_path is not None and (good is None or bad is None):
        from_good, from_bad = ends_from_build(from_path)
        good, bad = good or from_good, bad or from_bad
    location = locate(repo)
    if bad is None and good is not None:
        bad = resolve_head(location).sha
    if good is None or bad is None:
        raise UsageError("give --good and --bad, or --from a timeline build --json document")
    try:
        with ScratchCheckout(location) as scratch:
            good_sha, bad_sha = _resolve(scratch, good), _resolve(scratch, bad)
            if good_sha == bad_sha:
                raise UsageError(f"good and bad are the same commit, {good_sha[:12]}")
            newer: Level
            if scratch.is_ancestor(good_sha, bad_sha):
                newer, line = "bad", scratch.first_parent_line(good_sha, bad_sha)
            elif scratch.is_ancestor(bad_sha, good_sha):
                newer, line = "good", scratch.first_parent_line(bad_sha, good_sha)
            else:
                raise UsageError(
                    f"good {good_sha[:12]} is not an ancestor of bad {bad_sha[:12]} (nor the other "
                    f"way round): they are not on one line of history"
                )
            older = good_sha if newer == "bad" else bad_sha
            parent = scratch.first_parent(line[0]) if line else older
            if parent != older:  # came in through a merge: the search would start from an unmeasured commit
                raise UsageError(
                    f"{older[:12]} is not on the first-parent line of {(bad_sha if newer == 'bad' else good_sha)[:12]} "
                    f"(a merge brought it in): bisect from the merge's first parent, {(parent or '-')[:12]}, "
                    "if it is on the same side"
                )
            subjects = {sha: info.subject for sha, info in scratch.describe([good_sha, bad_sha, *line]).items()}
            runner = _BenchmarkRunner(scratch, list(command), log)
            result = bisect(good_sha, bad_sha, line, runner.measure, runs=runs, newer=newer, progress=progress)
    except ObjectStoreError as exc:  # git failed: a checkout failure is a skip, so this is set-up or history
        raise TimelineError(str(exc)) from None
    return result, subjects


def _resolve(scratch: ScratchCheckout, name: str) -> str:
    try:
        return scratch.resolve(name)
    except ObjectStoreError as exc:  # not hex, unknown, ambiguous: the user's input
        raise UsageError(str(exc)) from None


def _relative_log(log_path: str | None) -> PurePath | None:
    if log_path is None:
        return None
    path = PurePath(log_path)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UsageError(f"--log {log_path}: give a path inside the checkout, relative to its root")
    return path


class _BenchmarkRunner:
    """Runs the command in the scratch checkout and reads each run's steady value from its log."""

    def __init__(self, scratch: ScratchCheckout, command: list[str], log: PurePath | None) -> None:
        self.scratch = scratch
        self.command = command
        self.log = log
        self.number = 0  # runs so far, all commits together: TIMELINE_BISECT_RUN

    def measure(self, commit: str, runs: int) -> Sample | Failure:
        if self.scratch.commit != commit:
            try:
                self.scratch.check_out(commit)
            except ObjectStoreError as exc:
                return Failure("checkout-failed", error=str(exc))
        values: list[float] = []
        spreads: list[float | None] = []
        for _ in range(runs):
            self.number += 1
            outcome = self._run_once(commit)
            if isinstance(outcome, Failure):
                return outcome
            values.append(outcome[0])
            spreads.append(outcome[1])
        return Sample(tuple(values), tuple(spreads))

    def _run_once(self, commit: str) -> tuple[float, float | None] | Failure:
        worktree = self.scratch.worktree
        output = self.scratch.folder / OUTPUT_FILE
        log = worktree / self.log if self.log is not None else output
        given = str(self.log) if self.log is not None else None
        if self.log is not None:
            if not path_inside(log, worktree):
                # a symlink of the checked-out tree would send us to delete or read a file elsewhere
                return Failure("log-outside-before-run", log=given)
            log.unlink(missing_ok=True)  # a log appended to by every run would mix them
        env = dict(os.environ, TIMELINE_BISECT_COMMIT=commit, TIMELINE_BISECT_RUN=str(self.number))
        with open(output, "wb") as sink:
            code = _run_in_own_group(self.command, cwd=worktree, env=env, sink=sink)
        if code != 0:
            return Failure(
                "command-failed",
                exit_status=code if code > 0 else None,
                signal=-code if code < 0 else None,
                last_line=_last_line(output),
            )
        if not log.is_file():
            return Failure("no-log", log=given)
        if self.log is not None and not path_inside(log, worktree):  # the command made the link
            return Failure("log-outside-after-run", log=given)
        return _steady_value(log)


def _run_in_own_group(command: list[str], *, cwd: Path, env: Mapping[str, str], sink) -> int:
    """Run ``command`` in a session of its own and return its exit status. However this ends
    (Ctrl-C, SIGTERM turned into an exception), the whole process group is stopped: what the
    command left running (a server started in the background) would otherwise serve the next
    commit's benchmark, or outlive us."""
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise UsageError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
    try:
        return proc.wait()
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's process group; SIGKILL once the command has exited, or after
    ``STOP_GRACE_S`` if it has not (what it left running is not waited for). A second Ctrl-C or
    SIGTERM meanwhile waits until the group is gone (it would otherwise skip the SIGKILL)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        _term_then_kill(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _term_then_kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _last_line(output: Path) -> str | None:
    try:
        with open(output, "rb") as handle:
            handle.seek(max(0, output.stat().st_size - 4096))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return None
    return lines[-1].strip()[:200] if lines else None


def _steady_value(log: Path) -> tuple[float, float | None] | Failure:
    """The steady value and line spread of the log's last run that has one."""
    from timeline.parsers import parse_file
    from timeline.shifts import steady_of

    for parsed in reversed(parse_file(log).runs):
        steady = steady_of(parsed)
        if steady is not None:
            return steady.value, steady.spread
    return Failure("no-steady-value", last_line=_last_line(log))


def _raise_interrupted(signum, frame) -> None:
    """SIGTERM, handled like Ctrl-C: stop the command's group, remove the scratch folder."""
    raise Interrupted


class ProgressPrinter(Progress):
    """Each end, the levels and each step, one line each, on ``err``."""

    def __init__(self, err: Console) -> None:
        self.err = err

    def _say(self, text: str) -> None:
        self.err.print(text, markup=False, highlight=False, soft_wrap=True)

    def start(self, result: Bisection) -> None:
        older, newer = (result.good, result.bad) if result.newer == "bad" else (result.bad, result.good)
        count = len(result.candidates)
        self._say(
            f"bisecting {count} commits after {older[:12]} up to {newer[:12]} (the first-parent line): "
            f"about {bisect_steps(count)} steps, {result.runs} runs a commit"
        )

    def end(self, name: str, commit: str, measured: Sample | Failure) -> None:
        self._say(f"{name} {commit[:12]}: {_measured(measured)}")

    def judged(self, levels: Levels) -> None:
        self._say(f"levels: good {levels.good:.2f}, bad {levels.bad:.2f}: {levels_text(levels)}")

    def step(self, number: int, step: Step, left: int) -> None:
        values = ", ".join(f"{v:.2f}" for v in step.values) or "no value"
        self._say(
            f"step {number}: {step.commit[:12]}: {values} -> {step.decision}: {step_text(step)} ({left} left to test)"
        )


def _measured(measured: Sample | Failure) -> str:
    if isinstance(measured, Failure):
        return f"no value: {failure_text(measured)}"
    return ", ".join(f"{v:.2f}" for v in measured.values)


def summary_lines(result: Bisection, subjects: Mapping[str, str]) -> list[str]:
    """What ``timeline bisect`` prints on stdout at the end."""
    word = result.newer
    if result.outcome == "found":
        sha = result.commits[0]
        lines = [
            f"first {word} commit: {sha} {subjects.get(sha, '')}".rstrip(),
            f"{len(result.steps)} steps, {result.runs} runs a commit",
        ]
        if result.levels is not None and result.levels.noise.method == "line-spread":
            lines.append("one run a commit: the noise between runs was not measured, confirm with --runs 2")
        return lines
    if result.outcome == "range":
        return [
            f"the first {word} commit is one of these {len(result.commits)} commits (the others were skipped):",
            *(f"  {sha} {subjects.get(sha, '')}".rstrip() for sha in result.commits),
        ]
    return [bisection_text(result)]


def bisect_document(
    result: Bisection, subjects: Mapping[str, str], repo: str | os.PathLike, command: Sequence[str]
) -> dict:
    """What ``--json`` writes: the bisection (``Bisection.to_dict``) with the repository, the
    command and the subject of every commit named."""
    document = {
        "repo": os.path.abspath(os.fspath(repo)),
        "command": list(command),
        **result.to_dict(levels_text=levels_text, step_text=step_text, bisection_text=bisection_text),
    }
    for end in ("good", "bad"):
        document[end]["subject"] = subjects.get(document[end]["commit"])
    for step in document["steps"]:
        step["subject"] = subjects.get(step["commit"])
    document["result"]["subjects"] = [subjects.get(sha) for sha in result.commits]
    return document


def run(
    repo: str,
    command: Sequence[str],
    *,
    good: str | None,
    bad: str | None,
    from_path: str | None,
    runs: int,
    log_path: str | None,
    json_path: str | None,
    out: Console,
    err: Console,
) -> ExitCode:
    if json_path not in (None, "-"):  # fails now, not after an hour of benchmarks
        output_target(json_path, option="json_path")
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        result, subjects = bisect_repository(
            repo,
            command,
            good=good,
            bad=bad,
            from_path=from_path,
            runs=runs,
            log_path=log_path,
            progress=ProgressPrinter(err),
        )
    except KeyboardInterrupt:
        err.print(
            "timeline: interrupted: the benchmark was stopped and the scratch checkout removed",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    if json_path is not None:
        document = json.dumps(bisect_document(result, subjects, repo, command), indent=1) + "\n"
        write_text_atomic(json_path, document, option="json_path")
    if json_path != "-":
        for line in summary_lines(result, subjects):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    return ExitCode.OK if result.outcome == "found" else ExitCode.UNDECIDED
