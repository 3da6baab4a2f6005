"""Each piece of culprit evidence on its own (timeline.suspects), the launch-random rule and the
confounded verdict (timeline.shifts), on plain records: no git, no logs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import NamedTuple

import pytest
from shift_stories import steady_run

from timeline.model import CodeEvent, CommitInfo, Confounder, Rerun, Shift, ShiftSide, Suspect
from timeline.render.wording import confounded_text, flag_text
from timeline.shifts import find_shifts, is_launch_random
from timeline.suspects import (
    changed_what_ran,
    is_unlikely,
    knob_link,
    knob_linked,
    knob_words,
    message_printed_by,
    not_imported,
    rank_culprits,
    same_boundary,
)


class Line(NamedTuple):
    path: str
    added: bool
    text: str


class FixedReach:
    """A reach that judges by a table (True: reached, False: not, absent: not judged)."""

    def __init__(self, table: dict[str, bool]):
        self.table = table

    def judge(self, path: str) -> bool | None:
        return self.table.get(path)


def suspect(sha: str = "a" * 40, paths=("python/x.py",), change: str = "arrived") -> Suspect:
    return Suspect(
        sha,
        f"commit {sha[:3]}",
        change,
        "e1",
        paths=list(paths) if paths is not None else None,
        unlikely=is_unlikely(paths),
    )


def shift(
    number: int,
    group: str,
    change_pct: float,
    suspects: list[Suspect],
    verdict: str = "regression",
    confounders=(),
    added=(),
    gone=(),
) -> Shift:
    return Shift(
        f"s{number}",
        group,
        "decode_throughput",
        "tok/s",
        ShiftSide("f" * 40, ["r1"], 100.0),
        ShiftSide("e" * 40, ["r2"], 100.0 * (1 + change_pct / 100)),
        change_pct,
        None,
        verdict,
        "line-spread",
        suspects=suspects,
        confounders=list(confounders),
        arguments_added=list(added),
        arguments_gone=list(gone),
    )


# --------------------------------------------------------------------------- knob link


@pytest.mark.parametrize(
    "field, values, words",
    [
        ("disable_custom_all_reduce", (True, False), ("custom_all_reduce", ())),
        ("enable_torch_compile", (False, True), ("torch_compile", ())),
        ("attention_backend", ("flashinfer", "triton"), ("attention_backend", ("flashinfer", "triton"))),
        ("load_format", ("auto", "dummy"), ("load_format", ("dummy",))),  # "auto" names no code
        ("nccl_version", ("2.27.5", "2.28.3"), ("nccl", ())),
        ("cuda_driver_version", ("12.4", "12.8"), ("cuda_driver", ())),
        ("use_fp8", (True, False), ("use_fp8", ())),  # too short once the prefix is gone: kept whole
    ],
)
def test_knob_words(field, values, words):
    assert knob_words(Confounder(field, *values)) == words


def test_a_path_naming_the_flag_links_it():
    flag = Confounder("disable_custom_all_reduce", True, False)
    linked = suspect(paths=["python/sglang/srt/distributed/device_communicators/custom_all_reduce.py", "README.md"])
    assert knob_link(flag, linked) == ("python/sglang/srt/distributed/device_communicators/custom_all_reduce.py",)
    assert knob_link(flag, suspect(paths=["python/sglang/srt/layers/moe.py"])) == ()


def test_a_changed_line_naming_the_flag_links_it():
    flag = Confounder("disable_custom_all_reduce", True, False)
    lines = [
        Line("python/sglang/srt/distributed/parallel_state.py", True, "    if not disable_custom_all_reduce:"),
        Line("python/sglang/srt/other.py", True, "x = disable_custom_all_reducer"),
    ]  # another word
    assert knob_link(flag, suspect(paths=["python/sglang/srt/distributed/parallel_state.py"]), lines) == (
        "python/sglang/srt/distributed/parallel_state.py",
    )
    assert knob_link(flag, suspect(paths=["python/sglang/srt/other.py"]), lines[1:]) == ()


def test_values_link_whole_words_of_code_paths_only():
    backend = Confounder("attention_backend", "flashinfer", "triton")
    assert knob_link(backend, suspect(paths=["python/sglang/srt/layers/attention/triton_backend.py"])) != ()
    assert knob_link(backend, suspect(paths=["docs/backend/triton_notes.md"])) == ()  # docs never link
    fmt = Confounder("load_format", "auto", "dummy")
    assert knob_link(fmt, suspect(paths=["python/sglang/srt/layers/autotune.py"])) == ()
    assert knob_link(fmt, suspect(paths=["python/x.py"]), [Line("python/x.py", True, 'mode = "auto"')]) == ()


def test_a_test_naming_the_flag_does_not_link_the_commit():
    flag = Confounder("disable_custom_all_reduce", True, False)
    lines = [
        Line("test/srt/test_allreduce.py", True, "    args.disable_custom_all_reduce = True"),
        Line("python/sglang/srt/managers/scheduler.py", True, "x = 1"),
    ]
    assert (
        knob_link(flag, suspect(paths=["python/sglang/srt/managers/scheduler.py", "test/srt/test_allreduce.py"]), lines)
        == ()
    )


def test_nccl_links_the_nccl_wrappers():
    assert (
        knob_link(
            Confounder("nccl_version", "2.27.5", "2.28.3"),
            suspect(paths=["python/sglang/srt/distributed/device_communicators/pynccl.py"]),
        )
        != ()
    )


# --------------------------------------------------------------------------- changed what ran


def test_a_new_server_argument_added_by_the_commit_is_evidence_its_code_ran():
    lines = [Line("python/sglang/srt/server_args.py", True, "    enable_pcg_moe: bool = True")]
    here = shift(1, "g", -30.0, [], added=["enable_pcg_moe"])
    assert changed_what_ran(here, suspect(), lines) == ("enable_pcg_moe", None)
    assert changed_what_ran(here, suspect(), [Line("a.py", False, "enable_pcg_moe = 1")]) == (None, None)  # removed
    assert changed_what_ran(shift(1, "g", -30.0, []), suspect(), lines) == (None, None)  # not new in the logs
    # a commit that left: the from side's own arguments
    gone = shift(1, "g", -30.0, [], gone=["enable_pcg_moe"])
    assert changed_what_ran(gone, suspect(change="left"), lines) == ("enable_pcg_moe", None)


def test_a_new_log_message_printed_by_an_added_literal_is_evidence_its_code_ran():
    here = shift(1, "g", -30.0, [])
    here.messages_added = ["Using custom allreduce v0 for tp_size=0 (world 0)", "Capture cuda graph begin."]
    lines = [
        Line(
            "python/sglang/srt/distributed/custom_all_reduce.py",
            True,
            '        logger.info(f"Using custom allreduce v2 for tp_size={tp} (world {n})")',
        )
    ]
    assert changed_what_ran(here, suspect(), lines) == (None, "Using custom allreduce v0 for tp_size=0 (world 0)")
    assert changed_what_ran(here, suspect(change="left"), lines) == (None, None)  # only in the after side's logs


@pytest.mark.parametrize(
    "message, line, printed",
    [
        (
            "Load weight end. type=Qwen0, avail mem=0.0 GB",
            'logger.info("Load weight end. type=%s, avail mem=%.2f GB", t, m)',
            True,
        ),
        ("Capture cuda graph begin. This can take up to several minutes.", "log('Capture cuda graph begin.')", True),
        ("Capture cuda graph begin.", 'print("Capture cud")', False),  # 11 characters: under MIN_FRAGMENT
        ("Done.", 'print("Done.")', False),
        (
            "The server is fired up and ready to roll!",
            "x = 1  # The server is fired up and ready to roll!",
            False,
        ),  # no literal
        ("EAGLE0 draft model loaded", 'logger.info(f"EAGLE{v} draft model loaded")', True),
    ],
)
def test_message_printed_by(message, line, printed):
    assert message_printed_by(message, line) is printed


# --------------------------------------------------------------------------- not imported


def test_not_imported_needs_every_code_path_unreached_in_every_version():
    diffusion = "python/sglang/multimodal_gen/vae.py"
    server = "python/sglang/srt/layers/moe.py"
    reach = FixedReach({diffusion: False, server: True})
    assert not_imported(suspect(paths=[diffusion, "docs/vae.md"]), [reach]) == (diffusion,)
    assert not_imported(suspect(paths=[diffusion, server]), [reach]) == ()
    assert not_imported(suspect(paths=[diffusion, "sgl-kernel/csrc/moe.cu"]), [reach]) == ()  # not judged
    assert not_imported(suspect(paths=[diffusion]), [reach, FixedReach({diffusion: True})]) == ()  # reached in one
    assert not_imported(suspect(paths=[diffusion]), []) == ()
    assert not_imported(suspect(paths=None), [reach]) == ()


# --------------------------------------------------------------------------- several workloads


def test_same_boundary_needs_two_workloads_moving_the_same_way():
    shared = suspect("c" * 40)
    baseline = shift(1, "baseline", -7.0, [shared])
    eagle = shift(2, "eagle3", -36.0, [shared])
    assert same_boundary([baseline, eagle]) == {"c" * 40: ("s1", "s2")}
    assert same_boundary([baseline, shift(2, "eagle3", +20.0, [shared], "improvement")]) == {}
    assert same_boundary([baseline, shift(2, "baseline", -36.0, [shared])]) == {}  # one workload


# --------------------------------------------------------------------------- ranking


def test_each_commit_once_across_shifts_with_every_shift_it_may_explain():
    shared, other = suspect("c" * 40), suspect("d" * 40, paths=["docs/a.md"])
    shifts = [shift(1, "baseline", -7.0, [shared, other]), shift(2, "eagle3", -36.0, [shared])]
    culprits = rank_culprits(shifts)
    assert [(c.sha[0], c.likelihood, c.shifts) for c in culprits] == [
        ("c", "sole", ["s1", "s2"]),
        ("d", "unlikely", ["s1"]),
    ]
    evidence = culprits[0].evidence
    assert {(e.shifts, e.count) for e in evidence if e.kind == "sole"} == {(("s1",), 1), (("s2",), 0)}
    assert [e.shifts for e in evidence if e.kind == "same-boundary"] == [("s1", "s2")]


def test_knob_linked_commit_ranks_first_and_the_confounder_names_it():
    linked = suspect("b" * 40, paths=["python/custom_all_reduce.py"])
    plain = [suspect(c * 40) for c in "cd"]
    here = shift(
        1,
        "g",
        -30.0,
        plain[:1] + [linked] + plain[1:],
        "confounded",
        confounders=[Confounder("disable_custom_all_reduce", True, False)],
    )
    culprits = rank_culprits([here])
    assert [c.likelihood for c in culprits] == ["likely", "possible", "possible"]
    assert culprits[0].sha == "b" * 40
    assert knob_linked(culprits, here, here.confounders[0]) == ("b" * 40,)
    assert here.bisect is not None and here.bisect.commits == 3


# --------------------------------------------------------------------------- confounders and the verdict


@pytest.mark.parametrize(
    "name, values, random",
    [
        ("random_seed", [123, 98765, 5550], True),  # drawn at each launch
        ("random_seed", [42, 42, 7, 7], False),  # set by the user, and changed
        ("port", [30000, 30001], True),
        ("nccl_port", [1, 2], True),
        ("metrics_ports", [[1], [2]], True),
        ("log_dir", ["/a", "/b"], True),
        ("crash_dump_path", ["/a", "/b"], True),
        ("disable_custom_all_reduce", [True, False], False),
        ("attention_backend", ["fa3", "triton"], False),
    ],
)
def test_launch_random_values(name, values, random):
    assert is_launch_random(name, values) is random


def _pull(hour: int, shas: str = "c") -> CodeEvent:
    moment = datetime(2026, 4, 7, hour, tzinfo=timezone.utc)
    return CodeEvent(
        "e1",
        moment,
        int(moment.timestamp()),
        "pull",
        "pull",
        "a" * 40,
        "b" * 40,
        True,
        commits=[CommitInfo(ch * 40, f"commit {ch}") for ch in shas],
    )


def test_a_flag_that_differs_confounds_the_shift_and_names_the_rerun():
    runs = [
        steady_run(1, "a" * 40, 9, 94.0, disable_custom_all_reduce=True, random_seed=11),
        steady_run(2, "b" * 40, 11, 60.0, disable_custom_all_reduce=False, random_seed=987654),
    ]
    (only,) = find_shifts(runs, [_pull(10)])
    assert (only.verdict, only.measured) == ("confounded", "regression")
    assert [c.field for c in only.confounders] == ["disable_custom_all_reduce"]  # random_seed is not one
    (rerun,) = only.reruns
    assert (rerun.side, rerun.settings) == ("to", (("disable_custom_all_reduce", True),))


def test_equal_flag_runs_seeing_the_same_change_keep_the_verdict():
    runs = [
        steady_run(1, "a" * 40, 9, 94.0, disable_custom_all_reduce=True),
        steady_run(2, "a" * 40, 9, 94.5, disable_custom_all_reduce=False),
        steady_run(3, "b" * 40, 11, 60.0, disable_custom_all_reduce=False),
        steady_run(4, "b" * 40, 11, 60.5, disable_custom_all_reduce=False),
    ]
    runs[1].start += timedelta(minutes=20)
    runs[3].start += timedelta(minutes=20)
    (only,) = find_shifts(runs, [_pull(10)])
    assert only.verdict == "regression" and only.equal_flags == "runs"
    assert only.reruns == [] and only.confounders


def test_runs_on_the_same_driver_seeing_the_same_change_keep_the_verdict():
    """The driver went from 12.4 to 12.8 on one runner but not the other: the runs on 12.4 on both
    sides still see the drop, so it is the code's."""
    runs = [
        steady_run(1, "a" * 40, 9, 94.0),
        steady_run(2, "a" * 40, 9, 94.5),
        steady_run(3, "b" * 40, 11, 60.0),
        steady_run(4, "b" * 40, 11, 60.5),
    ]
    for run, driver in zip(runs, ("12.4", "12.4", "12.8", "12.4"), strict=True):
        run.cuda_driver_versions = [driver]
    runs[1].start += timedelta(minutes=20)
    runs[3].start += timedelta(minutes=20)
    (only,) = find_shifts(runs, [_pull(10)])
    assert [(c.field, c.from_value, c.to_value) for c in only.confounders] == [
        ("cuda_driver_version", "12.4", ["12.8", "12.4"])
    ]
    assert only.verdict == "regression" and only.equal_flags == "runs"
    runs[3].cuda_driver_versions = ["12.8"]  # now no run after the pull is on 12.4
    (only,) = find_shifts(runs, [_pull(10)])
    assert (only.verdict, only.reruns) == ("confounded", [Rerun("to", (("cuda_driver_version", "12.4"),))])


@pytest.mark.parametrize(
    "fields, measured, text",
    [
        (["attention_backend"], "improvement", "measured an improvement, but a flag differs between the sides"),
        (["nccl_version"], "regression", "measured a regression, but the NCCL version differs between the sides"),
        (
            ["nccl_version", "disable_cuda_graph", "attention_backend"],
            "regression",
            "measured a regression, but the NCCL version and a flag differ between the sides",
        ),
        (
            ["cuda_driver_version", "attention_backend", "nccl_version"],
            "improvement",
            "measured an improvement, but the GPU driver and a flag and the NCCL version differ between the sides",
        ),
    ],
)
def test_confounded_text_names_what_differs(fields, measured, text):
    (shift,) = find_shifts([steady_run(1, "a" * 40, 9, 94.0), steady_run(2, "b" * 40, 11, 60.0)], [_pull(10)])
    shift.measured, shift.confounders = measured, [Confounder(field, 1, 2) for field in fields]
    assert confounded_text(shift) == text


def test_another_workload_without_confounders_across_the_same_commits_keeps_the_verdict():
    runs = [
        steady_run(1, "a" * 40, 9, 94.0, "eagle", disable_custom_all_reduce=True),
        steady_run(2, "a" * 40, 9, 88.0, "base", disable_custom_all_reduce=False),
        steady_run(3, "b" * 40, 11, 60.0, "eagle", disable_custom_all_reduce=False),
        steady_run(4, "b" * 40, 11, 80.0, "base", disable_custom_all_reduce=False),
    ]
    runs[1].start += timedelta(minutes=20)
    runs[3].start += timedelta(minutes=20)
    eagle, base = find_shifts(runs, [_pull(10)])
    assert base.verdict == "regression" and not base.confounders
    assert eagle.verdict == "regression" and eagle.equal_flags == base.id


@pytest.mark.parametrize(
    "field, value, text",
    [
        ("disable_custom_all_reduce", True, "`--disable-custom-all-reduce`"),
        ("enable_torch_compile", False, "without `--enable-torch-compile`"),
        ("attention_backend", "fa3", "`--attention-backend fa3`"),
        ("nccl_version", "2.27.5", "NCCL 2.27.5"),
        ("cuda_driver_version", "12.8", "driver CUDA 12.8"),
    ],
)
def test_flag_text(field, value, text):
    assert flag_text(field, value) == text


def test_same_boundary_weighs_what_the_commit_did_not_only_the_direction():
    """c arrives with a drop in one workload and leaves with a drop in another: they contradict."""
    arrived, left = suspect("c" * 40), suspect("c" * 40, change="left")
    assert same_boundary([shift(1, "w1", -30.0, [arrived]), shift(2, "w2", -30.0, [left])]) == {}
    assert same_boundary([shift(1, "w1", -30.0, [arrived]), shift(2, "w2", +30.0, [left], "improvement")]) == {
        "c" * 40: ("s1", "s2")
    }


def test_a_workload_whose_drop_the_commit_could_not_cause_does_not_clear_the_confounder():
    runs = [
        steady_run(1, "a" * 40, 9, 94.0, "eagle", disable_custom_all_reduce=True),
        steady_run(2, "b" * 40, 11, 60.0, "eagle", disable_custom_all_reduce=False),
        steady_run(3, "b" * 40, 13, 88.0, "base", disable_custom_all_reduce=False),
        steady_run(4, "a" * 40, 15, 60.0, "base", disable_custom_all_reduce=False),
    ]
    pull = _pull(10)
    moment = datetime(2026, 4, 7, 14, tzinfo=timezone.utc)
    reset = CodeEvent(
        "e2",
        moment,
        int(moment.timestamp()),
        "reset",
        "reset",
        "b" * 40,
        "a" * 40,
        True,
        commits_removed=list(pull.commits),
    )
    eagle, base = find_shifts(runs, [pull, reset])
    assert base.verdict == "regression" and not base.confounders  # c left, and base dropped
    assert eagle.verdict == "confounded"  # c arrived and eagle dropped: base does not confirm it


def test_messages_are_not_compared_when_a_run_kept_only_its_first_ones():
    from timeline.records import MAX_MESSAGES

    many = [f"message {i} " + "x" * i for i in range(MAX_MESSAGES)]
    before = steady_run(1, "a" * 40, 9, 94.0)
    before.messages = many
    after = steady_run(2, "b" * 40, 11, 60.0)
    after.messages = many[:10] + ["only after"]
    (only,) = find_shifts([before, after], [_pull(10)])
    assert only.messages_added == [] and only.messages_gone == []
