"""A tolerant reader for Python ``repr`` text, without ``eval``.

SGLang prints its configuration as ``server_args=ServerArgs(k=v, ...)`` (a dataclass repr, up
to 0.5.18) or ``server_args={'k': v, ...}`` (a dict repr, 0.5.19+). Neither is always a Python
literal: nested dataclass reprs (``CudaGraphConfig(decode=PhaseConfig(...))``), ``inf``/``nan``
floats and object reprs such as ``<function foo at 0x7f...>`` occur. The grammar below (pyparsing)
turns such text into plain values:

=========================================  ===========================================
repr text                                  value
=========================================  ===========================================
``'text'``, ``"it's"``                     ``str`` (escapes decoded)
``12``, ``-3``, ``0.88``, ``1e-05``         ``int`` / ``float``
``inf``, ``-inf``, ``nan``                 ``float``
``True``, ``False``, ``None``              ``bool`` / ``None``
``[...]``, ``(...)``, ``{k: v}``           ``list``, ``tuple``, ``dict``
``{1, 2}``, ``set()``, ``frozenset(...)``  ``list`` (JSON-friendly)
``Name(k=v, ...)``, ``Name()``             ``dict`` of the keyword arguments (type name dropped)
``Name(positional, ...)``                  the source text (``str``)
``<function foo at 0x7f>``, bare names     the source text (``str``)
=========================================  ===========================================

``parse_keyword_repr`` reads a whole ``Name(k=v, ...)`` or ``{'k': v, ...}`` text item by item:
an item that cannot be read is skipped up to the next top-level ``, name=`` (or ``, 'name': ``)
and reported, and a text cut short (no closing bracket) keeps every complete item but drops its
last, possibly incomplete, one. A whole text whose values are all strings, numbers, ``True``,
``False`` or ``None`` (most ``server_args`` lines) is read by regular expressions made of the
grammar's own tokens, to the same fields: pyparsing and the grammar (about 0.05 s) are imported
only for a text that has something else.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
from typing import Any

__all__ = ["ReprError", "parse_value", "parse_keyword_repr"]


class ReprError(ValueError):
    """The text is not a value this grammar can read."""


# The grammar's tokens (parsers/_repr_grammar.py builds its pyparsing grammar from them).
IDENT = r"[A-Za-z_]\w*"
# Quotes a forum or chat tool put in place of ASCII ones in a pasted log (model=‘mistralai/...’ in
# https://github.com/vllm-project/vllm/issues/2826): a string all the same (string_value keeps the text inside).
TYPOGRAPHIC = r"‘[^‘’]*’|“[^“”]*”"
STRING = r"""(?:[rRbBuU]{1,2})?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|""" + TYPOGRAPHIC
# Digits with single underscores between them, as int() and float() take them (PEP 515): "1__0" is
# no number, and int() would raise on it.
_DIGITS = r"\d(?:_?\d)*"
NUMBER = rf"[-+]?(?:(?:{_DIGITS})?\.?{_DIGITS}(?:[eE][-+]?{_DIGITS})?|inf|nan)(?![\w.])"
CONSTANT = r"(?:True|False|None)(?![\w.])"
CONSTANTS = {"True": True, "False": False, "None": None}
ANGLE = r"<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>"  # <function f at 0x7f...>: its text
DICT_KEY = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|""" + TYPOGRAPHIC
CALL_OPENER = r"[A-Za-z_][\w.]*\("


def string_value(text: str) -> Any:
    """A string token's value: its escapes decoded; a bytes literal or a string Python cannot
    read (typographic quotes) kept as text."""
    prefix = text[: len(text) - len(text.lstrip("rRbBuU"))]
    if "b" in prefix.lower():
        return text  # bytes: keep the repr text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text[len(prefix) + 1 : -1]


def number_value(text: str) -> int | float:
    """A number token's value; an integer of more digits than ``int()`` converts (4,300 by
    default, ``sys.get_int_max_str_digits``) as a float."""
    if any(c in text for c in ".eEin"):
        return float(text)
    try:
        return int(text)
    except ValueError:
        return float(text)


def dict_key(key: Any) -> Any:
    """A dict repr's key as a key of the value read: itself, or its repr when it is unhashable."""
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


# The quick reader: the grammar's tokens as regular expressions (an atomic group: the token
# pyparsing's own match gives, never a shorter one), pyparsing's default whitespace between them.
_SPACE = " \t\n\r"
_TOKEN = re.compile(f"(?>(?P<string>{STRING})|(?P<number>{NUMBER})|(?P<constant>{CONSTANT})|(?P<angle>{ANGLE}))")
_CALL_START = re.compile(CALL_OPENER)
_KEYWORD = re.compile(f"[ \t\n\r]*({IDENT})[ \t\n\r]*=")
_DICT_KEY = re.compile(f"[ \t\n\r]*({DICT_KEY})[ \t\n\r]*:")
# Calls the grammar reads as the container they build, ``set()`` as ``[]`` (JSON has no set): left
# to it by the quick reader.
BUILDERS: dict[str, type] = {"set": list, "frozenset": list, "list": list, "tuple": tuple, "dict": dict}


def _skip(text: str, at: int) -> int:
    """Past the whitespace at ``at``."""
    while text[at : at + 1] and text[at] in _SPACE:
        at += 1
    return at


class _Unread(Exception):
    """Something the quick reader leaves to the grammar."""


# How deep the quick reader nests: a server_args text nests a few levels (CudaGraphConfig(
# PhaseConfig(...))); a deeper one goes to the grammar, which reports what it cannot read. A value
# nested 900 deep read here overflowed the recursion of the copy parse_keyword_repr hands out.
QUICK_DEPTH = 32


def _quick_value(text: str, at: int, depth: int = 0) -> tuple[Any, int]:
    """The value starting at ``at`` (after whitespace) and where it ends, as the grammar reads
    it, when it is a string, a number, a constant, an ``<object>`` repr, or a list, dict or
    ``Name(k=v, ...)`` of such values; raises ``_Unread`` for anything else (a bare name, a tuple,
    a set, a positional argument, a trailing comma): tried in the grammar's order, each form told
    by its first characters; nested deeper than ``QUICK_DEPTH``, ``_Unread`` too."""
    if depth > QUICK_DEPTH:
        raise _Unread
    at = _skip(text, at)
    token = _TOKEN.match(text, at)
    if token is not None:
        if token["string"] is not None:
            return string_value(token["string"]), token.end()
        if token["number"] is not None:
            return number_value(token["number"]), token.end()
        if token["constant"] is not None:
            return CONSTANTS[token["constant"]], token.end()
        return token["angle"], token.end()
    call = _CALL_START.match(text, at)
    if call is not None:
        if text[at : call.end() - 1] in BUILDERS:
            raise _Unread
        return _quick_items(text, call.end(), ")", depth + 1, keywords=True)
    if text.startswith("[", at):
        values: list[Any] = []
        at = _skip(text, at + 1)
        if text.startswith("]", at):
            return values, at + 1
        while True:
            value, at = _quick_value(text, at, depth + 1)
            values.append(value)
            at = _skip(text, at)
            if text.startswith("]", at):
                return values, at + 1
            if not text.startswith(",", at):
                raise _Unread
            at += 1
    if text.startswith("{", at):
        return _quick_items(text, at + 1, "}", depth + 1, keywords=False)
    raise _Unread


def _quick_items(text: str, at: int, closer: str, depth: int, *, keywords: bool) -> tuple[dict[Any, Any], int]:
    """The ``k=v`` items of a call (``keywords``) or the ``k: v`` pairs of a dict after its
    opening bracket, up to ``closer``: as a dict, and where it ends."""
    fields: dict[Any, Any] = {}
    at = _skip(text, at)
    if text.startswith(closer, at):
        return fields, at + 1
    while True:
        if keywords:
            key = _KEYWORD.match(text, at)
            if key is None:
                raise _Unread
            name, at = key[1], key.end()
        else:
            name, at = _quick_value(text, at, depth)
            at = _skip(text, at)
            if not text.startswith(":", at):
                raise _Unread  # a set: {1, 2}
            name, at = dict_key(name), at + 1
        fields[name], at = _quick_value(text, at, depth)
        at = _skip(text, at)
        if text.startswith(closer, at):
            return fields, at + 1
        if not text.startswith(",", at):
            raise _Unread
        at += 1


def _quick_fields(body: str) -> dict[str, Any] | None:
    """The fields of a whole stripped ``Name(k=v, ...)`` or ``{'k': v, ...}`` text, as the
    grammar reads them without a problem, when the quick reader reads every value; else None."""
    try:
        if body.startswith("{"):
            item, closer, at = _DICT_KEY, "}", 1
        else:
            opener = _CALL_START.match(body)
            if opener is None:
                return None
            item, closer, at = _KEYWORD, ")", opener.end()
        fields: dict[str, Any] = {}
        while True:
            key = item.match(body, at)
            if key is None:
                return None
            name = key[1] if closer == ")" else str(string_value(key[1]))
            fields[name], at = _quick_value(body, key.end())
            at = _skip(body, at)
            if body.startswith(closer, at):
                return fields if at + 1 == len(body) else None
            if not body.startswith(",", at):
                return None
            at += 1
    except (_Unread, RecursionError):
        return None


def parse_value(text: str) -> Any:
    """Read one complete repr value; raise ``ReprError`` if the text is not one."""
    body = text.strip()
    try:
        value, at = _quick_value(body, 0)
        if at == len(body):
            return value
    except (_Unread, RecursionError):
        pass
    from timeline.parsers import _repr_grammar

    return _repr_grammar.parse_value(text)


def parse_keyword_repr(text: str) -> tuple[dict[str, Any], list[str]]:
    """Read ``Name(k=v, ...)`` or ``{'k': v, ...}`` into a dict, tolerating damage.

    Returns ``(fields, problems)``; ``problems`` is empty when the whole text was read. Never
    raises. A server restarted many times in one log prints the same ``server_args`` text each
    time: the result of a text is remembered (a fresh copy each call).
    """
    fields, problems, flat = _read_keyword_repr(text)
    return dict(fields) if flat else copy.deepcopy(fields), list(problems)  # a copy the caller may change


@functools.lru_cache(maxsize=64)
def _read_keyword_repr(text: str) -> tuple[dict[str, Any], tuple[str, ...], bool]:
    """``parse_keyword_repr``'s fields and problems, and whether every value is immutable (a
    shallow copy is then a whole one)."""
    fields = _quick_fields(text.strip())
    if fields is None:
        from timeline.parsers import _repr_grammar

        fields, problems = _repr_grammar.parse_keyword_repr(text)
    else:
        problems = []
    flat = all(value is None or isinstance(value, (str, int, float)) for value in fields.values())
    return fields, tuple(problems), flat
