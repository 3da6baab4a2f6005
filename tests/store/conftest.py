"""The store's tests' logs: a month of nightly runs (the empty stores: ``store_url``, tests/conftest.py)."""

from __future__ import annotations

import pytest

import timeline
from timeline.model import Timeline
from timeline.scenario import MonthScenario, build_month


@pytest.fixture(scope="session")
def month(tmp_path_factory: pytest.TempPathFactory) -> MonthScenario:
    """A month of benchmarking: 45 runs in one log a day, 16 code events (timeline.scenario)."""
    return build_month(tmp_path_factory.mktemp("month"))


@pytest.fixture
def month_timeline(month: MonthScenario) -> Timeline:
    """The month built with its samples (a fresh Timeline each test: tests may change it)."""
    return timeline.build(month.logs, repo=month.repo, log_tz="UTC", keep_samples=True, cache=False)
