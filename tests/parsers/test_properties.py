"""Property tests (hypothesis): the parsers never raise, and stats values come out exactly."""

from __future__ import annotations

import math
import re
import tempfile
from array import array
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.parsers import parse_file, sglang_fast
from timeline.parsers.pyrepr import parse_keyword_repr

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL_LINES = sorted(
    {line for log in FIXTURES.glob("*/*.log") for line in log.read_bytes().decode("utf-8", "replace").splitlines()}
)
KINDS = {
    "sglang-server",
    "vllm-server",
    "bench-serving",
    "bench-offline-throughput",
    "bench-one-batch",
    "bench-one-batch-server",
}
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(SETTINGS, max_examples=60)  # the generators of these are the costly part


def parse_bytes(data: bytes, keep_samples: bool = False):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.log"
        path.write_bytes(data)
        return parse_file(path, source="fuzz.log", keep_samples=keep_samples)


def check_invariants(parsed) -> None:
    assert parsed.source == "fuzz.log"
    for diag in parsed.diagnostics:
        assert diag.source == "fuzz.log"
        assert "internal parser error" not in diag.message, diag.message
    for run in parsed.runs:
        assert run.kind in KINDS
        assert run.first_line is not None and run.first_line <= run.last_line
        for values in run.series.values():
            assert isinstance(values, array) and values.typecode == "d" and len(values) > 0
        assert set(run.units) == set(run.series)


# --------------------------------------------------------------------------- never raise

PREFIXES = [
    b"",
    b"\x1f\x8b",
    b"\x1f\x8b\x08\x00",
    b"BZh9",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"[2026-01-01 10:00:00 TP0] Decode batch, ",
    b"[2026-01-01 10:00:00] server_args=ServerArgs(",
    b"INFO 12-31 23:59:59 [loggers.py:1] Engine 000: Avg prompt throughput: ",
    b"============ Serving Benchmark Result ============\n",
    b"Prefill. latency: ",
    b"batch size: 1\n",
    b"2026-02-01T10:00:00Z ",
    b" 3: ",
    b"2026-06-07 10:59:31,659 [INFO] ",
]


@SETTINGS
@given(prefix=st.sampled_from(PREFIXES), data=st.binary(max_size=2048), keep=st.booleans())
def test_random_bytes_never_raise(prefix: bytes, data: bytes, keep: bool) -> None:
    check_invariants(parse_bytes(prefix + data, keep))


LOGGY = st.lists(
    st.sampled_from(
        list("[]()0123456789-:., #%=TPDEAxyz'\"\r\n\x1b<>{}_")
        + [
            "Decode batch",
            "Prefill batch",
            "gen throughput (token/s): ",
            "accept len: ",
            "server_args=",
            "ServerArgs(",
            "nccl==",
            "NCCL version ",
            "+cuda",
            "2026-01-01 ",
            "12:00:00",
            "[2026-01-01 12:00:00 TP0] ",
            "INFO 01-01 00:00:00 [a.py:1] ",
            "Avg generation throughput: ",
            "SpecDecoding metrics: ",
            "Mean acceptance length: ",
            "============ Serving Benchmark Result ============",
            "=" * 50,
            "Output token throughput (tok/s): ",
            "Median TTFT (ms): ",
            "benchmark_args=Namespace(",
            "Prefill. latency: ",
            "Decode.  median latency: ",
            "Total. latency: ",
            "Warmup ...",
            "Benchmark ...",
            "batch size: ",
            "latency: ",
            "2026-01-01T00:00:00Z ",
            "(Actor pid=1) ",
            " 12: ",
            "2026-06-07 10:59:31,659 [INFO] ",
            " [repeated 2x across cluster]",
        ]
    ),
    max_size=120,
).map("".join)


@SETTINGS
@given(text=LOGGY, keep=st.booleans())
def test_random_log_like_text_never_raises(text: str, keep: bool) -> None:
    check_invariants(parse_bytes(text.encode("utf-8", "surrogatepass"), keep))


@st.composite
def mangled_line(draw) -> str:
    line = draw(st.sampled_from(REAL_LINES))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["cut", "delete", "insert", "duplicate", "replace"]))
        i = draw(st.integers(0, len(line)))
        j = draw(st.integers(i, len(line)))
        junk = "".join(
            draw(
                st.lists(
                    st.sampled_from(
                        list(",:.[]()'\" =%#\r\x1b0123456789\ufffd") + [", x: ", "server_args=", "Decode batch, "]
                    ),
                    max_size=6,
                )
            )
        )
        if op == "cut":
            line = line[:i]
        elif op == "delete":
            line = line[:i] + line[j:]
        elif op == "insert":
            line = line[:i] + junk + line[i:]
        elif op == "duplicate":
            line = line[:j] + line[i:j] + line[j:]
        else:
            line = line[:i] + junk + line[j:]
    return line


@SLOW
@given(lines=st.lists(mangled_line(), min_size=1, max_size=8), keep=st.booleans())
def test_mangled_real_lines_never_raise(lines: list[str], keep: bool) -> None:
    check_invariants(parse_bytes("\n".join(lines).encode("utf-8", "surrogatepass"), keep))


# --------------------------------------------------------------------------- exact values

OTHER_FIELDS = {
    "#running-req": st.integers(0, 4096).map(str),
    "#token": st.one_of(st.integers(0, 10**7).map(str), st.just("full=1200, swa=300")),
    "token usage": st.floats(0, 1).map("{:.2f}".format),
    "accept len": st.floats(1, 8).map("{:.2f}".format),
    "accept rate": st.floats(0, 1).map("{:.2f}".format),
    "cuda graph": st.sampled_from(["True", "False"]),
    "#queue-req": st.integers(0, 999).map(str),
    "pre-allocated usage": st.floats(0, 1).map("{:.2f}".format),
    "#retracted-req": st.integers(0, 9).map(str),
    "#full token": st.integers(0, 10**6).map(str),
    "mamba usage": st.floats(0, 1).map("{:.2f}".format),
    "est. decode TFLOPS/s (per GPU)": st.floats(0, 2000).map("{:.2f}".format),
    "fwd occupancy": st.floats(0, 100).map("{:.2f}%".format),
    "waiting-image-req": st.integers(0, 9).map(str),
}
TAG = st.builds(
    lambda name, n: f"{name}{n}", st.sampled_from(["DP", "PP", "TP", "EP", "ATTN_CP", "MOE_DP"]), st.integers(0, 63)
)


@st.composite
def decode_line(draw) -> tuple[str, str, str | None]:
    x = draw(
        st.one_of(
            st.floats(0, 1e7, allow_nan=False).map("{:.2f}".format),
            st.floats(0, 1e7, allow_nan=False).map(repr),
            st.integers(0, 10**6).map(str),
        )
    )
    names = draw(st.lists(st.sampled_from(sorted(OTHER_FIELDS)), unique=True, max_size=len(OTHER_FIELDS)))
    pairs = [(name, draw(OTHER_FIELDS[name])) for name in names] + [("gen throughput (token/s)", x)]
    pairs = draw(st.permutations(pairs))
    sep = draw(st.sampled_from([". ", ", "]) | st.integers(0, 10**6).map(" [{}], ".format))
    body = ", ".join(f"{k}: {v}" for k, v in pairs) + draw(st.sampled_from(["", ", "]))
    tags = "".join(" " + t for t in draw(st.lists(TAG, max_size=4)))
    ms = draw(st.sampled_from(["", ".123"]))
    outer = draw(st.sampled_from(["", "(SGLangEngine pid=1, ip=10.0.0.1) ", "\x1b[36m(Actor pid=2)\x1b[0m "]))
    level = draw(st.sampled_from(["", "INFO scheduler.py:1234: "]))
    line = f"{outer}[2026-01-01 10:00:00{ms}{tags}] {level}Decode batch{sep}{body}"
    accept = dict(pairs).get("accept len")
    return line, x, accept


@SLOW
@given(lines=st.lists(decode_line(), min_size=1, max_size=5), crlf=st.booleans())
def test_generated_decode_lines_yield_exactly_x(lines: list[tuple[str, str, str | None]], crlf: bool) -> None:
    eol = "\r\n" if crlf else "\n"
    parsed = parse_bytes(eol.join(line for line, _, _ in lines).encode(), keep_samples=True)
    assert parsed.diagnostics == []
    (run,) = parsed.runs
    assert list(run.series["decode_throughput"]) == [float(x) for _, x, _ in lines]
    assert [s["gen_throughput"] for s in run.samples["decode"]] == [float(x) for _, x, _ in lines]
    accepts = [float(a) for _, _, a in lines if a is not None]
    assert list(run.series.get("accept_len", [])) == accepts


# --------------------------------------------------------------------------- server_args

SIMPLE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
VALUES = st.recursive(
    SIMPLE,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=3),
    ),
    max_leaves=6,
)
NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True)
CONFIGS = st.dictionaries(NAMES, VALUES, max_size=8)


def call_repr(config: dict) -> str:
    return "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ")"


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isinf(a) and math.isinf(b) and (a > 0) == (b > 0))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@SLOW
@given(config=CONFIGS, form=st.sampled_from(["call", "dict"]))
def test_server_args_round_trip(config: dict, form: str) -> None:
    text = call_repr(config) if form == "call" else repr(config)
    fields, problems = parse_keyword_repr(text)
    assert problems == []
    assert same(fields, config)


@SLOW
@given(config=CONFIGS, form=st.sampled_from(["call", "dict"]), data=st.data())
def test_cut_server_args_never_gives_a_wrong_value(config: dict, form: str, data) -> None:
    text = call_repr(config) if form == "call" else repr(config)
    cut = data.draw(st.integers(0, len(text) - 1))
    fields, problems = parse_keyword_repr(text[:cut])
    assert problems, "a cut repr must be reported"
    for key, value in fields.items():
        assert key in config and same(value, config[key]), (key, value)


# --------------------------------------------------------------------------- vLLM and bench values


@st.composite
def vllm_throughput_line(draw) -> tuple[str, str, str]:
    gen = draw(st.floats(0, 1e6, allow_nan=False).map("{:.1f}".format))
    prompt = draw(st.floats(0, 1e6, allow_nan=False).map("{:.1f}".format))
    engine = draw(st.sampled_from(["", "Engine 000: ", "Engine 003: ", "2 Engines Aggregated: "]))
    extra = draw(
        st.lists(
            st.sampled_from(
                [
                    "Running: 8 reqs",
                    "Waiting: 0 reqs",
                    "Swapped: 0 reqs",
                    "Preemptions: 3",
                    "GPU KV cache usage: 12.3%",
                    "Prefix cache hit rate: 50.0%",
                    "KV fetch: 0 waiting to start, 1 in progress, 0 completed waiting",
                ]
            ),
            unique=True,
            max_size=5,
        )
    )
    body = ", ".join(
        [f"Avg prompt throughput: {prompt} tokens/s", f"Avg generation throughput: {gen} tokens/s", *extra]
    )
    tag = draw(st.sampled_from(["", "(APIServer pid=7) ", "\x1b[1;36m(EngineCore_DP0 pid=9)\x1b[0;0m "]))
    where = draw(st.sampled_from(["[loggers.py:111] ", "metrics.py:406] ", "[v1/metrics/loggers.py:12] "]))
    return f"{tag}INFO 05-06 12:00:00 {where}{engine}{body}" + draw(st.sampled_from(["", "."])), gen, prompt


@SLOW
@given(lines=st.lists(vllm_throughput_line(), min_size=1, max_size=5))
def test_generated_vllm_throughput_lines_yield_exactly_their_values(lines) -> None:
    parsed = parse_bytes("\n".join(line for line, _, _ in lines).encode(), keep_samples=True)
    (run,) = parsed.runs
    assert run.kind == "vllm-server"
    # an "N Engines Aggregated:" line is the total over the engines: its own series, never mixed in
    for prefix in ("", "aggregated_"):
        mine = [(g, p) for line, g, p in lines if ("Engines Aggregated: " in line) == bool(prefix)]
        assert list(run.series.get(prefix + "decode_throughput", [])) == [float(g) for g, _ in mine]
        assert list(run.series.get(prefix + "prompt_throughput", [])) == [float(p) for _, p in mine]
    assert [s["gen_throughput"] for s in run.samples["decode"]] == [float(g) for _, g, _ in lines]


BENCH_ROWS = {
    "Output token throughput (tok/s):": "output_throughput",
    "Total Token throughput (tok/s):": "total_throughput",
    "Request throughput (req/s):": "request_throughput",
    "Median TTFT (ms):": "ttft_median",
    "P99 ITL (ms):": "itl_p99",
    "Mean E2EL (ms):": "e2e_latency_mean",
    "Accept length:": "accept_length",
}


@SLOW
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(sorted(BENCH_ROWS)), st.floats(0, 1e7, allow_nan=False).map("{:.2f}".format)),
        min_size=1,
        max_size=7,
        unique_by=lambda r: r[0],
    ),
    joiner=st.sampled_from(["\n", " ", "   \n"]),
    padded=st.booleans(),
)
def test_generated_bench_rows_yield_exactly_their_values(rows, joiner: str, padded: bool) -> None:
    text = joiner.join(("{:<40} {:<10}" if padded else "{} {}").format(label, value) for label, value in rows)
    block = "============ Serving Benchmark Result ============\n" + text + "\n" + "=" * 50 + "\n"
    parsed = parse_bytes(block.encode())
    (run,) = parsed.runs
    assert {BENCH_ROWS[label]: float(value) for label, value in rows} == {k: v[0] for k, v in run.series.items()}


# --------------------------------------------------------------------------- other logging prefixes


def _real_decode_messages() -> list[str]:
    """Every Decode batch message of the fixtures with a plain throughput (the text from ``Decode batch``)."""
    found = set()
    for line in REAL_LINES:
        at = line.find("Decode batch")
        one = at >= 0 and line.count(" batch") == 1  # not several records pasted on one line
        if one and _GEN_RE.search(line, at) and "\r" not in line and "\x1b" not in line:
            found.add(line[at:].rstrip())
    return sorted(found)


_GEN_RE = re.compile(r"gen throughput \(token/s\): (\d+\.\d+)(?:,|$)")
DECODE_MESSAGES = _real_decode_messages()
LEVELS = ["INFO", "[INFO]", "INFO:", "- INFO -", "I"]
LOGGERS = ["sglang.srt.managers.scheduler_metrics_mixin:", "[scheduler.py:1234]", "scheduler.py:88:", "sglang:", ""]
RANKS = st.lists(st.sampled_from(["DP3", "PP1", "TP3", "EP3", "ATTN_CP1", "MOE_DP0"]), unique=True, max_size=3)


@st.composite
def prefixed_decode_line(draw) -> tuple[str, float, datetime, str | None]:
    """A real Decode batch message behind a random logging prefix: a stamp in one of several
    formats first, then a level, a logger name or file:line, a process id and rank tags in any order."""
    message = draw(st.sampled_from(DECODE_MESSAGES))
    when = draw(st.datetimes(datetime(2020, 1, 1), datetime(2030, 12, 31))).replace(microsecond=0)
    ms = draw(st.integers(0, 999))
    stamp = draw(
        st.sampled_from(
            [
                f"{when:%Y-%m-%d %H:%M:%S},{ms:03d}",
                f"{when:%Y-%m-%d %H:%M:%S}.{ms:03d}",
                f"{when:%Y-%m-%dT%H:%M:%S}.{ms:03d}",
                f"[{when:%Y-%m-%d %H:%M:%S},{ms:03d}]",
                f"[{when:%Y-%m-%d %H:%M:%S}.{ms:03d}]",
            ]
        )
    )
    tags = draw(RANKS)
    pieces = [draw(st.sampled_from(LEVELS)), draw(st.sampled_from(LOGGERS))]
    if draw(st.booleans()):
        pieces.append(str(draw(st.integers(1, 4_000_000))))
    if tags:
        pieces.append(draw(st.sampled_from(["{}", "[{}]", "[{} scheduler.py:1234]"])).format(" ".join(tags)))
    pieces = [p for p in draw(st.permutations(pieces)) if p]
    joiner = draw(st.sampled_from([" ", "", " | "])) if stamp.startswith("[") else " "
    line = stamp + joiner + " ".join(pieces) + draw(st.sampled_from([" ", ": ", " - "])) + message
    value = float(_GEN_RE.search(message).group(1))
    return line, value, when + timedelta(milliseconds=ms), " ".join(tags) or None


@SLOW
@given(lines=st.lists(prefixed_decode_line(), min_size=1, max_size=4), fast=st.booleans())
def test_real_decode_lines_behind_any_logging_prefix_keep_every_value_and_time(lines, fast: bool) -> None:
    saved = sglang_fast.FAST_MIN_BYTES
    sglang_fast.FAST_MIN_BYTES = 0 if fast else 1 << 62
    try:
        parsed = parse_bytes("\n".join(line for line, _, _, _ in lines).encode(), keep_samples=True)
    finally:
        sglang_fast.FAST_MIN_BYTES = saved
    check_invariants(parsed)
    assert [r.kind for r in parsed.runs] == ["sglang-server"], [line for line, _, _, _ in lines]
    (run,) = parsed.runs
    assert list(run.series["decode_throughput"]) == [value for _, value, _, _ in lines]
    rows = run.samples["decode"]
    assert [s["gen_throughput"] for s in rows] == [value for _, value, _, _ in lines]
    assert [s["time"] for s in rows] == [when for _, _, when, _ in lines]
    assert [s["rank"] for s in rows] == [rank for _, _, _, rank in lines]
