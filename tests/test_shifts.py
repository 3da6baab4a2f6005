"""Shifts, suspects, narrowing and culprits, end to end on real git repositories (GitScript), and
``--fail-on-regression`` through typer's CliRunner."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest
from shift_stories import PULLED, pull_and_reset, steady_run
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.columns import SampleRows
from timeline.exitcodes import ExitCode
from timeline.export import timeline_to_dict
from timeline.model import CodeEvent, CommitInfo, Run
from timeline.records import ParsedRun
from timeline.render.markdown import timeline_markdown
from timeline.render.wording import culprit_reason, shift_notes
from timeline.scenario import Launch, write_sglang_log
from timeline.shifts import find_shifts, group_key, steady_of
from timeline.suspects import is_unlikely, net_suspects, path_kind, rank_culprits

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def export(story) -> dict:
    return timeline_to_dict(build([story.logs], repo=story.repo, log_tz="UTC"))


@pytest.fixture(scope="module")
def regression_story(tmp_path_factory):
    """100 tok/s on c2, pull to c5 (c3, c4, c5), 90 tok/s, reset back to c4, 99.5 tok/s; one run each."""
    return pull_and_reset(tmp_path_factory.mktemp("regression"))


@pytest.fixture(scope="module")
def flat_story(tmp_path_factory):
    """The same moves, and no real change in throughput."""
    return pull_and_reset(tmp_path_factory.mktemp("flat"), levels=(100.0, 100.0, 100.0))


# --------------------------------------------------------------------------- the main stories


def test_regression_after_the_pull_and_improvement_after_the_reset(regression_story):
    story = regression_story
    document = export(story)
    regression, improvement = document["shifts"]

    assert regression["verdict"] == "regression"
    assert (regression["from"]["commit"], regression["to"]["commit"]) == (story.shas["c2"], story.shas["c5"])
    assert regression["change_pct"] == pytest.approx(-10.0, abs=1.0)
    assert {s["sha"] for s in regression["suspects"]} == {story.shas[c] for c in ("c3", "c4", "c5")}
    assert {s["subject"] for s in regression["suspects"]} == set(PULLED)
    assert {s["change"] for s in regression["suspects"]} == {"arrived"}
    pull = next(e for e in document["events"] if e["kind"] == "pull")
    assert regression["events"] == [pull["id"]]

    assert improvement["verdict"] == "improvement"
    assert (improvement["from"]["commit"], improvement["to"]["commit"]) == (story.shas["c5"], story.shas["c4"])
    assert [(s["sha"], s["change"]) for s in improvement["suspects"]] == [(story.shas["c5"], "left")]

    assert document["culprits"][0]["sha"] == story.shas["c5"]
    assert document["culprits"][0]["shifts"] == [regression["id"], improvement["id"]]
    assert document["culprits"][0]["likelihood"] == "prime"
    assert "arrived with" in document["culprits"][0]["reason"] and "left with" in document["culprits"][0]["reason"]
    # c3 and c4 stayed in when the level came back: listed once each, cleared
    assert [(c["sha"], c["likelihood"]) for c in document["culprits"][1:]] == [
        (story.shas["c4"], "cleared"),
        (story.shas["c3"], "cleared"),
    ]
    assert all("stayed when s2 undid" in c["reason"] for c in document["culprits"][1:])
    cleared = {s["sha"]: s["cleared"] for s in regression["suspects"]}
    assert cleared[story.shas["c5"]] is None
    assert cleared[story.shas["c3"]] and cleared[story.shas["c4"]]


def test_one_run_a_side_is_called_on_its_line_spread_and_says_rerun(regression_story):
    document = export(regression_story)
    for shift in document["shifts"]:
        assert shift["single_run"] is True and shift["method"] == "line-spread"
        assert shift["p_value"] is None
    assert "rerun to confirm" in document["culprits"][0]["reason"]


def test_with_three_runs_a_side_the_pooled_test_decides(tmp_path):
    story = pull_and_reset(tmp_path, runs=3)
    document = export(story)
    regression, improvement = document["shifts"]
    assert (regression["verdict"], improvement["verdict"]) == ("regression", "improvement")
    assert regression["method"] == "pooled-t" and regression["single_run"] is False
    assert regression["p_value"] < 0.01 and len(regression["from"]["runs"]) == 3
    assert document["culprits"][0]["sha"] == story.shas["c5"]
    assert "rerun" not in document["culprits"][0]["reason"]


def test_no_real_change_raises_no_regression_or_improvement(flat_story):
    document = export(flat_story)
    assert document["shifts"], "the boundaries are still tested"
    assert all(s["verdict"] not in ("regression", "improvement") for s in document["shifts"])
    assert all(abs(s["change_pct"]) < 3 for s in document["shifts"])
    assert document["culprits"] == []


def test_fail_on_regression_exit_codes(regression_story, flat_story):
    for story, expected in ((regression_story, ExitCode.REGRESSION), (flat_story, ExitCode.OK)):
        args = ("build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC")
        result = invoke(*args, "--fail-on-regression")
        assert result.exit_code == expected, result.output
        assert invoke(*args).exit_code == 0  # without the flag a regression is no failure
    assert ExitCode.REGRESSION == 3


def test_fail_on_regression_also_with_json_to_stdout(regression_story):
    story = regression_story
    result = invoke(
        "build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--json", "-", "--fail-on-regression"
    )
    assert result.exit_code == 3
    assert json.loads(result.stdout)["shifts"][0]["verdict"] == "regression"


def _table_rows(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_table_markdown_and_json_agree(regression_story, flat_story):
    for story in (regression_story, flat_story):
        args = ("build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC")
        document = json.loads(invoke(*args, "--json", "-").stdout)
        table = runner.invoke(app, list(args), env={"COLUMNS": "220"}, catch_exceptions=False)
        markdown = timeline_markdown(build([story.logs], repo=story.repo, log_tz="UTC"))
        shown = _table_rows(table.stdout)
        assert "Shifts" in shown
        for shift in document["shifts"]:
            change = f"{shift['change_pct']:+.1f}%"
            verdict = shift["verdict"] or "no change"
            from_value = f"{shift['from']['value']:.1f} {shift['unit']}"
            to_value = f"{shift['to']['value']:.1f} {shift['unit']}"
            row = next(line for line in markdown.splitlines() if line.startswith(f"| {shift['id']} |"))
            for text in (change, verdict, from_value, to_value, shift["from"]["commit"][:9], shift["to"]["commit"][:9]):
                assert text in shown, text
                assert text in row, text
        for culprit in document["culprits"]:
            assert culprit["sha"][:9] in shown and culprit["subject"] in shown
            assert f"`{culprit['sha'][:9]}` | {culprit['subject']} | {culprit['likelihood']}" in markdown


# --------------------------------------------------------------------------- narrowing on real git


def test_a_reset_with_no_change_clears_what_it_took_away(tmp_path):
    """Pull c3..c5: slower. Reset to c3 (c4 and c5 leave): still slow. c3 is the one left."""
    story = pull_and_reset(tmp_path, levels=(100.0, 80.0, 80.2), reset_to="HEAD~2")
    document = export(story)
    regression, calm = document["shifts"]
    assert regression["verdict"] == "regression" and calm["verdict"] is None
    assert {s["sha"]: bool(s["cleared"]) for s in regression["suspects"]} == {
        story.shas["c3"]: False,
        story.shas["c4"]: True,
        story.shas["c5"]: True,
    }
    culprit, *rest = document["culprits"]
    assert (culprit["sha"], culprit["likelihood"]) == (story.shas["c3"], "sole")
    assert {(c["sha"], c["likelihood"]) for c in rest} == {(story.shas["c4"], "cleared"), (story.shas["c5"], "cleared")}
    assert regression["bisect"] is None


def test_several_suspects_left_get_a_bisect_line(tmp_path):
    story = pull_and_reset(tmp_path, levels=(100.0, 80.0, 80.0), reset_to="HEAD")
    document = export(story)
    regression = document["shifts"][0]
    assert regression["verdict"] == "regression"
    assert regression["bisect"] == {
        "command": f"git bisect start {story.shas['c5'][:12]} {story.shas['c2'][:12]}",
        "steps": 2,
        "commits": 3,
    }
    assert [c["likelihood"] for c in document["culprits"]] == ["possible"] * 3
    for width in ("220", "80", "40"):  # piped output is 80 wide: the command must still paste whole
        table = runner.invoke(
            app, ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC"], env={"COLUMNS": width}
        ).stdout
        assert "    " + regression["bisect"]["command"] in table.splitlines(), width
        assert "  bisect (3 commits, about 2 steps):" in table.splitlines()


def test_confounders_are_reported_not_hidden(tmp_path):
    args = ({}, {"nccl": "2.28.3", "extra_args": {"disable_custom_all_reduce": True}}, {})
    story = pull_and_reset(tmp_path, launch_args=args)
    regression = export(story)["shifts"][0]
    assert (regression["verdict"], regression["measured"]) == ("confounded", "regression")  # still compared
    assert regression["reruns"][0]["settings"] == {"disable_custom_all_reduce": False, "nccl_version": "2.27.5"}
    assert {c["field"]: (c["from"], c["to"]) for c in regression["confounders"]} == {
        "disable_custom_all_reduce": (False, True),
        "nccl_version": ("2.27.5", "2.28.3"),
    }


def test_a_driver_upgrade_between_the_sides_is_a_confounder(tmp_path):
    """The driver NCCL logs went from CUDA 12.4 to 12.8 with the pull: the drop may be the
    driver's, and the shift says so where the user reads it; the reset's runs went back to 12.4."""
    args = ({"driver": "12.4"}, {"driver": "12.8"}, {"driver": "12.4"})
    story = pull_and_reset(tmp_path, launch_args=args)
    regression = export(story)["shifts"][0]
    assert (regression["verdict"], regression["measured"]) == ("confounded", "regression")
    assert [(c["field"], c["from"], c["to"]) for c in regression["confounders"]] == [
        ("cuda_driver_version", "12.4", "12.8")
    ]
    assert regression["reruns"][0]["settings"] == {"cuda_driver_version": "12.4"}
    table = runner.invoke(app, ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC"]).stdout
    assert "driver CUDA 12.4" in table and "driver CUDA 12.8" in table


def test_a_driver_logged_on_one_side_only_is_no_confounder(tmp_path):
    """Runs without NCCL_DEBUG=INFO log no driver: that is no difference, and the drop stands."""
    story = pull_and_reset(tmp_path, launch_args=({}, {"driver": "12.8"}, {}))
    regression = export(story)["shifts"][0]
    assert (regression["verdict"], regression["confounders"]) == ("regression", [])


def test_different_workloads_are_never_compared(tmp_path):
    args = ({}, {"tp_size": 4}, {"speculative": ("EAGLE3", 3, 1, 4)})
    story = pull_and_reset(tmp_path, launch_args=args)
    assert export(story)["shifts"] == []


def test_a_mixed_run_is_left_out_with_a_note(demo):
    document = timeline_to_dict(build([demo.logs], repo=demo.repo, log_tz="UTC"))
    mixed = next(r for r in document["runs"] if r["attribution"] == "mixed")
    first = document["shifts"][0]
    assert mixed["id"] not in first["from"]["runs"] + first["to"]["runs"]
    assert f"{mixed['id']} left out: HEAD moved during the run (mixed)" in first["notes"]
    assert document["culprits"][0]["subject"] == "Fix PCG MoE Error"


def test_runs_carry_their_steady_value(demo):
    document = timeline_to_dict(build([demo.logs], repo=demo.repo, log_tz="UTC"))
    for run in document["runs"]:
        steady = run["steady"]
        assert steady["source"] == "decode-lines" and steady["skipped"] == 0
        assert steady["n"] == run["metrics"]["decode_throughput"]["n"]
        assert steady["value"] == pytest.approx(run["metrics"]["decode_throughput"]["median"])


def test_idle_gap_lines_in_a_real_log_are_skipped(tmp_path):
    log = write_sglang_log(tmp_path / "a.log", [Launch(datetime(2026, 4, 7, 10, 0), 10, 94.0)])
    lines = log.read_text().splitlines()
    decode = [i for i, line in enumerate(lines) if "Decode batch" in line]
    idle = lines[decode[5]].replace(
        re.search(r"gen throughput \(token/s\): [0-9.]+", lines[decode[5]]).group(0), "gen throughput (token/s): 0.39"
    )
    lines.insert(decode[5] + 1, idle)
    log.write_text("\n".join(lines) + "\n")
    for samples in (False, True):
        (run,) = build([log], log_tz="UTC", keep_samples=samples).runs
        assert run.steady.skipped == 1 and run.steady.n == len(decode)
        assert run.metrics["decode_throughput"].min == pytest.approx(0.39)
        assert run.steady.value == pytest.approx(94.0, rel=0.02)


# --------------------------------------------------------------------------- units


def test_steady_of_reads_running_req_from_samples_and_prefers_a_bench_result():
    from array import array

    parsed = ParsedRun(
        kind="sglang-server",
        series={"decode_throughput": array("d", [5.0, 90.0, 91.0, 92.0])},
        units={"decode_throughput": "tok/s"},
    )
    parsed.samples = {
        "decode": SampleRows(
            {"gen_throughput": v, "running_req": r} for v, r in ((5.0, 0), (90.0, 1), (91.0, 1), (92.0, 2))
        ),
        "prefill": SampleRows(),
    }
    steady = steady_of(parsed)
    assert (steady.n, steady.skipped, steady.value) == (3, 1, 91.0)
    parsed.series["output_throughput"] = array("d", [1234.5])
    bench = steady_of(parsed)
    assert (bench.source, bench.value, bench.metric, bench.spread) == (
        "bench-client",
        1234.5,
        "output_throughput",
        None,
    )


def test_steady_of_leaves_vllm_aggregated_lines_out_of_one_engines_lines(tmp_path):
    """One engine's lines and the "N Engines Aggregated:" totals in one run (an excerpt of one
    engine): the steady value is the engine's median, with samples and without, never a median
    over both; a run of aggregated lines only is their median (the server's total)."""
    from timeline.builder import digest_series
    from timeline.parsers import parse_file

    def line(prefix: str, gen: float) -> str:
        return (
            f"INFO 04-14 10:02:00 [loggers.py:257] {prefix}Avg prompt throughput: 0.0 tokens/s, "
            f"Avg generation throughput: {gen} tokens/s, Running: 8 reqs, Waiting: 0 reqs, "
            "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
        )

    both = tmp_path / "both.log"
    pairs = [("Engine 000: ", 100.0), ("2 Engines Aggregated: ", 210.0)] * 2
    pairs += [("Engine 000: ", 104.0), ("2 Engines Aggregated: ", 190.0)]
    both.write_text("\n".join(line(prefix, gen) for prefix, gen in pairs) + "\n")
    only = tmp_path / "only.log"
    only.write_text("\n".join(line("4 Engines Aggregated: ", g) for g in (400.0, 410.0, 405.0)) + "\n")
    for path, value, n in ((both, 100.0, 3), (only, 405.0, 3)):
        for samples in (False, True):
            (run,) = parse_file(path, keep_samples=samples).runs
            steady = steady_of(run)
            assert (steady.value, steady.n, steady.ranks) == (value, n, {}), (path.name, samples)
        digest_series(run)
        assert steady_of(run).value == value


def test_group_key_normalises_defaults():
    def run(**config):
        return Run(
            "r1", "a.log", "sglang-server", None, None, None, None, None, None, None, None, "exact", config=config
        )

    base = {"model_path": "/models/Qwen3-235B/", "tp_size": 8}
    assert group_key(run(**base)) == group_key(run(**base, dp_size=1, dtype="auto", kv_cache_dtype=None, pp_size=None))
    assert group_key(run(**base)) != group_key(run(**base, quantization="fp8"))
    assert group_key(run(**base)) != group_key(run(**base, speculative_algorithm="EAGLE3"))
    assert group_key(run(**base, speculative_algorithm="EAGLE3", speculative_num_steps=2)) != group_key(
        run(**base, speculative_algorithm="EAGLE3", speculative_num_steps=3)
    )
    assert group_key(run(**base, random_seed=1)) == group_key(run(**base, random_seed=2))
    assert group_key(run()) is None


@pytest.mark.parametrize(
    "path, kind",
    [
        ("docs/backend/server_arguments.md", "docs"),
        ("README.md", "docs"),
        ("python/sglang/README.rst", "docs"),
        ("test/srt/test_eagle_infer.py", "tests"),
        ("python/sglang/test/runners.py", "tests"),
        ("conftest.py", "tests"),
        ("sgl-kernel/tests/test_moe.py", "tests"),
        (".github/workflows/pr-test.yml", "ci"),
        (".pre-commit-config.yaml", "ci"),
        ("python/sglang/srt/layers/moe/fused_moe.py", None),
        ("requirements.txt", None),
        ("CMakeLists.txt", None),
        ("python/sglang/srt/managers/scheduler.py", None),
    ],
)
def test_path_kinds(path, kind):
    assert path_kind(path) == kind


def test_unlikely_needs_known_paths_all_harmless():
    assert is_unlikely(["docs/a.md", "test/test_a.py", ".github/workflows/x.yml"])
    assert not is_unlikely(["docs/a.md", "python/sglang/srt/server.py"])
    assert not is_unlikely(None) and not is_unlikely([])


@dataclass(frozen=True)
class RicherCommit:
    """A CommitInfo as the git module may provide it, with an author date and paths."""

    sha: str
    subject: str
    author_date: datetime | None = None
    paths: list[str] = field(default_factory=list)


def _event(number: int, commits=(), removed=(), ts: int = 0) -> CodeEvent:
    moment = datetime(2026, 4, 7, tzinfo=timezone.utc) + timedelta(seconds=ts)
    return CodeEvent(
        f"e{number}",
        moment,
        int(moment.timestamp()),
        "other",
        "move",
        "a" * 40,
        "b" * 40,
        True,
        commits=list(commits),
        commits_removed=list(removed),
    )


def test_net_suspects_cancel_out_and_carry_git_facts():
    when = datetime(2026, 4, 1, 12, 0, tzinfo=timezone.utc)
    docs_only = RicherCommit("d" * 40, "Update docs", when, ["docs/index.md"])
    code = RicherCommit("c" * 40, "Change the kernel", when, ["python/kernel.py"])
    gone = CommitInfo("e" * 40, "Came and went")
    old = CommitInfo("f" * 40, "Old work")
    suspects = net_suspects(
        [
            _event(1, commits=[docs_only, code, gone]),
            _event(2, removed=[gone, old]),
        ]
    )
    assert [(s.sha[0], s.change, s.event) for s in suspects] == [
        ("d", "arrived", "e1"),
        ("c", "arrived", "e1"),
        ("f", "left", "e2"),
    ]
    assert suspects[0].unlikely and not suspects[1].unlikely and not suspects[2].unlikely
    assert suspects[0].author_date == when and suspects[0].paths == ["docs/index.md"]
    assert suspects[2].paths is None and suspects[2].author_date is None


def shifts_and_culprits(runs, events):
    shifts = find_shifts(runs, events)
    return shifts, rank_culprits(shifts)


def reason(culprit, *shifts) -> str:
    return culprit_reason(culprit, {s.id: s for s in shifts})


def _steady_run(number: int, commit: str, hour: int, value: float) -> Run:
    return steady_run(number, commit, hour, value, disable_custom_all_reduce=False)


def test_narrowing_sets_aside_docs_only_commits():
    code = RicherCommit("c" * 40, "Change the kernel", None, ["python/kernel.py"])
    docs_only = RicherCommit("d" * 40, "Update docs", None, ["docs/index.md"])
    runs = [_steady_run(1, "a" * 40, 9, 100.0), _steady_run(2, "b" * 40, 11, 70.0)]
    events = [_event(1, commits=[code, docs_only], ts=10 * 3600)]
    (shift,), culprits = shifts_and_culprits(runs, events)
    assert shift.verdict == "regression" and shift.single_run
    assert [(c.sha, c.likelihood) for c in culprits] == [("c" * 40, "sole"), ("d" * 40, "unlikely")]
    assert "set aside" in reason(culprits[0], shift)


def test_narrowing_falls_back_to_unlikely_commits_when_nothing_else_is_left():
    docs_only = RicherCommit("d" * 40, "Update docs", None, ["docs/index.md"])
    runs = [_steady_run(1, "a" * 40, 9, 100.0), _steady_run(2, "b" * 40, 11, 70.0)]
    (shift,), culprits = shifts_and_culprits(runs, [_event(1, commits=[docs_only], ts=10 * 3600)])
    assert [(c.sha, c.likelihood) for c in culprits] == [("d" * 40, "sole")]
    assert "only docs, tests, CI" in reason(culprits[0], shift)


def test_bisect_uses_renamed_terms_when_the_newer_code_is_faster():
    commits = [CommitInfo(ch * 40, f"commit {ch}") for ch in "cde"]
    runs = [_steady_run(1, "a" * 40, 9, 70.0), _steady_run(2, "b" * 40, 11, 100.0)]
    (shift,), culprits = shifts_and_culprits(runs, [_event(1, commits=commits, ts=10 * 3600)])
    assert shift.verdict == "improvement"
    assert shift.bisect.command == f"git bisect start --term-old=slow --term-new=fast {'b' * 12} {'a' * 12}"
    assert (shift.bisect.commits, shift.bisect.steps) == (3, 2)
    # A reset that took commits away and made things slower: the newer code (the from side) was fast.
    runs = [_steady_run(1, "b" * 40, 9, 100.0), _steady_run(2, "a" * 40, 11, 70.0)]
    (shift,), _ = shifts_and_culprits(runs, [_event(1, removed=commits, ts=10 * 3600)])
    assert shift.verdict == "regression"
    assert shift.bisect.command == f"git bisect start --term-old=slow --term-new=fast {'b' * 12} {'a' * 12}"


def test_no_event_between_the_sides_is_said(tmp_path):
    runs = [_steady_run(1, "a" * 40, 9, 100.0), _steady_run(2, "b" * 40, 11, 70.0)]
    (shift,), culprits = shifts_and_culprits(runs, [])
    assert shift.suspects == [] and culprits == []
    assert "no code event between the two sides in the reflog" in shift_notes(shift)


def test_confirmed_only_lets_single_run_regressions_pass(regression_story, tmp_path):
    story = regression_story
    args = ("build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--fail-on-regression")
    assert invoke(*args).exit_code == ExitCode.REGRESSION  # one run a side: "rerun to confirm"
    assert invoke(*args, "--confirmed-only").exit_code == ExitCode.OK
    confirmed = pull_and_reset(tmp_path / "two-runs", runs=2)
    args = ("build", str(confirmed.logs), "--repo", str(confirmed.repo), "--log-tz", "UTC", "--fail-on-regression")
    assert invoke(*args, "--confirmed-only").exit_code == ExitCode.REGRESSION


def test_confirmed_only_needs_fail_on_regression(regression_story):
    story = regression_story
    result = invoke("build", str(story.logs), "--repo", str(story.repo), "--confirmed-only")
    assert result.exit_code == ExitCode.USAGE
    assert "--confirmed-only needs --fail-on-regression" in result.stderr


def test_min_effect_sets_the_smallest_change_with_a_verdict(regression_story):
    # the pull lowers the throughput by 10%, on one run a side: called at twice the minimum effect
    story = regression_story
    args = ("build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--fail-on-regression")
    assert invoke(*args, "--min-effect", "4").exit_code == ExitCode.REGRESSION
    result = invoke(*args, "--min-effect", "6", "--format", "json")
    assert result.exit_code == ExitCode.OK
    # big enough to test, too small to call on one run a side
    assert [s["verdict"] for s in json.loads(result.stdout)["shifts"]] == ["inconclusive", "inconclusive"]


def test_runs_that_share_their_configs_as_the_store_reads_them_give_the_same_shifts(tmp_path):
    args = ({}, {"nccl": "2.28.3", "extra_args": {"disable_custom_all_reduce": True}}, {})
    story = pull_and_reset(tmp_path, runs=3, launch_args=args)
    built = build([story.logs], repo=story.repo, log_tz="UTC")
    shared: dict[str, dict] = {}
    messages: dict[str, list[str]] = {}
    for run in built.runs:  # one dict for equal configs, one list for equal messages (timeline.store.reading)
        run.config = shared.setdefault(json.dumps(run.config, sort_keys=True), run.config)
        run.messages = messages.setdefault(json.dumps(run.messages), run.messages)
    assert len({id(run.config) for run in built.runs}) < len(built.runs)
    found = find_shifts(built.runs, built.events)
    assert found == built.shifts and any(s.confounders for s in found) and found[0].verdict == "confounded"
