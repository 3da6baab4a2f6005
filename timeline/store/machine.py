"""The machine runs came from: the name the user gives it, and what its logs say about it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from timeline.errors import UsageError
from timeline.model import Timeline


@dataclass(frozen=True)
class Machine:
    """One machine of the store, by ``name`` (``--machine``, default its host name).

    ``gpu_count``: the most GPUs one of its runs used (tensor x pipeline x data parallel; the
    data-parallel attention ranks share the tensor-parallel GPUs), None when no run said.
    ``nccl_versions``: every NCCL version its logs showed, sorted. ``driver``: the CUDA version of
    its GPU driver, as NCCL logs it under ``NCCL_DEBUG=INFO`` (``12.8``; several, oldest first,
    joined by ``, ``), None when no log showed one.
    """

    name: str
    host: str | None
    gpu_count: int | None
    nccl_versions: tuple[str, ...]
    driver: str | None

    @property
    def fingerprint(self) -> tuple[int | None, tuple[str, ...], str | None]:
        """What must match for two machines' runs to be compared: GPUs, NCCL, driver."""
        return (self.gpu_count, self.nccl_versions, self.driver)


def _size(config: dict, key: str) -> int:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def gpus_used(config: dict) -> int | None:
    """The GPUs one run used, from its server arguments; None when it names no parallelism."""
    if not any(key in config for key in ("tp_size", "pp_size", "dp_size")):
        return None
    count = _size(config, "tp_size") * _size(config, "pp_size")
    if not config.get("enable_dp_attention"):  # SGLang's DP attention runs its DP ranks on the TP GPUs
        count *= _size(config, "dp_size")
    return count


def machine_of(timeline: Timeline, name: str | None, host: str | None) -> Machine:
    """The machine ``timeline``'s logs were written on: ``name`` (default ``host``), what the runs show."""
    counts = [count for run in timeline.runs if (count := gpus_used(run.config)) is not None]
    versions = sorted({version for run in timeline.runs for version in run.nccl_versions})
    drivers = [driver for run in timeline.runs for driver in run.cuda_driver_versions]
    label = name or host
    if not label:
        raise UsageError("is empty and the host has no name: name the machine", option="machine")
    return Machine(label, host, max(counts, default=None), tuple(versions), joined_drivers(drivers))


def joined_drivers(drivers: Iterable[str]) -> str | None:
    """``Machine.driver`` of these CUDA versions (each ``12.8`` or already joined ``12.4, 12.8``):
    each once, oldest first, joined by ``, ``; None for none."""
    each = {version for driver in drivers for version in driver.split(", ") if version}
    return ", ".join(sorted(each, key=lambda version: tuple(map(int, version.split("."))))) or None
