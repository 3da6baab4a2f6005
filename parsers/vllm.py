"""vLLM server logs: one ``ParsedRun`` of kind ``vllm-server`` per launch.

Line format, by version (``vllm/logger.py``,
https://github.com/vllm-project/vllm/blob/main/vllm/logger.py, as shipped in each release's
wheel), after any wrapper (``parsers.wrappers``: docker
stamp, ``srun -l`` label, the ``(APIServer pid=N)`` / ``(VllmWorkerProcess pid=N)`` process tag):

* 0.5.5 - 0.7.3: ``LEVEL MM-DD HH:MM:SS file.py:LINE] message`` (no ``[`` before the file);
* 0.8.0 - 0.25: ``LEVEL MM-DD HH:MM:SS [file.py:LINE] message`` (0.10+: ``[v1/engine/core.py:LINE]``
  with ``VLLM_LOGGING_LEVEL=DEBUG``); 0.6+ may put ``VLLM_LOGGING_PREFIX`` text first;
* 0.33: ``(ProcessName pid=N) LEVEL MM-DD HH:MM:SS [file:LINE] message``.

Stamps have **no year** (and no zone). The year comes from a dated line of the same file when there
is one (a ``docker logs -t`` stamp, an NCCL ``[YYYY-MM-DD ...]`` warning, ...), else from the file's
mtime (the last stamp is at or before it, ``parsers.dates``); a new year is counted when the month
goes back (``12-31`` -> ``01-01``). A diagnostic says which. A line with a docker stamp takes that
stamp (aware) as its time.

Recognised messages:

* ``Avg prompt throughput: X tokens/s, Avg generation throughput: Y tokens/s, ...`` (V0, and V1 with
  ``Engine 000:`` / ``N Engines Aggregated:`` or no prefix): a ``decode`` sample with every field in
  snake_case (``prompt_throughput``, ``gen_throughput``, ``running``, ``waiting``, ``swapped``,
  ``pending``, ``gpu_kv_cache_usage``, ``prefix_cache_hit_rate``, ``preemptions``, ...; units
  dropped), ``engine`` when printed, ``rank`` = ``Engine 000`` (or None). Series:
  ``decode_throughput`` (``gen_throughput``, tok/s) and ``prompt_throughput`` (tok/s) of the lines
  that each measure one engine (``Engine 000:`` or no prefix); the ``N Engines Aggregated:`` lines
  (``AggregatedLoggingStatLogger`` of ``vllm/v1/metrics/loggers.py``, ``--aggregate-engine-logging``:
  the sum over the engines) have their own, ``aggregated_decode_throughput`` and
  ``aggregated_prompt_throughput``, so that no series mixes one engine's share with the total.
* ``SpecDecoding metrics: ...`` (V1) and ``Speculative metrics: ...`` (V0): a ``decode`` sample with
  ``accept_len`` (tokens per verify step, **including** the bonus token, as SGLang's ``accept len``)
  and the printed fields. vLLM 0.8.5 printed ``Mean acceptance length`` *without* the bonus token
  (0.9+ with it) under the same text: the definition is told from the numbers themselves
  (``accepted / drafts`` against the printed mean, with drafts = ``Drafted / len(per-position list)``),
  or from the version line, and 0.8.5 values get +1 (the sample keeps ``mean_acceptance_length``
  as printed). V0 has no mean: ``accept_len = emitted tokens / (draft tokens / k)``. Series ``accept_len``.
* configuration: ``vLLM API server version X`` / ``vLLM server version X, serving model M`` / the
  0.18+ ASCII logo (``version X`` / ``model M``), ``args: Namespace(...)`` / ``non-default args: {...}``,
  ``Initializing a V1 LLM engine (vX) with config: model='...', ...``. ``config`` holds them typed,
  ``vllm_version``, and SGLang-named aliases for comparisons (``model_path``, ``tp_size``,
  ``pp_size``, ``dp_size``) when absent.
* NCCL versions in any shape (``vLLM is using nccl==2.21.5``, ``NCCL version 2.21.5+cuda12.4``, ...).
* the GPU driver's CUDA version NCCL logs under ``NCCL_DEBUG=INFO`` (``NCCL INFO cudaDriverVersion
  12040``: ``12.4``).
* every other header line's message (the version and logo lines too): ``messages``
  (``timeline.records.message_key``); not the stats lines (with ``Prefix cache hit rate: GPU:``,
  which continues one), nor the args and engine-config lines.

An engine or args line hard-wrapped at a fixed width (a paste, a terminal: the break can fall inside
a key, ``num_sched`` / ``uler_steps=1, ...``) is joined back before it is read: the line that
follows it continues it when it has no header of its own and reads as the rest of a ``key=value``
list (it starts with the rest of a key or value up to its ``=`` or a ``, key=``), or when the line
broke after a ``=`` or inside a bracket (a ``compilation_config={...}``); for an args line, while
its ``Namespace(`` / ``{`` is still open. A piece as wide as the first continues it too. Read
alone, the first piece would give ``served_model_name='/m, num_sched'`` and lose every later field.

A run starts at a launch line (version, args or engine line) once the current run has stats or
already printed that line; lines before any launch line belong to the first run. Only NCCL or
weight-loading lines (what SGLang <= 0.4.1 prints through vLLM's logger, or an excerpt of worker
processes' lines) make no run: a ``no-vllm-run`` diagnostic says so (``parsers.parse_file`` drops
it when SGLang runs hold the lines). NCCL's own lines in such a file make no SGLang run either.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from timeline.columns import SampleRows
from timeline.parsers import values
from timeline.parsers.dates import ImpossibleStamps, describe_mtime, last_year, real_clock, real_month_day
from timeline.parsers.failures import exception_line, kept_error, note_failure, run_status
from timeline.parsers.pyrepr import parse_keyword_repr
from timeline.parsers.wrappers import Detector, strip_outer
from timeline.records import DateSource, Diagnostic, ParsedRun, add_message

__all__ = ["KIND", "HEADER_RE", "VLLMLogParser", "throughput_fields", "spec_fields", "HEADER_SEARCH_RE"]

KIND = "vllm-server"

HEADER_RE = re.compile(
    r"(?P<prefix>.{0,60}?)(?:\((?P<proc>[^()\[\]]{1,80}?) pid=(?P<pid>\d+)\) )?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<month>\d\d)-(?P<day>\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)? "
    r"\[?(?P<file>[^\s\[\]:]+):(?P<lineno>\d+)\] ?"
)
"""A vLLM logger header (after the outer wrappers). Message = ``text[m.end():]``."""

_HEADER_ANYWHERE_RE = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[^\s\[\]:]+:\d+\]"
)
HEADER_SEARCH_RE = Detector(lambda text: ("INFO " in text or "DEBUG " in text) and _HEADER_ANYWHERE_RE.search(text))
"""Finds a vLLM header (INFO or DEBUG: the levels of every line that matters) in a block of lines."""

_ENGINE_RE = re.compile(r"(?:Engine (?P<engine>\d+): |(?P<n>\d+) Engines Aggregated: )")
_VERSION_RES = (
    re.compile(r"vLLM API server version (?P<version>\S+)"),
    re.compile(r"vLLM server version (?P<version>[^\s,]+), serving model (?P<model>\S+)"),
    re.compile(r"█\s+version\s+(?P<version>\S+)\s*$"),
)
_LOGO_MODEL_RE = re.compile(r"█\s+model\s+(?P<model>\S+)\s*$")
# Before 0.4 the line names no version: "Initializing an LLM engine with config: ...".
_ENGINE_INIT_RE = re.compile(
    r"Initializing an? (?:V\d )?LLM engine (?:\(v(?P<version>[^)\s]+)\) )?with config: (?P<config>.*)$"
)
# Names a damaged paste may leave a quote on (values.unquoted)
_NAME_KEYS = ("model", "model_tag", "tokenizer", "served_model_name")
_ARGS_RE = re.compile(r"(?:non-default )?args: (?P<args>.*)$")
# The start of a piece continuing a hard-wrapped key=value list: the rest of a key or value up to
# its "=" (or a lone "="), or up to the ", key=" that starts the next item.
_CONTINUATION_RE = re.compile(r"\s*[^\s,=]*(?:=|,\s*[A-Za-z_]\w*=)")
_UNIT_SUFFIX_RE = re.compile(r"\s*(?:tokens/s|tokens|reqs|%)\.?$")
_DATED_RE = re.compile(r"\[?(\d{4})-(\d\d)-(\d\d)[ T]\d\d:\d\d:\d\d")

_THROUGHPUT_NAMES = {"avg_prompt_throughput": "prompt_throughput", "avg_generation_throughput": "gen_throughput"}
_SERIES_UNITS = {
    "decode_throughput": "tok/s",
    "prompt_throughput": "tok/s",
    "aggregated_decode_throughput": "tok/s",
    "aggregated_prompt_throughput": "tok/s",
    "accept_len": "tokens",
}
_ALIASES = (
    ("model", "model_path"),
    ("tensor_parallel_size", "tp_size"),
    ("pipeline_parallel_size", "pp_size"),
    ("data_parallel_size", "dp_size"),
)


def _typed(text: str) -> Any:
    """``1234.5 tokens/s`` -> 1234.5, ``8 reqs`` -> 8, ``12.3%`` -> 12.3, else the text without a
    closing full stop."""
    text = text.strip()
    typed = values.value(text, python_numbers=True, unit=_UNIT_SUFFIX_RE, int_percent=True, bools=False)
    if isinstance(typed, str) and text[:1].isdigit() and ", " not in text:
        return None  # a number damaged in a paste: no text in a numeric field (a list stays text)
    return typed.rstrip(".") if isinstance(typed, str) else typed


def _fields(body: str) -> dict[str, Any]:
    return {values.key(raw_key): _typed(raw_value) for raw_key, raw_value in values.split_fields(body.rstrip(". "))}


def throughput_fields(message: str) -> dict[str, Any] | None:
    """The fields of a periodic throughput line (``engine`` / ``engines_aggregated`` when printed),
    or None when the message is not one."""
    i = message.find("Avg prompt throughput:")
    if i < 0:
        return None
    out: dict[str, Any] = {}
    m = _ENGINE_RE.search(message, 0, i + 1)
    if m is not None and m.end() == i:
        if m.group("engine") is not None:
            out["engine"] = int(m.group("engine"))
        else:
            out["engines_aggregated"] = int(m.group("n"))
    for key, value in _fields(message[i:]).items():
        out[_THROUGHPUT_NAMES.get(key, key)] = value
    return out


def spec_fields(message: str, version: str | None = None) -> tuple[dict[str, Any], str | None] | None:
    """The fields of a speculative-decoding metrics line, with ``accept_len`` (bonus token
    included) when it can be known, and a note when the printed mean was converted; or None."""
    if message.startswith("SpecDecoding metrics: "):
        fields = _fields(message[len("SpecDecoding metrics: ") :])
        mean = fields.get("mean_acceptance_length")
        if not isinstance(mean, (int, float)):
            return fields, None
        note = None
        exclusive = _excludes_bonus(fields, version)
        if exclusive:
            fields["accept_len"] = round(float(mean) + 1.0, 6)
            note = "0.8.5"
        else:
            fields["accept_len"] = float(mean)
        return fields, note
    if message.startswith("Speculative metrics: "):
        fields = _fields(message[len("Speculative metrics: ") :])
        k = fields.get("number_of_speculative_tokens")
        draft = fields.get("number_of_draft_tokens")
        emitted = fields.get("number_of_emitted_tokens")
        if (
            isinstance(k, (int, float))
            and isinstance(draft, (int, float))
            and isinstance(emitted, (int, float))
            and draft
            and k
        ):
            fields["accept_len"] = round(float(emitted) * float(k) / float(draft), 6)
        return fields, None
    return None


def _excludes_bonus(fields: dict[str, Any], version: str | None) -> bool:
    """Does this ``Mean acceptance length`` leave out the bonus token (vLLM 0.8.5)?"""
    mean = float(fields["mean_acceptance_length"])
    accepted, drafted = fields.get("accepted"), fields.get("drafted")
    positions = fields.get("per_position_acceptance_rate")
    if isinstance(accepted, (int, float)) and isinstance(drafted, (int, float)) and drafted > 0:
        k = (
            len(str(positions).split(","))
            if isinstance(positions, str) and positions.strip()
            else (1 if isinstance(positions, (int, float)) else 0)
        )
        if k:
            per_draft = float(accepted) * k / float(drafted)  # accepted / num_drafts
            if abs(mean - per_draft) < 0.006:
                return True
            if abs(mean - (1 + per_draft)) < 0.006:
                return False
    if version is not None:
        return version.startswith("0.8.")
    return False


def _split_config(text: str) -> list[tuple[str, str]]:
    """``model='x', tokenizer=y, c={"a":1}`` -> raw ``(key, value)`` pairs, split at top-level
    commas that start a ``name=`` item."""
    pairs: list[str] = []
    depth = 0
    start = 0
    for i, c in values.outside_quotes(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0 and re.match(r",\s*[A-Za-z_]\w*=", text[i:]):
            pairs.append(text[start:i])
            start = i + 1
    pairs.append(text[start:])
    out = []
    for item in pairs:
        key, sep, value = item.strip().partition("=")
        if sep and re.fullmatch(r"[A-Za-z_]\w*", key.strip()):
            out.append((key.strip(), value.strip()))
    return out


def engine_config(text: str) -> dict[str, Any]:
    """The ``key=value, ...`` list of an ``Initializing ... LLM engine`` line, typed.

    0.5.x ends the list with an unmatched ``)`` (``..., enable_prefix_caching=True)``): dropped.
    """
    text = text.strip()
    if text.endswith(")") and values.bracket_depth(text) < 0:
        text = text[:-1]
    return {name: values.literal(text) for name, text in _split_config(text)}


class _Run:
    __slots__ = (
        "first_line",
        "last_line",
        "first_stamp",
        "last_stamp",
        "config",
        "nccl",
        "drivers",
        "decode",
        "prompt",
        "aggregated_decode",
        "aggregated_prompt",
        "accept",
        "stats",
        "samples",
        "launch",
        "has_config",
        "version",
        "messages",
        "ranks",
        "fatal",
        "error",
    )

    def __init__(self, keep_samples: bool) -> None:
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.first_stamp: Any = None
        self.last_stamp: Any = None
        self.config: dict[str, Any] = {}
        self.nccl: list[str] = []
        self.drivers: list[str] = []  # ParsedRun.cuda_driver_versions
        self.decode = array("d")
        self.prompt = array("d")
        # The "N Engines Aggregated:" lines: the total over the engines, never mixed with one engine's lines
        self.aggregated_decode = array("d")
        self.aggregated_prompt = array("d")
        self.accept = array("d")
        self.stats = 0
        self.samples: dict[str, SampleRows] | None = (
            {"decode": SampleRows(), "prefill": SampleRows()} if keep_samples else None
        )
        self.launch: dict[str, str] = {}  # launch line kind -> its text
        self.has_config = False
        self.version: str | None = None
        self.messages: dict[str, None] = {}  # ParsedRun.messages, distinct in first-seen order
        self.ranks: dict[str, array] = {}  # ParsedRun.rank_series: each engine's gen throughput
        self.fatal: tuple[int, str] | None = None  # the last fatal message (parsers.failures), (line, text)
        self.error: tuple[int, str] | None = None  # the last exception line no ordinary line followed

    def has_content(self) -> bool:
        return self.stats > 0 or self.has_config


class _Wrap:
    """An engine or args line that later lines may continue (hard-wrapped at a fixed width)."""

    __slots__ = ("run", "line", "kind", "pieces", "width", "last_width")

    def __init__(self, run: _Run, line: int, kind: str, text: str, width: int) -> None:
        self.run = run
        self.line = line
        self.kind = kind  # "engine" or "args"
        self.pieces = [text]
        self.width = width  # the whole first line's, wrapper and header included
        self.last_width = width

    def continued_by(self, text: str, width: int) -> bool:
        """Does ``text`` (a line with no vLLM header, ``width`` wide) continue the wrapped line?"""
        if not text or self.last_width != self.width:
            return False
        joined = "".join(self.pieces)
        reads_on = _CONTINUATION_RE.match(text) is not None
        if self.kind == "args":  # a Namespace(...) / {...} still open; not an indented traceback line
            return values.bracket_depth(joined) > 0 and (reads_on or not text[0].isspace())
        return len(self.pieces) > 1 or reads_on or joined.endswith("=") or values.bracket_depth(joined) > 0


class VLLMLogParser:
    """Feed it ``(line_number, text)`` pairs, then call ``finish()`` for runs and diagnostics."""

    def __init__(self, source: str, *, keep_samples: bool = False, mtime: float | None = None) -> None:
        self.source = source
        self.keep_samples = keep_samples
        self.mtime = mtime
        self.runs: list[ParsedRun] = []
        self.diagnostics: list[Diagnostic] = []
        self.headers = 0  # vLLM header lines seen
        self._header_lines: tuple[int, int] | None = None  # the first and last of them
        self._done: list[_Run] = []
        self._run = _Run(keep_samples)
        self._year_index = 0
        self._last_md: tuple[int, int] | None = None
        self._last_stamp: tuple[int, int, int, str] | None = None  # (year index, month, day, clock)
        self.impossible = ImpossibleStamps()  # stamps that are no real date and time (not read as times)
        self._wraps: list[int] = []  # line numbers where a new year began
        self._dated: tuple[int, date, int, tuple[int, int] | None] | None = None  # line, date, index, md
        self._bonus_lines: list[int] = []
        # The last stats line's sample, kept back from its rows: a "Prefix cache hit rate" line
        # after it adds to it.
        self._last_sample: tuple[SampleRows, dict[str, Any]] | None = None
        self._wrap: _Wrap | None = None  # an engine or args line read once no line continues it

    @property
    def open(self) -> bool:
        """A run is being built: every following line may matter."""
        return self._run.first_line is not None and self._run.has_content()

    # -- the loop -----------------------------------------------------------------------

    def feed(self, lineno: int, text: str) -> None:
        self.feed_all(((lineno, text),))

    def feed_all(self, lines: Iterable[tuple[int, str]]) -> None:
        for lineno, raw in lines:
            if not raw:
                continue
            outer = strip_outer(raw)
            text = outer.text
            m = HEADER_RE.match(text) if len(text) > 20 else None
            if self._wrap is not None:
                if m is None and self._wrap.continued_by(text, len(raw)):
                    self._wrap.pieces.append(text)
                    self._wrap.last_width = len(raw)
                    self._wrap.run.last_line = lineno
                    continue
                self._unwrap()
            if m is None:
                self._other(lineno, raw, outer)
                continue
            self.headers += 1
            self._header_lines = (self._header_lines or (lineno, lineno))[0], lineno
            month, day, clock = int(m.group("month")), int(m.group("day")), m.group("time")
            if outer.time is not None:
                stamp: Any = (outer.time, outer.time_text)
                if self._dated is None:
                    self._dated = (lineno, outer.time.date(), self._year_index, (month, day))
            elif real_clock(clock) and real_month_day(month, day):
                stamp = self._yearless(lineno, month, day, clock, text[m.start("month") : m.end("time")])
            else:  # no real date and time: tallied, not read as a time (nor as a year's turn)
                self.impossible.note(lineno, text[m.start("month") : m.end("time")])
                stamp = None
            self._message(lineno, text[m.end() :], stamp, m.group("level"), len(raw))
            if "nccl==" in text or "NCCL version" in text:
                self._nccl(text)

    def _yearless(self, lineno: int, month: int, day: int, clock: str, text: str) -> tuple:
        md = (month, day)
        if self._last_md is not None and md < self._last_md and self._last_md[0] - month >= 6:
            self._year_index += 1
            self._wraps.append(lineno)
        self._last_md = md
        if self._dated is not None and self._dated[3] is None:
            self._dated = (self._dated[0], self._dated[1], self._year_index, md)
        self._last_stamp = (self._year_index, month, day, clock)
        return ("yearless", self._year_index, month, day, clock, text)

    def _other(self, lineno: int, raw: str, outer: Any) -> None:
        run = self._run
        text = outer.text
        if run.first_line is not None:
            run.last_line = lineno
            error = exception_line(text)  # an uncaught traceback's end (the API server's: no logger)
            if error is not None:
                run.error = kept_error(run.error, lineno, error)
        if self._dated is None:
            when = outer.time.date() if outer.time is not None else None
            if when is None:
                d = _DATED_RE.match(text)
                if d is not None:
                    try:
                        when = date(int(d.group(1)), int(d.group(2)), int(d.group(3)))
                    except ValueError:
                        when = None
            if when is not None:
                self._dated = (lineno, when, self._year_index, self._last_md)
        if "NCCL" in text or "nccl==" in text:  # one test a line for the version and driver lines
            if "nccl==" in text or "NCCL version" in text:
                self._nccl(text)
            elif "cudaDriverVersion" in text:
                driver = values.cuda_driver_version(text)
                if driver is not None and driver not in self._run.drivers:
                    self._run.drivers.append(driver)

    def _nccl(self, text: str) -> None:
        version = values.nccl_version(text)
        if version is not None and version not in self._run.nccl:
            self._run.nccl.append(version)

    def _launch(self, lineno: int, kind: str, text: str) -> _Run:
        run = self._run
        seen = run.launch.get(kind)
        if run.stats or (seen is not None and seen != text and kind != "engine"):
            self._close()
            run = self._run
        run.launch.setdefault(kind, text)
        return run

    def _message(self, lineno: int, message: str, stamp: Any, level: str, width: int) -> None:
        run = self._run
        if "Avg prompt throughput:" in message:
            fields = throughput_fields(message)
            if fields is not None:
                self._stats(run, lineno, stamp, fields, "gen_throughput", "prompt_throughput")
                return
        if message.startswith(("SpecDecoding metrics: ", "Speculative metrics: ")):
            parsed = spec_fields(message, run.version)
            if parsed is not None:
                fields, note = parsed
                if note:
                    self._bonus_lines.append(lineno)
                self._stats(run, lineno, stamp, fields, None, None)
                return
        if level in ("ERROR", "CRITICAL") or run.error is not None:
            # logger.exception repeats the header on every line of the traceback: those lines are
            # no sign the server went on
            note_failure(run, lineno, message, ordinary=level not in ("ERROR", "CRITICAL", "WARNING"))
        if message.startswith("Prefix cache hit rate: GPU:"):  # the stats line before it, continued
            if self._last_sample is not None:
                for key, value in _fields(message[len("Prefix cache hit rate: ") :]).items():
                    self._last_sample[1][f"{key}_prefix_cache_hit_rate"] = value
            self._touch(run, lineno, stamp)
            return
        for pattern in _VERSION_RES:
            v = pattern.search(message)
            if v is not None:
                run = self._launch(lineno, "version", v.group(0))
                run.version = v.group("version")
                run.config["vllm_version"] = v.group("version")
                if "model" in v.groupdict() and v.group("model"):
                    run.config.setdefault("model", values.unquoted(v.group("model")))
                run.has_config = True
                self._touch(run, lineno, stamp, message)
                return
        logo = _LOGO_MODEL_RE.search(message)
        if logo is not None:
            run.config.setdefault("model", values.unquoted(logo.group("model")))
            self._touch(run, lineno, stamp, message)
            return
        e = _ENGINE_INIT_RE.search(message)
        if e is not None:
            run = self._launch(lineno, "engine", "engine")
            if e.group("version") is not None:
                run.version = run.version or e.group("version")
                run.config.setdefault("vllm_version", e.group("version"))
            run.has_config = True
            self._wrap = _Wrap(run, lineno, "engine", e.group("config"), width)  # read by _unwrap
            self._touch(run, lineno, stamp)
            return
        a = _ARGS_RE.match(message)
        if a is not None and a.group("args")[:1] in "{N" and (a.group("args").startswith(("Namespace(", "{"))):
            run = self._launch(lineno, "args", a.group("args"))
            run.has_config = True
            self._wrap = _Wrap(run, lineno, "args", a.group("args"), width)  # read by _unwrap
            self._touch(run, lineno, stamp)
            return
        self._touch(run, lineno, stamp, message)

    def _unwrap(self) -> None:
        """Read the engine or args line held back, its continuation pieces joined back."""
        wrap, self._wrap = self._wrap, None
        if wrap is None:
            return
        text = "".join(wrap.pieces)
        if wrap.kind == "engine":
            fields = engine_config(text)
        else:
            fields, problems = parse_keyword_repr(text)
            if problems:
                self.diagnostics.append(Diagnostic(self.source, wrap.line, "vLLM args: " + "; ".join(problems)))
        for key in _NAME_KEYS:
            if isinstance(fields.get(key), str):
                fields[key] = values.unquoted(fields[key])
        if wrap.kind == "engine":
            for key, value in fields.items():
                wrap.run.config.setdefault(key, value)
        else:
            wrap.run.config.update(fields)

    def _touch(self, run: _Run, lineno: int, stamp: Any, message: str | None = None) -> None:
        """Count a line in ``run``; ``message``: the line is one of ``ParsedRun.messages`` (not a
        stats line, nor an args or engine-config line, whose values are in ``config``)."""
        if message is not None:
            add_message(run.messages, message)
        if run.first_line is None:
            run.first_line = lineno
        run.last_line = lineno
        if stamp is None:
            return
        if run.first_stamp is None:
            run.first_stamp = stamp
        run.last_stamp = stamp

    def _stats(
        self, run: _Run, lineno: int, stamp: Any, fields: dict[str, Any], gen: str | None, prompt: str | None
    ) -> None:
        self._touch(run, lineno, stamp)
        run.stats += 1
        run.error = None  # the server went on after it
        aggregated = "engines_aggregated" in fields
        if gen is not None and isinstance(fields.get(gen), (int, float)):
            (run.aggregated_decode if aggregated else run.decode).append(float(fields[gen]))
            if isinstance(fields.get("engine"), int):  # each engine of a data-parallel server logs its own
                run.ranks.setdefault(f"Engine {fields['engine']:03d}", array("d")).append(float(fields[gen]))
        if prompt is not None and isinstance(fields.get(prompt), (int, float)):
            (run.aggregated_prompt if aggregated else run.prompt).append(float(fields[prompt]))
        if isinstance(fields.get("accept_len"), (int, float)):
            run.accept.append(float(fields["accept_len"]))
        if run.samples is not None:
            self._keep_last_sample()
            rank = None
            if "engine" in fields:
                rank = f"Engine {fields['engine']:03d}"
            elif "engines_aggregated" in fields:
                rank = f"{fields['engines_aggregated']} Engines Aggregated"
            sample = {"time": stamp, "line": lineno, "rank": rank}
            for key, value in fields.items():
                sample[key + "_field" if key in ("time", "line", "rank") else key] = value
            self._last_sample = (run.samples["decode"], sample)

    def _keep_last_sample(self) -> None:
        if self._last_sample is not None:
            rows, sample = self._last_sample
            rows.append(sample)
            self._last_sample = None

    def _close(self) -> None:
        self._keep_last_sample()
        run = self._run
        if run.first_line is not None and run.has_content():
            self._done.append(run)
        self._run = _Run(self.keep_samples)

    # -- the end ------------------------------------------------------------------------

    def _years(self) -> tuple[Any, str | None, DateSource | None]:
        """A function year index -> year, how it was found (None: no year known), and its source."""
        if self._dated is not None:
            line, when, index, md = self._dated
            if md is None and self._last_stamp is not None:
                md = (self._last_stamp[1], self._last_stamp[2])
            if md is not None:
                best = None
                for year in (when.year - 1, when.year, when.year + 1):
                    try:
                        gap = abs((date(year, md[0], md[1]) - when).days)
                    except ValueError:
                        continue
                    if best is None or gap < best[0]:
                        best = (gap, year)
                if best is not None:
                    base = best[1] - index
                    return (lambda k: base + k), f"from the dated line {line} ({when.isoformat()})", "dated-line"
        if self.mtime is not None and self._last_stamp is not None:
            index, month, day, clock = self._last_stamp
            stamp_year = last_year(month, day, clock, self.mtime)
            if stamp_year is not None:
                base = stamp_year - index
                return (
                    (lambda k: base + k),
                    (
                        f"from the file's mtime ({describe_mtime(self.mtime)}): the last stamp "
                        f"{month:02d}-{day:02d} {clock} is in {stamp_year}, at or before the mtime"
                    ),
                    "mtime",
                )
        return None, None, None

    def finish(self) -> tuple[list[ParsedRun], list[Diagnostic]]:
        self._unwrap()
        self._close()
        year_of, how, year_source = self._years()

        def resolve(stamp: Any) -> datetime | None:
            if stamp is None:
                return None
            if stamp[0] != "yearless":
                return stamp[0]
            if year_of is None:
                return None
            _, index, month, day, clock, _text = stamp
            try:
                return datetime(year_of(index), month, day, int(clock[0:2]), int(clock[3:5]), int(clock[6:8]))
            except ValueError:
                return None

        for run in self._done:
            out = ParsedRun(kind=KIND, first_line=run.first_line, last_line=run.last_line)
            if run.first_stamp is not None:
                out.start = resolve(run.first_stamp)
                out.start_text = run.first_stamp[-1]
            out.end = resolve(run.last_stamp)
            out.nccl_versions = list(run.nccl)
            out.cuda_driver_versions = list(run.drivers)
            for key, alias in _ALIASES:
                if key in run.config and alias not in run.config:
                    run.config[alias] = run.config[key]
            out.config = run.config
            for name, series in (
                ("decode_throughput", run.decode),
                ("prompt_throughput", run.prompt),
                ("aggregated_decode_throughput", run.aggregated_decode),
                ("aggregated_prompt_throughput", run.aggregated_prompt),
                ("accept_len", run.accept),
            ):
                if series:
                    out.series[name] = series
                    out.units[name] = _SERIES_UNITS[name]
            if run.samples is not None:
                for rows in run.samples.values():
                    rows.map_column("time", resolve)
            if len(run.ranks) >= 2:
                out.rank_series = run.ranks
            out.samples = run.samples
            out.messages = list(run.messages)
            run_status(out, run)
            if out.start is not None:
                out.date_source = year_source if run.first_stamp[0] == "yearless" else "stamp"
            self.runs.append(out)
        yearless = self._last_stamp is not None and any(
            r.first_stamp is not None and r.first_stamp[0] == "yearless" for r in self._done
        )
        if yearless:
            first = self._done[0].first_line if self._done else None
            if how is None:
                self.diagnostics.append(
                    Diagnostic(
                        self.source,
                        first,
                        ("vLLM time stamps have no year (MM-DD HH:MM:SS) and the file gives none: times left empty"),
                    )
                )
            else:
                wraps = f"; a new year counted at line(s) {', '.join(map(str, self._wraps))}" if self._wraps else ""
                self.diagnostics.append(
                    Diagnostic(
                        self.source, first, (f"vLLM time stamps have no year (MM-DD HH:MM:SS): year taken {how}{wraps}")
                    )
                )
        if not self.runs and self._header_lines is not None:
            first, last = self._header_lines
            self.diagnostics.append(
                Diagnostic(
                    self.source,
                    first,
                    f"lines {first}-{last} hold vLLM log lines (say, of worker processes) but no launch "
                    "(version, args or engine line) or stats line; not counted as a run",
                    "no-vllm-run",
                )
            )
        if self._bonus_lines:
            self.diagnostics.append(
                Diagnostic(
                    self.source,
                    self._bonus_lines[0],
                    (
                        f"{len(self._bonus_lines)} SpecDecoding line(s) print vLLM 0.8.5's mean acceptance length, "
                        "which leaves out the bonus token: accept_len = printed value + 1 (as vLLM 0.9+ and "
                        "SGLang count it)"
                    ),
                )
            )
        self.diagnostics.sort(key=lambda d: (d.line is None, d.line or 0))
        return self.runs, self.diagnostics
