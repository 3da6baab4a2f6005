"""``build`` keeps each version's import graph in the user's cache folder (timeline.git.code,
timeline.cache) and finds it again; ``--no-cache`` and the pytest plugin's builds write nothing."""

from __future__ import annotations

import json

import pytest
from test_culprits import nine_commit_pull
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cache import ParseCache
from timeline.cli import app


@pytest.fixture(scope="module")
def pull(tmp_path_factory):
    repo, logs, _ = nine_commit_pull(tmp_path_factory.mktemp("reach-cache"), True, False)
    return repo, logs


def test_a_second_build_takes_the_import_graphs_from_the_cache(pull, parse_cache_folder, monkeypatch):
    repo, logs = pull
    first = build([logs], repo=repo, log_tz="UTC")
    assert len(list(parse_cache_folder.glob("*.reach"))) == 2  # the versions before and after the pull
    loads = []
    real = ParseCache.load_reach

    def load(self, key):
        value = real(self, key)
        loads.append(value is not None)
        return value

    monkeypatch.setattr(ParseCache, "load_reach", load)
    second = build([logs], repo=repo, log_tz="UTC")
    assert loads == [True, True] and second.culprits == first.culprits
    assert any(e.kind == "not-imported" for c in second.culprits for e in c.evidence)  # the graph was used


def test_no_cache_and_the_pytest_plugin_write_nothing(pull, parse_cache_folder, timeline_build):
    repo, logs = pull
    result = CliRunner().invoke(
        app, ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--json", "-", "--no-cache"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["culprits"]
    assert timeline_build(logs, repo=repo).culprits
    assert not parse_cache_folder.exists()
