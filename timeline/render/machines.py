"""``timeline history``'s machines: what each one is, and which others its numbers compare with."""

from __future__ import annotations

from rich.table import Table

from timeline.history import MachineSummary
from timeline.render.wording import counted


def machine_facts(machine: MachineSummary) -> str:
    """``8 GPUs, NCCL 2.27.5, driver CUDA 12.8`` (the CUDA version the driver supports: what NCCL
    logs of it), ``driver unknown`` without one: what must match for two machines to compare."""
    gpus = "GPUs unknown" if machine.gpu_count is None else counted(machine.gpu_count, "GPU")
    nccl = f"NCCL {', '.join(machine.nccl_versions)}" if machine.nccl_versions else "NCCL unknown"
    driver = f"driver CUDA {machine.driver}" if machine.driver else "driver unknown"
    return f"{gpus}, {nccl}, {driver}"


def alike_text(machine: MachineSummary) -> str:
    """Which other machines have the same GPUs, NCCL and driver (its shifts are its own either way)."""
    if not machine.matching:
        return "no other"
    return ", ".join(machine.matching)


def machines_table(machines: list[MachineSummary]) -> Table:
    """One row a machine: its name and host, GPUs/NCCL/driver, runs and code events read, the
    machines alike in hardware and configuration."""
    table = Table(title="Machines (each one's runs are tested against its own)", title_justify="left")
    for header in ("Machine", "Host", "Hardware and configuration", "Runs", "Events", "Alike"):
        table.add_column(header, overflow="fold")
    for machine in machines:
        table.add_row(
            machine.name,
            machine.host or "-",
            machine_facts(machine),
            str(machine.runs),
            str(machine.events),
            alike_text(machine),
        )
    return table
