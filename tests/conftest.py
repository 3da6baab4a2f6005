from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from timeline.scenario import DemoScenario, GitScript, build_demo


@pytest.fixture
def git_script(tmp_path: Path) -> GitScript:
    """Real git, isolated from the machine's configuration; every command takes its date."""
    return GitScript(tmp_path / "home")


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoScenario:
    """The demo story, built once: clone, pull of 3 commits at 18:10 UTC, reset at 20:30 UTC."""
    return build_demo(tmp_path_factory.mktemp("demo"))


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)
