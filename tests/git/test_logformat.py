"""Reading ``git log -z`` output as git streams it (``timeline.git.logformat``)."""

from __future__ import annotations

import pytest

from timeline.git import logformat


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64, 1 << 16])
def test_records_are_cut_at_the_marks_whatever_the_blocks(monkeypatch, block):
    import io

    monkeypatch.setattr(logformat, "READ_BYTES", block)
    mark = b"\x1eabc123"
    records = [b"", b"one\0\npath\0", b"two" * 50, b"\x1eab", b"three\0"]
    stream = io.BytesIO(b"".join(mark + r for r in records))
    assert list(logformat.records(stream, mark)) == records
    assert list(logformat.records(io.BytesIO(b""), mark)) == []
    assert list(logformat.records(io.BytesIO(b"junk before" + mark + b"x"), mark)) == [b"x"]
