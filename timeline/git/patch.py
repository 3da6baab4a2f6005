"""Reading the patches of ``git log -p -U0``: the lines each commit added and removed.

``-U0`` gives hunks without context lines; a hunk header ``@@ -a,b +c,d @@`` says how many
removed (``b``) and added (``d``) lines follow, a count left out meaning 1; paths with special
characters are quoted C-style: https://git-scm.com/docs/git-diff#_combined_diff_format,
https://git-scm.com/docs/git-config#Documentation/git-config.txt-corequotePath.
"""

from __future__ import annotations

import re

from timeline.records import ChangedLine

__all__ = ["read_changed_lines"]

# One line of a patch is kept up to this many bytes (a minified file is one line).
_MAX_PATCH_LINE = 64 * 1024
_HUNK = re.compile(rb"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13}


def read_changed_lines(
    stream, mark: bytes, max_lines: int, max_bytes: int
) -> tuple[dict[str, list[ChangedLine]], set[str]]:
    """``({sha: lines}, cut)`` from a ``git log -p -U0 --format=<mark>%H`` stream: each commit's
    added and removed lines, file by file in git's order, at most ``max_lines`` lines and
    ``max_bytes`` of their text a commit; ``cut`` = the commits cut short."""
    patch = _Patch(mark, max_lines, max_bytes)
    for line in _patch_lines(stream):
        if patch.removed or patch.added:
            patch.hunk_line(line)
        else:
            patch.header_line(line)
    return patch.found, patch.cut


class _Patch:
    """Where a reading of a patch stream is: the commit, the file and the hunk lines to come."""

    def __init__(self, mark: bytes, max_lines: int, max_bytes: int):
        self.mark = mark
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.found: dict[str, list[ChangedLine]] = {}
        self.cut: set[str] = set()
        self.sha: str | None = None
        self.lines: list[ChangedLine] = []  # the current commit's
        self.kept_bytes = 0
        self.old_path = self.new_path = self.path = ""
        self.removed = self.added = 0  # lines of the current hunk still to come

    def hunk_line(self, line: bytes) -> None:
        sign = line[:1]
        if sign == b"-" and self.removed:
            self.removed -= 1
        elif sign == b"+" and self.added:
            self.added -= 1
        else:  # "\ No newline at end of file"
            return
        if len(self.lines) >= self.max_lines or self.kept_bytes >= self.max_bytes:
            self.cut.add(self.sha)  # type: ignore[arg-type]
            return
        text = line[1:].rstrip(b"\n").decode("utf-8", "replace")
        self.kept_bytes += len(text)
        self.lines.append(ChangedLine(self.path, sign == b"+", text))

    def header_line(self, line: bytes) -> None:
        if line.startswith(self.mark):
            self.sha = line[len(self.mark) :].strip().decode("ascii", "replace")
            self.lines = self.found.setdefault(self.sha, [])
            self.kept_bytes = 0
        elif line.startswith(b"diff --git "):
            self.old_path = self.new_path = ""
        elif line.startswith(b"--- "):
            self.old_path = _patch_path(line[4:])
        elif line.startswith(b"+++ "):
            self.new_path = _patch_path(line[4:])
        elif line.startswith(b"@@ "):
            hunk = _HUNK.match(line)
            if hunk is not None:
                self.removed, self.added = (1 if n is None else int(n) for n in hunk.groups())
                self.path = self.new_path or self.old_path


def _patch_lines(stream):
    """The lines of a patch, each kept up to ``_MAX_PATCH_LINE`` bytes (the rest of a longer
    line is read past)."""
    while True:
        line = stream.readline(_MAX_PATCH_LINE)
        if not line:
            return
        if not line.endswith(b"\n"):
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = stream.readline(_MAX_PATCH_LINE)
        yield line


def _patch_path(raw: bytes) -> str:
    """The path of a ``--- a/<path>`` or ``+++ b/<path>`` line ("" for ``/dev/null``): git quotes
    a path with special characters C-style, and ends one holding a space with a tab."""
    raw = raw.rstrip(b"\n")
    if raw.endswith(b"\t"):
        raw = raw[:-1]
    if raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2:
        raw = _c_unquote(raw[1:-1])
    if raw == b"/dev/null":
        return ""
    return raw[2:].decode("utf-8", "replace") if raw[:2] in (b"a/", b"b/") else raw.decode("utf-8", "replace")


def _c_unquote(body: bytes) -> bytes:
    """The bytes a C-style quoted name stands for (``\\t``, ``\\"``, ``\\303\\251``...)."""
    out = bytearray()
    i = 0
    while i < len(body):
        byte = body[i]
        if byte == 0x5C and i + 1 < len(body):
            escaped = body[i + 1]
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(0x30 <= digit <= 0x37 for digit in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(_C_ESCAPES.get(escaped, escaped))
            i += 2
            continue
        out.append(byte)
        i += 1
    return bytes(out)
