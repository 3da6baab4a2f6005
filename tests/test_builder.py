"""A run's metric summary is the same whether its values come as the parsers' compact
``array("d")`` (numpy) or as a list (the standard library); which files ``collect_logs`` reads."""

from __future__ import annotations

import gzip
import math
import os
import socket
import threading
from array import array
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.builder import build, collect_logs, summarize
from timeline.errors import NoLogsError, UsageError
from timeline.scenario import Launch, write_sglang_log


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(min_value=1e-3, max_value=1e6) | st.sampled_from([0.0, 90.25, float("nan"), float("inf")]),
        min_size=1,
        max_size=300,
    )
)
def test_compact_series_summary_is_the_lists(values: list[float]) -> None:
    listed, compact = summarize(list(values), "tok/s"), summarize(array("d", values), "tok/s")
    finite = [v for v in values if math.isfinite(v)]
    if not finite:  # nothing but inf and nan: no summary
        assert listed is None and compact is None
        return
    assert (compact.unit, compact.n, compact.median, compact.min, compact.max) == (
        listed.unit,
        listed.n,
        listed.median,
        listed.min,
        listed.max,
    )
    assert compact.mean == pytest.approx(listed.mean, rel=1e-13)
    assert listed.n == len(finite) and listed.min == min(finite) and listed.max == max(finite)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6) | st.sampled_from([0.0, 90.25]), min_size=65, max_size=300))
@pytest.mark.parametrize("compiled", [True, False])
def test_a_compact_series_picked_by_radix_selection_is_the_lists(compiled: bool, values: list[float]) -> None:
    """Median and quantiles of a long series (``detect.order_statistics`` by the compiled radix
    selection, or by numpy's with ``PARTITION_MAX`` lowered for it) are the list way's."""
    from timeline import detect

    if compiled and detect._select is None:
        pytest.skip("the compiled selection (timeline/_select.c) is not built")
    values = [abs(v) if v == 0 else v for v in values]  # no -0.0: that one goes the list way
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(detect, "_select", None)
        patch.setattr(detect, "PARTITION_MAX", 8)
        compact = summarize(array("d", values), "tok/s")
    listed = summarize(list(values), "tok/s")
    assert (compact.median, compact.p10, compact.p25, compact.p75, compact.p90) == (
        listed.median,
        listed.p10,
        listed.p25,
        listed.p75,
        listed.p90,
    )


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=1e-3, max_value=1e6), st.integers(65, 2000))
def test_a_constant_series_has_its_value_as_mean(value: float, n: int) -> None:
    summary = summarize(array("d", [value] * n), "tok/s")
    assert summary.min <= summary.mean <= summary.max
    assert summary.mean == pytest.approx(value, rel=1e-15)


def test_finite_values_too_large_to_add_up_have_their_mean() -> None:
    """``statistics.fmean`` overflows on 1e308 twice: the mean is still the values' own."""
    for values in ([1e308, 1e308], [1e308] * 100):
        for held in (values, array("d", values)):
            summary = summarize(held, "tok/s")
            assert (summary.n, summary.mean, summary.max) == (len(values), 1e308, 1e308)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=300))
def test_the_spread_is_numpys_on_both_paths(values: list[float]) -> None:
    """stddev with n - 1 and the percentiles by numpy's default (linear) method, list or array."""
    import numpy as np

    expected = np.quantile(values, [0.10, 0.25, 0.75, 0.90])
    for held in (list(values), array("d", values)):
        summary = summarize(held, "tok/s")
        assert summary is not None
        got = [summary.p10, summary.p25, summary.p75, summary.p90]
        assert got == pytest.approx(list(expected), rel=1e-12, abs=1e-9)
        assert summary.iqr == pytest.approx(summary.p75 - summary.p25)
        if len(values) == 1:
            assert summary.stddev is None
        else:
            assert summary.stddev == pytest.approx(float(np.std(values, ddof=1)), rel=1e-9, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6) | st.sampled_from([0.0, 1e-300, 1e300, 5e-324]),
        min_size=65,
        max_size=300,
    ),
    st.sampled_from([1 << 16, 7]),
)
@pytest.mark.parametrize("way", ["compiled", "numpy"])
def test_a_compact_series_with_a_zero_has_the_lists_exact_mean_and_stddev(
    way: str, values: list[float], at_once: int
) -> None:
    """Read with numpy, not the list way (``statistics.stdev`` is not called), to the same floats;
    the exact sums by the compiled function or by numpy, summed in pieces of ``at_once`` values
    (``detect._SUMMED_AT_ONCE``, lowered to cross pieces)."""
    import statistics

    from timeline import detect

    values = [abs(v) if v == 0 else v for v in values] + [0.0]  # no -0.0: that one goes the list way
    expected_mean, expected_stdev = statistics.fmean(values), statistics.stdev(values)
    with pytest.MonkeyPatch.context() as patch:
        if way == "numpy":
            patch.setattr(detect, "_select", None)
        elif getattr(detect._select, "exact_sums", None) is None:
            pytest.skip("the compiled exact sums (timeline/_select.c) are not built")
        patch.setattr(statistics, "stdev", None)
        patch.setattr(detect, "_SUMMED_AT_ONCE", at_once)
        summary = summarize(array("d", values), "tok/s")
    assert summary is not None
    assert (summary.mean, summary.stddev) == (min(max(expected_mean, min(values)), max(values)), expected_stdev)


def test_a_compact_series_with_minus_zero_picks_the_lists_zero() -> None:
    values = [-0.0, 0.0] * 40 + [1.0]
    for held in (list(values), array("d", values)):
        assert math.copysign(1, summarize(held, "tok/s").median) == -1  # the first of the tied zeros


def test_the_spread_of_values_at_the_float_limits_stays_finite_or_unknown() -> None:
    for values in ([1e308, -1e308, 5.0], [1e308, -1e308] * 40):
        for held in (values, array("d", values)):
            summary = summarize(held, "tok/s")
            assert summary.stddev is not None and math.isfinite(summary.stddev)
            assert all(math.isfinite(q) for q in (summary.p10, summary.p25, summary.p75, summary.p90))
            assert summary.iqr is None or math.isfinite(summary.iqr)


def one_run_log(path: Path) -> Path:
    write_sglang_log(path, [Launch(datetime(2026, 3, 2, 10, 0), 10, 94.0)])
    return path


def said(inputs) -> dict[str, tuple[str, str]]:
    return {Path(d.source).name: (d.code, d.message) for d in inputs.diagnostics}


def test_a_fifo_among_the_logs_is_named_and_never_opened(tmp_path):
    logs = tmp_path / "logs"
    one_run_log(logs / "a.log")
    os.mkfifo(logs / "x.log")
    # Before: open() of the FIFO blocked until a writer came, forever. Run in a thread so a
    # regression fails the test instead of hanging the suite.
    result: list = []
    reader = threading.Thread(target=lambda: result.append(build([logs], log_tz="UTC", cache=False)), daemon=True)
    reader.start()
    reader.join(60)
    assert result, "build blocked on the FIFO"
    (timeline,) = result
    assert [Path(r.source).name for r in timeline.runs] == ["a.log"]
    (warning,) = [w for w in timeline.warnings if w.source.endswith("x.log")]
    assert warning.code == "not-a-file" and "a FIFO" in warning.message and "never opened" in warning.message


def test_sockets_devices_and_link_loops_are_skipped_with_their_kind(tmp_path):
    logs = tmp_path / "logs"
    one_run_log(logs / "a.log")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(logs / "s.log"))
    (logs / "zero.log").symlink_to("/dev/null")
    (logs / "loop.log").symlink_to("loop.log")
    (logs / "gone.log").symlink_to(tmp_path / "nowhere.log")
    try:
        inputs = collect_logs([logs])
    finally:
        sock.close()
    assert [Path(p).name for _, p in inputs.files] == ["a.log"]
    found = said(inputs)
    assert {name: code for name, (code, _) in found.items()} == dict.fromkeys(
        ["s.log", "zero.log", "loop.log", "gone.log"], "not-a-file"
    )
    assert "a socket" in found["s.log"][1] and "a character device" in found["zero.log"][1]
    assert "symbolic link loop" in found["loop.log"][1] and "to nothing" in found["gone.log"][1]


def test_the_same_file_through_two_paths_or_links_is_read_once(tmp_path):
    logs = tmp_path / "logs"
    log = one_run_log(logs / "a.log")
    os.link(log, logs / "hard.log")
    (logs / "soft.log").symlink_to("a.log")
    timeline = build([logs, log, tmp_path / "logs" / ".." / "logs" / "a.log"], log_tz="UTC", cache=False)
    assert [r.source for r in timeline.runs] == [os.fspath(log)]
    duplicates = sorted(Path(w.source).name for w in timeline.warnings if w.code == "duplicate-input")
    assert duplicates == ["a.log", "a.log", "hard.log", "soft.log"]


def test_a_folder_that_cannot_be_listed_is_reported(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    one_run_log(logs / "a.log")
    one_run_log(logs / "locked" / "b.log")
    listing = os.scandir

    def refuse(path="."):  # as a folder of mode 000 does for anyone but root (the tests may run as root)
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", refuse)
    inputs = collect_logs([logs])
    assert [Path(p).name for _, p in inputs.files] == ["a.log"]
    (problem,) = inputs.diagnostics
    assert problem.source == os.fspath(logs / "locked") and problem.code == "unreadable-folder"
    assert problem.message == "cannot list this folder: permission denied; its logs are not read"


def test_no_logs_is_an_error_naming_the_path_unless_allowed(tmp_path):
    os.mkfifo(tmp_path / "x.log")
    with pytest.raises(NoLogsError, match=rf"^no logs found in {tmp_path} .*skipped: {tmp_path}/x.log: a FIFO"):
        build([tmp_path], log_tz="UTC", cache=False)
    timeline = build([tmp_path], log_tz="UTC", cache=False, allow_empty=True)
    assert timeline.runs == [] and [w.code for w in timeline.warnings] == ["not-a-file"]


def test_a_reflog_clock_stepping_back_is_said_and_the_runs_then_are_ambiguous(tmp_path, git_script):
    repo = tmp_path / "repo"
    repo.mkdir()
    git_script.git(repo, "init", "-q", "-b", "main", at=datetime(2026, 3, 2, 9, tzinfo=timezone.utc))
    for n, hour in enumerate([9, 12, 11]):
        at = datetime(2026, 3, 2, hour, tzinfo=timezone.utc)
        (repo / "f.txt").write_text(f"{n}\n")
        git_script.git(repo, "add", "f.txt", at=at)
        git_script.git(repo, "commit", "-q", "-m", f"c{n}", at=at)  # the third: the clock set back an hour
    logs = tmp_path / "logs"
    write_sglang_log(
        logs / "server.log",
        [Launch(datetime(2026, 3, 2, 11, 30), 10, 94.0), Launch(datetime(2026, 3, 2, 14, 0), 10, 60.0)],
    )
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    (step,) = [w for w in timeline.warnings if w.code == "reflog-clock-step"]
    assert (Path(step.source).parts[-2:], step.line) == (("logs", "HEAD"), 3)
    assert step.message.startswith("the reflog's clock steps back 3600 s here (e3)")
    # 11:30 was read twice: on c1 (before the step) and on c2 (after it); 14:00 only once
    assert [r.attribution for r in timeline.runs] == ["ambiguous", "exact"]
    head = git_script.git(repo, "rev-parse", "HEAD", at=datetime(2026, 3, 2, 15, tzinfo=timezone.utc))
    assert timeline.runs[0].commit == head and len(timeline.runs[0].candidate_commits) == 3
    said = [w.message for w in timeline.warnings if w.line == timeline.runs[0].first_line and "ambiguous" in w.message]
    assert said and said[0].endswith("(the reflog's clock stepped back around then)")


def test_the_expansion_limit_is_raised_from_the_environment(tmp_path, monkeypatch):
    from timeline.environment import Environment
    from timeline.parsers import framing

    monkeypatch.setattr(framing, "MIN_EXPANSION_BYTES", 1 << 16)
    log = one_run_log(tmp_path / "plain" / "a.log")
    line = log.read_bytes().splitlines(keepends=True)[-1]
    packed = tmp_path / "logs" / "a.log.gz"
    packed.parent.mkdir()
    with gzip.open(packed, "wb") as out:
        out.write(log.read_bytes() + line * 20_000)  # the same stats line: hundreds of times smaller packed

    def built(**environ: str):
        return build([packed], log_tz="UTC", cache=False, env=Environment(environ={"TZ": "UTC", **environ}))

    assert "expansion-limit" in [w.code for w in built().warnings]
    assert "expansion-limit" not in [w.code for w in built(TIMELINE_MAX_EXPANSION="100000").warnings]
    with pytest.raises(UsageError, match="TIMELINE_MAX_EXPANSION='lots': not a number of at least 1"):
        built(TIMELINE_MAX_EXPANSION="lots")


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("log", sorted(FIXTURES.glob("*/*.log")), ids=lambda p: p.stem)
def test_series_digested_as_each_run_ends_give_the_same_document(log: Path, monkeypatch) -> None:
    """Without samples each run's series is replaced by its digest (summaries, steady value) as
    the run ends, so a long log's memory does not grow with its stats lines; the JSON document is
    byte for byte the one the series kept to the end give."""
    from timeline import build, builder
    from timeline.export import dumps

    def document(result) -> str:
        result.generated_at = datetime(2026, 1, 1, tzinfo=timezone.utc)
        return dumps(result)

    digested = build([log], log_tz="UTC", cache=False)
    kept: list = []
    monkeypatch.setattr(builder, "digest_series", lambda run: kept.append(run.series))
    whole = build([log], log_tz="UTC", cache=False)
    assert document(digested) == document(whole)
    assert all(isinstance(s, array) for series in kept for s in series.values())


def test_a_long_log_keeps_no_stats_line_numbers_without_samples(tmp_path: Path) -> None:
    from timeline import build
    from timeline.parsers import parse_file
    from timeline.records import SeriesDigest
    from timeline.scenario import Launch, write_sglang_log

    launches = [Launch(datetime(2026, 3, 2, 2 * i, 0), 20, 90.0 + i, decode_every_s=1.0) for i in range(6)]
    log = write_sglang_log(tmp_path / "server.log", launches)
    seen: list = []
    parsed = parse_file(log, finish_run=lambda run: seen.append(dict(run.series)))
    assert len(seen) == len(parsed.runs) == 6  # called as each run ended, not at the end
    assert all(len(series["decode_throughput"]) > 1000 for series in seen)
    result = build([log], log_tz="UTC", cache=False)
    assert [run.steady.value for run in result.runs] == pytest.approx([90.0 + i for i in range(6)], rel=0.03)
    from timeline import builder

    kept = parse_file(log, finish_run=builder.digest_series)
    assert all(isinstance(s, SeriesDigest) for run in kept.runs for s in run.series.values())
    assert [run.series["decode_throughput"].lines for run in kept.runs] == [
        len(series["decode_throughput"]) for series in seen
    ]


def test_the_shifts_of_several_checkouts_number_on_and_rank_together(demo) -> None:
    """``shifts_and_culprits`` is what build and history share: build's one checkout gives
    build's answer; two copies of it give each shift twice under new ids, and each culprit once,
    naming the shifts of both."""
    import copy

    from timeline.builder import shifts_and_culprits

    timeline = build(demo.logs, repo=demo.repo, log_tz="UTC")
    one = shifts_and_culprits([(timeline.runs, timeline.events)])
    assert [(s.id, s.verdict) for s in one.shifts] == [(s.id, s.verdict) for s in timeline.shifts]
    assert [(c.sha, c.likelihood, c.shifts) for c in one.culprits] == [
        (c.sha, c.likelihood, c.shifts) for c in timeline.culprits
    ]
    other = copy.deepcopy(timeline.runs)
    for run in other:
        run.id = "b" + run.id
    two = shifts_and_culprits([(timeline.runs, timeline.events), (other, timeline.events)])
    assert [s.id for s in two.shifts] == ["s1", "s2", "s3", "s4"]
    assert two.shifts[2].from_side.runs == ["b" + r for r in timeline.shifts[0].from_side.runs]
    prime = demo.shas["pulled3"]
    assert [(c.sha, c.likelihood, c.shifts) for c in two.culprits][0] == (prime, "prime", ["s1", "s2", "s3", "s4"])
    assert len({c.sha for c in two.culprits}) == len(two.culprits)
    assert two.warnings == []
