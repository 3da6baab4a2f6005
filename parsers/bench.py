"""Benchmark client output: each result is a run of its own kind.

The blocks are the ones the clients print: SGLang's ``bench_serving``
(https://github.com/sgl-project/sglang/blob/main/python/sglang/bench_serving.py) and vLLM's
``vllm bench serve`` (https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py).

Kinds, and what makes one run:

* ``bench-serving``: a ``Serving Benchmark Result`` block of ``python -m sglang.bench_serving`` (all
  releases) or ``vllm bench serve`` / ``benchmarks/benchmark_serving.py``, from its
  ``benchmark_args=Namespace(...)`` line (or vLLM's bare ``Namespace(...)`` print) when there is one,
  to the ``====`` footer.
* ``bench-offline-throughput``: the ``Offline Throughput Benchmark Result`` block of
  ``sglang.bench_offline_throughput`` (same row style).
* ``bench-one-batch``: one case (one batch size) of ``sglang.bench_one_batch`` / ``bench_latency``,
  from its ``Prefill. latency`` line to its ``Total. latency`` line; the warmup case (after
  ``Warmup ...``, before ``Benchmark ...``) is not a run.
* ``bench-one-batch-server``: one case of ``sglang.bench_one_batch_server``, from ``batch size: N``
  through the ``key: value`` lines after it.

Rows are read by structure, not by one example: ``Label:<spaces>value`` pairs, several per physical
line when a paste lost its newlines; labels are matched without case (``Total Token throughput``,
``Inter-Token Latency``), the ``reqeuest`` typo included, padding ignored. Every numeric row becomes a
one-element series named in snake_case (``METRIC_NAMES``; unknown rows keep their label in
snake_case), with its unit; non-numeric rows (``Backend``, ``Traffic request rate: inf``,
``Max request concurrency: not set``) and the benchmark arguments go to ``config``.

Latency rows ``Mean|Median|Std|Max|P90|P99 <X> (ms)`` become ``<x>_<stat>`` in ms: ``ttft_median``,
``tpot_p99``, ``itl_mean``, ``e2e_latency_median`` (SGLang's ``E2E Latency`` and vLLM's ``E2EL``).

Client output carries no time stamps. A run's time is that of the last time-stamped line before it
in the same file (a server log the output was interleaved with; resolved by ``parsers.parse_file``),
or the ``docker logs -t`` stamps on its own lines; else it has none.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable
from typing import Any

from timeline.columns import SampleRows
from timeline.parsers import values
from timeline.parsers.pyrepr import parse_keyword_repr
from timeline.parsers.wrappers import Detector, strip_outer
from timeline.records import Diagnostic, ParsedRun

__all__ = ["BenchParser", "METRIC_NAMES", "KINDS", "metric_for_label", "MARKERS_RE"]

KINDS = ("bench-serving", "bench-offline-throughput", "bench-one-batch", "bench-one-batch-server")

# Row label (lower case, without the colon) -> (series name, unit).
METRIC_NAMES: dict[str, tuple[str, str]] = {
    "successful requests": ("successful_requests", "requests"),
    "failed requests": ("failed_requests", "requests"),
    "benchmark duration (s)": ("duration", "s"),
    "total input tokens": ("total_input_tokens", "tokens"),
    "total input text tokens": ("total_input_text_tokens", "tokens"),
    "total input vision tokens": ("total_input_vision_tokens", "tokens"),
    "total generated tokens": ("total_output_tokens", "tokens"),
    "total generated tokens (retokenized)": ("total_output_tokens_retokenized", "tokens"),
    "request throughput (req/s)": ("request_throughput", "req/s"),
    "request goodput (req/s)": ("request_goodput", "req/s"),
    "input token throughput (tok/s)": ("input_throughput", "tok/s"),
    "output token throughput (tok/s)": ("output_throughput", "tok/s"),
    "peak output token throughput (tok/s)": ("peak_output_throughput", "tok/s"),
    "peak concurrent requests": ("peak_concurrent_requests", "requests"),
    "total token throughput (tok/s)": ("total_throughput", "tok/s"),
    "total throughput (tok/s)": ("total_throughput", "tok/s"),
    "last generation throughput (tok/s)": ("last_gen_throughput", "tok/s"),
    "concurrency": ("concurrency", "requests"),
    "accept length": ("accept_length", "tokens"),
    "acceptance length": ("accept_length", "tokens"),
    "acceptance rate (%)": ("acceptance_rate", "%"),
    "drafts": ("drafts", "drafts"),
    "draft tokens": ("draft_tokens", "tokens"),
    "accepted tokens": ("accepted_tokens", "tokens"),
    "rtfx (inverse real-time factor)": ("rtfx", ""),
    "input throughput (inputs/s)": ("input_request_throughput", "inputs/s"),
}

# Row label -> config key (settings the client printed, not results).
CONFIG_LABELS = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "request rate configured (rps)": "request_rate",
    "max request concurrency": "max_concurrency",
    "max reqeuest concurrency": "max_concurrency",  # SGLang 0.4.0-0.4.6
    "maximum request concurrency": "max_concurrency",
    "burstiness factor": "burstiness",
}

_STAT_RE = re.compile(r"(mean|median|std|max|min|p\d+(?:\.\d+)?) (.+?) \((ms|s)\)$")
_LATENCY_NAMES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e latency": "e2e_latency", "e2el": "e2e_latency"}
_UNIT_IN_LABEL_RE = re.compile(r"\s*\(([^()]*)\)\s*$")

_BLOCK_HEADER_RE = re.compile(r"={3,} ?(?P<title>[A-Za-z][A-Za-z ]*?Result) ?={3,}")
# A line cut into: block headers, footers (a run of "="), and the text between them.
_BLOCK_SPLIT_RE = re.compile(r"(={3,} ?[A-Za-z][A-Za-z ]*?Result ?={3,}|={10,})")
_SECTION_RE = re.compile(r"-{3,}\s*(?P<title>[^-\s].*?)\s*-{3,}$")
_INLINE_SECTION_RE = re.compile(r"-{3,} ?[A-Za-z][^:]*?-{3,}")
_ROW_RE = re.compile(r"(?P<label>[A-Z#][^:\n]{0,80}?|  Position \d+):\s+(?P<value>not set|\S+)")
_EMPTY_LABEL_RE = re.compile(r"(?P<label>[A-Z][^:\n]{0,80}?):\s*$")

# bench_one_batch / bench_latency
_ONE_PREFILL_RE = re.compile(r"Prefill\. +latency: *(\S+) s, throughput: *(\S+) token/s")
_ONE_STEP_RE = re.compile(
    r"Decode(?: (?P<step>\d+))?\. +(?:Batch size: (?P<bs>\d+), )?latency: *(?P<lat>\S+) s, throughput: *(?P<tp>\S+) token/s"  # noqa: E501 - one regex
)
_ONE_MEDIAN_RE = re.compile(r"Decode\. +median latency: *(\S+) s, median throughput: *(\S+) token/s")
_ONE_TOTAL_RE = re.compile(r"Total\. +latency: *(\S+) s, throughput: *(\S+) token/s")
_MAX_TOKENS_RE = re.compile(r"max_total_num_tokens=(\d+)")

# bench_one_batch_server
_SERVER_CASE_RE = re.compile(r"batch size: *(\d+)\s*$")
_SERVER_ROW_RE = re.compile(
    r"(?P<key>[a-z(][a-z_ ()+\-]*?): *(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?) *(?P<unit>tok/s|token/s|s)?\b\s*(?:\(.*\))?\s*$"  # noqa: E501 - one regex
)
_SERVER_UNITS = {"tok/s": "tok/s", "token/s": "tok/s", "s": "s"}
_SERVER_NAMES = {
    "input_len": "input_len",
    "output_len": "output_len",
    "latency": "latency",
    "ttft": "ttft",
    "last_ttft": "last_ttft",
    "last generation throughput": "last_gen_throughput",
    "input throughput": "input_throughput",
    "output throughput": "output_throughput",
    "(input + output) throughput": "total_throughput",
    "acc_length": "accept_length",
    "cache hit rate": "cache_hit_rate",
    "spec_accept_rate": "spec_accept_rate",
}
_SERVER_CONFIG = ("input_len", "output_len")
# What bench_one_batch_server measures: a case holding none of these is no result.
_SERVER_RESULTS = frozenset(
    {"latency", "ttft", "last_ttft", "last_gen_throughput", "input_throughput", "output_throughput", "total_throughput"}
)

_PRE_BLOCK = ("Traffic request rate:", "Maximum request concurrency:", "Burstiness factor:", "Request rate configured")

_NEEDLES = (
    "Result",
    "Namespace(",
    "latency: ",
    "batch size: ",
    "equest rate",
    "Burstiness",
    "Warmup ...",
    "Benchmark ...",
    "max_total_num_tokens=",
)
MARKERS_RE = Detector(lambda text: any(needle in text for needle in _NEEDLES))
"""Finds, in a block of lines, anything this parser would read."""


# How the client prints values: Python's str() of ints and floats, a percent sign or commas after
# them (a row pasted on one line); "not set" and None for a setting without a value.
_SUFFIX_RE = re.compile(r"%?,*$")
_RULES: dict[str, Any] = {"python_numbers": True, "unit": _SUFFIX_RE, "int_percent": True, "bools": False}
_NOT_SET = frozenset({"not set", "None"})


def _snake(text: str) -> str:
    return values.key(text, fallback="value")


def _number(text: str) -> int | float | None:
    typed = values.value(text.strip(), **_RULES)
    return None if isinstance(typed, str) else typed


def _config_value(text: str) -> Any:
    """A setting: a number, None when not set, else the text (``nan`` too: a name, not a value)."""
    return values.value(text.strip(), **_RULES, none_words=_NOT_SET, nan_word=False)


def metric_for_label(label: str, section: str | None = None) -> tuple[str, str]:
    """``Median TTFT (ms)`` -> ``("ttft_median", "ms")``; unknown labels -> snake_case + their unit."""
    key = " ".join(label.lower().split())
    if key in METRIC_NAMES:
        return METRIC_NAMES[key]
    m = _STAT_RE.match(key)
    if m is not None:
        stat, what, unit = m.groups()
        name = _LATENCY_NAMES.get(what, _snake(what))
        return f"{name}_{_snake(stat)}", unit
    pos = re.fullmatch(r"position (\d+)", key)
    if pos is not None:
        return f"acceptance_position_{pos.group(1)}", "%"
    unit = ""
    u = _UNIT_IN_LABEL_RE.search(key)
    if u is not None:
        unit = u.group(1)
        key = key[: u.start()]
    return _snake(key), unit


class _Pending:
    """What a bench run is built from."""

    __slots__ = (
        "kind",
        "first_line",
        "last_line",
        "anchor_first",
        "anchor_last",
        "time_first",
        "time_last",
        "config",
        "values",
        "units",
        "texts",
        "samples",
        "section",
        "closed",
        "header_line",
        "settings",
    )

    def __init__(self, kind: str, line: int, anchor: tuple[int, str] | None, config: dict[str, Any]) -> None:
        self.kind = kind
        self.first_line = line
        self.last_line = line
        self.header_line = line
        self.settings: dict[str, Any] = {}  # printed above a result block by the user's script
        self.anchor_first = anchor
        self.anchor_last = anchor
        self.time_first: Any = None  # docker stamp: (aware datetime, text)
        self.time_last: Any = None
        self.config = dict(config)
        self.values: dict[str, float] = {}
        self.units: dict[str, str] = {}
        self.texts: dict[str, Any] = {}  # every row, as read, for the result sample
        self.samples: dict[str, SampleRows] = {"decode": SampleRows(), "prefill": SampleRows()}
        self.section: str | None = None
        self.closed = False

    def add(self, name: str, value: int | float, unit: str) -> None:
        if name in self.values and self.values[name] != value:
            name = f"{_snake(self.section or 'other')}_{name}"
        self.values[name] = value
        self.units[name] = unit
        self.texts[name] = value


class BenchParser:
    """Feed it ``(line_number, text)`` pairs (with ``anchor``: the last time-stamped line before
    them), then call ``finish()``. Runs carry ``anchors``: see ``parsers.parse_file``.
    ``is_server_record(text)`` tells a server's logger line (after the outer wrappers), which is
    never a row and never ends a block (``parsers.reading`` knows the servers' headers)."""

    def __init__(self, source: str, *, is_server_record: Callable[[str], bool], keep_samples: bool = False) -> None:
        self.source = source
        self.keep_samples = keep_samples
        self._is_server_record = is_server_record
        self.runs: list[ParsedRun] = []
        self.diagnostics: list[Diagnostic] = []
        # id(run) -> (first anchor, last anchor): the time-stamped lines before the run's first
        # and last lines, for parse_file to turn into times.
        self.anchors: dict[int, tuple[tuple[int, str] | None, tuple[int, str] | None]] = {}
        self._anchor: tuple[int, str] | None = None
        self._args: dict[str, Any] = {}  # benchmark arguments waiting for their result block
        self._settings: dict[str, Any] = {}  # "batch size: N"-style settings waiting for their result block
        self._args_line: int | None = None
        self._args_anchor: tuple[int, str] | None = None
        self._block: _Pending | None = None
        self._one: _Pending | None = None
        self._one_mode: str | None = None  # "warmup" | "benchmark" | None (no markers seen)
        self._one_config: dict[str, Any] = {}
        self._server: _Pending | None = None

    @property
    def busy(self) -> bool:
        """A block or case is open: every following line matters."""
        return self._block is not None or self._one is not None or self._server is not None

    def _diag(self, line: int | None, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.source, line, message))

    # -- the loop -----------------------------------------------------------------------

    def feed_all(self, lines, anchor: tuple[int, str] | None = None, is_stamped=None) -> None:
        if anchor is not None and (self._anchor is None or anchor[0] >= self._anchor[0]):
            self._anchor = anchor
        for lineno, raw in lines:
            if not raw:
                continue
            if is_stamped is not None and is_stamped(raw):
                self._anchor = (lineno, raw)
            outer = strip_outer(raw)
            text = outer.text.strip()
            if not text:
                continue
            stamp = (outer.time, outer.time_text) if outer.time is not None else None
            self._line(lineno, text, stamp)

    def _touch(self, pending: _Pending, lineno: int, stamp: Any) -> None:
        pending.last_line = lineno
        pending.anchor_last = self._anchor
        if stamp is not None:
            if pending.time_first is None:
                pending.time_first = stamp
            pending.time_last = stamp

    def _line(self, lineno: int, text: str, stamp: Any) -> None:
        if self._is_server_record(text):
            return  # a server's log line between the client's lines: never a row, never an end
        if "===" in text:  # block headers and footers, maybe with rows pasted around them
            for piece in _BLOCK_SPLIT_RE.split(text):
                piece = piece.strip()
                if not piece:
                    continue
                header = _BLOCK_HEADER_RE.fullmatch(piece)
                if header is not None:
                    self._close_block()
                    self._close_server()
                    self._open_block(lineno, header.group("title"), stamp)
                elif piece[0] == "=" and piece.strip("=") == "":
                    if self._block is not None:
                        self._touch(self._block, lineno, stamp)
                        self._close_block()
                else:
                    self._text(lineno, piece, stamp)
            return
        self._text(lineno, text, stamp)

    def _text(self, lineno: int, text: str, stamp: Any) -> None:
        block = self._block
        if block is not None:
            if self._block_line(block, lineno, text, stamp):
                return
            self._close_block()
        if self._server is not None:
            if self._server_line(self._server, lineno, text, stamp):
                return
            self._close_server()
        if text.startswith("benchmark_args=") or text.startswith("Namespace("):
            self._args_from(lineno, text[len("benchmark_args=") :] if text[0] == "b" else text)
            return
        if self._one_line(lineno, text, stamp):
            return
        m = _SERVER_CASE_RE.match(text)
        if m is not None:
            self._server = _Pending("bench-one-batch-server", lineno, self._anchor, {"batch_size": int(m.group(1))})
            self._touch(self._server, lineno, stamp)
            return
        if text.startswith(_PRE_BLOCK):  # settings vLLM prints before its block
            for label, value in _ROW_RE.findall(text):
                key = CONFIG_LABELS.get(" ".join(label.lower().split()))
                if key is not None:
                    self._args.setdefault(key, _config_value(value))

    # -- result blocks ------------------------------------------------------------------

    def _args_from(self, lineno: int, text: str) -> None:
        fields, problems = parse_keyword_repr(text.strip())
        if problems:
            self._diag(lineno, "benchmark arguments: " + "; ".join(problems) + f" (read {len(fields)} fields)")
        self._args = dict(fields)
        if "model" in fields and "model_path" not in fields and isinstance(fields.get("model"), str):
            self._args["model_path"] = fields["model"]
        self._args_line = lineno
        self._args_anchor = self._anchor

    def _open_block(self, lineno: int, title: str, stamp: Any) -> None:
        kind = "bench-offline-throughput" if "offline" in title.lower() else "bench-serving"
        first, anchor = lineno, self._anchor
        if self._args_line is not None:
            first, anchor = self._args_line, self._args_anchor
        block = _Pending(kind, first, anchor, self._args)
        block.header_line = lineno
        block.settings, self._settings = self._settings, {}
        self._touch(block, lineno, stamp)
        self._block = block
        self._args, self._args_line, self._args_anchor = {}, None, None

    def _block_line(self, block: _Pending, lineno: int, text: str, stamp: Any) -> bool:
        section = _SECTION_RE.match(text)
        if section is not None and not _ROW_RE.search(text):
            block.section = section.group("title").strip()
            self._touch(block, lineno, stamp)
            return True
        # Section rules inside a pasted line become separators.
        cleaned = _INLINE_SECTION_RE.sub(" | ", text)
        rows = _ROW_RE.findall(cleaned)
        if not rows:
            empty = _EMPTY_LABEL_RE.match(text)
            if empty is not None:  # "Per-position acceptance (%):"
                block.section = empty.group("label")
                self._touch(block, lineno, stamp)
                return True
            return False
        for label, value in rows:
            label = label.strip()
            key = " ".join(label.lower().split())
            if key in CONFIG_LABELS:
                block.config.setdefault(CONFIG_LABELS[key], _config_value(value))
                block.texts[CONFIG_LABELS[key]] = _config_value(value)
                continue
            number = _number(value)
            name, unit = metric_for_label(label, block.section)
            if number is None:
                block.texts[name] = value
                continue
            block.add(name, number, unit)
        self._touch(block, lineno, stamp)
        return True

    def _close_block(self) -> None:
        block = self._block
        self._block = None
        if block is None:
            return
        if not block.values:
            self._diag(block.header_line, f"{block.kind} result block without any value; not counted as a run")
            return
        for name, value in block.settings.items():  # the client's own rows and arguments come first
            block.config.setdefault(name, value)
        if "output_throughput" not in block.values and block.kind == "bench-serving":
            self._diag(block.header_line, "bench-serving result block without an output token throughput row")
        self._emit(block, dict(block.texts))

    # -- bench_one_batch ----------------------------------------------------------------

    def _one_line(self, lineno: int, text: str, stamp: Any) -> bool:
        if text.startswith("Warmup ..."):
            self._close_one()
            self._one_mode = "warmup"
            return True
        if text.startswith("Benchmark ..."):
            self._close_one()
            self._one_mode = "benchmark"
            return True
        if text.startswith("max_total_num_tokens="):
            m = _MAX_TOKENS_RE.match(text)
            if m is not None:
                self._one_config["max_total_num_tokens"] = int(m.group(1))
            return False
        if not (text.startswith(("Prefill.", "Decode", "Total."))):
            return False
        m = _ONE_PREFILL_RE.match(text)
        if m is not None:
            self._close_one()
            one = self._one = _Pending("bench-one-batch", lineno, self._anchor, self._one_config)
            self._touch(one, lineno, stamp)
            latency, throughput = _number(m.group(1)), _number(m.group(2))
            self._one_value(one, "prefill_latency", latency, "s")
            self._one_value(one, "prefill_throughput", throughput, "tok/s")
            one.samples["prefill"].append(
                {"time": None, "line": lineno, "rank": None, "latency": latency, "throughput": throughput}
            )
            return True
        if self._one is None:
            return False
        one = self._one
        m = _ONE_MEDIAN_RE.match(text)
        if m is not None:
            self._one_value(one, "decode_median_latency", _number(m.group(1)), "s")
            self._one_value(one, "decode_median_throughput", _number(m.group(2)), "tok/s")
            self._touch(one, lineno, stamp)
            return True
        m = _ONE_STEP_RE.match(text)
        if m is not None:
            row: dict[str, Any] = {"time": None, "line": lineno, "rank": None}
            if m.group("step") is not None:
                row["step"] = int(m.group("step"))
            if m.group("bs") is not None:
                row["batch_size"] = int(m.group("bs"))
                one.config.setdefault("batch_size", int(m.group("bs")))
            row["latency"] = _number(m.group("lat"))
            row["throughput"] = _number(m.group("tp"))
            one.samples["decode"].append(row)
            self._touch(one, lineno, stamp)
            return True
        m = _ONE_TOTAL_RE.match(text)
        if m is not None:
            self._one_value(one, "total_latency", _number(m.group(1)), "s")
            self._one_value(one, "total_throughput", _number(m.group(2)), "tok/s")
            self._touch(one, lineno, stamp)
            self._close_one()
            return True
        return False

    @staticmethod
    def _one_value(one: _Pending, name: str, value: Any, unit: str) -> None:
        if isinstance(value, (int, float)):
            one.add(name, value, unit)

    def _close_one(self) -> None:
        one = self._one
        self._one = None
        if one is None:
            return
        if self._one_mode == "warmup":
            return  # the warmup case is not a measurement
        self._emit(one, {**one.config, **one.values})

    # -- bench_one_batch_server ---------------------------------------------------------

    def _server_line(self, case: _Pending, lineno: int, text: str, stamp: Any) -> bool:
        if _SERVER_CASE_RE.match(text):
            return False  # the next case
        m = _SERVER_ROW_RE.match(text)
        if m is None:
            return False
        key = " ".join(m.group("key").split())
        number = _number(m.group("num"))
        if number is None:
            return False
        name = _SERVER_NAMES.get(key, _snake(key))
        if name in _SERVER_CONFIG:
            case.config[name] = number
        else:
            unit = _SERVER_UNITS.get(m.group("unit") or "", "")
            if name in ("accept_length",):
                unit = "tokens"
            case.add(name, number, unit)
        self._touch(case, lineno, stamp)
        return True

    def _close_server(self) -> None:
        case = self._server
        self._server = None
        if case is None:
            return
        if not _SERVER_RESULTS.intersection(case.values):
            # "batch size: N" and settings without a measurement (what a script prints above a
            # serving benchmark's block): not a result of its own; the next block keeps them.
            self._settings.update({**case.config, **case.values})
            return
        self._emit(case, {**case.config, **case.values})

    # -- runs ---------------------------------------------------------------------------

    def _emit(self, pending: _Pending, result: dict[str, Any]) -> None:
        run = ParsedRun(kind=pending.kind, first_line=pending.first_line, last_line=pending.last_line)
        run.config = pending.config
        for name, value in pending.values.items():
            if isinstance(value, bool) or not math.isfinite(float(value)):
                continue
            run.series[name] = array("d", [float(value)])
            run.units[name] = pending.units.get(name, "")
        if pending.time_first is not None:
            run.start, run.start_text = pending.time_first
            run.end = pending.time_last[0]
        if self.keep_samples:
            run.samples = {
                "decode": pending.samples["decode"],
                "prefill": pending.samples["prefill"],
                "result": SampleRows([{"time": run.start, "line": pending.header_line, "rank": None, **result}]),
            }
        self.runs.append(run)
        self.anchors[id(run)] = (pending.anchor_first, pending.anchor_last)

    def finish(self) -> tuple[list[ParsedRun], list[Diagnostic]]:
        if self._block is not None:
            block = self._block
            self._close_block()
            if self.runs and self.runs[-1].first_line == block.first_line:
                self._diag(block.last_line, "bench result block cut short (no ==== footer): the rows read are kept")
        self._close_one()
        self._close_server()
        return self.runs, self.diagnostics
