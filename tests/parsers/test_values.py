"""parsers.values: the value rules (examples and properties), keys, field splitting, NCCL versions."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline.parsers import values

# The rules each family reads its values with (parsers/vllm.py, parsers/bench.py; SGLang: the defaults).
VLLM = {
    "python_numbers": True,
    "unit": re.compile(r"\s*(?:tokens/s|tokens|reqs|%)\.?$"),
    "int_percent": True,
    "bools": False,
}
BENCH = {"python_numbers": True, "unit": re.compile(r"%?,*$"), "int_percent": True, "bools": False}
MODES = [{}, VLLM, BENCH]
FINITE = st.floats(allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize(
    "raw,key",
    [
        ("#running-req", "running_req"),
        ("#token", "token"),
        ("token usage", "token_usage"),
        ("gen throughput (token/s)", "gen_throughput"),
        ("input throughput (token/s)", "input_throughput"),
        ("accept len", "accept_len"),
        ("accept rate", "accept_rate"),
        ("cuda graph", "cuda_graph"),
        ("#new-seq", "new_seq"),
        ("#full token", "full_token"),
        ("full token usage", "full_token_usage"),
        ("pre-allocated usage", "pre_allocated_usage"),
        ("#queue-req", "queue_req"),
        ("cache hit rate", "cache_hit_rate"),
        ("est. decode TFLOPS/s (per GPU)", "est_decode_tflops_s"),
        ("est. read BW (GB/s per GPU)", "est_read_bw"),
        ("fwd+idle occupancy", "fwd_idle_occupancy"),
        ("waiting-image-req", "waiting_image_req"),
        ("#", "field"),
    ],
)
def test_stats_keys(raw: str, key: str) -> None:
    assert values.key(raw, drop_unit=True) == key


@pytest.mark.parametrize(
    "text,value",
    [
        ("12", 12),
        ("-3", -3),
        ("0.05", 0.05),
        ("1523.44", 1523.44),
        ("1e-05", 1e-05),
        ("True", True),
        ("False", False),
        ("12.3%", 12.3),
        ("0.00%", 0.0),
        ("full=0.10", "full=0.10"),
        ("abc", "abc"),
        ("", ""),
        ("1.2.3", "1.2.3"),
        ("-", "-"),
    ],
)
def test_value(text: str, value: object) -> None:
    got = values.value(text)
    assert got == value and type(got) is type(value)


def test_split_fields_keeps_inner_commas_and_drops_trailing_comma() -> None:
    body = "#running-req: 1, #token: full=100, swa=20, token usage: full=0.10, swa=0.02, gen throughput (token/s): 12.00, #queue-req: 0, "  # noqa: E501 - a log line
    assert values.split_fields(body) == [
        ("#running-req", "1"),
        ("#token", "full=100, swa=20"),
        ("token usage", "full=0.10, swa=0.02"),
        ("gen throughput (token/s)", "12.00"),
        ("#queue-req", "0"),
    ]


@pytest.mark.parametrize(
    "line,version",
    [
        ("[2025-07-01 12:00:10 TP0] sglang is using nccl==2.21.5", "2.21.5"),
        ("[2025-07-01 12:00:10 TP0] sglang is using nccl==2.21.", "2.21.0"),
        ("[2025-07-01 12:00:10 TP0] sglang is using nccl==3..1", "3.0.1"),
        ("[2025-07-01 12:00:10 TP0] sglang is using nccl==2.21", "2.21.0"),
        ("INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5", "2.21.5"),
        ("(VllmWorkerProcess pid=532) INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5", "2.21.5"),
        ("INFO 09-24 20:46:10 [pynccl.py:70] vLLM is using nccl==2.27.3", "2.27.3"),
        ("[2025-12-01 00:00:00 TP0] sglang-diffusion is using nccl==2.28.9", "2.28.9"),
        ("NCCL version 2.21.5+cuda12.4", "2.21.5"),
        ("(WorkerDict pid=3614951) NCCL version 2.21.5+cuda12.4", "2.21.5"),
        ("gpu-node-07:2417:2417 [0] NCCL INFO NCCL version 2.27.5+cuda12.9", "2.27.5"),
        ("host:1:2 [3] NCCL INFO NCCL version 2.18.1a0+cuda12.1", "2.18.1"),
        ("gpu-node-07:2417:2417 [0] NCCL INFO cudaDriverVersion 12080", None),
        ("gpu-node-07:2417:2417 [0] NCCL INFO NCCL git version master 3d6c9b6", None),
        ("[2025-07-01 12:00:00 TP0] Detected NCCL version mismatch", None),
        ("nccl==", None),
        ("random text", None),
    ],
)
def test_nccl_versions(line: str, version: str | None) -> None:
    assert values.nccl_version(line) == version


@pytest.mark.parametrize(
    "line,version",
    [
        ("gpu-node-07:2417:2417 [0] NCCL INFO cudaDriverVersion 12080", "12.8"),
        ("node7:1927518:1927518 [1] NCCL INFO cudaDriverVersion 12040", "12.4"),
        ("host:1:1 [0] NCCL INFO cudaDriverVersion 11080\r", "11.8"),
        (" 0: gpu-a:70011:70011 [0] NCCL INFO cudaDriverVersion 13000", "13.0"),
        ("(VllmWorker rank=1 pid=7) node7:1:1 [1] NCCL INFO cudaDriverVersion 12090", "12.9"),
        ("gpu-node-07:2417:2417 [0] NCCL INFO cudaDriverVersion 12080 (ignored)", None),
        ("gpu-node-07:2417:2417 [0] NCCL INFO NCCL version 2.27.5+cuda12.9", None),
        ("[2025-07-01 12:00:00 TP0] cudaDriverVersion 12080", None),
        ("random text", None),
    ],
)
def test_cuda_driver_versions(line: str, version: str | None) -> None:
    assert values.cuda_driver_version(line) == version


# --------------------------------------------------------------------------- properties


@given(st.integers(), st.sampled_from(MODES))
def test_an_int_reads_as_itself_in_every_mode(n: int, rules: dict) -> None:
    got = values.value(str(n), **rules)
    assert got == n and type(got) is int


@given(FINITE, st.sampled_from(MODES))
def test_a_float_reads_as_itself_in_every_mode(x: float, rules: dict) -> None:
    got = values.value(repr(x), **rules)
    assert got == x and type(got) is float


@given(st.integers(-(10**6), 10**6) | FINITE)
def test_a_percent_is_a_float_for_sglang_and_keeps_its_int_for_the_others(x) -> None:
    sglang = values.value(f"{x}%")
    assert sglang == x and type(sglang) is float
    for rules in (VLLM, BENCH):
        other = values.value(f"{x}%", **rules)
        assert other == x and type(other) is type(x)


@given(st.text(), st.sampled_from(MODES))
def test_value_never_raises_and_keeps_text_it_cannot_read(text: str, rules: dict) -> None:
    got = values.value(text, **rules)
    if isinstance(got, str):
        assert got == text


@given(st.text())
def test_sglang_numbers_start_with_an_ascii_digit_sign_or_point(text: str) -> None:
    got = values.value(text)
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        assert text[0] in "0123456789+-." or text in ("inf", "nan")


@given(st.sampled_from(["Infinity", "NaN", "INF", "\u0663", " 12"]))
def test_python_only_spellings_are_numbers_only_with_python_numbers(text: str) -> None:
    assert values.value(text) == text
    assert isinstance(values.value(text, python_numbers=True), (int, float))


@given(st.sampled_from(["True", "False"]))
def test_bools_only_where_the_family_prints_them(text: str) -> None:
    assert values.value(text) is (text == "True")
    assert values.value(text, **VLLM) == text and values.value(text, **BENCH) == text


@given(st.sampled_from(["nan", "NaN", "NAN"]))
def test_nan_word_false_keeps_the_word(text: str) -> None:
    assert values.value(text, nan_word=False, python_numbers=True) == text
    assert math.isnan(values.value(text, python_numbers=True))


def test_none_words_are_none() -> None:
    assert values.value("not set", none_words=frozenset({"not set"})) is None
    assert values.value("not set") == "not set"


@given(st.text())
def test_number_is_float_else_the_values_number(text: str) -> None:
    got = values.number(text)
    try:
        expected = float(text)
    except ValueError:
        typed = values.value(text.strip())
        numeric = isinstance(typed, (int, float)) and not isinstance(typed, bool)
        expected = float(typed) if numeric else None
    assert got == expected or (got != got and expected != expected)


@given(st.text(), st.booleans())
def test_keys_are_snake_case_and_stable(raw: str, drop_unit: bool) -> None:
    got = values.key(raw, drop_unit=drop_unit)
    assert re.fullmatch(r"[0-9a-z]+(?:_[0-9a-z]+)*", got) or got == "field"
    assert values.key(got, drop_unit=drop_unit) == got


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z ]{0,8}[a-z]", fullmatch=True), st.from_regex(r"[0-9a-z.=]{1,8}", fullmatch=True)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_split_fields_gives_back_the_pairs_it_was_given(pairs: list[tuple[str, str]]) -> None:
    body = ", ".join(f"{k}: {v}" for k, v in pairs)
    assert values.split_fields(body) == pairs
    assert values.split_fields(body + ", ") == pairs


@pytest.mark.parametrize(
    "text,value",
    [('{"a": 1}', {"a": 1}), ("'x'", "x"), ("None", None), ("1.5,", 1.5), ("<object at 0x7f>", "<object at 0x7f>")],
)
def test_literal(text: str, value: object) -> None:
    assert values.literal(text) == value


@pytest.mark.parametrize(
    "text, name",
    [
        ("'/models/Qwen3-8B'", "/models/Qwen3-8B"),
        ("'/models/Qwen3-8B", "/models/Qwen3-8B"),  # a lone quote a paste left
        ("/models/Qwen3-8B'", "/models/Qwen3-8B"),
        ("‘mistralai/Mistral-7B-Instruct-v0.2’", "mistralai/Mistral-7B-Instruct-v0.2"),  # a forum's quotes
        ("“Qwen/Qwen3-8B”", "Qwen/Qwen3-8B"),
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("it's-a-name", "it's-a-name"),  # a quote inside a name stays
    ],
)
def test_unquoted_leaves_no_stray_quote(text: str, name: str) -> None:
    assert values.unquoted(text) == name


@given(st.text(alphabet="ab'\"\\([{)]}, =\n") | st.text())
def test_bracket_depth_counts_the_brackets_outside_quotes(text: str) -> None:
    """The same count as walking the text a character at a time (``outside_quotes``): escapes,
    the other kind of quote inside a string, a string cut short."""
    walked = sum((c in "([{") - (c in ")]}") for _, c in values.outside_quotes(text))
    assert values.bracket_depth(text) == walked


@pytest.mark.parametrize(
    "text,depth",
    [
        ("ServerArgs(a='(', b=[1, 2]", 1),
        ("{'k': \"it's ]\", 'v': (1,)}", 0),
        ("X(a='cut \\' (", 1),
        ("X(a='\\\\', b=(", 2),
    ],
)
def test_bracket_depth_of_reprs(text: str, depth: int) -> None:
    assert values.bracket_depth(text) == depth
