"""timeline.detect: the statistics, one number per run, and the boundary test.

The seeded simulations at the end pin the detector's power and false-flag rate in the asv style
(8 code versions, a drop at one boundary, 3% Gaussian run-to-run noise on logs; see
docs/shifts.md, "How good is it?"): they would fail if a change to the method cost power or
raised false alarms.
"""

from __future__ import annotations

import ast
import math
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline import detect
from timeline.detect import (
    Settings,
    Version,
    betainc,
    normal_two_sided_p,
    pooled_sigma,
    steady_decode,
    steady_sum,
    t_quantile,
    t_two_sided_p,
)

# --------------------------------------------------------------------------- distributions

# Two-sided 1% critical values of Student's t (any statistics table).
T_CRITICAL_1PCT = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 10: 3.169, 16: 2.921, 30: 2.750, 120: 2.617}


@pytest.mark.parametrize("df, t", sorted(T_CRITICAL_1PCT.items()))
def test_t_tail_matches_the_tables(df, t):
    assert t_two_sided_p(t, df) == pytest.approx(0.01, rel=2e-3)
    assert t_quantile(0.01, df) == pytest.approx(t, rel=2e-4)


def test_t_tail_edges_and_known_values():
    assert t_two_sided_p(0.0, 5) == 1.0
    assert t_two_sided_p(math.inf, 5) == 0.0
    assert t_two_sided_p(-2.0, 7) == t_two_sided_p(2.0, 7)
    # One degree of freedom is the Cauchy distribution: P(|T| >= t) = 1 - 2 atan(t) / pi.
    for t in (0.3, 1.0, 4.0, 50.0):
        assert t_two_sided_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-9)
    # Two degrees of freedom: P(|T| >= t) = 1 - t / sqrt(2 + t^2).
    for t in (0.5, 2.0, 9.0):
        assert t_two_sided_p(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9)
    # Many degrees of freedom: the normal tail.
    assert t_two_sided_p(2.5758293, 1e6) == pytest.approx(0.01, rel=1e-3)
    with pytest.raises(ValueError):
        t_two_sided_p(1.0, 0)


def test_incomplete_beta():
    assert betainc(2, 3, 0.4) == pytest.approx(0.5248, abs=1e-12)  # 1 - sum of binomial terms
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)
    assert betainc(0.5, 0.5, 0.5) == pytest.approx(0.5)
    for a, b, x in ((2.5, 0.5, 0.2), (8, 0.5, 0.9), (0.5, 30, 0.01)):
        assert betainc(a, b, x) == pytest.approx(1 - betainc(b, a, 1 - x), abs=1e-12)
    assert betainc(3, 4, 0.0) == 0.0 and betainc(3, 4, 1.0) == 1.0


def test_normal_tail():
    assert normal_two_sided_p(0) == 1.0
    assert normal_two_sided_p(1.959964) == pytest.approx(0.05, rel=1e-5)
    assert normal_two_sided_p(-2.5758293) == pytest.approx(0.01, rel=1e-5)


# --------------------------------------------------------------------------- one number per run


def test_idle_gap_lines_are_left_out():
    lines = [94.0, 93.5, 0.39, 94.4, 93.8, 12.0, 94.1, 94.2]  # 0.39 after a pause; 12 while refilling
    steady = steady_decode(lines)
    assert steady is not None
    assert (steady.n, steady.skipped) == (6, 2)
    assert steady.value == pytest.approx(94.0, abs=0.1)
    assert steady.spread is not None and steady.spread < 0.01
    assert steady.source == "decode-lines" and steady.metric == "decode_throughput"


def test_running_req_zero_lines_are_idle():
    steady = steady_decode([50.0, 60.0, 61.0, 59.0], running=[0, 1, 1, 1])
    assert steady is not None and (steady.n, steady.skipped) == (3, 1)
    assert steady.value == 60.0


def test_a_run_with_many_pauses_still_has_a_level():
    lines = [0.4, 90.0, 0.3, 91.0, 0.5, 89.0, 90.5, 0.2, 90.2]
    steady = steady_decode(lines)
    assert steady is not None and steady.n == 5 and steady.value == pytest.approx(90.2)


def test_nothing_usable_gives_no_value():
    assert steady_decode([]) is None
    assert steady_decode([0.0, float("nan"), -1.0]) is None
    two = steady_decode([90.0, 91.0])
    assert two is not None and two.spread is None  # too few lines for a spread


def test_ranks_that_each_log_their_share_add_up():
    """DP ranks (or vLLM engines) each print their own decode lines: the run is their sum, each
    rank's steady value kept; a rank's idle-gap lines are left out within that rank."""
    steady = steady_sum({"DP0": [400.1, 402.5, 401.3], "DP1": [390.2, 0.3, 388.4, 391.0]})
    assert steady is not None
    assert steady.ranks == {"DP0": pytest.approx(401.3), "DP1": pytest.approx(390.2)}
    assert steady.value == pytest.approx(791.5)
    assert (steady.n, steady.skipped) == (6, 1)
    dp0, dp1 = steady_decode([400.1, 402.5, 401.3]), steady_decode([390.2, 388.4, 391.0])
    assert dp0 is not None and dp1 is not None and dp0.spread is not None and dp1.spread is not None
    assert steady.spread == pytest.approx((dp0.value * dp0.spread + dp1.value * dp1.spread) / steady.value)
    # A rank with two lines has no spread: neither has the sum; a rank with nothing steady is left out.
    assert steady_sum({"DP0": [10.0, 11.0], "DP1": [10.0, 10.5, 9.5]}).spread is None
    only = steady_sum({"DP0": [10.0, 11.0, 12.0], "DP1": [0.0]})
    assert only is not None and only.ranks == {"DP0": 11.0}
    assert steady_sum({"DP0": []}) is None


# --------------------------------------------------------------------------- the boundary test


def _as_tuple(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def versions(*levels, spread=None):
    """One Version per level: a number (one run) or a tuple (several runs); ``spread`` for every run."""
    out = []
    for level in levels:
        values = _as_tuple(level)
        out.append(Version(values, (spread,) * len(values) if spread is not None else ()))
    return out


def test_pooled_sigma_uses_versions_with_replicates():
    sigma, df = pooled_sigma([Version((100.0, 102.0, 98.0)), Version((90.0,)), Version((80.0, 81.0))])
    assert df == 3
    logs = [[math.log(v) for v in vs] for vs in ((100.0, 102.0, 98.0), (80.0, 81.0))]
    squares = sum(sum((x - sum(v) / len(v)) ** 2 for x in v) for v in logs)
    assert sigma == pytest.approx(math.sqrt(squares / 3))
    assert pooled_sigma([Version((1.0,)), Version((2.0,))]) == (None, 0)


def test_a_clear_drop_with_replicates_is_a_regression():
    (boundary,) = detect.detect(versions((100.1, 99.8, 100.3), (90.2, 89.9, 90.1)))
    assert boundary.verdict == "regression" and boundary.method == "pooled-t" and not boundary.single_run
    assert boundary.change == pytest.approx(90.0667 / 100.0667 - 1, rel=1e-3)
    assert boundary.p_value < 0.01 and boundary.df == 4


def test_direction_follows_the_metric():
    settings = Settings(higher_is_better=False)  # a latency
    (boundary,) = detect.detect(versions((100.1, 99.8, 100.3), (90.2, 89.9, 90.1)), settings)
    assert boundary.verdict == "improvement"


def test_under_the_minimum_effect_there_is_no_verdict():
    (boundary,) = detect.detect(versions((100.0, 100.1, 99.9), (98.0, 98.1, 97.9)))
    assert boundary.p_value < 1e-4  # significant, but only a 2% change
    assert boundary.verdict is None and boundary.quiet
    (boundary,) = detect.detect(versions((100.0, 100.1, 99.9), (98.0, 98.1, 97.9)), Settings(min_effect=0.01))
    assert boundary.verdict == "regression"


def test_a_big_but_noisy_change_is_inconclusive_and_says_how_many_runs_would_decide():
    (boundary,) = detect.detect(versions((100.0, 108.0, 93.0), (93.0, 99.0, 86.0)))
    assert boundary.verdict == "inconclusive" and boundary.p_value >= 0.01
    more_from, more_to = boundary.more_runs
    assert more_from > 0 and more_to > 0
    # With that many more runs at the same mean and spread the pooled test passes; with one fewer
    # a side it would not.
    sigma, df = pooled_sigma(versions((100.0, 108.0, 93.0), (93.0, 99.0, 86.0)))
    delta = abs(math.log1p(boundary.change))

    def passes(extra_from: int, extra_to: int) -> bool:
        a, b = 3 + extra_from, 3 + extra_to
        return t_two_sided_p(delta / (sigma * math.sqrt(1 / a + 1 / b)), df + extra_from + extra_to) < 0.01

    assert passes(more_from, more_to)
    assert not passes(more_from - 1, more_to - 1)


def test_one_run_a_side_far_beyond_its_line_spread_is_called_but_flagged():
    # The story from the seeds: 94 -> 60 tok/s, each run's lines varying by about 2%.
    (boundary,) = detect.detect(versions(94.0, 60.0, spread=0.02))
    assert boundary.verdict == "regression" and boundary.single_run and boundary.method == "line-spread"


def test_one_run_a_side_near_the_noise_is_inconclusive():
    (boundary,) = detect.detect(versions(100.0, 95.0, spread=0.01))  # 5%: under 2 x the minimum effect
    assert boundary.verdict == "inconclusive" and not boundary.single_run
    assert boundary.more_runs is not None
    (boundary,) = detect.detect(versions(100.0, 88.0, spread=0.03))  # 12%: under 5 x the 3% spread
    assert boundary.verdict == "inconclusive"


def test_one_run_a_side_without_a_line_spread_is_never_called():
    (boundary,) = detect.detect(versions(100.0, 50.0))
    assert boundary.verdict == "inconclusive" and boundary.p_value is None
    assert "spread-unknown" in boundary.notes  # a run's own line spread is unknown


def test_regression_and_recovery_are_both_seen_at_full_size():
    first, second = detect.detect(versions((100.1, 99.8, 100.3), (90.2, 89.9, 90.1), (99.4, 99.7, 99.5)))
    assert (first.left, first.right, second.left, second.right) == ((0,), (1,), (1,), (2,))
    assert (first.verdict, second.verdict) == ("regression", "improvement")
    assert first.change == pytest.approx(-0.10, abs=0.002)
    assert second.change == pytest.approx(0.105, abs=0.002)


def test_windows_pool_two_versions_at_the_same_level():
    boundaries = detect.detect(versions((100.0, 101.0), (100.5, 99.5), (90.0, 91.0), (90.5, 89.5)))
    step = boundaries[1]
    assert (step.left, step.right) == ((0, 1), (2, 3))
    assert step.verdict == "regression"
    assert [b.verdict for b in boundaries] == [None, "regression", None]


def test_a_creep_seen_by_two_overlapping_windows_is_flagged_once():
    boundaries = detect.detect(
        versions((100.0, 100.2, 99.8), (100.1, 99.9, 100.0), (97.6, 97.4, 97.5), (95.0, 95.2, 94.8), (95.1, 94.9, 95.0))
    )
    flagged = [b for b in boundaries if b.verdict == "regression"]
    assert len(flagged) == 1
    absorbed = [b for b in boundaries if b.absorbed_by is not None]
    assert absorbed and absorbed[0].absorbed_by == flagged[0].index and absorbed[0].verdict is None


def test_fewer_than_two_versions_have_no_boundary():
    assert detect.detect([]) == [] and detect.detect(versions(100.0)) == []


def test_versions_reject_bad_values():
    with pytest.raises(ValueError):
        Version(())
    with pytest.raises(ValueError):
        Version((0.0,))
    with pytest.raises(ValueError):
        Version((1.0, 2.0), (0.01,))


def test_detect_is_pure():
    """No I/O, no git, no clock: only the standard library's maths, numpy (big series), the model's
    data classes, and the compiled order statistics (``timeline/_select.c``: a pure function of an
    array, no I/O, no state)."""
    tree = ast.parse(Path(detect.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "timeline":  # from timeline import a module
            imported |= {f"timeline.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= {
        "__future__",
        "math",
        "statistics",
        "collections.abc",
        "dataclasses",
        "functools",
        "timeline.model",
        "timeline._select",
        "numpy",
    }
    assert "open(" not in Path(detect.__file__).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- asv-style simulations

SEEDS = 400


def simulate(drop: float, runs: int, count: int, at: int, noise: float = 0.03, seeds: int = SEEDS):
    """(share of seeds where the boundary at ``at`` is a regression, share with a flag elsewhere)."""
    caught = elsewhere = 0
    for seed in range(seeds):
        rng = random.Random(seed)
        series = [
            Version(tuple(100.0 * (1 - drop if k >= at else 1) * math.exp(rng.gauss(0, noise)) for _ in range(runs)))
            for k in range(count)
        ]
        boundaries = detect.detect(series)
        caught += any(b.index == at and b.verdict == "regression" for b in boundaries)
        elsewhere += any(b.verdict in ("regression", "improvement") and (b.index != at or not drop) for b in boundaries)
    return caught / seeds, elsewhere / seeds


def test_two_versions_a_side_three_runs_each_ten_percent_drop_is_caught():
    caught, elsewhere = simulate(0.10, runs=3, count=4, at=2)
    assert caught >= 0.95 and elsewhere <= 0.03


def test_two_versions_a_side_three_runs_each_flat_series_raises_no_flag():
    _, flagged = simulate(0.0, runs=3, count=4, at=2)
    assert flagged <= 0.05


def test_eight_versions_three_runs_each_like_the_prior_art_simulation():
    caught, elsewhere = simulate(0.10, runs=3, count=8, at=4)
    assert caught >= 0.95 and elsewhere <= 0.10
    _, flagged = simulate(0.0, runs=3, count=8, at=4)
    assert flagged <= 0.10  # about 1% per boundary, 7 boundaries (measured about 0.06)


def test_a_five_percent_drop_is_caught_more_often_with_more_runs():
    three, _ = simulate(0.05, runs=3, count=8, at=4, seeds=200)
    five, _ = simulate(0.05, runs=5, count=8, at=4, seeds=200)
    assert 0.3 <= three < five and five >= 0.7


def test_one_run_a_version_without_line_spreads_never_guesses():
    caught, flagged = simulate(0.30, runs=1, count=8, at=4, seeds=50)
    assert caught == 0 and flagged == 0


def test_one_run_a_side_line_spread_rule_rates():
    """Runs varying 3% from launch to launch, lines 2% within a run: a 36% drop is always called,
    a flat pair almost never."""
    called = false = 0
    for seed in range(SEEDS):
        rng = random.Random(seed)
        run = lambda level, rng=rng: level * math.exp(rng.gauss(0, 0.03))  # noqa: E731
        (drop,) = detect.detect([Version((run(94.0),), (0.02,)), Version((run(60.0),), (0.02,))])
        (flat,) = detect.detect([Version((run(94.0),), (0.02,)), Version((run(94.0),), (0.02,))])
        called += drop.verdict == "regression" and drop.single_run
        false += flat.verdict in ("regression", "improvement")
    assert called == SEEDS
    assert false / SEEDS <= 0.03


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-10, max_value=5000)
        | st.sampled_from([0.39, 60.0, 90.5, 91.0, 94.25, 1e-300, float("inf"), float("nan")]),
        max_size=400,
    )
)
def test_steady_decode_of_a_parser_series_is_the_lists(values) -> None:
    """The numpy path for the parsers' compact ``array("d")`` series gives the list path's answer."""
    from array import array

    listed, compact = steady_decode(list(values)), steady_decode(array("d", values))
    if listed is None:
        assert compact is None
        return
    assert (compact.value, compact.n, compact.skipped, compact.source) == (
        listed.value,
        listed.n,
        listed.skipped,
        listed.source,
    )
    assert (compact.spread is None) == (listed.spread is None)
    if listed.spread is not None:
        assert compact.spread == pytest.approx(listed.spread, rel=1e-12, abs=1e-15)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(min_value=-3, max_value=9) | st.sampled_from([0.0, 1.5, 2.25, 4.0]), min_size=1, max_size=60),
    st.floats(min_value=-4, max_value=10) | st.sampled_from([1.5, 2.25]),
)
def test_the_median_distance_of_sorted_values_is_the_selected_one(values, center) -> None:
    """The spread's median absolute deviation read from two ascending runs (``_median_distance``,
    by ``_kth_of_two``) is the one picked from every distance (``_median_of_array``), ties and
    values on the center included; ``_kth_of_two`` is the merged arrays' sorted value."""
    import numpy as np

    ordered = np.sort(np.array(values))
    assert detect._median_distance(ordered, center) == detect._median_of_array(np.abs(ordered - center))
    below, above = np.sort(ordered[: len(ordered) // 3]), ordered[len(ordered) // 3 :]
    merged = np.sort(np.concatenate((below, above)))
    for k in range(len(merged)):
        assert detect._kth_of_two(below, above, k) == merged[k]


def selection(patch: pytest.MonkeyPatch, way: str) -> None:
    """``detect.order_statistics`` by the compiled selection (``timeline/_select.c``; the test is
    skipped where it is not built) or by numpy."""
    if way == "numpy":
        patch.setattr(detect, "_select", None)
    elif detect._select is None:
        pytest.skip("the compiled selection (timeline/_select.c) is not built")


def near(base: float, steps: int) -> float:
    """The float ``steps`` representable values away from ``base`` (from zero): ties and values
    that differ in their last bits only, which take radix selection's every pass."""
    (bits,) = struct.unpack("<q", struct.pack("<d", base))
    return struct.unpack("<d", struct.pack("<q", bits + steps))[0]


FLOATS = st.floats(allow_nan=False, allow_subnormal=True).filter(lambda v: v != 0) | st.sampled_from(
    [0.0, 1.0, 90.25, 5e-324, -5e-324, 1e308, -1e308]
)
CLUSTERED = st.builds(near, st.sampled_from([1.0, 90.25, -3.5, 1e-300]), st.integers(0, 5000))


def numpy_array(values: list[float]):
    import numpy as np

    return np.array(values, dtype=np.float64)


@st.composite
def long_series(draw):
    """Up to 3,000 values (hypothesis draws lists of a few dozen at most): a drawn pool's values
    repeated (ties, the keys of one radix bucket), a share of them normal noise at a drawn scale
    (many distinct values), in an order drawn by a seed."""
    import numpy as np

    pool = np.array(draw(st.lists(FLOATS | CLUSTERED, min_size=1, max_size=40)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = draw(st.integers(1, 3000))
    noise = rng.standard_normal(size) * draw(st.sampled_from([1e-300, 1e-5, 1.0, 1e5, 1e300]))
    noisy = rng.random(size) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    return np.where(noisy, noise, pool[rng.integers(0, len(pool), size)])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(FLOATS, min_size=1, max_size=300).map(numpy_array) | long_series(),
    st.data(),
    st.sampled_from([0, 3, 64]),
)
@pytest.mark.parametrize("way", ["compiled", "numpy"])
def test_order_statistics_are_the_sorted_values(way, array, data, partition_max) -> None:
    """The compiled selection and numpy's radix selection (``PARTITION_MAX`` lowered: its buckets,
    its recursion) pick what sorting picks, whatever the signs, magnitudes and ties, ranks in any
    order and repeated."""
    import numpy as np

    ranks = data.draw(st.lists(st.integers(0, len(array) - 1), min_size=1, max_size=12))
    with pytest.MonkeyPatch.context() as patch:
        selection(patch, way)
        patch.setattr(detect, "PARTITION_MAX", partition_max)
        assert detect.order_statistics(array, ranks) == np.sort(array)[ranks].tolist()


@pytest.mark.parametrize("way", ["compiled", "numpy"])
def test_order_statistics_of_clouds_within_clouds(way) -> None:
    """Values in clouds of clouds (2**22, 2**11 and 1 representable steps apart: a radix pass
    each), many ranks: buckets gathered within buckets, each pass's keys of no wanted bucket put
    aside (the compiled selection's sink) without touching the next bucket's keys. Seeded: a sink
    shared between the passes gave a wrong pick for 126 of these 300 seeds."""
    import numpy as np

    with pytest.MonkeyPatch.context() as patch:
        selection(patch, way)
        patch.setattr(detect, "PARTITION_MAX", 3)
        for seed in range(300):
            rng = np.random.default_rng(seed)
            steps = rng.integers(0, 4, (3, 2000)) * np.array([[2**22], [2**11], [1]])
            values = np.array(
                [
                    near(base, int(step))
                    for base, step in zip(rng.choice([1.0, 3.0, 100.0], 2000), steps.sum(0), strict=True)
                ]
            )
            ranks = rng.integers(0, len(values), 40).tolist()
            assert detect.order_statistics(values, ranks) == np.sort(values)[ranks].tolist(), seed


def test_the_compiled_selection_is_built_where_required() -> None:
    """CI sets TIMELINE_REQUIRE_SCANNER (.ci/run): there, a selection that failed to build (an
    optional extension, as the line scanner) fails the run instead of testing numpy alone."""
    if detect._select is None:
        if os.environ.get("TIMELINE_REQUIRE_SCANNER"):
            pytest.fail("TIMELINE_REQUIRE_SCANNER is set (CI) but timeline/_select.c was not built, or is stale")
        pytest.skip("the compiled selection (timeline/_select.c) is not built")
    assert detect._select.INTERFACE == detect.SELECT_INTERFACE


def test_a_selection_built_from_another_source_is_not_used():
    """An editable install keeps the module it built until it is installed again: one built from
    another _select.c (here, one without the interface this code expects) is left aside."""
    program = (
        "import importlib.machinery, sys, types\n"
        "stale = types.ModuleType('timeline._select')\n"
        "stale.__spec__ = importlib.machinery.ModuleSpec('timeline._select', None)\n"
        "sys.modules['timeline._select'] = stale\n"
        "from timeline import detect\n"
        "print(detect._select is None, detect.order_statistics(__import__('numpy').array([3.0, 1.0, 2.0]), [1]))\n"
    )
    shown = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["True", "[2.0]"]


def test_the_parse_cache_digests_the_built_selection():
    """A cache entry holds each run's summaries and steady value, picked by the compiled selection
    when it is built; its C source is not installed, so the cache's code version digests the built
    module: one rebuilt from a changed _select.c makes every entry a miss."""
    from timeline import cache

    if detect._select is None:
        pytest.skip("the compiled selection (timeline/_select.c) is not built")
    assert Path(detect._select.__file__).resolve() in [path.resolve() for path in cache.parse_sources()]


def test_the_compiled_selection_refuses_what_it_cannot_read() -> None:
    """A rank out of range, or values that are no contiguous float64 buffer: an exception, never
    a crash or a value read from outside the array."""
    import numpy as np

    if detect._select is None:
        pytest.skip("the compiled selection (timeline/_select.c) is not built")
    values = np.array([2.0, 1.0, 3.0])
    assert detect._select.order_statistics(values, []) == []
    with pytest.raises(IndexError):
        detect._select.order_statistics(values, [3])
    with pytest.raises(IndexError):
        detect._select.order_statistics(values, [-1])
    with pytest.raises(IndexError):
        detect._select.order_statistics(np.zeros(0), [0])
    with pytest.raises(TypeError):
        detect._select.order_statistics(np.array([2, 1, 3]), [0])
    with pytest.raises((TypeError, ValueError, BufferError)):
        detect._select.order_statistics(values[::2], [0])


def exact_summing(patch: pytest.MonkeyPatch, way: str) -> None:
    """``detect.exact_sums`` by the compiled function (skipped where it is not built) or by numpy."""
    if way == "numpy":
        patch.setattr(detect, "_select", None)
    elif getattr(detect._select, "exact_sums", None) is None:
        pytest.skip("the compiled exact sums (timeline/_select.c) are not built")


def sums_by_fractions(values) -> tuple[int, int, int]:
    """What ``exact_sums`` is: the sums by ``Fraction``, as integers at the least value's power of two."""
    from fractions import Fraction

    nonzero = [v for v in values.tolist() if v != 0]
    if not nonzero:
        return 0, 0, 0
    low = min(math.frexp(v)[1] for v in nonzero) - 53
    unit = Fraction(2) ** low
    total, squares = sum(Fraction(v) / unit for v in nonzero), sum((Fraction(v) / unit) ** 2 for v in nonzero)
    assert total.denominator == squares.denominator == 1
    return int(total), int(squares), low


def finite(array):
    import numpy as np

    return np.where(np.isfinite(array), array, 1.0)


@settings(max_examples=300, deadline=None)
@given(
    (st.lists(FLOATS, min_size=0, max_size=300).map(numpy_array) | long_series()).map(finite),
    st.sampled_from([1 << 16, 7]),
)
@pytest.mark.parametrize("way", ["compiled", "numpy"])
def test_exact_sums_are_the_fractions_sums(way, array, at_once) -> None:
    """Whatever the signs, magnitudes (subnormal to 1e308) and zeros; numpy's in pieces of
    ``at_once`` values (``_SUMMED_AT_ONCE``, lowered to cross pieces)."""
    with pytest.MonkeyPatch.context() as patch:
        exact_summing(patch, way)
        patch.setattr(detect, "_SUMMED_AT_ONCE", at_once)
        assert detect.exact_sums(array) == sums_by_fractions(array)


def test_the_compiled_exact_sums_add_up_past_their_128_bit_pieces() -> None:
    """More values than the compiled function adds in 128-bit integers at once (2**20), each near
    the greatest mantissa: its pieces put together as the numpy way's are."""
    import numpy as np

    if getattr(detect._select, "exact_sums", None) is None:
        pytest.skip("the compiled exact sums (timeline/_select.c) are not built")
    rng = np.random.default_rng(7)
    values = np.nextafter(np.float64(2.0), 0) * rng.choice([1.0, -1.0, 2.0**-30, 2.0**40], (1 << 20) + 3)
    compiled = detect.exact_sums(values)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(detect, "_select", None)
        assert compiled == detect.exact_sums(values)


def test_the_compiled_exact_sums_refuse_what_they_cannot_read() -> None:
    import numpy as np

    if getattr(detect._select, "exact_sums", None) is None:
        pytest.skip("the compiled exact sums (timeline/_select.c) are not built")
    assert detect._select.exact_sums(np.zeros(0)) == (0, 0, 0)
    assert detect._select.exact_sums(np.array([0.0, -0.0])) == (0, 0, 0)
    with pytest.raises(ValueError):
        detect._select.exact_sums(np.array([1.0, math.inf]))
    with pytest.raises(ValueError):
        detect._select.exact_sums(np.array([math.nan]))
    with pytest.raises(TypeError):
        detect._select.exact_sums(np.array([2, 1, 3]))
    with pytest.raises((TypeError, ValueError, BufferError)):
        detect._select.exact_sums(np.array([2.0, 1.0, 3.0])[::2])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-10, max_value=5000) | st.sampled_from([0.39, 60.0, 90.5, 91.0, 94.25, 1e-300]),
        max_size=400,
    )
)
@pytest.mark.parametrize("way", ["compiled", "numpy"])
def test_steady_decode_picked_by_radix_selection_is_the_lists(way, values) -> None:
    from array import array

    with pytest.MonkeyPatch.context() as patch:
        selection(patch, way)
        patch.setattr(detect, "PARTITION_MAX", 16)
        compact = steady_decode(array("d", values))
    listed = steady_decode(list(values))
    if listed is None:
        assert compact is None
        return
    assert (compact.value, compact.n, compact.skipped) == (listed.value, listed.n, listed.skipped)
    assert (compact.spread is None) == (listed.spread is None)
    if listed.spread is not None:
        assert compact.spread == pytest.approx(listed.spread, rel=1e-12, abs=1e-15)


def test_throughputs_near_the_largest_float_give_no_steady_value_not_a_crash():
    """A log's 1e308 tok/s makes the upper quartile overflow: no line is steady, on both paths."""
    from array import array

    for values in ([1e308, 0.5, 0.5], [1e308, 1e308, 0.5] * 30):
        assert steady_decode(values) is None
        assert steady_decode(array("d", values)) is None
