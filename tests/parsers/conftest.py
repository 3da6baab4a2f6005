"""Shared helpers for the parsers tests."""

from __future__ import annotations

from pathlib import Path

import pytest

@pytest.fixture
def write_log(tmp_path: Path):
    """Write text (or bytes) to a log file and return its path."""

    def write(content: str | bytes, name: str = "server.log") -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write
