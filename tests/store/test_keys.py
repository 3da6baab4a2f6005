"""A run's identity: the digest of its own lines and its line range, read as build read them."""

from __future__ import annotations

import gzip
import shutil

import pytest

import timeline
from timeline.store.errors import StoreError
from timeline.store.keys import run_keys


def test_the_same_logs_give_the_same_keys_and_runs_differ(month):
    runs = timeline.build(month.logs, log_tz="UTC", cache=False).runs
    keys = run_keys(runs)
    assert keys == run_keys(runs)
    assert len({k.key for k in keys}) == len(runs) == 45


def test_a_log_appended_to_keeps_the_keys_of_its_earlier_runs(month, tmp_path):
    day = sorted(month.logs.glob("*.log"))[0]
    log = tmp_path / "server.log"
    lines = day.read_text().splitlines(keepends=True)
    first = timeline.build(day, log_tz="UTC", cache=False).runs
    assert len(first) == 2  # two runs a weekday: cut after the first
    log.write_text("".join(lines[: first[0].last_line]))
    before = run_keys(timeline.build(log, log_tz="UTC", cache=False).runs)
    log.write_text("".join(lines))
    after = run_keys(timeline.build(log, log_tz="UTC", cache=False).runs)
    assert len(before) == 1 and len(after) == 2 and after[0] == before[0]


def test_a_compressed_log_keys_its_runs_as_the_plain_one(month, tmp_path):
    day = sorted(month.logs.glob("*.log"))[0]
    packed = tmp_path / "server.log.gz"
    with day.open("rb") as plain, gzip.open(packed, "wb") as target:
        shutil.copyfileobj(plain, target)
    plain_keys = run_keys(timeline.build(day, log_tz="UTC", cache=False).runs)
    packed_keys = run_keys(timeline.build(packed, log_tz="UTC", cache=False).runs)
    assert [k.key for k in plain_keys] == [k.key for k in packed_keys]


def test_a_log_gone_since_the_build_is_one_line_naming_it(month, tmp_path):
    log = tmp_path / "server.log"
    shutil.copy(sorted(month.logs.glob("*.log"))[0], log)
    runs = timeline.build(log, log_tz="UTC", cache=False).runs
    log.unlink()
    with pytest.raises(StoreError, match=rf"^{log}: cannot read the log again to key its runs: No such file"):
        run_keys(runs)


def test_standard_input_cannot_be_keyed(month):
    runs = timeline.build(sorted(month.logs.glob("*.log"))[0], log_tz="UTC", cache=False).runs
    runs[0].source = "-"
    with pytest.raises(StoreError, match="^-: standard input cannot be read again"):
        run_keys(runs)
