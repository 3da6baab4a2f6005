"""Unit tests for parsers.sglang: headers, stats fields, NCCL lines, run splitting."""

from __future__ import annotations

from datetime import datetime

import pytest

from timeline.parsers import parse_file, values
from timeline.parsers.sglang import (
    SGLangLogParser,
    field_number,
    find_message,
    match_header,
    parse_stats_message,
)

BODY = "#running-req: 1, #token: 9, token usage: 0.00, cuda graph: True, gen throughput (token/s): 42.50, #queue-req: 0"


def parse_lines(*lines: str, keep_samples: bool = True):
    parser = SGLangLogParser("t.log", keep_samples=keep_samples)
    parser.feed_all(enumerate(lines, start=1))
    return parser.finish()


# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize(
    "line,date,time,rank,message",
    [
        ("[2025-07-01 12:00:00] The server is fired up", "2025-07-01", "12:00:00", "", "The server is fired up"),
        ("[2025-07-01 12:00:00 TP0] Load weight begin.", "2025-07-01", "12:00:00", " TP0", "Load weight begin."),
        ("[2025-07-01 12:00:00 DP0 TP0] x", "2025-07-01", "12:00:00", " DP0 TP0", "x"),
        ("[2025-07-01 12:00:00 TP3 EP3] x", "2025-07-01", "12:00:00", " TP3 EP3", "x"),
        ("[2026-01-01 12:00:00 DP0 PP1 TP3 EP3] x", "2026-01-01", "12:00:00", " DP0 PP1 TP3 EP3", "x"),
        (
            "[2026-01-01 12:00:00 DP1 PP0 ATTN_CP1 MOE_DP0 TP5 EP5] x",
            "2026-01-01",
            "12:00:00",
            " DP1 PP0 ATTN_CP1 MOE_DP0 TP5 EP5",
            "x",
        ),
        ("[2026-01-01 12:00:00.123 TP0] x", "2026-01-01", "12:00:00.123", " TP0", "x"),
        ("[12:00:00 TP0] Decode batch. x", None, "12:00:00", " TP0", "Decode batch. x"),
        ("[2026-03-21 03:31:56] INFO engine.py:177: server_args=X()", "2026-03-21", "03:31:56", "", "server_args=X()"),
        ("[2026-03-21 03:31:56 TP0] WARNING model_runner.py:12: careful", "2026-03-21", "03:31:56", " TP0", "careful"),
        (
            "(SGLangEngine pid=111711, ip=10.15.36.1) [2025-10-31 03:45:20 TP0] Decode batch [39913], x",
            "2025-10-31",
            "03:45:20",
            " TP0",
            "Decode batch [39913], x",
        ),
        ("(SGLangEngine pid=7) [2025-10-31 03:45:20] y", "2025-10-31", "03:45:20", "", "y"),
        ("2025-10-31T03:45:20.123456789Z [2025-10-31 03:45:20 TP1] z", "2025-10-31", "03:45:20", " TP1", "z"),
        ("3: [2025-10-31 03:45:20 TP3] z", "2025-10-31", "03:45:20", " TP3", "z"),
        ("[2025-10-31 03:45:20 encode_dp_worker[2]] z", "2025-10-31", "03:45:20", " encode_dp_worker[2]", "z"),
        ("[2025-07-01 12:00:00]", "2025-07-01", "12:00:00", "", ""),
        (
            "[2025-07-01 12:00:00] INFO:     Started server process [1]",
            "2025-07-01",
            "12:00:00",
            "",
            "INFO:     Started server process [1]",
        ),
    ],
)
def test_header_variants(line: str, date: str | None, time: str, rank: str, message: str) -> None:
    m = match_header(line)
    assert m is not None
    assert (m.group("date"), m.group("time"), m.group("rank")) == (date, time, rank)
    assert line[m.end() :] == message


@pytest.mark.parametrize(
    "line",
    [
        "[Gloo] Rank 0 is connected to 1 peer ranks.",
        "[rank0]:[W1031 03:40:11.482910 ProcessGroupNCCL.cpp:4561] x",
        'INFO:     127.0.0.1:1 - "GET / HTTP/1.1" 200 OK',
        "INFO 08-15 10:11:12 pynccl.py:63] vLLM is using nccl==2.20.5",
        '  File "x.py", line 1, in <module>',
        "[2025-07-01 12:00:00 tp0] lower-case tag",
        "[2025-07-01 12:00:00]no-space",
        "",
    ],
)
def test_not_headers(line: str) -> None:
    assert match_header(line) is None


def test_level_prefix_is_only_skipped_when_complete() -> None:
    m = match_header("[2026-03-21 03:31:56] INFO: not a file prefix")
    assert m is not None and "[2026-03-21 03:31:56] INFO: not a file prefix"[m.end() :] == "INFO: not a file prefix"


# --------------------------------------------------------------------------- stats fields


@pytest.mark.parametrize(
    "message,kind,counter",
    [
        ("Decode batch, " + BODY, "decode", None),
        ("Decode batch. " + BODY, "decode", None),
        ("Decode batch. " + BODY + ", ", "decode", None),
        ("Decode batch [39913], " + BODY, "decode", 39913),
        ("Prefill batch, #new-seq: 1, #new-token: 7", "prefill", None),
        ("Prefill batch [3], #new-seq: 1, #new-token: 7, ", "prefill", 3),
    ],
)
def test_stats_message_shapes(message: str, kind: str, counter: int | None) -> None:
    parsed = parse_stats_message(message)
    assert parsed is not None
    assert parsed[:2] == (kind, counter)
    if kind == "decode":
        assert parsed[2]["gen_throughput"] == 42.5 and parsed[2]["cuda_graph"] is True
        assert parsed[2]["queue_req"] == 0


@pytest.mark.parametrize("message", ["Decode batch: x", "Decoded batch, x", "Prefill batches, x", "Decode batch,x"])
def test_not_stats_messages(message: str) -> None:
    assert parse_stats_message(message) is None


def test_stats_fields_in_any_order_unknown_kept_and_reserved_renamed() -> None:
    parsed = parse_stats_message(
        "Prefill batch. #new-seq: 4, #new-token: 8192, time: 1.23, #queue-req: 3, #transferring-req: 0, "
        "input throughput (token/s): 23456.79, cuda graph: False, brand-new thing: on fire"
    )
    assert parsed is not None
    fields = parsed[2]
    assert fields["time_field"] == 1.23 and "time" not in fields
    assert fields["input_throughput"] == 23456.79
    assert fields["brand_new_thing"] == "on fire"


def test_mixed_chunk_prefill() -> None:
    kind, counter, fields = parse_stats_message(
        "Prefill batch(mixed #running-req: 4). #new-seq: 2, #new-token: 412, cache hit rate: 18.75%, #queue-req: 0"
    )
    assert (kind, counter) == ("prefill", None)
    assert fields["mixed"] is True and fields["running_req"] == 4 and fields["cache_hit_rate"] == 18.75


@pytest.mark.parametrize(
    "body,label,value",
    [
        (BODY, "gen throughput (token/s)", 42.5),
        ("gen throughput (token/s): 7.5", "gen throughput (token/s)", 7.5),
        ("gen throughput (token/s): 7.5, ", "gen throughput (token/s)", 7.5),
        ("a: 1, gen throughput (token/s): 7.5, b c: 2", "gen throughput (token/s)", 7.5),
        # a line cut by the terminal inside the next key: the number before it stands
        ("a: 1, gen throughput (token/s): 7.5, tail without key", "gen throughput (token/s)", 7.5),
        ("a: 1, gen throughput (token/s): 863.65, #queue-req", "gen throughput (token/s)", 863.65),
        ("a: 1, gen throughput (token/s): 863.65, #queue-re", "gen throughput (token/s)", 863.65),
        ("a: 1, gen throughput (token/s): 7.5 x, tail", "gen throughput (token/s)", None),
        ("a: 1, #token: full=1, swa=2", "#token", None),
        ("a: 1, gen throughput (token/s): n/a", "gen throughput (token/s)", None),
        ("a: 1, gen throughput (token/s): True", "gen throughput (token/s)", None),
        ("a: 1, xgen throughput (token/s): 3.0", "gen throughput (token/s)", None),
        ("accept len: 3.12, gen throughput (token/s): 1.0", "accept len", 3.12),
        ("gen throughput (token/s): 1.0, gen throughput (token/s): 2.0", "gen throughput (token/s)", 2.0),
        ("cache hit rate: 45.67%", "cache hit rate", 45.67),
    ],
)
def test_field_number_matches_the_full_split(body: str, label: str, value: float | None) -> None:
    assert field_number(body, label) == value
    typed = {k: values.value(v.strip()) for k, v in values.split_fields(body)}.get(label)
    expected = float(typed) if isinstance(typed, (int, float)) and not isinstance(typed, bool) else None
    assert expected == value


# --------------------------------------------------------------------------- NCCL


def test_nccl_versions_are_ordered_unique_and_inherit_the_run() -> None:
    runs, diags = parse_lines(
        "[2026-01-01 10:00:00] server_args=ServerArgs(tp_size=2)",
        "[2026-01-01 10:00:01 TP0] sglang is using nccl==2.27.3",
        "[2026-01-01 10:00:01 TP1] sglang is using nccl==2.27.3",
        "host:1:1 [0] NCCL INFO cudaDriverVersion 12080",
        "host:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.2",
        "NCCL version 2.27.3+cuda12.9",
        "[2026-01-01 11:00:00] server_args=ServerArgs(tp_size=2)",
        "NCCL version 2.28.9+cuda12.9",
    )
    assert [r.nccl_versions for r in runs] == [["2.27.3", "2.26.2"], ["2.28.9"]]
    assert diags == []


# --------------------------------------------------------------------------- runs


DECODE = "[2026-01-01 {t} TP0] Decode batch, " + BODY


def test_run_boundaries_and_times() -> None:
    runs, diags = parse_lines(
        "warning before anything",
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='a')",
        DECODE.format(t="10:00:05"),
        "Traceback (most recent call last):",
        "",
        "[2026-01-01 11:00:00.250] server_args=ServerArgs(model_path='b')",
        DECODE.format(t="11:00:05"),
        "   ",
    )
    assert diags == []
    assert [(r.first_line, r.last_line) for r in runs] == [(1, 4), (6, 7)]
    assert [r.config for r in runs] == [{"model_path": "a"}, {"model_path": "b"}]
    assert [r.start_text for r in runs] == ["2026-01-01 10:00:00", "2026-01-01 11:00:00.250"]
    assert runs[1].start == datetime(2026, 1, 1, 11, 0, 0, 250000)
    assert runs[0].end == datetime(2026, 1, 1, 10, 0, 5)
    assert all(r.kind == "sglang-server" for r in runs)


def test_identical_repeated_server_args_is_one_run() -> None:
    line = "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='a')"
    runs, _ = parse_lines(line, line, DECODE.format(t="10:00:05"))
    assert len(runs) == 1 and (runs[0].first_line, runs[0].last_line) == (1, 3)


def test_relaunch_after_crash_without_stats_is_a_new_run() -> None:
    runs, _ = parse_lines(
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='a')",
        "[2026-01-01 10:00:03 TP0] Load weight begin. avail mem=1.00 GB",
        "torch.OutOfMemoryError: CUDA out of memory.",
        "[2026-01-01 10:05:00] server_args=ServerArgs(model_path='a')",
        DECODE.format(t="10:06:00"),
    )
    assert [(r.first_line, r.last_line) for r in runs] == [(1, 3), (4, 5)]
    assert "decode_throughput" not in runs[0].series


def test_stats_before_any_server_args_form_their_own_run() -> None:
    runs, _ = parse_lines(DECODE.format(t="09:00:00"), "[2026-01-01 10:00:00] server_args=ServerArgs(a=1)")
    assert [(r.first_line, r.last_line, r.config) for r in runs] == [(1, 1, {}), (2, 2, {"a": 1})]


def test_header_lines_without_content_before_server_args_are_reported() -> None:
    runs, diags = parse_lines(
        "[2026-01-01 09:00:00] INFO:     Shutting down",
        "[2026-01-01 10:00:00] server_args=ServerArgs(a=1)",
    )
    assert [(r.first_line, r.start_text) for r in runs] == [(2, "2026-01-01 10:00:00")]
    assert len(diags) == 1 and diags[0].line == 1 and "not counted as a run" in diags[0].message


def test_samples_carry_time_line_rank_and_fields() -> None:
    runs, _ = parse_lines(
        "[2026-01-01 10:00:00.5 DP1 TP0] Decode batch [7], " + BODY,
        "[2026-01-01 10:00:01] Prefill batch, #new-seq: 1, input throughput (token/s): 9.00",
    )
    decode = runs[0].samples["decode"][0]
    assert decode == {
        "time": datetime(2026, 1, 1, 10, 0, 0, 500000),
        "line": 1,
        "rank": "DP1 TP0",
        "forward_ct": 7,
        "running_req": 1,
        "token": 9,
        "token_usage": 0.0,
        "cuda_graph": True,
        "gen_throughput": 42.5,
        "queue_req": 0,
    }
    assert runs[0].samples["prefill"][0]["rank"] is None
    assert list(runs[0].series["prefill_input_throughput"]) == [9.0]
    assert runs[0].units == {"decode_throughput": "tok/s", "prefill_input_throughput": "tok/s"}


def test_no_samples_unless_asked() -> None:
    runs, _ = parse_lines(DECODE.format(t="10:00:00"), keep_samples=False)
    assert runs[0].samples is None
    assert list(runs[0].series["decode_throughput"]) == [42.5]


def test_time_only_stamps() -> None:
    runs, diags = parse_lines("[12:00:00 TP0] Decode batch. " + BODY, "[12:00:05 TP0] Decode batch. " + BODY)
    assert runs[0].start is None and runs[0].end is None and runs[0].start_text == "12:00:00"
    assert runs[0].samples["decode"][0]["time"] is None
    assert len(diags) == 1 and diags[0].line == 1


def test_time_only_stamps_take_the_runs_date_and_roll_over_midnight() -> None:
    runs, diags = parse_lines(
        "[2026-01-01 23:59:58] server_args=ServerArgs(a=1)",
        "[23:59:59 TP0] Decode batch. " + BODY,
        "[00:00:01 TP0] Decode batch. " + BODY,
    )
    assert diags == []
    times = [s["time"] for s in runs[0].samples["decode"]]
    assert times == [datetime(2026, 1, 1, 23, 59, 59), datetime(2026, 1, 2, 0, 0, 1)]
    assert runs[0].end == datetime(2026, 1, 2, 0, 0, 1)


def test_impossible_dates_do_not_crash() -> None:
    runs, _ = parse_lines("[2025-13-45 99:99:99 TP0] Decode batch, " + BODY)
    assert runs[0].start is None and runs[0].start_text is None  # not read as a time (parse_file says so)
    assert runs[0].samples["decode"][0]["time"] is None


def test_decode_line_without_throughput_is_one_aggregated_diagnostic() -> None:
    runs, diags = parse_lines(
        "[2026-01-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 9",
        "[2026-01-01 10:00:01 TP0] Decode batch, #running-req: 1, gen throughput (token/s): n/a",
        DECODE.format(t="10:00:02"),
    )
    assert list(runs[0].series["decode_throughput"]) == [42.5]
    assert len(runs[0].samples["decode"]) == 3
    assert len(diags) == 1 and diags[0].line == 1 and diags[0].message.startswith("2 Decode batch")


def test_bad_server_args_gives_one_diagnostic_with_its_line() -> None:
    runs, diags = parse_lines(
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='a', weird=1 2, tp_size=2, cut=12",
    )
    assert runs[0].config == {"model_path": "a", "tp_size": 2}
    assert len(diags) == 1 and diags[0].line == 1
    assert "weird=1 2" in diags[0].message and "cut" in diags[0].message


def test_not_an_sglang_log(write_log) -> None:
    parsed = parse_file(write_log("hello\nworld\n"))
    assert parsed.runs == []
    assert [d.message for d in parsed.diagnostics] == [
        "no SGLang or vLLM server log lines and no benchmark results found"
    ]


def test_feed_one_line_at_a_time_equals_feed_all() -> None:
    lines = [
        "[2026-01-01 10:00:00] server_args=ServerArgs(a=1)",
        DECODE.format(t="10:00:01"),
        "NCCL version 2.1.3+cuda1.0",
    ]
    one = SGLangLogParser("t")
    for n, text in enumerate(lines, start=1):
        one.feed(n, text)
    assert one.finish() == parse_lines(*lines, keep_samples=False)


def test_a_time_only_stamp_after_the_last_day_of_9999_does_not_stop_the_file() -> None:
    """Its "next day" cannot be (OverflowError): it is dated like a stamp with no date before it."""
    runs, _ = parse_lines(
        "[9999-12-31 23:59:58 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 5.0, #queue-req: 0",
        "[00:00:01 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 6.0, #queue-req: 0",
        "[9999-12-31 23:59:59 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 7.0, #queue-req: 0",
    )
    assert list(runs[0].series["decode_throughput"]) == [5.0, 6.0, 7.0]


# --------------------------------------------------------------------------- other logging prefixes


@pytest.mark.parametrize(
    "line,date,time,rank",
    [
        (
            "2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler_metrics_mixin: Decode batch, " + BODY,
            "2026-06-07",
            "10:59:31,659",
            "",
        ),
        (
            "2025-10-20 03:02:22 INFO 12345 [DP3 TP3 EP3 scheduler.py:1234] Decode batch. " + BODY,
            "2025-10-20",
            "03:02:22",
            "DP3 TP3 EP3",
        ),
        ("[2026-04-15 17:13:10][scheduler.py:88][INFO]: Prefill batch, #new-seq: 1", "2026-04-15", "17:13:10", ""),
        ("2026-03-02 16:42:05 TP0] Decode batch, " + BODY, "2026-03-02", "16:42:05", "TP0"),
        ("2025-10-31T03:45:20.5Z Decode batch, " + BODY, "2025-10-31", "03:45:20.5+00:00", ""),
        ("10:59:31 | INFO | Decode batch, " + BODY, None, "10:59:31", ""),
        ("INFO sglang.srt.managers.scheduler: Decode batch, " + BODY, None, None, ""),
    ],
)
def test_messages_after_another_logging_prefix(line: str, date: str | None, time: str | None, rank: str) -> None:
    found = find_message(line)
    assert found is not None
    assert (found.date, found.time, found.rank) == (date, time, rank)
    assert line[found.at :].startswith(("Decode batch", "Prefill batch"))


@pytest.mark.parametrize(
    "line",
    [
        "Scheduler hit an exception: Decode batch, " + BODY,  # a sentence, not a prefix
        "The last Decode batch, " + BODY,
        "Decode batch, " + BODY,  # no prefix at all: a bare line
        "x" * 300 + " INFO Decode batch, " + BODY,  # too long for a prefix
    ],
)
def test_no_message_after_what_is_no_logging_prefix(line: str) -> None:
    assert find_message(line) is None


def test_a_prefixed_stats_line_reads_like_its_sglang_form() -> None:
    runs, _ = parse_lines(
        "2025-10-20 03:02:22 INFO 12345 [DP3 TP3 EP3 scheduler.py:1234] Decode batch. " + BODY,
        "[2025-10-20 03:02:23 DP3 TP3 EP3] Decode batch. " + BODY,
    )
    first, second = runs[0].samples["decode"]
    assert first["rank"] == second["rank"] == "DP3 TP3 EP3"
    assert {k: v for k, v in first.items() if k not in ("time", "line")} == {
        k: v for k, v in second.items() if k not in ("time", "line")
    }
    assert runs[0].start == datetime(2025, 10, 20, 3, 2, 22) and runs[0].end == datetime(2025, 10, 20, 3, 2, 23)


def test_a_wrapped_server_args_line_is_joined_back_and_a_cut_one_is_not() -> None:
    full = (
        "[2026-05-04 09:00:00] server_args=ServerArgs("
        "model_path='/m/Qwen3-8B', tokenizer_path='/m/Qwen3-8B', tp_size=2, dp_size=1)"
    )
    wrapped = [full[i : i + 75] for i in range(0, len(full), 75)]
    runs, diagnostics = parse_lines(*wrapped, "[2026-05-04 09:01:00] Decode batch, " + BODY)
    assert runs[0].config == {"model_path": "/m/Qwen3-8B", "tokenizer_path": "/m/Qwen3-8B", "tp_size": 2, "dp_size": 1}
    assert not diagnostics
    # Cut (the next line is not the width's continuation): the complete items are kept, and said.
    runs, diagnostics = parse_lines(wrapped[0], "Traceback (most recent call last):", "[2026-05-04 09:01:00] x")
    assert runs[0].config == {"model_path": "/m/Qwen3-8B"}
    assert [d.line for d in diagnostics] == [1] and "cut short" in diagnostics[0].message


def test_a_model_path_keeps_no_stray_quote() -> None:
    runs, _ = parse_lines("""[2026-05-04 09:00:00] server_args={'model_path': "'/data/Qwen3-8B", 'tp_size': 1}""")
    assert runs[0].config["model_path"] == "/data/Qwen3-8B"


def test_relaunches_of_the_same_server_args_share_one_config_and_their_messages() -> None:
    """A server restarted a thousand times in one log holds one config dict and one messages
    list for all its runs, not a thousand (memory flat in the number of runs); other text, its own."""
    relaunch = [
        '[2026-01-01 {h}:00:00] server_args=ServerArgs(model_path="\'/m/a", tp_size=2)',
        "[2026-01-01 {h}:00:03 TP0] Load weight begin. avail mem={h}.50 GB",
        DECODE.format(t="{h}:00:05"),
    ]
    runs, diags = parse_lines(
        *(line.format(h=h) for h in ("10", "11") for line in relaunch),
        "[2026-01-01 12:00:00] server_args=ServerArgs(model_path='/m/b', tp_size=2)",
        DECODE.format(t="12:00:05"),
    )
    assert diags == []
    a, b = {"model_path": "/m/a", "tp_size": 2}, {"model_path": "/m/b", "tp_size": 2}
    assert [r.config for r in runs] == [a, a, b]
    assert runs[0].config is runs[1].config and runs[2].config is not runs[0].config
    assert runs[0].messages == ["Load weight begin. avail mem=0.0 GB"] and runs[0].messages is runs[1].messages
    assert runs[2].messages == []
