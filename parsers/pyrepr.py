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
last, possibly incomplete, one.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

__all__ = ["ReprError", "parse_value", "parse_keyword_repr"]


class ReprError(ValueError):
    """The text is not a value this grammar can read."""


def parse_value(text: str) -> Any:
    """Read one complete repr value; raise ``ReprError`` if the text is not one."""
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
    from timeline.parsers import _repr_grammar

    fields, problems = _repr_grammar.parse_keyword_repr(text)
    flat = all(value is None or isinstance(value, (str, int, float)) for value in fields.values())
    return fields, tuple(problems), flat
