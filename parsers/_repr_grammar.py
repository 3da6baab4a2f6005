"""The pyparsing grammar behind ``parsers.pyrepr`` (imported on first use: pyparsing is slow to import)."""

from __future__ import annotations

import ast
import re
from typing import Any

import pyparsing as pp

from timeline.parsers.pyrepr import ReprError

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
    text = toks[0]
    prefix = text[: len(text) - len(text.lstrip("rRbBuU"))]
    if "b" in prefix.lower():
        return _Box(text)  # bytes: keep the repr text
    try:
        return _Box(ast.literal_eval(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _Box(text[len(prefix) + 1 : -1])


def _number(toks: pp.ParseResults) -> _Box:
    text = toks[0]
    if any(c in text for c in ".eEin"):
        return _Box(float(text))
    return _Box(int(text))


def _as(kind: type):
    def action(toks: pp.ParseResults) -> _Box:
        return _Box(kind(_unbox(t) for t in toks))

    return action


def _dict(toks: pp.ParseResults) -> _Box:
    out: dict[Any, Any] = {}
    for pair in toks:
        key = _unbox(pair[0])
        try:
            hash(key)
        except TypeError:
            key = repr(key)
        out[key] = _unbox(pair[1])
    return _Box(out)


_EMPTY = {"set": list, "frozenset": list, "list": list, "tuple": tuple, "dict": dict}


def _call(s: str, loc: int, toks: pp.ParseResults) -> _Box:
    start, parts, end = toks[0], toks[1][0], toks[2]
    name, args = parts[0], list(parts[1:])
    if name in _EMPTY:
        if not args:
            return _Box(_EMPTY[name]())
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


IDENT = r"[A-Za-z_]\w*"
# Quotes a forum or chat tool put in place of ASCII ones in a pasted log (model=‘mistralai/...’ in
# https://github.com/vllm-project/vllm/issues/2826): a string all the same (_string keeps the text inside).
TYPOGRAPHIC = r"‘[^‘’]*’|“[^“”]*”"


def _build() -> pp.ParserElement:
    lpar, rpar, lbrk, rbrk, lbrc, rbrc, colon, eq, comma = map(pp.Suppress, "()[]{}:=,")
    value = pp.Forward()

    string = pp.Regex(r"""(?:[rRbBuU]{1,2})?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|""" + TYPOGRAPHIC)
    string.set_parse_action(_string)
    number = pp.Regex(r"[-+]?(?:(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][-+]?\d+)?|inf|nan)(?![\w.])")
    number.set_parse_action(_number)
    constant = pp.Regex(r"(?:True|False|None)(?![\w.])")
    constant.set_parse_action(lambda t: _Box({"True": True, "False": False, "None": None}[t[0]]))
    angle = pp.Regex(r"<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>")
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
_DICT_ITEM = (
    pp.Regex(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|""" + TYPOGRAPHIC).set_parse_action(_string)
    + pp.Suppress(":")
    + _VALUE
)
_FORMS = {
    "call": _top_grammar(r"[A-Za-z_][\w.]*\(", ")", _CALL_ITEM, _CALL_SEP),
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
    elif re.match(r"[A-Za-z_][\w.]*\(", body):
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
