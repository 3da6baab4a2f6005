"""The machine: its name, and the GPUs and NCCL versions its logs show."""

from __future__ import annotations

import pytest

from timeline.errors import UsageError
from timeline.model import Run, Timeline
from timeline.store.machine import gpus_used, machine_of


@pytest.mark.parametrize(
    "config, gpus",
    [
        ({"tp_size": 8}, 8),
        ({"tp_size": 4, "pp_size": 2}, 8),
        ({"tp_size": 2, "dp_size": 4}, 8),
        ({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, 8),  # DP attention shares the TP GPUs
        ({"tp_size": None, "dp_size": 2}, 2),
        ({"model_path": "x"}, None),
    ],
)
def test_the_gpus_a_run_used(config, gpus):
    assert gpus_used(config) == gpus


def run(config, nccl, drivers=()):
    return Run(
        "r1",
        "a.log",
        "sglang-server",
        None,
        None,
        None,
        None,
        None,
        1,
        2,
        None,
        "no-time",
        nccl_versions=nccl,
        cuda_driver_versions=list(drivers),
        config=config,
    )


def test_the_machine_of_a_timeline():
    from datetime import datetime, timezone

    built = Timeline(
        datetime(2026, 1, 1, tzinfo=timezone.utc),
        "UTC",
        "flag",
        None,
        [],
        [run({"tp_size": 4}, ["2.27.5"]), run({"tp_size": 8}, ["2.21.5", "2.27.5"])],
        [],
    )
    machine = machine_of(built, None, "gpu-node-3")
    assert (machine.name, machine.host, machine.gpu_count, machine.nccl_versions) == (
        "gpu-node-3",
        "gpu-node-3",
        8,
        ("2.21.5", "2.27.5"),
    )
    assert machine_of(built, "nightly-h100", "gpu-node-3").name == "nightly-h100"
    assert machine.fingerprint == (8, ("2.21.5", "2.27.5"), None)
    with pytest.raises(UsageError, match="^machine is empty"):
        machine_of(built, "", "")


def test_the_driver_is_every_cuda_version_its_logs_showed_oldest_first():
    from datetime import datetime, timezone

    def built(*drivers):
        runs = [run({"tp_size": 8}, ["2.27.5"], shown) for shown in drivers]
        return Timeline(datetime(2026, 1, 1, tzinfo=timezone.utc), "UTC", "flag", None, [], runs, [])

    assert machine_of(built(["12.8"], []), None, "h").driver == "12.8"
    assert machine_of(built(["12.10"], ["12.9"], ["12.10"]), None, "h").driver == "12.9, 12.10"
    assert machine_of(built([]), None, "h").driver is None
    assert machine_of(built(["12.8"]), None, "h").fingerprint == (8, ("2.27.5",), "12.8")
