"""Text to values and keys, for every log family: one set of rules, the differences named.

``value(text)`` types one printed value. The rules, in order (``text`` is stripped by the caller):

1. ``""`` stays ``""``; a word of ``none_words`` (the benchmark client's ``not set``) is ``None``;
2. ``True`` / ``False`` are bools (``bools=False``: text, as vLLM's metrics lines never print them);
3. ``nan`` is NaN (``nan_word=False``: the word ``nan`` in any case stays text, as a benchmark
   setting is a name, not a measurement);
4. a unit at the end is dropped (``unit``, a regex; the default ``%``): ``12.3%`` -> 12.3. What is
   left is an int when Python's ``int()`` reads it, else a float when ``float()`` does;
   ``int_percent=False`` (SGLang's stats) makes a value that had a unit a float (``12%`` -> 12.0),
   ``True`` (vLLM, benchmark clients) an int when it reads as one (``12%`` -> 12);
5. which texts may be numbers: with ``python_numbers=False`` (SGLang's stats) only those starting
   with an ASCII digit, sign or point, and the words ``inf`` and ``nan``; with ``True`` whatever
   Python's ``int()``/``float()`` read (``Infinity``, ``NaN`` in any case, non-ASCII digits);
6. anything else is the text itself.

``number(text)`` is the float a value stands for (Python's ``float()`` first), or None.
``key(raw)`` makes a printed label a snake_case key. ``split_fields`` splits SGLang's and vLLM's
``key: value, key: value`` lists (SGLang's
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler_metrics_mixin.py,
vLLM's https://github.com/vllm-project/vllm/blob/main/vllm/v1/metrics/loggers.py).
``literal`` reads a Python or JSON literal of a configuration line. ``nccl_version`` reads the NCCL
version a line announces, in any family's wording; ``cuda_driver_version`` the CUDA version of the
GPU driver that NCCL logs at start-up under ``NCCL_DEBUG=INFO``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from re import Pattern
from typing import Any

from timeline.parsers.pyrepr import ReprError
from timeline.parsers.pyrepr import parse_value as parse_repr

__all__ = [
    "value",
    "number",
    "key",
    "split_fields",
    "field_spans",
    "starts_field",
    "literal",
    "nccl_version",
    "cuda_driver_version",
    "outside_quotes",
    "bracket_depth",
    "unquoted",
    "PERCENT",
]

PERCENT = re.compile(r"%$")
"""The default unit of ``value``: a percent sign right at the end."""

_NUMBER_FIRST = frozenset("0123456789-+.")
_NO_WORDS: frozenset[str] = frozenset()


def value(
    text: str,
    *,
    python_numbers: bool = False,
    unit: Pattern[str] = PERCENT,
    int_percent: bool = False,
    bools: bool = True,
    nan_word: bool = True,
    none_words: frozenset[str] = _NO_WORDS,
) -> Any:
    """One printed value, typed by the module's rules (the defaults: SGLang's stats lines)."""
    if not text:
        return text
    if text in none_words:
        return None
    if bools and (text == "True" or text == "False"):
        return text == "True"
    if not nan_word and text.lower() == "nan":
        return text
    if python_numbers or text[0] in _NUMBER_FIRST or text == "inf" or text == "nan":
        if unit is PERCENT:  # the common case without a regex
            bare = text[:-1] if text[-1] == "%" else text
        else:
            bare = unit.sub("", text, count=1)
        if int_percent or len(bare) == len(text):
            try:
                return int(bare)
            except ValueError:
                pass
        try:
            return float(bare)
        except ValueError:
            pass
    return text


def number(text: str) -> float | None:
    """The float a value stands for: Python's ``float(text)``, else ``value`` of the stripped text
    (``12.3%`` -> 12.3) when that is a number and not a bool; else None."""
    try:
        return float(text)
    except ValueError:
        typed = value(text.strip())
    if isinstance(typed, bool) or not isinstance(typed, (int, float)):
        return None
    return float(typed)


_UNIT_RE = re.compile(r"\s*\([^()]*\)\s*$")
_NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")
_key_cache: dict[tuple[str, bool, str], str] = {}


def key(raw: str, *, drop_unit: bool = False, fallback: str = "field") -> str:
    """A printed label as a snake_case key: lower case, every run of characters other than
    ASCII letters and digits ``_``, none at either end (``#running-req`` -> ``running_req``).
    ``drop_unit`` (SGLang's stats) also drops a ``(unit)`` at the end (``gen throughput (token/s)`` ->
    ``gen_throughput``); ``fallback`` is the key of a label with no letter or digit."""
    cached = _key_cache.get((raw, drop_unit, fallback))
    if cached is not None:
        return cached
    text = _UNIT_RE.sub("", raw) if drop_unit else raw
    found = _NON_ALNUM_RE.sub("_", text.lower()).strip("_") or fallback
    if len(_key_cache) < 4096:
        _key_cache[(raw, drop_unit, fallback)] = found
    return found


_KEY_RE = re.compile(r"(?:^|, )([#A-Za-z][^:,]*?): ")


def split_fields(body: str) -> list[tuple[str, str]]:
    """Split ``key: value, key: value[, ]`` into raw ``(key, value)`` pairs, in order.

    Values keep inner ``, `` when no key follows (``#token: full=1, swa=2``).
    """
    return [(body[key_start:key_end], body[start:end]) for key_start, key_end, start, end in field_spans(body)]


def field_spans(body: str) -> list[tuple[int, int, int, int]]:
    """``split_fields`` as positions in ``body``: ``(key start, key end, value start, value end)``."""
    spans: list[tuple[int, int, int, int]] = []
    found = None
    end = 0
    for m in _KEY_RE.finditer(body):
        if found is not None:
            spans.append((*found, end, m.start()))
        found = m.span(1)
        end = m.end()
    if found is not None:
        rest = body[end:].rstrip()
        if rest.endswith(","):
            rest = rest[:-1].rstrip()
        cut = _CUT_KEY_RE.search(rest)
        if cut is not None and isinstance(number(rest[: cut.start()]), float):
            rest = rest[: cut.start()]  # a number, then a line cut by the terminal inside the next key
        spans.append((*found, end, end + len(rest)))
    return spans


# The start of a key cut off at the end of a line (``..., gen throughput (token/s): 863.65, #queue-req``):
# a label's characters and no ``: `` after it, after a value that is a number.
_CUT_KEY_RE = re.compile(r", [#A-Za-z][\w\- ().#/]*:?$")


def starts_field(body: str, at: int) -> bool:
    """Does a new ``, key: `` start at ``at`` in ``body`` (``split_fields``' rule)?"""
    return _KEY_RE.match(body, at) is not None


def literal(text: str) -> Any:
    """A configuration value as printed: a JSON object or array, else a Python repr
    (``parsers.pyrepr``'s grammar), else the text; a trailing comma dropped."""
    text = text.strip().rstrip(",").strip()
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            pass
    try:
        return parse_repr(text)
    except ReprError:
        return text


_USING_NCCL_RE = re.compile(r"is using nccl==(\d+)\.(\d*)(?:\.(\d*))?")
_NCCL_VERSION_RE = re.compile(r"(?<![\w.])NCCL version (\d+)\.(\d+)\.(\d+)[^\s+]*\+cuda\d")


def nccl_version(text: str) -> str | None:
    """The NCCL version a line announces, normalised to ``X.Y.Z``, or None.

    Shapes: ``sglang is using nccl==2.21.5`` (also ``vLLM``/diffusion; ``2.21.`` means
    ``2.21.0``), bare ``NCCL version 2.21.5+cuda12.4`` and
    ``host:pid:tid [0] NCCL INFO NCCL version 2.27.3+cuda12.9``.
    """
    if "nccl==" in text:
        m = _USING_NCCL_RE.search(text)
        if m:
            return ".".join(str(int(p)) if p else "0" for p in m.groups())
    if "NCCL version" in text:
        m = _NCCL_VERSION_RE.search(text)
        if m:
            return ".".join(str(int(p)) for p in m.groups())
    return None


# NCCL's src/misc/cudawrap.cc (2.12 onwards): INFO(NCCL_INIT, "cudaDriverVersion %d", driverVersion),
# the value of cuDriverGetVersion: 1000 * major + 10 * minor (12080 is CUDA 12.8).
_CUDA_DRIVER_RE = re.compile(r" NCCL INFO cudaDriverVersion (\d{4,6})\s*$")


def cuda_driver_version(text: str) -> str | None:
    """The CUDA version the GPU driver supports, from NCCL's ``host:pid:tid [0] NCCL INFO
    cudaDriverVersion 12080`` line, as ``12.8``; None for any other line. Two drivers of one CUDA
    release (570.86 and 570.124 both say 12080) read the same: this is what the logs show."""
    m = _CUDA_DRIVER_RE.search(text)
    if m is None:
        return None
    code = int(m.group(1))
    return f"{code // 1000}.{code % 1000 // 10}"


def outside_quotes(text: str) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of every character of ``text`` outside quoted strings (``'``, ``"``,
    with backslash escapes), quotes themselves left out."""
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        else:
            yield i, c
        i += 1


# A quoted string as ``outside_quotes`` skips it: to its closing quote, or to the end of a text
# cut short; a backslash escapes the character after it.
_QUOTED_RE = re.compile(r"""'[^'\\]*(?:\\[\s\S][^'\\]*)*'?|"[^"\\]*(?:\\[\s\S][^"\\]*)*"?""")


def bracket_depth(text: str) -> int:
    """Brackets opened minus brackets closed, outside quotes (a repr cut short: more than 0).
    Counted on the text without its quoted strings (``_QUOTED_RE``): a character at a time took
    0.1 ms a ``server_args`` line."""
    bare = _QUOTED_RE.sub("", text)
    return sum(map(bare.count, "([{")) - sum(map(bare.count, ")]}"))


# Quotes a paste may leave around a name: ASCII, and the typographic ones a forum or chat tool
# puts in their place (model=‘mistralai/Mistral-7B-Instruct-v0.2’ in
# https://github.com/vllm-project/vllm/issues/2826, pasted from the Ray forum).
_QUOTES = "'\"‘’“”"


def unquoted(text: str) -> str:
    """A name without the quotes a damaged paste left around it: a matching pair, a typographic
    pair, or a lone quote at either end (``'/models/Qwen3-8B`` -> ``/models/Qwen3-8B``)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text.strip(_QUOTES) if text[:1] in _QUOTES or text[-1:] in _QUOTES else text
