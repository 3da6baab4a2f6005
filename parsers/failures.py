"""The lines that say a server launch failed: fatal messages, and the exception line ending a traceback.

A launch has *crashed* when its log holds a fatal message, or ends in an uncaught traceback: an
exception line (``RuntimeError: ...``, ``torch.OutOfMemoryError: ...``) after which the server
logged nothing of its normal work (a stats line, an ordinary logger line). The families decide what
"normal work" is; this module only recognises the lines, the same way for every digit (the SGLang
block reader judges each line shape once, ``parsers.sglang_fast``).

Fatal messages, each followed by the process's exit:

* SGLang: ``<Process> hit an exception: Traceback ...`` (``logger.error`` then SIGQUIT to the
  launcher, in ``scheduler.py``, ``detokenizer_manager.py``, ``tp_worker_overlap_thread.py``,
  ``data_parallel_controller.py`` of every release from 0.3 on) and the launcher's own ``Received
  sigquit from a child process. It usually means the child failed.``
  (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/entrypoints/engine.py);
* vLLM V1: ``EngineCore failed to start.`` and ``EngineCore encountered a fatal error.``
  (``run_engine_core`` in https://github.com/vllm-project/vllm/blob/main/vllm/v1/engine/core.py).
"""

from __future__ import annotations

import re
from typing import Protocol

from timeline.records import ParsedRun

__all__ = ["fatal_message", "exception_line", "kept_error", "note_failure", "run_status", "MAX_ERROR_CHARS"]

_FATAL_RE = re.compile(
    r"\b[A-Z]\w* hit an exception\b"
    r"|Received sigquit from a child process"
    r"|EngineCore failed to start|EngineCore encountered a fatal error"
)
_FATAL_WORDS = ("exception", "sigquit", "EngineCore")

# The last line of a Python traceback: a dotted class name ending in Error or Exception, alone or
# before ": message" (KeyboardInterrupt and SystemExit are how a server is stopped: not matched).
# torch.distributed prefixes each line of a rank's output with "[rankN]: ".
_EXCEPTION_RE = re.compile(
    r"(?:\[rank\d+\]:\s*)?(?P<error>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?::\s.*)?)$"
)
MAX_ERROR_CHARS = 1000  # an error line kept longer than this is cut (a request dump in the message)


def fatal_message(text: str) -> str | None:
    """The fatal message in ``text``, whatever prefix a logging config put before it, from its
    first word (``Scheduler hit an exception``, without the ``: Traceback ...`` that follows), or None."""
    if not any(word in text for word in _FATAL_WORDS):
        return None
    m = _FATAL_RE.search(text)
    if m is None:
        return None
    return text[m.start() :].partition(": Traceback")[0].strip()[:MAX_ERROR_CHARS]


def exception_line(text: str) -> str | None:
    """The exception line ``text`` is (``torch.OutOfMemoryError: CUDA out of memory...``, without a
    ``[rankN]:`` prefix or trailing blanks), or None."""
    if not text or not (text[0].isalpha() or text[0] == "["):
        return None
    m = _EXCEPTION_RE.match(text.rstrip())
    return None if m is None else m.group("error")[:MAX_ERROR_CHARS]


def kept_error(kept: tuple[int, str] | None, line: int, text: str) -> tuple[int, str]:
    """The error line a run keeps, ``(line, text)``, after ``text`` at ``line``: the newer one,
    except that vLLM's ``RuntimeError: Engine core initialization failed. See root cause above.``
    (``wait_for_engine_startup`` in https://github.com/vllm-project/vllm/blob/main/vllm/v1/engine/utils.py)
    keeps the engine's own exception logged before it."""
    if kept is not None and "See root cause above" in text:
        return kept
    return line, text[:MAX_ERROR_CHARS]


class Launch(Protocol):
    """What a family's run being read keeps of its failures (SGLang's ``Segment``, vLLM's ``_Run``)."""

    fatal: tuple[int, str] | None  # the last fatal message, (line, text)
    error: tuple[int, str] | None  # the last exception line no ordinary line followed
    stats: int  # stats lines read


def note_failure(run: Launch, line: int, message: str, ordinary: bool) -> None:
    """A logger line that is no stats line, at ``line``: a fatal message, an exception line, or,
    when the family judges it ``ordinary``, a line saying the server went on (an exception before
    it was handled: not kept)."""
    fatal = fatal_message(message)
    if fatal is not None:
        run.fatal = (line, fatal)
        return
    error = exception_line(message)
    if error is not None:
        run.error = kept_error(run.error, line, error)
    elif ordinary:
        run.error = None


def run_status(out: ParsedRun, run: Launch) -> None:
    """``out``'s status from what ``run`` kept: ``crashed``, with the exception line (else the fatal
    message) as its error; ``no-stats`` without a stats line; else ``ok`` as it is."""
    failure = run.error or run.fatal
    if failure is not None:
        out.status = "crashed"
        out.error_line, out.error = failure
    elif not run.stats:
        out.status = "no-stats"
