"""A run's metric summary is the same whether its values come as the parsers' compact
``array("d")`` (numpy) or as a list (the standard library)."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.builder import summarize


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


def test_the_spread_of_values_at_the_float_limits_stays_finite_or_unknown() -> None:
    for values in ([1e308, -1e308, 5.0], [1e308, -1e308] * 40):
        for held in (values, array("d", values)):
            summary = summarize(held, "tok/s")
            assert summary.stddev is not None and math.isfinite(summary.stddev)
            assert all(math.isfinite(q) for q in (summary.p10, summary.p25, summary.p75, summary.p90))
            assert summary.iqr is None or math.isfinite(summary.iqr)
