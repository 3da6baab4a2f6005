"""The scenarios of timeline.scenario tell the stories they say they tell."""

from __future__ import annotations

from pathlib import Path

from timeline.builder import build
from timeline.scenario import NIGHTLY_CULPRIT, NIGHTLY_REGRESSION_NIGHT, NightlyScenario


def test_nightly_two_machines_one_regression_on_the_newer_nccl(tmp_path: Path) -> None:
    scenario = NightlyScenario(tmp_path, nights=NIGHTLY_REGRESSION_NIGHT + 2)
    nights = []
    for night in scenario.nights():
        # written night by night: this night's folder holds this night's log only
        assert [p.name for p in night.logs.iterdir()] == ["sglang.log"]
        nights.append(night)
    assert len(nights) == 2 * scenario.count
    found = {}
    for machine in scenario.machines:
        logs = [n.logs for n in nights if n.machine == machine]
        timeline = build(logs, repo=scenario.checkouts[machine.name], log_tz="UTC", cache=False)
        assert len(timeline.runs) == 2 * scenario.count
        assert {tuple(r.nccl_versions) for r in timeline.runs} == {(machine.nccl,)}
        assert all(r.attribution == "exact" for r in timeline.runs)
        found[machine.name] = [s for s in timeline.shifts if s.verdict is not None]
    assert found["gpu-b"] == []
    (regression,) = found["gpu-a"]
    assert regression.verdict == "regression" and not regression.single_run
    assert -15 < regression.change_pct < -13
    assert {s.subject for s in regression.suspects} == {
        NIGHTLY_CULPRIT,
        "MoE: fused top-k for FP8",
        "Docs: NCCL tuning",
    }
    assert scenario.shas[NIGHTLY_CULPRIT] in {s.sha for s in regression.suspects}
