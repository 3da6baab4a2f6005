"""The pyparsing grammar behind ``parsers.pyrepr`` (imported on first use: pyparsing is slow to import)."""

from __future__ import annotations

import re
from typing import Any

import pyparsing as pp

from timeline.parsers.pyrepr import (
    ANGLE,
    BUILDERS,
    CALL_OPENER,
    CONSTANT,
    CONSTANTS,
    DICT_KEY,
    IDENT,
    NUMBER,
    STRING,
    TYPOGRAPHIC,
    ReprError,
    dict_key,
    number_value,
    string_value,
)

__all__ = ["ReprError", "parse_value", "parse_keyword_repr"]


class _Box:
    """Holds a parsed value so that pyparsing never flattens lists or tuples into tokens."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Kw:
    """A ``name=value`` argument inside a call."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value


class _Junk:
    """Text of an item that could not be read."""

    __slots__ = ("text", "loc")

    def __init__(self, text: str, loc: int) -> None:
        self.text = text
        self.loc = loc


_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = frozenset(")]}>")


def _boundary_after(text: str, loc: int, boundary: re.Pattern[str], closer: str) -> int:
    """Where the unreadable item starting at ``loc`` ends: the next top-level separator matching
    ``boundary`` (which starts at a ``,``), the ``closer`` bracket of the enclosing repr, or the end.

    Quotes are honoured, and ``<...>`` object reprs (a ``<`` where a value starts) are skipped
    whole. There is deliberately no guessing across unbalanced brackets: in a text cut short,
    a ``, name=`` inside a cut string or nested repr belongs to the inner value, and taking it
    as a top-level item would invent a field.
    """
    depth = 0
    quote = ""
    angle = 0
    prev = "="  # the last significant character outside quotes and angle reprs
    i = loc
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
                prev = c
        elif angle:
            if c == "<":
                angle += 1
            elif c == ">":
                angle -= 1
                prev = c
        elif c in "'\"":
            quote = c
        elif c == "<" and prev in "=:,([{":
            angle = 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                if c == closer and i > loc:
                    return i
            else:
                depth -= 1
        elif c == "," and depth == 0 and i > loc and boundary.match(text, i):
            return i  # an item is at least one character long
        if c != " " and not quote and not angle:
            prev = c
        i += 1
    return n


class _JunkItem(pp.Token):
    """Consumes one unreadable item, up to the next top-level separator."""

    def __init__(self, boundary: re.Pattern[str], closer: str) -> None:
        super().__init__()
        self.boundary = boundary
        self.closer = closer
        self.mayReturnEmpty = False
        self.errmsg = "unreadable item"

    def parseImpl(self, instring: str, loc: int, do_actions: bool = True):  # noqa: N802 - pyparsing API
        if loc >= len(instring) or instring[loc] == self.closer:
            raise pp.ParseException(instring, loc, self.errmsg, self)
        end = _boundary_after(instring, loc, self.boundary, self.closer)
        return end, _Junk(instring[loc:end].rstrip(), loc)


def _unbox(tok: Any) -> Any:
    return tok.value if isinstance(tok, _Box) else tok


def _string(toks: pp.ParseResults) -> _Box:
    return _Box(string_value(toks[0]))


def _number(toks: pp.ParseResults) -> _Box:
    return _Box(number_value(toks[0]))


def _as(kind: type):
    def action(toks: pp.ParseResults) -> _Box:
        return _Box(kind(_unbox(t) for t in toks))

    return action


def _dict(toks: pp.ParseResults) -> _Box:
    return _Box({dict_key(_unbox(pair[0])): _unbox(pair[1]) for pair in toks})


def _call(s: str, loc: int, toks: pp.ParseResults) -> _Box:
    start, parts, end = toks[0], toks[1][0], toks[2]
    name, args = parts[0], list(parts[1:])
    if name in BUILDERS:
        if not args:
            return _Box(BUILDERS[name]())
        if len(args) == 1 and not isinstance(args[0], _Kw):
            inner = _unbox(args[0])
            if name in ("set", "frozenset", "list") and isinstance(inner, (list, tuple)):
                return _Box(list(inner))
            if name == "tuple" and isinstance(inner, (list, tuple)):
                return _Box(tuple(inner))
            if name == "dict" and isinstance(inner, dict):
                return _Box(inner)
    if all(isinstance(a, _Kw) for a in args):
        return _Box({a.name: a.value for a in args})
    return _Box(s[start:end])


def _build() -> pp.ParserElement:
    lpar, rpar, lbrk, rbrk, lbrc, rbrc, colon, eq, comma = map(pp.Suppress, "()[]{}:=,")
    value = pp.Forward()

    string = pp.Regex(STRING)
    string.set_parse_action(_string)
    number = pp.Regex(NUMBER)
    number.set_parse_action(_number)
    constant = pp.Regex(CONSTANT)
    constant.set_parse_action(lambda t: _Box(CONSTANTS[t[0]]))
    angle = pp.Regex(ANGLE)
    angle.set_parse_action(lambda t: _Box(t[0]))
    name = pp.Regex(r"[A-Za-z_][\w.]*")

    kwarg = (pp.Regex(IDENT) + eq + value).set_parse_action(lambda t: _Kw(t[0], _unbox(t[1])))
    args = pp.Optional(pp.DelimitedList(kwarg | value) + pp.Optional(comma))
    call = pp.Located(pp.Group(name + lpar + args + rpar)).set_parse_action(_call)
    bare = name.copy().set_parse_action(lambda t: _Box(t[0]))

    items = pp.Optional(pp.DelimitedList(value) + pp.Optional(comma))
    list_ = (lbrk + items + rbrk).set_parse_action(_as(list))
    empty_tuple = (lpar + rpar).set_parse_action(lambda: _Box(()))
    tuple_ = (lpar + value + comma + items + rpar).set_parse_action(_as(tuple))
    group = lpar + value + rpar  # "(x)" is just x
    pair = pp.Group(value + colon + value)
    dict_ = (lbrc + pp.Optional(pp.DelimitedList(pair) + pp.Optional(comma)) + rbrc).set_parse_action(_dict)
    set_ = (lbrc + items + rbrc).set_parse_action(_as(list))

    value <<= string | number | constant | angle | call | list_ | empty_tuple | tuple_ | group | dict_ | set_ | bare
    return value


_VALUE = _build()
_VALUE_ALL = _VALUE + pp.StringEnd()

# Top-level items of "Name(k=v, ...)" and "{'k': v, ...}", with recovery at the next item.
_CALL_SEP = re.compile(r",\s*" + IDENT + r"\s*=(?!=)")
_DICT_SEP = re.compile(r""",\s*(?:'[^'\\]*'|"[^"\\]*"|""" + TYPOGRAPHIC + r""")\s*:""")
_CLOSED = "\x00closed"


def _top_grammar(opener: str, closer: str, item: pp.ParserElement, sep: re.Pattern[str]) -> pp.ParserElement:
    comma = pp.Suppress(",")
    # A value must end at a comma, the closing bracket or the end of the text; anything else
    # ("x=1 2") makes the whole item unreadable.
    ends = pp.FollowedBy(pp.Regex(r"\s*[," + re.escape(closer) + "]") | pp.StringEnd())
    good = (item + ends).set_parse_action(lambda s, loc, t: (_unbox(t[0]), _unbox(t[1])))
    one = good | _JunkItem(sep, closer)
    close = pp.Literal(closer).set_parse_action(lambda: _CLOSED)
    return pp.Regex(opener) + pp.Optional(one + pp.ZeroOrMore(comma + one)) + pp.Optional(comma) + pp.Optional(close)


_CALL_ITEM = pp.Regex(IDENT) + pp.Suppress("=") + _VALUE
_DICT_ITEM = pp.Regex(DICT_KEY).set_parse_action(_string) + pp.Suppress(":") + _VALUE
_FORMS = {
    "call": _top_grammar(CALL_OPENER, ")", _CALL_ITEM, _CALL_SEP),
    "dict": _top_grammar(r"\{", "}", _DICT_ITEM, _DICT_SEP),
}


def parse_value(text: str) -> Any:
    """Read one complete repr value; raise ``ReprError`` if the text is not one."""
    try:
        toks = _VALUE_ALL.parse_string(text.strip(), parse_all=True)
    except (pp.ParseBaseException, RecursionError) as exc:
        raise ReprError(str(exc)) from None
    return _unbox(toks[0])


def _excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_keyword_repr(text: str) -> tuple[dict[str, Any], list[str]]:
    """Read ``Name(k=v, ...)`` or ``{'k': v, ...}`` into a dict, tolerating damage.

    Returns ``(fields, problems)``; ``problems`` is empty when the whole text was read. Never
    raises.
    """
    body = text.strip()
    if body.startswith("{"):
        form, closer = "dict", "}"
    elif re.match(CALL_OPENER, body):
        form, closer = "call", ")"
    else:
        return {}, [f"not a Name(...) or {{...}} repr: {_excerpt(body)!r}"]
    grammar = _FORMS[form]
    try:
        found = next(grammar.scan_string(body, max_matches=1), None)
    except (pp.ParseBaseException, RecursionError) as exc:
        return {}, [f"unreadable repr ({type(exc).__name__})"]
    if found is None:
        return {}, [f"unreadable repr: {_excerpt(body)!r}"]
    toks, _start, end = found
    items = list(toks)[1:]
    closed = bool(items) and items[-1] == _CLOSED
    if closed:
        items.pop()

    problems = []
    if not closed:
        # Cut short: the last item may be incomplete (a number cut to fewer digits looks fine).
        dropped = ""
        if items and not body[:end].rstrip().endswith(","):
            last = items.pop()
            dropped = str(last[0]) if isinstance(last, tuple) else _excerpt(last.text)
        problems.append(
            f"line cut short (no closing {closer!r})"
            + (f"; dropped the last, maybe incomplete item {dropped!r}" if dropped else "")
        )
    fields: dict[str, Any] = {}
    junk: list[_Junk] = []
    for it in items:
        if isinstance(it, tuple):
            fields[str(it[0])] = it[1]
        elif isinstance(it, _Junk):
            junk.append(it)
    if junk:
        shown = ", ".join(repr(_excerpt(j.text)) for j in junk[:3])
        more = f" and {len(junk) - 3} more" if len(junk) > 3 else ""
        problems.append(f"could not read {len(junk)} item(s): {shown}{more}")
    unread = body[end:].strip()
    if closed and unread:
        problems.append(f"unexpected text after the closing {closer!r}: {_excerpt(unread)!r}")
    return fields, problems
