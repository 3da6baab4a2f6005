"""Log parsers: turn log files into plain records (``timeline.records``).

Public API: ``parse_file(path, *, source=None, keep_samples=False) -> ParsedFile``.

Modules: ``framing`` (line framing shared by all log families: decompression, decoding, ANSI and
``\\r`` clean-up), ``wrappers`` (docker/Slurm/Ray wrappers, Python-logging headers, records pasted
on one line), ``sglang`` (SGLang server logs), ``vllm`` (vLLM server logs), ``bench`` (benchmark
client results), ``dates`` (years and dates missing from stamps), ``pyrepr`` (reading Python reprs
such as ``server_args=ServerArgs(...)`` without eval), ``records`` (the output contract).

Which parser applies is decided from the content, block by block (so logs of several families
interleaved in one file work): the SGLang parser reads every line (its hot path is untouched);
the vLLM parser reads the blocks holding vLLM logger headers (and everything once a vLLM run is
open); the benchmark parser reads the blocks holding benchmark output. A block is a run of lines
(16 to 1024, fewer when lines are long); lines needing ``wrappers.normalize`` are normalised first.

Rules: no git, no pandas, no printing. Bad input never raises: it becomes ``Diagnostic``s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from timeline.records import Diagnostic, ParsedFile, ParsedRun

__all__ = ["parse_file", "preload", "Diagnostic", "ParsedFile", "ParsedRun"]


def parse_file(
    path: str | os.PathLike,
    *,
    source: str | None = None,
    keep_samples: bool = False,
    progress=None,
    max_expansion: float | None = None,
    finish_run: Callable[[ParsedRun], None] | None = None,
    configs: dict[str, tuple[dict[str, Any], list[str]]] | None = None,
) -> ParsedFile:
    """Parse one log (plain, .gz, .bz2, .xz, or .zst with ``zstandard``) into runs and diagnostics.

    The file may hold SGLang or vLLM server logs and benchmark client output, alone or mixed.
    ``source`` is the path as the user gave it (used in ``ParsedFile.source`` and diagnostics;
    default ``str(path)``). ``keep_samples`` also keeps every field of every stats line in
    ``ParsedRun.samples``. Never raises for I/O problems or bad input: an unreadable or binary
    file gives no runs and one diagnostic without a line number; a read error part-way keeps the
    runs read so far and adds a diagnostic. Runs come in file order. ``progress``, if given, is
    called now and then with how many bytes of the file (as stored: compressed or not) were read.
    A compressed log is read up to ``max_expansion`` (default ``framing.MAX_EXPANSION``, 50) times
    its size (at least 64 MiB), with a diagnostic when it would expand further (a decompression
    bomb); no line longer than ``framing.MAX_LINE_CHARS`` (64 KiB) is read, each noted.
    ``finish_run``, if given, is called on each SGLang server run as it ends, before the next is
    read (``timeline.build`` replaces its series by their ``SeriesDigest`` there).
    ``configs``, if given, holds the configs of the ``server_args`` texts read so far (a text: its
    fields and the problems reading them), filled as they are met: the logs given the same one
    share one dict a text (``timeline.build`` gives all its logs one; a thousand logs of one
    server hold one config, not a thousand).
    """
    from timeline.parsers.reading import parse_file as read  # the parsers are imported on first use (start-up)

    return read(
        path,
        source=source,
        keep_samples=keep_samples,
        progress=progress,
        max_expansion=max_expansion,
        finish_run=finish_run,
        configs=configs,
    )


def preload() -> None:
    """Import the parsers now rather than on first use: before worker processes fork, so that
    each does not import them again. Not the ``server_args`` grammar (pyparsing, about 0.05 s):
    most texts are read without it (``pyrepr``), and a worker that meets one that is not imports it."""
    from timeline.parsers import reading  # noqa: F401


def __getattr__(name: str) -> Any:
    """The reading module's names (``SGLangLogParser``, ...) and the submodules, imported on first use."""
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib
    import importlib.util
    import sys

    # A submodule first: ``from timeline.parsers import values`` inside vllm.py, imported on its
    # own, asks for it here; importing reading (which imports vllm) then would be circular.
    if importlib.util.find_spec(f"timeline.parsers.{name}") is not None:
        return importlib.import_module(f"timeline.parsers.{name}")
    reading = sys.modules.get("timeline.parsers.reading") or importlib.import_module("timeline.parsers.reading")
    if name in vars(reading):
        value = globals()[name] = vars(reading)[name]  # kept: the next look-up finds it directly
        return value
    raise AttributeError(f"module 'parsers' has no attribute {name!r}")
