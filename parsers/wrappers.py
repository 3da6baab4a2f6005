"""What the environment puts around log records, and how to take it off.

Launchers and terminals wrap the lines a server or benchmark client prints (``docker logs``:
https://docs.docker.com/reference/cli/docker/container/logs/; ``srun``'s ``--label``:
https://slurm.schedmd.com/srun.html; Ray's log prefixes and deduplication:
https://docs.ray.io/en/latest/ray-observability/user-guides/configure-logging.html):

* ``docker logs -t`` / ``kubectl logs --timestamps``: an RFC 3339 stamp with its zone first,
  ``2025-10-31T03:45:20.123456789Z ``. That stamp is the line's time (an aware datetime).
* Slurm ``srun -l``: the task number, ``0: ``, padded to the widest task (`` 3: `` with ten tasks
  or more), ``P0 3: `` for heterogeneous jobs.
* Ray actors, and vLLM's process tags: ``(SGLangEngine pid=111711, ip=10.15.36.1) ``,
  ``(APIServer pid=4155300) ``; Ray's deduplication suffix `` [repeated 7x across cluster]``.
* Python ``logging`` lines from a custom config (``SGLANG_LOGGING_CONFIG_PATH``) or an SGLang-family
  fork: ``2026-06-07 10:59:31,659 [INFO] Decode batch, ...``. ``as_sglang_bracket`` rewrites
  them into SGLang's own header, ``[2026-06-07 10:59:31.659] Decode batch, ...``.
* Records pasted on one physical line (a copy that lost its newlines): ``split_records``.

ANSI colours, ``\\r`` progress updates and CRLF line ends are handled by ``parsers.framing``.
Everything here is pure text work: no I/O, never raises.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = [
    "RFC3339_RE",
    "Outer",
    "strip_outer",
    "rfc3339",
    "as_sglang_bracket",
    "split_records",
    "NEEDS_NORMALIZING_RE",
    "Detector",
    "needs_normalizing",
    "normalize",
]

RFC3339_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d) ")
"""A ``docker logs -t`` stamp (with its zone, and the space after it)."""

_SLURM_RE = re.compile(r" *(?:P\d+ +)?\d{1,6}: ")
_ACTOR_RE = re.compile(r"\((?P<actor>[^()\[\]]{1,80}?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9A-Fa-f.:]+))?\) ")
_RAY_REPEATED_RE = re.compile(r" ?\[repeated \d+x across cluster\]\s*$")


class Outer:
    """The outer wrappers found on one line, and the text inside them."""

    __slots__ = ("text", "time", "time_text", "task", "actor", "pid")

    def __init__(self, text: str) -> None:
        self.text = text
        self.time: datetime | None = None  # aware, from a docker -t stamp
        self.time_text: str | None = None
        self.task: int | None = None  # srun -l task number
        self.actor: str | None = None  # Ray actor / vLLM process name
        self.pid: int | None = None


def rfc3339(m: re.Match[str]) -> datetime | None:
    """The aware datetime of an ``RFC3339_RE`` match (fraction cut to microseconds), or None."""
    year, month, day, hour, minute, second, frac, zone = m.groups()
    if zone == "Z":
        tz = timezone.utc
    else:
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        try:
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        except ValueError:
            return None
    try:
        return datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int((frac or "0")[:6].ljust(6, "0")),
            tzinfo=tz,
        )
    except ValueError:
        return None


def strip_outer(text: str) -> Outer:
    """Take off the docker stamp, the Slurm task label and the Ray/vLLM process tag, in that
    order (each optional), and Ray's ``[repeated Nx across cluster]`` suffix."""
    out = Outer(text)
    if not text:
        return out
    pos = 0
    first = text[0]
    if first.isdigit():
        m = RFC3339_RE.match(text)
        if m is not None:
            out.time = rfc3339(m)
            out.time_text = m.group(0)[:-1]
            pos = m.end()
    if first in " P0123456789" or pos:
        m = _SLURM_RE.match(text, pos)
        if m is not None:
            out.task = int(m.group(0).rstrip(": ").split()[-1])
            pos = m.end()
    if text.startswith("(", pos):
        m = _ACTOR_RE.match(text, pos)
        if m is not None:
            out.actor = m.group("actor")
            out.pid = int(m.group("pid"))
            pos = m.end()
    rest = text[pos:] if pos else text
    if rest.endswith("]") and "across cluster" in rest:
        rest = _RAY_REPEATED_RE.sub("", rest)
    out.text = rest
    return out


# --------------------------------------------------------------------------- Python logging

# ``2026-06-07 10:59:31,659 [INFO] msg``, ``2026-06-07 10:59:31,659 [INFO] sglang.srt.x: msg``,
# ``2026-06-07 10:59:31,659 - name - INFO - msg``,
# ``[2026-06-07 10:59:31,659] [INFO] msg``, ``2026-06-07 10:59:31 INFO file.py:12: msg``.
_PYLOG_RE = re.compile(
    r"(?P<open>\[)?(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:(?P<sep>[,.])(?P<frac>\d{1,6}))?"
    r"(?(open)\])"
    r"(?P<fields>(?:\s*(?:-|\||\[[^\[\]]{1,60}\]|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b:?"
    r"|[\w.\-]+\.py:\d+:?|[\w.\-]+(?=\s+-\s+(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b)"
    r"|[a-z_]\w*(?:\.\w+)+:(?=\s)"  # a dotted logger name, "sglang.srt.managers.scheduler: "
    r"|\d+(?=\s+\[)))*)"  # a process id before "[file.py:LINE]"
    r"\s*(?:-\s+)?"
)
_RANK_TAG_RE = re.compile(r"\b(?:[A-Z][A-Z_]*\d+)\b")
_SGLANG_BRACKET_RE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?(?: [A-Z_]+\d+)*\](?: |$)")


def as_sglang_bracket(text: str) -> str | None:
    """A Python-logging style line rewritten into SGLang's header form, or None if it is not one.

    ``2026-06-07 10:59:31,659 [INFO] [TP0] Decode batch, ...`` becomes
    ``[2026-06-07 10:59:31.659 TP0] Decode batch, ...``: the level and logger name are dropped
    (SGLang's own format has neither), rank tags such as ``TP0`` inside brackets are kept. A line
    already in SGLang's form is left alone (None).
    """
    if text[:1] == "[" and _SGLANG_BRACKET_RE.match(text):
        return None
    if "Decode batch" in text or "Prefill batch" in text:
        return None  # SGLang's parser reads stats lines after any logging prefix itself (sglang.find_message)
    m = _PYLOG_RE.match(text)
    if m is None or (m.end() < len(text) and not text[m.end() - 1].isspace() and m.group("fields") == ""):
        return None
    if m.group("open") and m.group("sep") in (None, ".") and not m.group("fields"):
        return None  # "[2026-01-01 10:00:00]" with no space after: not a record header
    ranks = []
    for token in re.findall(r"\[([^\[\]]{1,60})\]", m.group("fields")):
        tags = _RANK_TAG_RE.findall(token)
        if tags and " ".join(tags) == token.strip():
            ranks.extend(tags)
    stamp = m.group("date") + " " + m.group("time")
    if m.group("frac"):
        stamp += "." + m.group("frac")
    if ranks:
        stamp += " " + " ".join(ranks)
    return f"[{stamp}] {text[m.end() :]}"


# --------------------------------------------------------------------------- pasted records

# Where a record starts: SGLang's header (dated, or time-only with a rank tag), a vLLM header, a
# Python-logging stamp, a bench result header. Wrappers (docker stamp, srun label, Ray/vLLM tag)
# may come before any of these.
_MD = r"(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"  # a real month and day
_HMS = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"  # a real time of day
_RECORD_CORE = (
    r"(?:"
    r"\[\d{4}-" + _MD + " " + _HMS + r"(?:\.\d{1,6})?(?: [A-Z_]+\d+)*\] "
    r"|\[" + _HMS + r"(?: [A-Z_]+\d+)+\] "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) " + _MD + " " + _HMS + " "
    r"|\d{4}-" + _MD + " " + _HMS + r",\d{3} "
    r"|={5,} ?[A-Z][A-Za-z ]+ Result ?={5,}"
    r")"
)
_RECORD_START = (
    r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) )?"
    r"(?:\([^()\[\]]{1,80}? pid=\d+[^()]{0,40}\) )?" + _RECORD_CORE
)
_PASTED_RE = re.compile(r"(?<=\S)[ \t]*(?=" + _RECORD_START + ")")


def split_records(text: str) -> list[str]:
    """Split a physical line holding several records (pasted without their newlines).

    A record start preceded only by wrappers (``0: [2026-...``, ``(Actor pid=1) INFO ...``) is
    not a cut: the wrappers belong to the record.
    """
    parts: list[str] = []
    start = 0
    for m in _PASTED_RE.finditer(text):
        cut = m.start()
        if cut <= start:
            continue
        piece = text[start : m.end()]
        if not strip_outer(piece).text.strip():
            continue  # only wrappers so far: same record
        piece = text[start:cut].strip()
        if piece:
            parts.append(piece)
        start = m.end()
    if not parts:
        return [text]
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


# --------------------------------------------------------------------------- chunks


class Detector:
    """Answers ``search(text)`` like a compiled regex (truthy when found, else None), with cheap
    substring tests first: the dispatch asks it of every block of lines (parsers.parse_file), and
    the fast path of every new line shape (parsers.sglang_fast)."""

    __slots__ = ("_test",)

    def __init__(self, test) -> None:
        self._test = test

    def search(self, text: str):
        return True if text and self._test(text) else None


_SRUN_LINE_RE = re.compile(r"\n(?: +\d{1,6}: |P\d+ +\d{1,6}: )")
_SRUN_FIRST_RE = re.compile(r"(?: +\d{1,6}: |P\d+ +\d{1,6}: )")
_PYLOG_LINE_RE = re.compile(r"\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[\s,.]")
_PYLOG_FIRST_RE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[\s,.]")
_PYLOG_BRACKET_RE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d")
_SG_STAMP_RE = re.compile(r"\[\d{4}-" + _MD + " " + _HMS + r"(?:\.\d{1,6})?(?: [A-Z_]+\d+)*\] ")
_TIME_ONLY_RE = re.compile(r"\[" + _HMS + r"(?: [A-Z_]+\d+)+\] ")
_VLLM_STAMP_RE = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) " + _MD + " " + _HMS + " ")
_BENCH_HEAD_RE = re.compile(r"={5,} ?[A-Z][A-Za-z ]+ Result ?={5,}")


def _pasted(text: str, pattern: re.Pattern[str]) -> bool:
    """Does ``pattern`` (a record start) occur after something other than wrappers on its line?"""
    for m in pattern.finditer(text):
        i = m.start()
        if i == 0 or text[i - 1] == "\n":
            continue
        start = text.rfind("\n", 0, i) + 1
        if strip_outer(text[start:i]).text.strip():
            return True
    return False


def needs_normalizing(text: str, firsts: set[str] | frozenset[str] | None = None) -> bool:
    """Would ``normalize`` change any line of ``text`` (lines joined by newlines)? Cheap first.

    ``firsts``: the first characters of the lines, when the caller has them at hand.
    """
    first = text[:1]
    if firsts is None:
        firsts = {line[:1] for line in text.split("\n")} if "\n" in text else {first}
    if "across cluster]" in text:
        return True
    if (" " in firsts or "P" in firsts) and (_SRUN_FIRST_RE.match(text) or _SRUN_LINE_RE.search(text)):
        return True
    if "2" in firsts and (_PYLOG_FIRST_RE.match(text) or _PYLOG_LINE_RE.search(text)):
        return True
    if _PYLOG_BRACKET_RE.search(text, 0, 8192):  # a whole-file format: the block's first lines show it
        return True
    count = text.count("[20")
    if count and count != text.count("\n[20") + text.startswith("[20") and _pasted(text, _SG_STAMP_RE):
        return True
    if "INFO " in text and _pasted(text, _VLLM_STAMP_RE):
        return True
    if "Result" in text and _pasted(text, _BENCH_HEAD_RE):
        return True
    return first == "[" and text[3:4] == ":" and _pasted(text, _TIME_ONLY_RE)


NEEDS_NORMALIZING_RE = Detector(needs_normalizing)
"""Finds, in a block of lines joined by newlines, anything ``normalize`` would change."""


def normalize(text: str) -> list[str]:
    """One physical line -> its records, each with padded Slurm labels dropped, Python-logging
    headers rewritten into SGLang's form, Ray's ``[repeated Nx across cluster]`` dropped.
    Usually ``[text]``."""
    out = []
    if text.endswith("]") and "across cluster" in text:
        text = _RAY_REPEATED_RE.sub("", text)
    for record in split_records(text):
        m = _SLURM_RE.match(record)
        if m is not None and (record[0] == " " or record[0] == "P"):
            record = record[m.end() :]
        rewritten = None
        if record[:1].isdigit() or record[:1] == "[":
            rewritten = as_sglang_bracket(record)
        out.append(rewritten if rewritten is not None else record)
    return out
