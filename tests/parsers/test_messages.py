"""ParsedRun.messages: the distinct messages a server printed besides its stats and configuration
lines, digits masked, bounded; the same on the fast path as line by line."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from timeline.parsers import parse_file, sglang_fast
from timeline.parsers.sglang import SGLangLogParser
from timeline.parsers.vllm import VLLMLogParser
from timeline.records import MAX_MESSAGE_CHARS, MAX_MESSAGES, message_key

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STAMP = "[2026-01-01 08:00:00 TP0] "
ARGS = "server_args=ServerArgs(model_path='m', tp_size=1)"
DECODE = "Decode batch, #running-req: 3, #token: 120, gen throughput (token/s): 91.25, #queue-req: 0"
PREFILL = "Prefill batch, #new-seq: 1, #new-token: 17, #cached-token: 0, #running-req: 0, #queue-req: 0"
ACCESS = 'INFO:     127.0.0.1:51970 - "POST /generate HTTP/1.1" 200 OK'


def naive_key(message: str) -> str:
    return " ".join(re.sub(r"\d+", "0", message).split())[:MAX_MESSAGE_CHARS].rstrip()


def both_paths(path: Path, samples: bool = False):
    """parse_file's result on the fast path and line by line."""
    taken = []
    feed_blocks = sglang_fast.feed_blocks
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)
        patch.setattr(sglang_fast, "feed_blocks", lambda *args: taken.append(1) or feed_blocks(*args))
        fast = parse_file(path, source="x.log", keep_samples=samples)
        assert taken, "the fast path was not taken"
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 1 << 62)
        patch.setattr(sglang_fast, "LOADED_MIN_BYTES", 1 << 62)
        slow = parse_file(path, source="x.log", keep_samples=samples)
    return fast, slow


def test_fixture_messages_are_the_startup_lines_once_each() -> None:
    (run,) = parse_file(FIXTURES / "sglang" / "sglang-0.4-tp2.log").runs
    # TP0 and TP1 print it with their own numbers: one message.
    assert run.messages.count("Load weight begin. avail mem=0.0 GB") == 1
    assert run.messages[:3] == [
        "Using default HuggingFace chat template with detected content format: string",
        "Attention backend not set. Use flashinfer backend by default.",
        "Init torch distributed begin.",
    ]
    assert "INFO: Uvicorn running on http://0.0.0.0:0 (Press CTRL+C to quit)" in run.messages
    assert not [m for m in run.messages if "batch," in m or "server_args" in m or "HTTP/1" in m]
    # Lines without a header ([Gloo], NCCL's own, progress bars) are not the run's messages.
    assert not [m for m in run.messages if m.startswith(("[Gloo]", "NCCL", "Loading safetensors"))]


def test_each_run_has_its_own_messages() -> None:
    first, second = parse_file(FIXTURES / "sglang" / "sglang-appended-two-launches.log").runs
    assert "Load weight begin. avail mem=0.0 GB" in first.messages
    assert second.messages == [
        "Init torch distributed begin.",
        "sglang is using nccl==0.0.0",
        "INFO: Uvicorn running on http://0.0.0.0:0 (Press CTRL+C to quit)",
        "The server is fired up and ready to roll!",
    ]


def test_vllm_messages_leave_out_stats_and_configuration_with_or_without_samples() -> None:
    lines = [
        "INFO 08-31 09:50:40 [api_server.py:1043] vLLM API server version 0.8.5",
        "INFO 08-31 09:50:40 [cli_args.py:297] non-default args: {'model': 'm', 'tensor_parallel_size': 2}",
        "INFO 08-31 09:50:41 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='m'",
        "INFO 08-31 09:50:44 [gpu_model_runner.py:1347] Model loading took 14.99 GiB and 5.1 seconds",
        "INFO 08-31 09:50:50 [loggers.py:111] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
        "2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0%",
        "INFO 08-31 09:50:50 [metrics.py:467] Prefix cache hit rate: GPU: 1.00%, CPU: 0.00%",
        "INFO 08-31 09:50:50 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 0.5, "
        "Mean acceptance length: 2.5, Accepted: 10 tokens, Drafted: 20 tokens",
        "INFO 08-31 09:51:00 [gpu_model_runner.py:1347] Model loading took 15.01 GiB and 4.8 seconds",
    ]
    for samples in (False, True):
        parser = VLLMLogParser("x.log", keep_samples=samples)
        parser.feed_all(enumerate(lines, 1))
        (run,) = parser.finish()[0]
        assert run.messages == ["vLLM API server version 0.0.0", "Model loading took 0.0 GiB and 0.0 seconds"]


def test_at_most_max_messages_a_run_on_both_paths(tmp_path: Path) -> None:
    lines = [STAMP + ARGS]
    for i in range(3 * MAX_MESSAGES):
        lines.append(f"{STAMP}startup step {'x' * (i % 7)}{chr(97 + i % 26)}{chr(97 + i // 26 % 26)} done in {i}.5 s")
        lines.append(STAMP + DECODE)
    path = tmp_path / "many.log"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = both_paths(path)
    assert [vars(r) for r in fast.runs] == [vars(r) for r in slow.runs]
    (run,) = fast.runs
    assert len(run.messages) == MAX_MESSAGES and len(set(run.messages)) == MAX_MESSAGES
    assert run.messages[0] == "startup step aa done in 0.0 s"  # the first ones are kept


# Pieces of up to thousands of characters: digit and blank runs across the prefix message_key reads.
_long_text = st.lists(
    st.sampled_from(["ab", "1", "9", " ", "\t", ".", "é", "٣", "x" * 60, " " * 90, "7" * 130]), max_size=120
).map("".join)


@SETTINGS
@given(_long_text)
@example("x" * 450)  # cut
@example("7" * 500 + " " * 400 + "after the prefix")  # the prefix's key is "0": the whole line is read
@example("ab " * 266 + "7" * 9)  # a digit run across the prefix's end
def test_message_key_reads_long_lines_from_a_prefix_exactly(message: str) -> None:
    assert message_key(message) == naive_key(message)


_words = st.text(st.sampled_from("abcxyz0123456789 .:=#/-_[]()"), min_size=1, max_size=60) | _long_text


@st.composite
def server_lines(draw) -> list[tuple[str, str]]:
    """(kind, message) pairs: startup messages among stats, server_args and access lines."""
    kinds = st.sampled_from(["message", "message", "decode", "prefill", "args", "access", "batch-word"])
    out = []
    for _ in range(draw(st.integers(1, 80))):
        kind = draw(kinds)
        if kind == "message":
            out.append((kind, draw(_words)))
        elif kind == "batch-word":  # mentions "batch" but is no stats line
            out.append(("message", "Capturing batches " + draw(_words)))
        else:
            out.append((kind, {"decode": DECODE, "prefill": PREFILL, "args": ARGS, "access": ACCESS}[kind]))
    return out


@SETTINGS
@given(lines=server_lines(), limit=st.sampled_from([3, MAX_MESSAGES]))
def test_messages_property(lines: list[tuple[str, str]], limit: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("timeline.records.MAX_MESSAGES", limit)
        parser = SGLangLogParser("x.log")
        parser.feed_all((n, STAMP + message) for n, (_, message) in enumerate(lines, 1))
        runs, _ = parser.finish()
    # The messages are the other lines' keys, distinct, first-seen first, the first `limit` of them.
    expected: list[str] = []
    for n, (kind, message) in enumerate(lines):
        if kind == "args" and n:  # a server_args line starts a run of its own
            expected = []
        key = naive_key(message)
        if kind == "message" and key and key not in expected and len(expected) < limit:
            expected.append(key)
    if runs:
        assert runs[-1].messages == expected
    for run in runs:
        assert len(run.messages) <= limit
        for message in run.messages:
            assert 0 < len(message) <= MAX_MESSAGE_CHARS
            assert not re.search(r"[1-9]|\d\d", message)  # every run of digits is one 0
            assert not message.startswith(("Decode batch", "Prefill batch", "server_args=")) and "HTTP/" not in message


@SETTINGS
@given(lines=server_lines(), samples=st.booleans())
def test_fast_path_gives_the_same_messages(lines: list[tuple[str, str]], samples: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "server.log"
        # Each stats line repeated: the fast path reads runs of them in bulk.
        text = [STAMP + message for _, message in lines for _ in range(2)]
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        fast, slow = both_paths(path, samples)
    assert [r.messages for r in fast.runs] == [r.messages for r in slow.runs]
    assert [vars(r) for r in fast.runs] == [vars(r) for r in slow.runs]
