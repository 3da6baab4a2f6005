"""parsers.pyrepr: reading server_args reprs without eval."""

from __future__ import annotations

import math

import pytest

from timeline.parsers.pyrepr import ReprError, parse_keyword_repr, parse_value


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
