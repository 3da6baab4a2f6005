"""Is the change at a version boundary real? Numbers in, verdicts out.

PURE: no I/O, no git, no clock, no randomness; the standard library only (``math``), and numpy for
the parsers' compact series (``array("d")``, millions of values: ``steady_decode``), whose order
statistics are picked by a compiled pure function when it is built (``timeline/_select.c``). The
grouping of runs into versions, the suspects and the wording live in ``timeline.shifts`` and
``timeline.suspects``; ``docs/shifts.md`` explains the whole method for users.

The method borrows from the benchmark trackers what works with few runs a version: conbench's
noise estimate pooled across history (https://github.com/conbench/conbench) and Otava's Student's
t-test over windows (https://github.com/apache/otava, ``otava/analysis.py``). Unlike them, and
unlike asv's step detection (https://github.com/airspeed-velocity/asv/blob/main/asv/step_detect.py),
it searches for no change points: it tests only where the reflog says the code changed. Its power
and false-flag rate on seeded synthetic series are pinned by ``tests/test_detect.py``:

* **One number per run** (``steady_decode``): the median gen throughput of the run's steady
  decode lines. Decode lines inside one run are autocorrelated, never replicates.
* **Versions**: consecutive runs on one commit. All tests work on natural logs of the run values,
  so changes are relative and noise is a coefficient of variation.
* **Pooled noise** (``pooled_sigma``): the within-version standard deviation pooled over every
  version of the workload that has two runs or more, ``sqrt(sum SS_i / (N - K))`` with
  ``N - K`` degrees of freedom (conbench's shared spread; Student's pooled two-sample t).
* **Windows**: at the boundary between versions ``b-1`` and ``b``, up to ``window`` (2) versions a
  side are pooled, ``[b-2, b)`` against ``[b, b+2)``, but a window never reaches across a
  neighbouring boundary whose own adjacent change is a change of its own (at least the minimum
  effect, and significant on the adjacent pooled test when there is a pooled estimate): that
  version is at another level and would dilute the comparison. This is what lets a regression
  and its recovery on the next boundary both be seen at their full size.
* **The test**: ``t = (mean_to - mean_from) / (sigma * sqrt(1/n_from + 1/n_to))`` against
  Student's t with the pooled degrees of freedom; a shift is flagged when ``p < alpha`` (0.01)
  and ``|change| >= min_effect`` (3%). Among two neighbouring boundaries flagged the same way whose
  windows overlap, only the one with the smaller p keeps its verdict (Hunter's windowing at the
  level of versions: in simulation it adds power without adding false flags).
* **Verdicts**: ``regression`` / ``improvement`` by the metric's direction, ``inconclusive`` when
  the change passes the size threshold but not the test (with ``more_runs``: how many more runs a
  side would decide it if the change and the noise stay as observed), ``None`` under the threshold.
* **One run a side** (no between-run noise, fewer than 2 pooled degrees of freedom): each run's own
  steady-line spread is a floor for its noise. The change is called (``single_run=True``, "rerun
  to confirm") only when it is far beyond both that floor and the minimum effect: at least
  ``SINGLE_RUN_SPREAD_FACTOR`` (5) times the larger spread, at least ``SINGLE_RUN_EFFECT_FACTOR``
  (2) times the minimum effect, and ``p < alpha`` for a normal test with the floor as a known
  sigma; anything smaller is inconclusive.

Student's t distribution is computed without scipy through the regularized incomplete beta
function: for ``nu`` degrees of freedom the two-sided tail is ``P(|T| >= t) = I_x(nu/2, 1/2)``
with ``x = nu / (nu + t^2)`` (Abramowitz & Stegun 26.7.1 with 26.5.27; DLMF 8.17.2), and
``I_x(a, b)`` is evaluated by its continued fraction (DLMF 8.17.22) with the modified Lentz
algorithm, as in Numerical Recipes (3rd ed., §6.4, ``betacf``). The normal tail is ``erfc``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from timeline.model import BoundaryNote, SteadyValue, Verdict

# The compiled order statistics and exact sums (_select.c), built at install when there is a C
# compiler; else numpy.
SELECT_INTERFACE = 2  # _select.c's INTERFACE: raise both with any change to its functions
try:
    from timeline import _select
except ImportError:
    _select = None  # type: ignore[assignment]
if getattr(_select, "INTERFACE", None) != SELECT_INTERFACE:
    # Built from another _select.c (an editable install keeps the module it built until it is
    # installed again): numpy picks them.
    _select = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_EFFECT",
    "Boundary",
    "Settings",
    "Version",
    "betainc",
    "detect",
    "exact_sums",
    "normal_two_sided_p",
    "order_statistics",
    "pooled_sigma",
    "robust_spread",
    "steady_decode",
    "t_quantile",
    "t_two_sided_p",
]

DEFAULT_ALPHA = 0.01
DEFAULT_MIN_EFFECT = 0.03
DEFAULT_WINDOW = 2

IDLE_FRACTION = 0.5  # a decode line under half the run's upper-quartile throughput is an idle-gap line
MIN_SPREAD_LINES = 3  # fewer steady lines than this: the run's spread is unknown
MIN_POOLED_DF = 2  # fewer pooled degrees of freedom: no between-run noise estimate
SINGLE_RUN_SPREAD_FACTOR = 5.0
SINGLE_RUN_EFFECT_FACTOR = 2.0
SPREAD_FLOOR = 0.005  # a run's spread is never taken below 0.5% (values are printed to 2 decimals)
# Planning "more runs" with no between-run estimate: 3% run-to-run noise (a coefficient of
# variation), the noise tests/test_detect.py simulates.
ASSUMED_RUN_NOISE = 0.03
MAX_PLANNED_RUNS = 30  # per side; beyond this the change is too close to the noise to chase


# --------------------------------------------------------------------------- distributions


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, modified Lentz (Numerical Recipes §6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` degrees of freedom: ``I_{df/(df+t^2)}(df/2, 1/2)``."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if math.isinf(t):
        return 0.0
    if t == 0.0:
        return 1.0
    return min(1.0, max(0.0, betainc(df / 2.0, 0.5, df / (df + t * t))))


@lru_cache(maxsize=512)
def t_quantile(p_two_sided: float, df: float) -> float:
    """The ``t`` with ``P(|T| >= t) = p_two_sided`` (bisection on ``t_two_sided_p``)."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > p_two_sided:
        high *= 2.0
        if high > 1e12:
            return math.inf
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, df) > p_two_sided:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def normal_two_sided_p(z: float) -> float:
    """``P(|Z| >= |z|)`` for a standard normal ``Z``."""
    return math.erfc(abs(z) / math.sqrt(2.0))


# --------------------------------------------------------------------------- one number per run


def robust_spread(logs: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation: a standard deviation that ignores outliers."""
    center = statistics.median(logs)
    return 1.4826 * statistics.median(abs(v - center) for v in logs)


def median(values: Sequence[float]) -> float:
    """``statistics.median`` of finite values, finite: the midpoint of two middle values whose
    sum a double cannot hold (1e308 twice) is taken half by half."""
    middle = statistics.median(values)
    if math.isinf(middle):
        ordered = sorted(values)
        middle = ordered[len(ordered) // 2 - 1] / 2 + ordered[len(ordered) // 2] / 2
    return middle


def steady_decode(
    values: Sequence[float],
    running: Sequence[object] | None = None,
    *,
    unit: str = "tok/s",
) -> SteadyValue | None:
    """A run's one number: the median gen throughput of its steady decode lines.

    Idle-gap lines are left out first: lines whose ``#running-req`` is 0 (when ``running`` gives
    it, aligned with ``values``), lines without a positive finite throughput, and lines whose
    throughput collapsed under ``IDLE_FRACTION`` (half) of the run's upper-quartile throughput.
    SGLang divides the tokens since the previous decode line by the time since then, so the first
    line after a pause reads near zero (0.39 tok/s in a 94 tok/s run); the upper quartile is the
    reference so that a run with many pauses still has a steady level to compare with.
    Returns None when no line is left.
    """
    if running is None and getattr(values, "typecode", None) == "d":  # array("d")
        # The parsers' compact series (a big log has millions of lines): the same numbers, with numpy.
        return _steady_of_array(values, unit)
    kept: list[float] = []
    skipped = 0
    candidates: list[float] = []
    for index, value in enumerate(values):
        busy = running[index] if running is not None and index < len(running) else None
        if isinstance(busy, (int, float)) and not isinstance(busy, bool) and busy == 0:
            skipped += 1
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            skipped += 1
            continue
        candidates.append(float(value))
    if not candidates:
        return None
    reference = statistics.quantiles(candidates, n=4, method="inclusive")[2] if len(candidates) > 1 else candidates[0]
    for value in candidates:
        if value < IDLE_FRACTION * reference:
            skipped += 1
        else:
            kept.append(value)
    if not kept:  # the reference overflowed (values near 1e308): nothing steady to say
        return None
    spread = robust_spread([math.log(v) for v in kept]) if len(kept) >= MIN_SPREAD_LINES else None
    return SteadyValue(
        metric="decode_throughput",
        unit=unit,
        value=median(kept),
        n=len(kept),
        skipped=skipped,
        spread=spread,
        source="decode-lines",
    )


def _steady_of_array(values: Sequence[float], unit: str) -> SteadyValue | None:
    """``steady_decode`` of an ``array("d")`` without ``running``, with numpy: the values sorted
    once, every median and quantile read from the sorted copy (order statistics of the same
    multiset), and the arithmetic on them Python's, so value, n and skipped are bit for bit the
    same; the spread's logarithms are numpy's (a million ``math.log`` calls took 0.3 s), equal to
    ``math.log``'s to within an ulp or so. One sort (numpy's, vectorized since numpy 2.0: 51 us
    for a run's 14,000 decode throughputs) instead of four selections of about 40 us each and a
    copy: 84 us a run, not 222 us."""
    import numpy as np  # only for big series: the rest of this module needs the standard library only

    # values is an array("d"), a buffer (steady_decode checked its typecode); mypy sees a Sequence, and this
    # module imports neither array nor typing.cast (test_detect_is_pure)
    data = np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)  # type: ignore[call-overload]
    ordered = np.sort(data)  # nan last
    first, stop = int(np.searchsorted(ordered, 0.0, side="right")), int(np.searchsorted(ordered, math.inf))
    candidates = ordered[first:stop]  # the positive finite values, ascending
    skipped = len(data) - len(candidates)
    total = len(candidates)
    if not total:
        return None
    if total > 1:
        j, delta = divmod(3 * (total - 1), 4)  # statistics.quantiles(n=4, method="inclusive")[2]
        below, above = float(candidates[j]), float(candidates[j + 1])
        reference = (below * (4 - delta) + above * delta) / 4
    else:
        reference = float(candidates[0])
    busy = int(candidates.searchsorted(IDLE_FRACTION * reference))  # the first not idle (under half the reference)
    kept = candidates[busy:]
    n = len(kept)
    skipped += total - n
    if not n:  # the reference overflowed (values near 1e308), as in steady_decode
        return None
    spread = None
    if n >= MIN_SPREAD_LINES:
        logs = np.log(kept)
        if (logs[1:] >= logs[:-1]).all():  # in order, as the logarithm keeps them
            center = _median_of_sorted(logs)
            spread = 1.4826 * _median_distance(logs, center)
        else:
            center = _median_of_array(logs)
            spread = 1.4826 * _median_of_array(np.abs(logs - center))
    return SteadyValue(
        metric="decode_throughput",
        unit=unit,
        value=_median_of_sorted(kept),
        n=n,
        skipped=skipped,
        spread=spread,
        source="decode-lines",
    )


def steady_sum(by_rank: Mapping[str, Sequence[float]], *, unit: str = "tok/s") -> SteadyValue | None:
    """A run's one number when several ranks log their own decode lines (DP ranks with DP attention
    or DP replicas, vLLM engines): the sum of each rank's ``steady_decode`` value, each rank's value
    kept in ``ranks``. A rank's lines measure only its share of the batch, so the median over all
    lines would mix ranks and miss the total. ``n`` and ``skipped`` add up; the spread is the
    ranks' spreads weighted by their values (None when one is unknown). None when no rank has a
    steady value."""
    per_rank = {rank: steady_decode(values, unit=unit) for rank, values in by_rank.items()}
    kept = {rank: steady for rank, steady in per_rank.items() if steady is not None}
    if not kept:
        return None
    total = sum(steady.value for steady in kept.values())
    spreads = [steady.spread for steady in kept.values()]
    spread = (
        None
        if any(s is None for s in spreads)
        else sum(steady.value * (steady.spread or 0.0) for steady in kept.values()) / total
    )
    return SteadyValue(
        metric="decode_throughput",
        unit=unit,
        value=total,
        n=sum(steady.n for steady in kept.values()),
        skipped=sum(steady.skipped for steady in kept.values()),
        spread=spread,
        source="decode-lines",
        ranks={rank: steady.value for rank, steady in kept.items()},
    )


def _median_of_sorted(values) -> float:
    """``median`` of an ascending float64 numpy array (one value or more): of its middle one or two."""
    n = len(values)
    return median(values[(n - 1) // 2 : n // 2 + 1].tolist())


def _median_distance(values, center: float) -> float:
    """``statistics.median`` of ``abs(values - center)`` for an ascending float64 numpy array:
    the distances of the values under the center, read backwards, and of the others are two
    ascending runs (``center - v`` is exactly ``-(v - center)``), and the middle of their merge
    is picked without making it."""
    split = int(values.searchsorted(center))
    below = center - values[:split][::-1]
    above = values[split:] - center
    n = len(values)
    if n % 2:
        return _kth_of_two(below, above, n // 2)
    return (_kth_of_two(below, above, n // 2 - 1) + _kth_of_two(below, above, n // 2)) / 2


def _kth_of_two(a, b, k: int) -> float:
    """The ``k``-th smallest (0-based) of the values of two ascending arrays, by binary search on
    how many of the ``k + 1`` smallest come from ``a``: the fewest ``i`` with ``a[i] >= b[k - i]``."""
    lo, hi = max(0, k + 1 - len(b)), min(k + 1, len(a))
    while lo < hi:
        i = (lo + hi) // 2
        if a[i] < b[k - i]:
            lo = i + 1
        else:
            hi = i
    i, j = lo, k + 1 - lo
    return float(max(a[i - 1] if i else -math.inf, b[j - 1] if j else -math.inf))


def _median_of_array(values) -> float:
    """``statistics.median`` of a float64 numpy array without nan (one or more values)."""
    n = len(values)
    if n % 2:
        return order_statistics(values, [n // 2])[0]
    below, above = order_statistics(values, [n // 2 - 1, n // 2])
    return (below + above) / 2


# Order statistics of long series by radix selection: each pass counts the values in each of
# 2**SELECT_BITS buckets of their (remaining) range and keeps only the buckets holding a wanted
# rank. Four to ten times as fast as numpy's partition (introselect) on a run's 14,000 decode
# throughputs, few of them distinct; slower on short arrays, which partition picks from.
SELECT_BITS = 11
PARTITION_MAX = 4096
_SIGN = -(2**63)


def order_statistics(values, ranks: Sequence[int]) -> list[float]:
    """The ``ranks``-th smallest (0-based) of a contiguous float64 numpy array without nan, as
    floats: what ``numpy.sort(values)[ranks]`` gives, without sorting; by the compiled radix
    selection (``_select.c``: 952 calls on the 400 MB benchmark log's series in 0.029 s, a
    quarter of numpy's 0.118 s) when it is built, else by numpy. numpy's partition holds ``-0.0`` and
    ``0.0`` equal while the radix way orders ``-0.0`` first, so ``values`` never hold both (a
    series with a ``-0.0`` is summarized the list way: builder._summarize_array)."""
    if _select is not None:
        return _select.order_statistics(values, ranks)
    import numpy as np

    if len(values) <= PARTITION_MAX:
        return np.partition(values, ranks)[ranks].tolist()
    # The floats' bits as unsigned integers in the floats' order: a positive float's with its sign
    # bit set, a negative one's all flipped (the larger its magnitude, the smaller).
    bits = values.view(np.int64)
    keys = (bits ^ ((bits >> 63) | np.int64(_SIGN))).view(np.uint64)
    picked = [0] * len(ranks)
    _radix_select(np, keys, int(keys.min()), int(keys.max()), [(rank, i) for i, rank in enumerate(ranks)], picked)
    chosen = np.array(picked, dtype=np.uint64).view(np.int64)
    return (chosen ^ ((~chosen >> 63) | np.int64(_SIGN))).view(np.float64).tolist()


def _radix_select(np, keys, low: int, high: int, wanted: list[tuple[int, int]], picked: list[int]) -> None:
    """``picked[i]`` = the ``rank``-th smallest of ``keys`` for each ``(rank, i)`` of ``wanted``;
    ``low`` and ``high``: the smallest and the largest key."""
    if low == high:
        for _, i in wanted:
            picked[i] = low
        return
    if len(keys) <= PARTITION_MAX:
        ordered = np.partition(keys, [rank for rank, _ in wanted])
        for rank, i in wanted:
            picked[i] = int(ordered[rank])
        return
    shift = max(0, (high - low).bit_length() - SELECT_BITS)
    buckets = ((keys - np.uint64(low)) >> np.uint64(shift)).astype(np.intp)
    below = np.cumsum(np.bincount(buckets))  # keys in each bucket and the ones before it
    places = np.searchsorted(below, [rank for rank, _ in wanted], side="right").tolist()
    inside: dict[int, list[tuple[int, int]]] = {}
    for (rank, i), bucket in zip(wanted, places, strict=True):
        inside.setdefault(bucket, []).append((rank - (int(below[bucket - 1]) if bucket else 0), i))
    for bucket, ranks in inside.items():
        if shift == 0:  # a bucket a key
            for _, i in ranks:
                picked[i] = low + bucket
            continue
        part = keys[buckets == bucket]
        _radix_select(np, part, int(part.min()), int(part.max()), ranks, picked)


_LIMB_BITS = 18  # a 53-bit mantissa in three limbs: products of two under 2**36
_LIMB_MASK = (1 << _LIMB_BITS) - 1
_SUMMED_AT_ONCE = 1 << 16  # 2**16 such products add up to under 2**52: exact as doubles


def exact_sums(data) -> tuple[int, int, int]:
    """``(total, squares, low)``: each value of the finite float64 array is an integer times
    ``2**low``, and these integers add up to ``total``, their squares to ``squares`` (the exact
    sums behind ``builder``'s mean and stddev of a series with a zero). By the compiled function
    (``_select.c``: 128-bit sums, an exponent at a time; 8 us for a run's 800 prefill throughputs)
    when it is built, else by numpy, the reference: each mantissa in three 18-bit limbs, the limbs
    and their products summed for each exponent (``bincount``: exact, the sums being integers under
    2**52), then put together as integers, an exponent at a time (80 us, not an integer a value)."""
    compiled = getattr(_select, "exact_sums", None)  # (not built without 128-bit integers)
    if compiled is not None:
        return compiled(data)
    import numpy as np

    fractions, exponents = np.frexp(data)
    mantissas = (fractions * 2.0**53).astype(np.int64)  # exact: 53 bits
    nonzero = mantissas != 0
    if not nonzero.any():
        return 0, 0, 0
    low = int(exponents[nonzero].min())
    shifts = np.where(nonzero, exponents - low, 0).astype(np.intp)
    size = int(shifts.max()) + 1
    limbs = [
        (mantissas >> 2 * _LIMB_BITS).astype(np.float64),  # signed: the two below are not
        ((mantissas >> _LIMB_BITS) & _LIMB_MASK).astype(np.float64),
        (mantissas & _LIMB_MASK).astype(np.float64),
    ]
    total = squares = 0
    for start in range(0, len(data), _SUMMED_AT_ONCE):
        part = slice(start, start + _SUMMED_AT_ONCE)
        where = shifts[part]
        a, b, c = (limb[part] for limb in limbs)
        terms = (a, b, c, a * a, a * b, a * c, b * b, b * c, c * c)
        sums = [np.bincount(where, weights=term, minlength=size) for term in terms]
        used = np.flatnonzero(np.bincount(where, minlength=size))
        columns = [column[used].astype(np.int64).tolist() for column in sums]  # whole numbers already
        for shift, *summed in zip(used.tolist(), *columns, strict=True):
            sa, sb, sc, aa, ab, ac, bb, bc, cc = summed
            total += ((sa << 36) + (sb << 18) + sc) << shift
            squares += ((aa << 72) + (ab << 55) + ((2 * ac + bb) << 36) + (bc << 19) + cc) << (2 * shift)
    return total, squares, low - 53


# --------------------------------------------------------------------------- boundaries


@dataclass(frozen=True)
class Version:
    """The runs of one version: one positive number per run and each run's line spread (or None)."""

    values: tuple[float, ...]
    spreads: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.values or any(not (v > 0 and math.isfinite(v)) for v in self.values):
            raise ValueError("a version needs at least one positive finite value")
        if self.spreads and len(self.spreads) != len(self.values):
            raise ValueError("one spread per value")


@dataclass(frozen=True)
class Settings:
    min_effect: float = DEFAULT_MIN_EFFECT
    alpha: float = DEFAULT_ALPHA
    window: int = DEFAULT_WINDOW
    higher_is_better: bool = True


@dataclass
class Boundary:
    """The test between versions ``index - 1`` and ``index``."""

    index: int
    left: tuple[int, ...]  # version indices pooled on the "from" side, in order
    right: tuple[int, ...]  # ... and on the "to" side
    from_value: float  # geometric mean of the from-side runs
    to_value: float
    change: float  # to_value / from_value - 1
    p_value: float | None
    method: str  # "pooled-t" or "line-spread"
    sigma: float | None  # the noise used, in natural-log units (about a coefficient of variation)
    df: int | None  # degrees of freedom of a pooled-t test
    verdict: Verdict | None
    single_run: bool = False
    more_runs: tuple[int, int] | None = None
    quiet: bool = False  # |change| under the minimum effect: nothing moved here
    absorbed_by: int | None = None  # the neighbouring boundary that kept the verdict for the same change
    # What is special about it, as codes: "spread-unknown" (a run's line spread is unknown),
    # "too-noisy" (inconclusive, and no number of runs up to MAX_PLANNED_RUNS would decide it).
    notes: list[BoundaryNote] = field(default_factory=list)


def _logs(version: Version) -> list[float]:
    return [math.log(v) for v in version.values]


def pooled_sigma(versions: Sequence[Version]) -> tuple[float | None, int]:
    """The within-version standard deviation of log values pooled over versions with >= 2 runs.

    Returns ``(sigma, df)`` with ``df = N - K`` over those versions; ``(None, 0)`` when none has two runs.
    """
    squares, df = 0.0, 0
    for version in versions:
        logs = _logs(version)
        if len(logs) < 2:
            continue
        mean = math.fsum(logs) / len(logs)
        squares += math.fsum((v - mean) ** 2 for v in logs)
        df += len(logs) - 1
    if df == 0:
        return None, 0
    return math.sqrt(squares / df), df


def _window(index: int, versions: int, crossable: list[bool], size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    left = [index - 1]
    while len(left) < size and left[0] - 1 >= 0 and crossable[left[0]]:
        left.insert(0, left[0] - 1)
    right = [index]
    while len(right) < size and right[-1] + 1 < versions and crossable[right[-1] + 1]:
        right.append(right[-1] + 1)
    return tuple(left), tuple(right)


def _plan_more_runs(
    delta: float, sigma: float, n_from: int, n_to: int, df: int, alpha: float
) -> tuple[int, int] | None:
    """Extra runs (from side, to side) after which a pooled t-test would pass, if the change and
    the noise stayed as they are; None when even ``MAX_PLANNED_RUNS`` a side would not."""
    for n in range(2, MAX_PLANNED_RUNS + 1):
        a, b = max(n_from, n), max(n_to, n)
        if (a, b) == (n_from, n_to):
            continue
        new_df = df + (a - n_from) + (b - n_to)
        if new_df < 1:
            continue
        if abs(delta) >= t_quantile(alpha, new_df) * sigma * math.sqrt(1 / a + 1 / b):
            return a - n_from, b - n_to
    return None


@dataclass(frozen=True)
class _Noise:
    """The pooled within-version noise (``pooled_sigma``), and whether it has the degrees of
    freedom (``MIN_POOLED_DF``) for the pooled t-test."""

    sigma: float | None
    df: int
    pooled: bool


def _separates(b: int, logs: list[list[float]], means: list[float], noise: _Noise, settings: Settings) -> bool:
    """The adjacent change at boundary b is a change of its own: a window stops there."""
    delta = means[b] - means[b - 1]
    if abs(math.expm1(delta)) < settings.min_effect:
        return False
    if not noise.pooled or not noise.sigma:
        return True
    se = noise.sigma * math.sqrt(1 / len(logs[b]) + 1 / len(logs[b - 1]))
    return t_two_sided_p(delta / se, noise.df) < settings.alpha


@dataclass
class _Test:
    """What one boundary's test found, before the verdict is read from it."""

    method: str
    sigma: float | None
    df: int | None
    p_value: float | None
    decisive: bool
    plan_sigma: float | None  # the noise to plan more runs with
    single_run: bool = False
    notes: list[BoundaryNote] = field(default_factory=list)


def _pooled_test(delta: float, scale: float, noise: _Noise, alpha: float) -> _Test:
    """The pooled t-test: enough runs to estimate the between-run noise."""
    assert noise.sigma is not None
    sigma = noise.sigma
    if sigma > 0:
        p_value = t_two_sided_p(delta / (sigma * scale), noise.df)
    else:
        p_value = 0.0 if delta != 0 else 1.0
    return _Test("pooled-t", sigma, noise.df, p_value, p_value < alpha, sigma)


def _line_spread_test(
    delta: float, change: float, scale: float, spreads: list[float | None], noise: _Noise, settings: Settings
) -> _Test:
    """The single-run rule: no between-run noise, so the runs' line spreads (floored) stand in
    for it, and a verdict also needs a change large against them."""
    if not spreads or not all(s is not None for s in spreads):
        return _Test("line-spread", None, None, None, False, ASSUMED_RUN_NOISE, True, ["spread-unknown"])
    floor = max(SPREAD_FLOOR, *(s for s in spreads if s is not None))
    if noise.sigma is not None:
        floor = max(floor, noise.sigma)
    sigma = floor
    p_value = normal_two_sided_p(delta / (sigma * scale))
    decisive = (
        p_value < settings.alpha
        and abs(delta) >= SINGLE_RUN_SPREAD_FACTOR * sigma
        and abs(change) >= SINGLE_RUN_EFFECT_FACTOR * settings.min_effect
    )
    return _Test("line-spread", sigma, None, p_value, decisive, max(sigma, ASSUMED_RUN_NOISE), True)


def _verdict(big: bool, decisive: bool, delta: float, higher_is_better: bool) -> Verdict | None:
    """None for a change under the minimum effect; its direction when decisive; else inconclusive."""
    if not big:
        return None
    if decisive:
        worse = (delta < 0) == higher_is_better
        return "regression" if worse else "improvement"
    return "inconclusive"


def _test_boundary(
    index: int,
    versions: Sequence[Version],
    logs: list[list[float]],
    crossable: list[bool],
    noise: _Noise,
    settings: Settings,
) -> Boundary:
    """Compare the windows either side of boundary ``index``: the pooled t-test when the noise is
    pooled, else the line-spread rule; then the verdict and, when inconclusive, the runs to add."""
    left, right = _window(index, len(versions), crossable, max(1, settings.window))
    xs = [v for i in left for v in logs[i]]
    ys = [v for i in right for v in logs[i]]
    mean_x, mean_y = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    delta = mean_y - mean_x
    change = math.expm1(delta)
    big = abs(change) >= settings.min_effect
    scale = math.sqrt(1 / len(xs) + 1 / len(ys))
    if noise.pooled:
        test = _pooled_test(delta, scale, noise, settings.alpha)
    else:
        spreads = [s for i in left + right for s in (versions[i].spreads or (None,) * len(versions[i].values))]
        test = _line_spread_test(delta, change, scale, spreads, noise, settings)
    verdict = _verdict(big, test.decisive, delta, settings.higher_is_better)
    more = None
    if verdict == "inconclusive" and test.plan_sigma is not None:
        more = _plan_more_runs(delta, test.plan_sigma, len(xs), len(ys), noise.df, settings.alpha)
        if more is None:
            test.notes.append("too-noisy")
    return Boundary(
        index=index,
        left=left,
        right=right,
        from_value=math.exp(mean_x),
        to_value=math.exp(mean_y),
        change=change,
        p_value=test.p_value,
        method=test.method,
        sigma=test.sigma,
        df=test.df,
        verdict=verdict,
        single_run=test.single_run and verdict in ("regression", "improvement"),
        more_runs=more,
        quiet=not big,
        notes=test.notes,
    )


def detect(versions: Sequence[Version], settings: Settings = Settings()) -> list[Boundary]:
    """Test every boundary between consecutive versions (see the module docstring)."""
    count = len(versions)
    if count < 2:
        return []
    logs = [_logs(v) for v in versions]
    means = [math.fsum(v) / len(v) for v in logs]
    sigma_pooled, df = pooled_sigma(versions)
    noise = _Noise(sigma_pooled, df, sigma_pooled is not None and df >= MIN_POOLED_DF)
    # crossable[b]: a window may reach across boundary b (index 0 unused).
    crossable = [False] + [not _separates(b, logs, means, noise, settings) for b in range(1, count)]
    boundaries = [_test_boundary(index, versions, logs, crossable, noise, settings) for index in range(1, count)]
    _keep_best_of_overlapping(boundaries)
    return boundaries


def _keep_best_of_overlapping(boundaries: list[Boundary]) -> None:
    """Two neighbouring boundaries flagged the same way whose windows overlap saw one change:
    the one with the larger p loses its verdict."""
    for first, second in zip(boundaries, boundaries[1:], strict=False):
        if first.verdict not in ("regression", "improvement") or first.verdict != second.verdict:
            continue
        overlap = second.index in first.right or first.index - 1 in second.left
        if not overlap:
            continue
        p_first = first.p_value if first.p_value is not None else 1.0
        p_second = second.p_value if second.p_value is not None else 1.0
        loser, winner = (second, first) if p_first <= p_second else (first, second)
        loser.verdict = None
        loser.single_run = False
        loser.absorbed_by = winner.index
