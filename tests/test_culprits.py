"""Evidence-ranked culprits, end to end on a real checkout: a pull of nine commits between a fast
and a slow run, in the layout of an SGLang checkout (``python/sglang/...``).

Five commits touch only ``python/sglang/multimodal_gen/`` (a package the server never imports),
one touches docs, one rewrites ``custom_all_reduce.py`` (the code behind
``--disable-custom-all-reduce``), two touch code the server imports.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from shift_stories import at
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.export import timeline_to_dict
from timeline.scenario import GitScript, Launch, write_sglang_log
from timeline.suspects import knob_linked

SOURCES = {
    "python/sglang/__init__.py": "",
    "python/sglang/launch_server.py": "from sglang.srt.entrypoints.http_server import launch_server\n",
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/entrypoints/__init__.py": "",
    "python/sglang/srt/entrypoints/http_server.py": (
        "from sglang.srt.managers import scheduler\n"
        "from sglang.srt.distributed.custom_all_reduce import CustomAllreduce\n"
        "from ..layers import moe\n"
        "def launch_server(args):\n    return scheduler, moe, CustomAllreduce\n"
    ),
    "python/sglang/srt/managers/__init__.py": "",
    "python/sglang/srt/managers/scheduler.py": "LOOP = 1\n",
    "python/sglang/srt/layers/__init__.py": "",
    "python/sglang/srt/layers/moe.py": "TOPK = 8\n",
    "python/sglang/srt/distributed/__init__.py": "",
    "python/sglang/srt/distributed/custom_all_reduce.py": "class CustomAllreduce:\n    pass\n",
    "python/sglang/multimodal_gen/__init__.py": "",
    "python/sglang/multimodal_gen/runtime.py": "STEPS = 50\n",
    "docs/index.md": "# SGLang\n",
}
PULLED = (  # subject, path, line added
    ("Diffusion: add a scheduler", "python/sglang/multimodal_gen/scheduler.py", "SIGMA = 1.0"),
    ("Diffusion: faster VAE", "python/sglang/multimodal_gen/vae.py", "TILE = 64"),
    (
        "Fix PCG MoE Error",
        "python/sglang/srt/distributed/custom_all_reduce.py",
        'MAX_SIZE = 8 << 20\nlogger.info(f"Custom allreduce: one-shot up to {MAX_SIZE} bytes")',
    ),
    ("Diffusion: LoRA loading", "python/sglang/multimodal_gen/lora.py", "RANK = 16"),
    ("Scheduler: fewer syncs", "python/sglang/srt/managers/scheduler.py", "SYNC = False"),
    ("Docs: server arguments", "docs/server_arguments.md", "- `--disable-custom-all-reduce`"),
    ("Diffusion: runtime", "python/sglang/multimodal_gen/runtime.py", "STEPS = 30"),
    ("MoE: new top-k", "python/sglang/srt/layers/moe.py", "TOPK = 4"),
    ("Diffusion: CLI", "python/sglang/multimodal_gen/cli.py", "ARGS = []"),
)
NOT_IMPORTED = {
    "Diffusion: add a scheduler",
    "Diffusion: faster VAE",
    "Diffusion: LoRA loading",
    "Diffusion: runtime",
    "Diffusion: CLI",
}


def _write(repo: Path, path: str, text: str, append: bool = False) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a" if append else "w", encoding="utf-8") as out:
        out.write(text)


NEW_STARTUP_LINE = "Custom allreduce: one-shot up to 8388608 bytes"  # printed by the code "Fix PCG MoE Error" adds


def nine_commit_pull(root: Path, before_flag: bool, after_flag: bool, levels=(94.0, 60.0)) -> tuple[Path, Path, dict]:
    """The checkout (cloned at the first commit, then pulled) and its logs: two runs before the
    pull with ``--disable-custom-all-reduce`` = ``before_flag``, two after with ``after_flag``
    (and the startup line the pulled code prints)."""
    git = GitScript(root / "home")
    upstream, repo = root / "upstream", root / "checkout"
    upstream.mkdir(parents=True)
    git.git(upstream, "init", "-q", at=at(8))
    for path, text in SOURCES.items():
        _write(upstream, path, text)
    git.git(upstream, "add", "-A", at=at(8))
    git.git(upstream, "commit", "-q", "-m", "Initial server", at=at(8, 5))
    git.git(root, "clone", "-q", str(upstream), str(repo), at=at(9))
    shas = {}
    for number, (subject, path, line) in enumerate(PULLED):
        _write(upstream, path, line + "\n", append=True)
        git.git(upstream, "add", "-A", at=at(11, number))
        git.git(upstream, "commit", "-q", "-m", subject, at=at(11, number))
        shas[subject] = git.git(upstream, "rev-parse", "HEAD", at=at(11, number))
    git.git(repo, "pull", "-q", "origin", "main", at=at(13))

    logs = root / "logs"
    for name, hour, level, flag, seed, startup in (
        ("before", 10, levels[0], before_flag, 1, ()),
        ("after", 14, levels[1], after_flag, 2, (NEW_STARTUP_LINE,)),
    ):
        start = datetime(2026, 4, 7, hour, 0)
        launches = [
            Launch(
                start + timedelta(minutes=20 * n),
                10,
                level * (1 + 0.004 * (-1) ** n),
                extra_args={"disable_custom_all_reduce": flag},
                startup=startup,
            )
            for n in range(2)
        ]
        write_sglang_log(logs / f"{name}.log", launches, seed=seed)
    return repo, logs, shas


@pytest.fixture(scope="module")
def flags_differ(tmp_path_factory):
    repo, logs, shas = nine_commit_pull(tmp_path_factory.mktemp("flags-differ"), True, False)
    return build([logs], repo=repo, log_tz="UTC"), shas


@pytest.fixture(scope="module")
def equal_flags(tmp_path_factory):
    repo, logs, shas = nine_commit_pull(tmp_path_factory.mktemp("equal-flags"), False, False)
    return build([logs], repo=repo, log_tz="UTC"), shas


def test_nine_suspects_ranked_once_each_flag_linked_first(flags_differ):
    timeline, shas = flags_differ
    document = timeline_to_dict(timeline)
    culprits = document["culprits"]
    assert len(culprits) <= 9
    assert len({c["sha"] for c in culprits}) == len(culprits) == 9
    first = culprits[0]
    assert first["sha"] == shas["Fix PCG MoE Error"]
    assert first["likelihood"] == "likely"
    (link,) = [e for e in first["evidence"] if e["kind"] == "knob-link"]
    assert link["field"] == "disable_custom_all_reduce"
    assert link["paths"] == ["python/sglang/srt/distributed/custom_all_reduce.py"]
    by_subject = {c["subject"]: c for c in culprits}
    for subject in NOT_IMPORTED:
        assert by_subject[subject]["likelihood"] == "unlikely"
        assert [e["kind"] for e in by_subject[subject]["evidence"] if e["effect"] == "lowers"] == ["not-imported"]
        assert "not imported by the server" in by_subject[subject]["reason"]
    docs = by_subject["Docs: server arguments"]
    assert docs["likelihood"] == "unlikely" and "only docs" in docs["reason"]
    for subject in ("Scheduler: fewer syncs", "MoE: new top-k"):
        assert by_subject[subject]["likelihood"] == "possible"
    # the unlikely ones come last
    assert [c["likelihood"] for c in culprits] == ["likely", "possible", "possible"] + ["unlikely"] * 6


def test_a_startup_line_the_pulled_code_prints_shows_its_code_ran(flags_differ):
    timeline, shas = flags_differ
    (shift,) = timeline.shifts
    assert shift.messages_added == ["Custom allreduce: one-shot up to 0 bytes"]
    first = timeline_to_dict(timeline)["culprits"][0]
    (ran,) = [e for e in first["evidence"] if e["kind"] == "changed-what-ran"]
    assert (ran["effect"], ran["message"]) == ("shown", "Custom allreduce: one-shot up to 0 bytes")
    assert 'added the log message "Custom allreduce: one-shot up to 0 bytes"' in ran["text"]
    assert first["likelihood"] == "likely"  # shown, not blame: the knob link alone raised it
    others = [c for c in timeline.culprits if c.sha != shas["Fix PCG MoE Error"]]
    assert all(e.kind != "changed-what-ran" for c in others for e in c.evidence)


def test_a_flag_that_differs_makes_the_verdict_confounded_with_the_rerun_that_settles_it(flags_differ):
    timeline, shas = flags_differ
    (shift,) = timeline.shifts
    assert shift.verdict == "confounded" and shift.measured == "regression"
    (confounder,) = shift.confounders
    assert (confounder.field, confounder.from_value, confounder.to_value) == ("disable_custom_all_reduce", True, False)
    assert knob_linked(timeline.culprits, shift, confounder) == (shas["Fix PCG MoE Error"],)
    (rerun,) = shift.reruns
    assert (rerun.side, rerun.settings) == ("to", (("disable_custom_all_reduce", True),))
    document = timeline_to_dict(timeline)
    assert "rerun the after side" in document["shifts"][0]["reruns"][0]["text"]
    assert "`--disable-custom-all-reduce`" in document["shifts"][0]["reruns"][0]["text"]


def test_equal_flags_keep_the_regression_and_raise_nothing_by_the_knob_link(equal_flags):
    timeline, shas = equal_flags
    (shift,) = timeline.shifts
    assert shift.verdict == "regression" and shift.confounders == [] and shift.reruns == []
    kinds = {e.kind for c in timeline.culprits for e in c.evidence}
    assert "knob-link" not in kinds
    assert [c.likelihood for c in timeline.culprits[:3]] == ["possible"] * 3
    assert {c.subject for c in timeline.culprits[:3]} == {
        "Fix PCG MoE Error",
        "Scheduler: fewer syncs",
        "MoE: new top-k",
    }


def test_the_table_shows_every_suspect_and_the_ranked_evidence(tmp_path, flags_differ):
    repo, logs, shas = nine_commit_pull(tmp_path, True, False)
    result = CliRunner().invoke(
        app,
        ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC"],
        env={"COLUMNS": "200"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    table = out[: out.index("Shifts (")]
    for subject in ("Fix PCG MoE Error", "Scheduler: fewer syncs", "MoE: new top-k"):
        assert subject in table  # suspects still in the running are never folded away
    assert "... 2 more, none of them a likely suspect" in table
    folded = [subject for subject, _, _ in PULLED if subject not in table]
    assert len(folded) == 2 and set(folded) <= NOT_IMPORTED | {"Docs: server arguments"}
    every = (
        CliRunner()
        .invoke(
            app,
            ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--all-events"],
            env={"COLUMNS": "200"},
            catch_exceptions=False,
        )
        .stdout
    )
    assert " more" not in every[: every.index("Shifts (")]
    assert all(subject in every for subject, _, _ in PULLED)
    culprits = out[out.index("Culprits, most likely first:") :]
    assert culprits.splitlines()[1].startswith(f"1. {shas['Fix PCG MoE Error'][:9]} Fix PCG MoE Error [likely; s1]")
    assert "+ touches the code behind `disable_custom_all_reduce`" in culprits
    assert "- unlikely: not imported by the server (python/sglang/multimodal_gen/" in culprits
    assert "rerun the after side" in out and "`--disable-custom-all-reduce`" in out
    assert "random_seed" not in out
