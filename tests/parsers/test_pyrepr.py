"""parsers.pyrepr: reading server_args reprs without eval."""

from __future__ import annotations

import math
import random
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.parsers import parse_file
from timeline.parsers.pyrepr import ReprError, parse_keyword_repr, parse_value
from timeline.scenario import Launch, sglang_launch_lines


@pytest.mark.parametrize(
    "text,value",
    [
        ("1", 1),
        ("-3", -3),
        ("0.88", 0.88),
        ("1e-05", 1e-05),
        ("-1.0", -1.0),
        ("True", True),
        ("False", False),
        ("None", None),
        ("'auto'", "auto"),
        ("''", ""),
        ("'{}'", "{}"),
        ('"it\'s"', "it's"),
        ("'it\\'s \"both\"'", 'it\'s "both"'),
        ("\"a, b), c='d'\"", "a, b), c='d'"),
        ("'tab\\there\\nnewline \\\\ \\u00e9'", "tab\there\nnewline \\ \u00e9"),
        ("'caf\u00e9'", "caf\u00e9"),
        ("[]", []),
        ("[1, 2, 4]", [1, 2, 4]),
        ("['a', None, [1.5]]", ["a", None, [1.5]]),
        ("()", ()),
        ("(1,)", (1,)),
        ("(1, 'x')", (1, "x")),
        ("(5)", 5),
        ("{}", {}),
        ("{'a': 1, 'b': {'c': [2]}}", {"a": 1, "b": {"c": [2]}}),
        ("{1: 'x', (1, 2): None}", {1: "x", (1, 2): None}),
        ("{1, 2}", [1, 2]),
        ("set()", []),
        ("frozenset({'a'})", ["a"]),
        ("dict()", {}),
        ("PhaseConfig()", {}),
        ("torch.bfloat16", "torch.bfloat16"),
        ("auto", "auto"),
        ("information", "information"),
        ("<function foo at 0x7f3a2c1d5e40>", "<function foo at 0x7f3a2c1d5e40>"),
        ("<function launch_server.<locals>.handler at 0x7f>", "<function launch_server.<locals>.handler at 0x7f>"),
        ("<LoadFormat.AUTO: 'auto'>", "<LoadFormat.AUTO: 'auto'>"),
        ("<object object at 0x7f0>", "<object object at 0x7f0>"),
        ("PosixPath('/models/x')", "PosixPath('/models/x')"),
        ("functools.partial(<function f at 0x1>, a=1)", "functools.partial(<function f at 0x1>, a=1)"),
        ("b'raw'", "b'raw'"),
        (
            "LoRARef(lora_id='a1', lora_name='x', lora_path='/p', pinned=False)",
            {"lora_id": "a1", "lora_name": "x", "lora_path": "/p", "pinned": False},
        ),
        (
            "CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=256, bs=[1, 2, 4], tc_compiler='eager'), "
            "prefill=PhaseConfig(backend='tc_piecewise', max_bs=None, bs=[4, 8], tc_compiler='eager'))",
            {
                "decode": {"backend": "full", "max_bs": 256, "bs": [1, 2, 4], "tc_compiler": "eager"},
                "prefill": {"backend": "tc_piecewise", "max_bs": None, "bs": [4, 8], "tc_compiler": "eager"},
            },
        ),
    ],
)
def test_values(text: str, value: object) -> None:
    got = parse_value(text)
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize("text,sign", [("inf", 1), ("-inf", -1), ("+inf", 1)])
def test_infinities(text: str, sign: int) -> None:
    got = parse_value(text)
    assert math.isinf(got) and (got > 0) == (sign > 0)


def test_nan() -> None:
    assert math.isnan(parse_value("nan"))


@pytest.mark.parametrize("text", ["", "'open", "[1, 2", "(1, 2", "{'a' 1}", "1 2", "x=1"])
def test_bad_values_raise_repr_error(text: str) -> None:
    with pytest.raises(ReprError):
        parse_value(text)


def test_server_args_call_form() -> None:
    fields, problems = parse_keyword_repr(
        "ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=8, mem_fraction_static=0.88, schedule_conservativeness=1.0, "
        "request_timeout=inf, weird_float=nan, eps=1e-05, enable_x=True, lora_paths=None, cuda_graph_bs=[1, 2, 4], "
        'chat_template="it\'s, (quoted) x=1", handler=<function h at 0x7f>, '
        "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=256)), "
        "json_model_override_args='{\"a\": 1}')"
    )
    assert problems == []
    assert fields["model_path"] == "Qwen/Qwen3-8B"
    assert fields["tp_size"] == 8 and fields["mem_fraction_static"] == 0.88
    assert math.isinf(fields["request_timeout"]) and math.isnan(fields["weird_float"])
    assert fields["eps"] == 1e-05 and fields["enable_x"] is True and fields["lora_paths"] is None
    assert fields["chat_template"] == "it's, (quoted) x=1"
    assert fields["handler"] == "<function h at 0x7f>"
    assert fields["cuda_graph_config"] == {"decode": {"backend": "full", "max_bs": 256}}
    assert fields["json_model_override_args"] == '{"a": 1}'
    assert list(fields)[0] == "model_path" and len(fields) == 14


def test_server_args_dict_form() -> None:
    fields, problems = parse_keyword_repr(
        "{'model_path': 'a', 'tp_size': 4, 'cuda_graph_config': {'decode': {'max_bs': 256, 'bs': [1, 2]}}, "
        "'watermark_secret': '<redacted>', 'x': inf}"
    )
    assert problems == []
    assert fields["cuda_graph_config"]["decode"]["bs"] == [1, 2]
    assert fields["watermark_secret"] == "<redacted>"
    assert math.isinf(fields["x"])


@pytest.mark.parametrize(
    "text,fields,needles",
    [
        # cut in the middle of a number: the number must not be taken at face value
        (
            "ServerArgs(model_path='a', tp_size=8, chunked_prefill_size=81",
            {"model_path": "a", "tp_size": 8},
            ["cut short", "chunked_prefill_size"],
        ),
        # cut inside a string
        ("ServerArgs(model_path='a', chat_template='abc", {"model_path": "a"}, ["cut short", "chat_template"]),
        # cut inside a nested repr
        ("ServerArgs(a=1, cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(max_bs=2", {"a": 1}, ["cut short"]),
        # cut right after a separator: the last complete item is kept
        ("ServerArgs(a=1, b=2, ", {"a": 1, "b": 2}, ["cut short"]),
        ("ServerArgs(", {}, ["cut short"]),
        ("{'a': 1, 'b': [1, 2", {"a": 1}, ["cut short"]),
        # unreadable items are skipped up to the next top-level ", name="
        ("ServerArgs(a=1, bad=1 2 3, b=2)", {"a": 1, "b": 2}, ["could not read 1", "bad=1 2 3"]),
        ("ServerArgs(a=1, odd=x<y, b=2)", {"a": 1, "b": 2}, ["odd=x<y"]),
        ("ServerArgs(a=1, odd=Foo(x=1) y, b=2)", {"a": 1, "b": 2}, ["odd=Foo(x=1) y"]),
        # unbalanced brackets or an unclosed <...> swallow the rest: no guessing at inner ", name="
        ("ServerArgs(a=1, odd=Foo(x=(, b=2)", {"a": 1}, ["cut short", "odd=Foo(x=("]),
        ("ServerArgs(a=1, odd=<unclosed, b=2)", {"a": 1}, ["odd=<unclosed"]),
        ("ServerArgs(a=1, q='it''s', b=2)", {"a": 1, "b": 2}, ["q="]),
        ("{'a': 1, 'bad': 1 2, 'b': 2}", {"a": 1, "b": 2}, ["'bad': 1 2"]),
        ("ServerArgs(a=1) trailing", {"a": 1}, ["after the closing"]),
        ("not a repr", {}, ["not a Name"]),
        ("", {}, ["not a Name"]),
    ],
)
def test_damaged_reprs_keep_what_they_can(text: str, fields: dict, needles: list[str]) -> None:
    got, problems = parse_keyword_repr(text)
    assert got == fields
    assert problems, "a problem must be reported"
    joined = "; ".join(problems)
    for needle in needles:
        assert needle in joined


def test_equals_inside_values_is_not_a_boundary() -> None:
    fields, problems = parse_keyword_repr("ServerArgs(a='x, b=1', c=[1, 2], d=Foo(e=1, f=2), g=3)")
    assert problems == []
    assert fields == {"a": "x, b=1", "c": [1, 2], "d": {"e": 1, "f": 2}, "g": 3}


def test_typographic_quotes_of_a_pasted_repr_are_quotes() -> None:
    """A forum or chat tool turns a pasted log's quotes typographic (vllm-project/vllm#2826):
    the strings still read as strings, in both forms; a typographic quote inside an ASCII-quoted
    string is part of its text."""
    fields, problems = parse_keyword_repr("ServerArgs(model_path=‘/m/Qwen3-8B’, tp_size=2, dtype=“auto”, x='it’s')")
    assert problems == []
    assert fields == {"model_path": "/m/Qwen3-8B", "tp_size": 2, "dtype": "auto", "x": "it’s"}
    fields, problems = parse_keyword_repr("{‘model_path’: ‘/m/Qwen3-8B’, ‘tp_size’: 2, 'chat_template': '“hi”'}")
    assert problems == []
    assert fields == {"model_path": "/m/Qwen3-8B", "tp_size": 2, "chat_template": "“hi”"}


def test_long_repr_is_fast_enough() -> None:
    import time

    body = ", ".join(f"field_{i}={v}" for i, v in enumerate(["'text'", "12", "0.5", "None", "True", "[1, 2, 3]"] * 80))
    start = time.perf_counter()
    fields, problems = parse_keyword_repr(f"ServerArgs({body})")
    assert problems == [] and len(fields) == 480
    assert time.perf_counter() - start < 2.0


# --------------------------------------------------------------------------- the quick reader

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
SPACE = st.sampled_from(["", " ", "  ", "\n", "\t", " \r\n"])
ODD_SPACE = st.sampled_from(["", " ", "\x0c", "\u00a0"])  # whitespace the grammar's tokens do not skip
READABLE = st.one_of(
    st.text(max_size=8).map(repr),
    st.sampled_from(["‘a’", "“b, c”", "b'raw'", "u'x'", "r'\\d'", "'it\\'s'"]),
    st.integers(-(10**20), 10**20).map(str),
    st.floats().map(repr),
    st.sampled_from(["1_000", "+5", "-0.0", ".5", "1e5", "nan", "-inf", "True", "False", "None"]),
    st.sampled_from(["<function f at 0x7f>", "<A.B: 'x'>", "<a <b> c>"]),
)
ODD = st.one_of(
    READABLE,
    st.text(alphabet="ab'\"\\ ,)(=:", max_size=6).map(lambda s: "'" + s + "'"),
    st.sampled_from(["'''x'''", "'a' 'b'", "0777", "1.", "information", "0x10", "Truex", "none"]),
    st.sampled_from(["torch.bfloat16", "auto", "<unclosed", "...", "(1,)", "()", "(5)", "{1, 2}", "set()"]),
)


@st.composite
def repr_texts(draw, odd: bool, depth: int = 0) -> str:
    """Repr text as Python and SGLang print it: strings, numbers, constants, ``<object>`` reprs,
    lists, dicts and keyword calls of them (what the quick reader reads); and, when ``odd``, the
    other forms the grammar reads or not (tuples, sets, bare names, positional and builder calls,
    trailing commas, stray whitespace and characters)."""
    space = ODD_SPACE if odd else SPACE
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(ODD if odd else READABLE)
    inner = repr_texts(odd, depth + 1)
    items = draw(st.lists(inner, max_size=4))
    sep = draw(st.sampled_from([", ", ",", " , ", ",\n "]))
    tail = draw(st.sampled_from(["", ",", " "])) if odd else ""
    form = draw(st.integers(0, 4 if odd else 2))
    if form == 0:
        return "[" + sep.join(draw(space) + item + draw(space) for item in items) + tail + "]"
    if form == 1:
        values = draw(st.lists(inner, min_size=len(items), max_size=len(items)))
        pairs = [f"{key}{draw(space)}:{draw(space)}{value}" for key, value in zip(items, values, strict=True)]
        return "{" + sep.join(pairs) + tail + "}"
    names = ["PhaseConfig", "a.B", "x"] + (["set", "list", "dict", "None", "inf"] if odd else [])
    name = draw(st.sampled_from(names))
    if form == 2:
        keys = draw(st.lists(NAMES, min_size=len(items), max_size=len(items)))
        arguments = sep.join(f"{k}{draw(space)}={draw(space)}{v}" for k, v in zip(keys, items, strict=True))
        return name + draw(st.sampled_from(["(", " ("] if odd else ["("])) + arguments + tail + ")"
    if form == 3:  # positional
        return name + "(" + sep.join(items) + tail + ")"
    return "(" + sep.join(items) + tail + ")"


@st.composite
def keyword_reprs(draw) -> str:
    """A ``server_args`` text, whole or (when odd) damaged: cut short, text after it."""
    odd = draw(st.booleans())
    values = draw(st.lists(repr_texts(odd), max_size=6))
    sep = draw(st.sampled_from([", ", ",", " ,\n"]))
    if draw(st.booleans()):
        keys = draw(st.lists(NAMES, min_size=len(values), max_size=len(values)))
        text = "ServerArgs(" + sep.join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) + ")"
    else:
        keys = draw(st.lists(st.text(max_size=6).map(repr), min_size=len(values), max_size=len(values)))
        text = "{" + sep.join(f"{k}: {v}" for k, v in zip(keys, values, strict=True)) + "}"
    if odd:
        cut = draw(st.sampled_from([None, -1, -2, len(text) // 2]))
        text = (text if cut is None else text[:cut]) + draw(st.sampled_from(["", ") x", ",)"]))
    return draw(SPACE) + text + draw(SPACE)


def _outcome(read, text: str) -> str:
    try:
        return repr(read(text))
    except Exception as exc:  # noqa: BLE001 - the same exception either way
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyword_reprs())
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ast.literal_eval of drawn strings' bad escapes
def test_the_quick_reader_reads_a_server_args_text_as_the_grammar(text: str) -> None:
    """The fields and problems of a ``Name(k=v, ...)`` or ``{'k': v, ...}`` text are the grammar's,
    whether the quick reader read it or left it to the grammar (values compared by their repr:
    nan, -0.0 and the types count)."""
    from timeline.parsers import _repr_grammar, pyrepr

    pyrepr._read_keyword_repr.cache_clear()
    assert _outcome(parse_keyword_repr, text) == _outcome(_repr_grammar.parse_keyword_repr, text)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(repr_texts))
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_quick_reader_reads_a_value_as_the_grammar(text: str) -> None:
    from timeline.parsers import _repr_grammar

    assert _outcome(parse_value, text) == _outcome(_repr_grammar.parse_value, text)


@pytest.mark.parametrize(
    "log", ["sglang-0.2-dp-midnight.log", "sglang-0.4-tp2.log", "sglang-0.5-eagle3.log", "sglang-0.5.19-dict-args.log"]
)
def test_server_args_of_real_logs_are_read_without_the_grammar(log: str) -> None:
    """Real ``server_args`` texts (lists, nested configs, ``<function>`` reprs, the dict form)
    are read by the quick reader: pyparsing is not imported for them, about 0.05 s of start-up."""
    from pathlib import Path

    from timeline.parsers import pyrepr

    lines = (Path(__file__).parents[2] / "fixtures" / "sglang" / log).read_text(encoding="utf-8").splitlines()
    texts = [line.split("server_args=", 1)[1].strip() for line in lines if "server_args=" in line]
    assert texts
    for text in texts:
        assert pyrepr._quick_fields(text) is not None


# A digit, then digits and underscores, a point and an exponent in any order: what a damaged or
# hand-edited number may look like (a point always followed by a digit: Python's repr never ends a
# float with one; a leading underscore makes a name, read as its text).
NUMBERISH = st.from_regex(r"\A[-+]?[0-9][0-9_]{0,7}(?:\.[0-9_]{1,4})?(?:[eE][-+]?[0-9_]{1,3})?\Z")


def _python_number(text: str) -> int | float | None:
    try:
        return float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMBERISH, min_size=1, max_size=4))
def test_a_number_int_or_float_would_not_take_is_a_problem_not_an_error(numbers: list[str]) -> None:
    """``1__0`` or ``1_`` (int() takes single underscores between digits only, PEP 515) is an item
    the reader could not read, never an exception: it raised ValueError, and the log's run was lost."""
    text = "ServerArgs(" + ", ".join(f"k{i}={number}" for i, number in enumerate(numbers)) + ", last=1)"
    fields, problems = parse_keyword_repr(text)
    assert fields["last"] == 1
    for i, number in enumerate(numbers):
        expected = _python_number(number)
        if expected is None:
            assert f"k{i}" not in fields and problems
        else:
            assert fields[f"k{i}"] == expected


def test_an_integer_of_more_digits_than_int_converts_is_read_as_a_float() -> None:
    fields, problems = parse_keyword_repr(f"ServerArgs(seed={'9' * 5000}, tp_size=8)")
    assert (fields, problems) == ({"seed": math.inf, "tp_size": 8}, [])


def test_a_log_whose_server_args_hold_an_unreadable_number_keeps_its_run(tmp_path: Path) -> None:
    lines = sglang_launch_lines(Launch(datetime(2026, 3, 2, 9), 10, 90.0), random.Random(1))
    lines[0] = lines[0].replace("random_seed=42", "random_seed=4__2")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    (run,) = parse_file(log).runs
    assert "random_seed" not in run.config and run.config["tp_size"] == 8


@pytest.mark.parametrize("depth", [40, 900, 5000])
def test_a_value_nested_deeper_than_python_recurses_is_a_problem_not_an_error(depth: int) -> None:
    """Lists nested 900 deep were read by the quick reader, and the copy handed out overflowed
    Python's recursion: a RecursionError out of a function that never raises."""
    fields, problems = parse_keyword_repr("ServerArgs(a=" + "[" * depth + "]" * depth + ", b=2)")
    nested = fields.get("a")
    for _ in range(depth - 1):  # down to the innermost list
        nested = nested[0] if nested else None
    assert problems or nested == []
