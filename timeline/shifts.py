"""Shifts: runs of one workload, grouped into versions, tested at every boundary the reflog drew.

``find_shifts(runs, events)`` is what ``build`` calls once the runs are tied to commits. It is pure
(no I/O, no git): comparable groups, versions and confounders here, the statistics in
``timeline.detect``, the suspects, narrowing and ranking in ``timeline.suspects``. docs/shifts.md
explains the method to users.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar, cast

from timeline.detect import Boundary, Settings, Version, detect, steady_decode, steady_sum
from timeline.model import CodeEvent, Confounder, Rerun, Run, Shift, ShiftNotes, ShiftSide, SteadyValue
from timeline.records import MAX_MESSAGES, ParsedRun, SeriesDigest
from timeline.suspects import narrow, net_suspects, signed_effect
from timeline.workload import workload_label

__all__ = [
    "METRIC",
    "AGGREGATED_METRIC",
    "GROUP_FIELDS",
    "steady_of",
    "group_key",
    "workload_groups",
    "find_shifts",
    "is_launch_random",
]

METRIC = "decode_throughput"  # higher is better
# vLLM's "N Engines Aggregated:" lines: the server's total, the run's value when it logged no engine's own line
AGGREGATED_METRIC = "aggregated_decode_throughput"
BENCH_RESULT_SERIES = "output_throughput"  # a bench client's own result, preferred when a run has one

# What makes two runs comparable: the same model, parallelism, speculative decoding, dtypes and
# benchmark load (docs/shifts.md, "Compare like with like"). Sizes default to 1, dtypes to "auto".
_SIZES = ("tp_size", "dp_size", "ep_size", "pp_size")
_SPECULATIVE = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)
_DTYPES = ("quantization", "dtype", "kv_cache_dtype")
_BENCH = ("dataset_name", "num_prompts", "request_rate", "max_concurrency", "random_input_len", "random_output_len")
GROUP_FIELDS = ("model_path", *_SIZES, *_SPECULATIVE, *_DTYPES, *_BENCH)

# The confounders that are versions a run logged, not server arguments: field -> the Run's list of them.
_LOGGED_VERSIONS = {"nccl_version": "nccl_versions", "cuda_driver_version": "cuda_driver_versions"}

# Server arguments that cannot change throughput: never reported as confounders.
COSMETIC_FIELDS = frozenset(
    {
        "host",
        "port",
        "nccl_port",
        "dist_init_addr",
        "api_key",
        "admin_api_key",
        "served_model_name",
        "tokenizer_path",
        "log_level",
        "log_level_http",
        "log_requests",
        "log_requests_level",
        "show_time_cost",
        "decode_log_interval",
        "file_storage_path",
        "crash_dump_folder",
        "model_path",
        "speculative_draft_model_path",
    }
)
# Drawn anew at each launch unless the user sets it: SGLang's ServerArgs.__post_init__ does
# ``self.random_seed = random.randint(0, 1 << 30)`` when it is None
# (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py).
LAUNCH_RANDOM_FIELDS = frozenset({"random_seed"})
_PATH_SUFFIXES = ("_dir", "_path", "_file", "_folder")
_T = TypeVar("_T")


def is_launch_random(name: str, values: Sequence[Any]) -> bool:
    """True for a server argument whose value says nothing about the code path: a port, a log or
    dump path, or a seed drawn at launch (no value repeats across the runs: the user did not set
    it; a seed the user set, 42 on several runs, is a real difference)."""
    if name == "port" or name.endswith(("_port", "_ports")):
        return True
    if ("log" in name or "dump" in name) and name.endswith(_PATH_SUFFIXES):
        return True
    if name in LAUNCH_RANDOM_FIELDS:
        frozen = [_frozen(v) for v in values]
        return len(set(frozen)) == len(frozen)
    return False


def steady_of(parsed: ParsedRun) -> SteadyValue | None:
    """The run's one number: the bench client's result when it has one, else the sum of the ranks'
    steady values when several ranks logged their own decode lines (``steady_sum``), else
    ``steady_decode`` of the decode lines, else of vLLM's ``N Engines Aggregated:`` lines (the
    server's total; never mixed with one engine's lines).

    With per-line samples (``--samples``) the ``#running-req`` of each line is used too.
    """
    bench = parsed.series.get(BENCH_RESULT_SERIES)
    if bench and not isinstance(bench, SeriesDigest):  # (a bench client's one value is never digested)
        value = float(bench[-1])
        if math.isfinite(value) and value > 0:
            return SteadyValue(
                BENCH_RESULT_SERIES, parsed.units.get(BENCH_RESULT_SERIES, "tok/s"), value, 1, 0, None, "bench-client"
            )
    unit = parsed.units.get(METRIC, "tok/s")
    if len(parsed.rank_series) >= 2:  # several ranks each log their share: the run is their sum
        return steady_sum(parsed.rank_series, unit=unit)
    rows = (parsed.samples or {}).get("decode")
    if rows:
        held = [
            has and not aggregate
            for has, aggregate in zip(rows.has("gen_throughput"), rows.has("engines_aggregated"), strict=True)
        ]
        if any(held):
            values = [value for value, has in zip(rows.column("gen_throughput"), held, strict=False) if has]
            running = [value for value, has in zip(rows.column("running_req"), held, strict=False) if has]
            return steady_decode(values, running, unit=unit)
    series = parsed.series.get(METRIC) or parsed.series.get(AGGREGATED_METRIC)
    if isinstance(series, SeriesDigest):  # worked out as the run ended
        return cast("SteadyValue | None", series.steady)
    return steady_decode(series, unit=unit) if series else None


def _model(config: dict[str, Any]) -> str | None:
    for key in ("model_path", "served_model_name"):
        value = config.get(key)
        if isinstance(value, str) and value.strip("/"):
            return value.rstrip("/").rsplit("/", 1)[-1]
    return None


def _frozen(value: Any) -> str:
    """``value`` as text that compares as the value does (``1``, ``1.0`` and ``true`` apart)."""
    kind = type(value)
    if kind in _SCALARS:  # most server arguments: each distinct one written once (100,000 runs' worth)
        return _frozen_scalar(kind.__name__, value)
    return json.dumps(value, sort_keys=True, default=str)


_SCALARS = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=1 << 14)
def _frozen_scalar(kind: str, value: Any) -> str:  # keyed by the type too: 1 == 1.0 == True
    return json.dumps(value)


def group_key(run: Run) -> tuple | None:
    """The workload a run measured, as a hashable key; None without a configuration."""
    config = run.config
    if not config:
        return None
    key: list[Any] = [run.machine, run.kind, _model(config)]
    for name in _SIZES:
        value = config.get(name)
        key.append(1 if value is None else value)
    algorithm = config.get("speculative_algorithm")
    key.append(algorithm)
    key.extend(_frozen(config.get(name)) if algorithm else None for name in _SPECULATIVE[1:])
    for name in _DTYPES:
        value = config.get(name)
        key.append("auto" if value in (None, "", "auto") and name != "quantization" else value)
    key.extend(_frozen(config.get(name)) for name in _BENCH if name in config)
    return tuple(_frozen(k) for k in key)


# Attributions that leave a run out whatever else it has (render.wording.LEFT_OUT words them).
_EXCLUDING = frozenset({"mixed", "ambiguous", "before-reflog", "no-repo", "no-time"})


def _eligible(run: Run) -> bool:
    return run.attribution == "exact" and run.commit is not None and run.steady is not None and run.start is not None


def _versions(runs: list[Run]) -> list[list[Run]]:
    """The runs cut where their commit changes: a commit back again later is another version."""
    return [list(version) for _, version in itertools.groupby(runs, _COMMIT)]


_COMMIT = operator.attrgetter("commit")
_START = operator.attrgetter("start")


def _side_value(values: Sequence[Any]) -> Any:
    distinct = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    return distinct[0] if len(distinct) == 1 else distinct


class _Config(NamedTuple):
    """One distinct config of a side's runs, and how many of them have it."""

    values: dict[str, Any]
    runs: int


class _Side:
    """The distinct configs, messages, NCCL and driver versions of one side's runs, each object
    once (by identity, in first-seen order): the runs read from the store share them, so the
    100,000 runs of a store compare as the few sets they hold. Made for each version once
    (``of``), and a side that pools versions from theirs (``pooled``): the sides of a store's
    shifts hold 380,000 runs."""

    def __init__(self, configs: list[_Config], messages: list[list[str]], versions: dict[str, list[list[str]]]) -> None:
        self.configs = configs
        self.messages = messages
        self.versions = versions  # by confounder field (_LOGGED_VERSIONS): the runs' distinct lists

    @classmethod
    def of(cls, runs: list[Run]) -> _Side:
        configs = [r.config for r in runs]
        runs_of = Counter(map(id, configs))
        return cls(
            [_Config(config, runs_of[id(config)]) for config in _distinct(configs)],
            _distinct([r.messages for r in runs]),
            {field: _distinct(list(map(operator.attrgetter(name), runs))) for field, name in _LOGGED_VERSIONS.items()},
        )

    @classmethod
    def pooled(cls, sides: list[_Side]) -> _Side:
        """The side of the runs of ``sides`` one after the other."""
        if len(sides) == 1:
            return sides[0]
        configs: dict[int, _Config] = {}
        for side in sides:
            for config in side.configs:
                known = configs.get(id(config.values))
                configs[id(config.values)] = config if known is None else known._replace(runs=known.runs + config.runs)
        return cls(
            list(configs.values()),
            _distinct([printed for side in sides for printed in side.messages]),
            {
                field: _distinct([listed for side in sides for listed in side.versions[field]])
                for field in _LOGGED_VERSIONS
            },
        )


def _distinct(objects: list[_T]) -> list[_T]:
    """Each object once, by identity, in first-seen order."""
    return list(dict(zip(map(id, objects), objects, strict=True)).values())


def _confounders(before: _Side, after: _Side) -> list[Confounder]:
    """Other differences between the sides: server arguments both sides print, the NCCL versions
    and the GPU driver's CUDA versions.

    A field only one side prints (a new server argument the pulled code added) is part of the code
    change, not a confounder.
    """
    found = _argument_confounders(before, after)
    for field in _LOGGED_VERSIONS:
        versions = _version_confounder(field, before.versions[field], after.versions[field])
        if versions is not None:
            found.append(versions)
    return found


def _argument_confounders(before: _Side, after: _Side) -> list[Confounder]:
    """Server arguments every run of both sides prints with different values on each side,
    leaving out the cosmetic, the grouping and the launch-random ones (a seed, a port)."""
    found: list[Confounder] = []
    # each distinct config once, twice when several runs of a side have it: a value printed by
    # more than one run repeats (is_launch_random)
    both = [(config.values, min(config.runs, 2)) for side in (before, after) for config in side.configs]
    first = len(before.configs)
    printed = set(both[0][0]).intersection(*(config.keys() for config, _ in both[1:]))  # by every run
    names = [n for n in both[0][0] if n in printed and n not in COSMETIC_FIELDS and n not in GROUP_FIELDS]
    for name in names:
        values = [config[name] for config, _ in both]
        if is_launch_random(name, [config[name] for config, count in both for _ in range(count)]):
            continue
        frozen = [_frozen(value) for value in values]
        if set(frozen[:first]) != set(frozen[first:]):
            found.append(Confounder(name, _side_value(values[:first]), _side_value(values[first:])))
    return found


def _version_confounder(field: str, before: list[list[str]], after: list[list[str]]) -> Confounder | None:
    """The versions the runs logged (each run's list, distinct), when they differ and both sides
    logged one: a run that logged none (no ``NCCL_DEBUG=INFO``) tells nothing."""
    old = [",".join(versions) or None for versions in before]
    new = [",".join(versions) or None for versions in after]
    if set(old) != set(new) and any(old) and any(new):
        return Confounder(field, _side_value(old), _side_value(new))
    return None


def _events_between(events: Sequence[CodeEvent], after: float, until: float) -> list[CodeEvent]:
    return [e for e in events if after < e.ts <= until]


def _round(value: float, digits: int) -> float:
    return float(round(value, digits))


def _p(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.3g}")


def workload_groups(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """The runs of each workload (``group_key``), in the runs' order, under a label unique among
    them (``workload_label``, then "#2", "#3" on a clash); runs without a configuration are left
    out. Shifts are named by these labels, and the views group their runs by them."""
    groups: dict[tuple, list[Run]] = {}
    # runs read from the store share configs: each one's group found once a distinct config (its
    # members' list, None for no group), not by its group key a run (100,000 runs)
    members_of: dict[tuple[int, str | None, str], list[Run] | None] = {}
    for run in runs:
        shared = (id(run.config), run.machine, run.kind)
        try:
            members = members_of[shared]
        except KeyError:
            key = group_key(run)
            members = members_of[shared] = None if key is None else groups.setdefault(key, [])
        if members is not None:
            members.append(run)
    labelled: dict[str, list[Run]] = {}
    for members in groups.values():
        label = workload_label(members[0].config, members[0].machine) or "(unknown workload)"
        number, unique = 2, label
        while unique in labelled:
            unique, number = f"{label} #{number}", number + 1
        labelled[unique] = members
    return labelled


def find_shifts(
    runs: Sequence[Run],
    events: Sequence[CodeEvent],
    settings: Settings = Settings(),
    first: int = 1,
) -> list[Shift]:
    """Every boundary between versions of every workload, tested, with its suspects narrowed
    (``timeline.suspects.narrow``); ``timeline.suspects.rank_culprits`` ranks them next.
    ``first``: the number of the first shift's id (``s1``), so that the shifts of several
    checkouts, found one checkout at a time, are ranked together under ids of their own."""
    shifts: list[Shift] = []
    groups_shifts: list[list[Shift]] = []
    for label, members in workload_groups(runs).items():
        eligible = [r for r in members if _eligible(r)]
        versions = _versions(eligible)
        if len(versions) < 2:
            continue
        boundaries = detect(
            [Version(tuple(r.steady.value for r in v), tuple(r.steady.spread for r in v)) for v in versions],  # type: ignore[union-attr]
            settings,
        )
        timed = _Timed(members)
        sides = [_Side.of(version) for version in versions]
        group_shifts = [
            _shift(first + len(shifts) + n, label, b, versions, sides, timed, events) for n, b in enumerate(boundaries)
        ]
        by_index = {b.index: s for b, s in zip(boundaries, group_shifts, strict=False)}
        for boundary, shift in zip(boundaries, group_shifts, strict=False):
            if boundary.absorbed_by is not None:
                shift.notes.absorbed_by = by_index[boundary.absorbed_by].id
        groups_shifts.append(group_shifts)
        shifts.extend(group_shifts)
    _weigh_confounders(shifts, runs, settings)  # across workloads: before narrowing reads the verdicts
    for group_shifts in groups_shifts:
        narrow(group_shifts)
    return shifts


def gate_failures(shifts: Sequence[Shift], confirmed_only: bool = False) -> list[Shift]:
    """The shifts that fail a CI gate: the regressions, and with ``confirmed_only`` not those
    called on one run a side (no between-run noise yet: a rerun confirms them or not)."""
    return [s for s in shifts if s.verdict == "regression" and not (confirmed_only and s.single_run)]


def _weigh_confounders(shifts: list[Shift], runs: Sequence[Run], settings: Settings) -> None:
    """A regression or improvement whose sides differ in a confounder becomes ``confounded``,
    with the rerun that would settle it, unless the same change is seen with equal flags: between
    runs of the two sides that agree on every confounder, or by a shift of another workload with
    no confounder of its own whose suspects are all among this one's, doing the same thing
    (arrived with the same move of the metric, or left with the opposite)."""
    by_id: dict[str, Run] = {}  # made for the first confounded shift: most stores have none
    for shift in shifts:
        if shift.verdict not in ("regression", "improvement") or not shift.confounders:
            continue
        by_id = by_id or {run.id: run for run in runs}
        fields = [c.field for c in shift.confounders]
        if _equal_flag_change(shift, by_id, fields, settings.min_effect):
            shift.equal_flags = "runs"
            continue
        effects = {(s.sha, signed_effect(shift, s)) for s in shift.suspects}
        other = next(
            (
                o
                for o in shifts
                if o.group != shift.group
                and not o.confounders
                and o.verdict == shift.verdict
                and o.suspects
                and {(s.sha, signed_effect(o, s)) for s in o.suspects} <= effects
            ),
            None,
        )
        if other is not None:
            shift.equal_flags = other.id
            continue
        shift.measured, shift.verdict = shift.verdict, "confounded"
        settings_before = tuple(
            (c.field, c.from_value) for c in shift.confounders if not isinstance(c.from_value, list)
        )
        if settings_before:
            shift.reruns = [Rerun("to", settings_before)]


def _flag_values(run: Run, fields: list[str]) -> str:
    return _frozen(
        [",".join(getattr(run, _LOGGED_VERSIONS[f])) if f in _LOGGED_VERSIONS else run.config.get(f) for f in fields]
    )


def _equal_flag_change(shift: Shift, runs: dict[str, Run], fields: list[str], min_effect: float) -> bool:
    """True when some runs of the two sides agree on every confounder and still differ by the
    minimum effect or more, the same way as the shift (geometric means of their steady values)."""
    sides = []
    for ids in (shift.from_side.runs, shift.to_side.runs):
        by_flags: dict[str, list[float]] = {}
        for run in (runs[i] for i in ids):
            if run.steady is not None:
                by_flags.setdefault(_flag_values(run, fields), []).append(math.log(run.steady.value))
        sides.append(by_flags)
    for flags in sides[0].keys() & sides[1].keys():
        before, after = sides[0][flags], sides[1][flags]
        change = math.exp(sum(after) / len(after) - sum(before) / len(before)) - 1
        if abs(change) >= min_effect and (change > 0) == (shift.change_pct > 0):
            return True
    return False


def _left_out_reason(run: Run) -> str:
    """Why a run between the sides is not in the test: its attribution when that excluded it (or it
    has a steady value), else its status, else that it never reached a steady state; a guessed zone
    first, as that is the reason that needs the user (--log-tz)."""
    if "zone-assumed" in run.ambiguous_reasons:
        return "zone-assumed"
    if run.attribution in _EXCLUDING or run.steady is not None:
        return run.attribution
    return run.status if run.status != "ok" else "no-steady"


class _Timed:
    """A group's runs that have a start, by start: the runs between two instants found by
    bisection, not by a pass over the group at each boundary (100,000 runs, hundreds of them)."""

    def __init__(self, members: list[Run]) -> None:
        self.runs = [run for run in members if run.start]
        stamps = [run.start.timestamp() for run in self.runs]  # type: ignore[union-attr]
        # the runs' places by start (a stable sort: a tie keeps the group's order); sorting the
        # places by a float each is a fifth of the time of sorting (start, place, run) tuples
        self.places = sorted(range(len(stamps)), key=stamps.__getitem__)
        self.stamps = [stamps[place] for place in self.places]

    def strictly_between(self, after: float, before: float) -> list[Run]:
        """The runs starting after ``after`` and before ``before``, in the group's order."""
        found = self.places[bisect.bisect_right(self.stamps, after) : bisect.bisect_left(self.stamps, before)]
        return [self.runs[place] for place in sorted(found)]


def _shift_notes(
    boundary: Boundary,
    versions: list[list[Run]],
    timed: _Timed,
    between: list[CodeEvent],
    last_before: float,
    first_after: float,
) -> ShiftNotes:
    """The notes of a shift: no code event between the sides, the boundary's own notes, the
    versions pooled into each side, and the runs between the sides left out of the test, with why."""
    notes = ShiftNotes(no_event=not any(e.changes_commit for e in between), boundary=list(boundary.notes))
    for side, indices in (("from", boundary.left), ("to", boundary.right)):
        if len(indices) > 1:
            notes.pooled[side] = [versions[i][0].commit or "" for i in indices]
    for run in timed.strictly_between(last_before, first_after):
        if not _eligible(run):
            notes.left_out.append((run.id, _left_out_reason(run)))  # type: ignore[arg-type]
    return notes


def _shift_side(
    version: list[Run], runs: list[Run], value: float, versions: list[list[Run]], indices: tuple[int, ...]
) -> ShiftSide:
    """One side of a shift: its version's commit, its runs, its value, and the commits it pools."""
    return ShiftSide(
        version[0].commit or "",
        [r.id for r in runs],
        _round(value, 3),
        [versions[i][0].commit or "" for i in indices],
    )


def _shift(
    number: int,
    group: str,
    boundary: Boundary,
    versions: list[list[Run]],
    sides: list[_Side],
    timed: _Timed,
    events: Sequence[CodeEvent],
) -> Shift:
    before, after = versions[boundary.index - 1], versions[boundary.index]
    left = [r for i in boundary.left for r in versions[i]]
    right = [r for i in boundary.right for r in versions[i]]
    # the latest and earliest starts (aware: in time order whatever their offsets), then their
    # times: not a timestamp made for each of the runs of the two versions (200,000 of a store)
    last_before = max(map(_START, before)).timestamp()
    first_after = min(map(_START, after)).timestamp()
    between = _events_between(events, last_before, first_after)
    steady = left[0].steady
    notes = _shift_notes(boundary, versions, timed, between, last_before, first_after)
    from_side = _Side.pooled([sides[i] for i in boundary.left])
    to_side = _Side.pooled([sides[i] for i in boundary.right])
    return Shift(
        id=f"s{number}",
        group=group,
        metric=steady.metric if steady else METRIC,
        unit=steady.unit if steady else "tok/s",
        from_side=_shift_side(before, left, boundary.from_value, versions, boundary.left),
        to_side=_shift_side(after, right, boundary.to_value, versions, boundary.right),
        change_pct=_round(boundary.change * 100, 2),
        # The line-spread rule has no between-run noise to compute a p-value from (its normal-test
        # p uses the floor, a lower bound on the noise, so it would overstate the certainty).
        p_value=_p(boundary.p_value) if boundary.method == "pooled-t" else None,
        verdict=boundary.verdict,
        method=boundary.method,
        single_run=boundary.single_run,
        more_runs=boundary.more_runs,
        events=[e.id for e in between],
        suspects=net_suspects(between),
        confounders=_confounders(from_side, to_side),
        notes=notes,
        quiet=boundary.quiet,
        arguments_added=_only_in(to_side, from_side),
        arguments_gone=_only_in(from_side, to_side),
        messages_added=_messages_only_in(to_side, from_side),
        messages_gone=_messages_only_in(from_side, to_side),
    )


def _messages_only_in(these: _Side, others: _Side) -> list[str]:
    """Messages every run of ``these`` printed and no run of ``others`` did, in first-seen order;
    none when a run kept only its first ``MAX_MESSAGES`` (what it printed later is not known)."""
    if any(len(printed) >= MAX_MESSAGES for printed in these.messages + others.messages):
        return []
    common = set.intersection(*(set(printed) for printed in these.messages))
    seen = set().union(*others.messages)
    return [m for m in these.messages[0] if m in common and m not in seen]


def _only_in(these: _Side, others: _Side) -> list[str]:
    """Server arguments every run of ``these`` prints and no run of ``others`` does."""
    common = set(these.configs[0].values).intersection(*(config.values.keys() for config in these.configs[1:]))
    return sorted(common.difference(*(config.values.keys() for config in others.configs)))
