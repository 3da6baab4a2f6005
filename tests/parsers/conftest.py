"""Shared helpers for the parsers tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def fast_path_for_every_size(monkeypatch):
    """The parser tests run on the fast path (parsers.sglang_fast), whatever the file's size;
    test_sglang_fast.py compares it with the line-by-line path."""
    from timeline.parsers import sglang_fast

    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)


@pytest.fixture
def write_log(tmp_path: Path):
    """Write text (or bytes) to a log file and return its path."""

    def write(content: str | bytes, name: str = "server.log") -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write
