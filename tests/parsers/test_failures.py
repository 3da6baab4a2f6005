"""How a launch ended (parsers.failures, and the families that use it): ``ok``, ``crashed`` with its
last error line, ``no-stats``; on the SGLang and vLLM parsers, line by line and on the fast path."""

from __future__ import annotations

from pathlib import Path

import pytest

from timeline.parsers import parse_file, sglang_fast
from timeline.parsers.failures import exception_line, kept_error
from timeline.parsers.sglang import SGLangLogParser
from timeline.parsers.vllm import VLLMLogParser

ARGS = "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)"
DECODE = "[2026-01-01 {t} TP0] Decode batch, #running-req: 1, #token: 9, gen throughput (token/s): 42.50, #queue-req: 0"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


@pytest.mark.parametrize(
    "line,error",
    [
        (OOM, OOM),
        (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ),
        ("[rank3]: torch.distributed.DistBackendError: NCCL error", "torch.distributed.DistBackendError: NCCL error"),
        ("AssertionError", "AssertionError"),
        ("ValueError: bad value   ", "ValueError: bad value"),
        ("KeyboardInterrupt", None),  # Ctrl-C: how a server is stopped, not a crash
        ("SystemExit: 0", None),
        ("    raise RuntimeError(", None),  # inside the traceback
        ("/usr/lib/python3.10/x.py:224: UserWarning: leaked", None),
        ("Exception in ASGI application", None),
    ],
)
def test_exception_lines(line: str, error: str | None) -> None:
    assert exception_line(line) == error


def test_the_root_cause_is_kept_over_the_pointer_to_it() -> None:
    kept = kept_error(None, 5, "ValueError: no memory for the KV cache")
    assert kept_error(kept, 9, "RuntimeError: Engine core initialization failed. See root cause above.") == kept
    assert kept_error(kept, 9, "RuntimeError: other") == (9, "RuntimeError: other")
    assert kept_error(None, 9, "RuntimeError: x See root cause above.") == (9, "RuntimeError: x See root cause above.")


def sglang(*lines: str):
    return sglang_read(*lines)[0]


def sglang_read(*lines: str):
    """The runs (first line, status, error line, error) and the diagnostics' codes of these lines."""
    parser = SGLangLogParser("t.log")
    parser.feed_all(enumerate(lines, start=1))
    runs, diagnostics = parser.finish()
    return [(r.first_line, r.status, r.error_line, r.error) for r in runs], [d.code for d in diagnostics]


def test_sglang_stats_then_a_traceback_at_the_end_is_a_crash() -> None:
    assert sglang(ARGS, DECODE.format(t="10:01:00"), "Traceback (most recent call last):", "  File x", OOM) == [
        (1, "crashed", 5, OOM)
    ]


def test_sglang_a_traceback_the_server_went_on_after_is_no_crash() -> None:
    lines = (ARGS, "Traceback (most recent call last):", "ValueError: bad request")
    assert sglang(*lines, DECODE.format(t="10:01:00")) == [(1, "ok", None, None)]
    assert sglang(*lines, '[2026-01-01 10:01:00] INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK') == [
        (1, "no-stats", None, None)
    ]


def test_sglang_a_fatal_message_sticks_and_without_an_exception_is_the_error() -> None:
    fatal = "[2026-01-01 10:02:00] Received sigquit from a child process. It usually means the child failed."
    assert sglang(ARGS, DECODE.format(t="10:01:00"), fatal, DECODE.format(t="10:02:01")) == [
        (1, "crashed", 3, "Received sigquit from a child process. It usually means the child failed.")
    ]
    hit = "[2026-01-01 10:02:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"
    assert sglang(ARGS, hit) == [(1, "crashed", 2, "Scheduler hit an exception")]


def test_sglang_ctrl_c_is_no_crash() -> None:
    assert sglang(ARGS, DECODE.format(t="10:01:00"), "^CTraceback (most recent call last):", "KeyboardInterrupt") == [
        (1, "ok", None, None)
    ]


def test_sglang_header_lines_without_content() -> None:
    shutdown = "[2026-01-01 09:00:00] INFO:     Shutting down"
    crash = ("[2026-01-01 09:00:00 TP0] Init torch distributed begin.", OOM)
    # before a launch: its preamble, not a run; crashed: a launch of its own; alone: a no-stats launch
    assert sglang(shutdown, ARGS) == [(2, "no-stats", None, None)]
    assert sglang(*crash, ARGS, DECODE.format(t="10:01:00")) == [(1, "crashed", 2, OOM), (3, "ok", None, None)]
    assert sglang(shutdown) == [(1, "no-stats", None, None)]


APP_LOG = (  # another program's log in SGLang's "[date time] text" format
    "[2026-01-05 10:00:00] starting worker",
    "[2026-01-05 10:00:01] GET /health 200",
    "[2026-01-05 10:00:02] INFO: job 17 queued",
)


def test_sglang_header_lines_of_another_program_are_no_run() -> None:
    """``[date time] text`` lines without one line only SGLang prints are another program's log:
    no ``no-stats`` run, no ``crashed`` run, and "no SGLang lines" said of the file."""
    assert sglang_read(*APP_LOG) == ([], ["no-sglang-lines"])
    assert sglang_read(*APP_LOG, "Traceback (most recent call last):", "  File x", OOM) == ([], ["no-sglang-lines"])
    # before a launch: no preamble reported, the launch is the only run
    assert sglang_read(*APP_LOG, ARGS, DECODE.format(t="10:01:00")) == ([(4, "ok", None, None)], [])


@pytest.mark.parametrize(
    "line",
    [
        "[2026-01-05 10:00:03 TP0] Init torch distributed begin.",  # rank tags: a scheduler's line
        "[2026-01-05 10:00:03] Load weight begin. avail mem=78.53 GB",  # tp=1, 0.4.7+: no rank tags
        "[2026-01-05 10:00:03] max_total_num_tokens=452000, chunked_prefill_size=8192, max_prefill_tokens=16384",
        "[2026-01-05 10:00:03] Capture cuda graph begin. This can take up to several minutes. avail mem=7.20 GB",
        "[2026-01-05 10:00:03] The server is fired up and ready to roll!",
        "[2026-01-05 10:00:03] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        "[2026-01-05 10:00:03] WARNING:  Invalid HTTP request received.",
    ],
)
def test_sglang_a_line_only_sglang_prints_makes_a_launch(line: str) -> None:
    """One such line among them and the header lines are an SGLang launch: no-stats, or crashed."""
    assert sglang(*APP_LOG, line) == [(1, "no-stats", None, None)]
    assert sglang(*APP_LOG, line, "Traceback (most recent call last):", OOM) == [(1, "crashed", 6, OOM)]


def test_sglang_a_fatal_message_of_sglang_makes_a_crashed_launch() -> None:
    fatal = "[2026-01-05 10:00:03] Scheduler hit an exception: Traceback (most recent call last):"
    assert sglang(*APP_LOG, fatal, "  File x", OOM) == [(1, "crashed", 6, OOM)]
    assert sglang(*APP_LOG, fatal) == [(1, "crashed", 4, "Scheduler hit an exception")]


@pytest.mark.parametrize("fast", [False, True], ids=["line-by-line", "fast-path"])
def test_another_programs_log_is_no_run_on_either_path(fast: bool, tmp_path: Path, monkeypatch) -> None:
    """The block reader decides it as the line-by-line reader does, with access lines in bulk:
    a log of another program's health checks is no run; uvicorn's access lines under SGLang's
    format are a launch (no-stats), and a crash after ``server_args=`` stays ``crashed``."""
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0 if fast else 1 << 62)
    clock = [f"2026-01-05 1{h}:{m:02d}:{s:02d}" for h in range(3) for m in range(60) for s in range(0, 60, 3)]
    path = tmp_path / "app.log"
    path.write_text("".join(f"[{t}] GET /health 200\n" for t in clock))
    parsed = parse_file(path)
    assert parsed.runs == [] and [d.code for d in parsed.diagnostics] == ["nothing-found"]
    access = '[{}] INFO:     127.0.0.1:4{:04d} - "GET /health HTTP/1.1" 200 OK\n'
    path.write_text("".join(access.format(t, i) for i, t in enumerate(clock)))
    assert [(r.status, r.first_line, r.last_line) for r in parse_file(path).runs] == [("no-stats", 1, len(clock))]
    path.write_text(ARGS + "\n" + "".join(access.format(t, i) for i, t in enumerate(clock)) + OOM + "\n")
    assert [(r.status, r.error) for r in parse_file(path).runs] == [("crashed", OOM)]


def vllm(*lines: str):
    parser = VLLMLogParser("t.log", mtime=None)
    parser.feed_all(enumerate(lines, start=1))
    runs, _ = parser.finish()
    return [(r.first_line, r.status, r.error_line, r.error) for r in runs]


VERSION = "INFO 05-06 12:00:00 [api_server.py:1] vLLM API server version 0.9.2"
STATS = (
    "INFO 05-06 12:00:10 [loggers.py:111] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
    "Avg generation throughput: 45.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs"
)


def test_vllm_statuses() -> None:
    assert vllm(VERSION, STATS) == [(1, "ok", None, None)]
    assert vllm(VERSION) == [(1, "no-stats", None, None)]
    failed = "ERROR 05-06 12:00:05 [core.py:396] EngineCore failed to start."
    assert vllm(VERSION, failed, "ERROR 05-06 12:00:05 [core.py:396] " + OOM) == [(1, "crashed", 3, OOM)]
    assert vllm(VERSION, failed) == [(1, "crashed", 2, "EngineCore failed to start.")]
    handled = ("ERROR 05-06 12:00:05 [serving.py:9] ValueError: bad request",)
    assert vllm(VERSION, *handled) == [(1, "crashed", 2, "ValueError: bad request")]
    route = "INFO 05-06 12:00:06 [launcher.py:1] Route: /health"
    assert vllm(VERSION, *handled, route) == [(1, "no-stats", None, None)]
    assert vllm(VERSION, *handled, STATS) == [(1, "ok", None, None)]


@pytest.mark.parametrize("fast", [False, True], ids=["line-by-line", "fast-path"])
def test_the_fast_path_reads_exception_lines_among_stats(fast: bool, tmp_path: Path, monkeypatch) -> None:
    """Exception lines are no trivial lines for the block reader: their shape goes to the generic
    parser, however many stats lines surround them."""
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0 if fast else 1 << 62)
    stats = [DECODE.format(t=f"10:{m:02d}:{s:02d}") for m in range(1, 30) for s in range(0, 60, 2)]
    body = [ARGS, *stats[:400], "Traceback (most recent call last):", "ValueError: one bad request", *stats[400:]]
    path = tmp_path / "server.log"
    path.write_text("\n".join([*body, "Traceback (most recent call last):", "  File x", OOM]) + "\n")
    run = parse_file(path).runs[0]
    assert (run.status, run.error_line, run.error) == ("crashed", len(body) + 3, OOM)
    path.write_text("\n".join(body) + "\n")
    assert parse_file(path).runs[0].status == "ok"
