"""Optional decompressors: zstd through the ``zstandard`` package, when it is installed.

``parsers.framing`` opens gzip, bzip2 and xz with the standard library; zstd has no decoder there
(before Python 3.14), so a ``.zst`` log is read only with ``zstandard`` and is otherwise reported
with a clear warning (``ZSTD_MISSING``).
"""

from __future__ import annotations

from typing import Any, BinaryIO

__all__ = ["ZSTD_MISSING", "open_zstd"]

ZSTD_MISSING = "zstd-compressed log not read: install the 'zstandard' package (pip install zstandard); skipped"


class _ZstdReader:
    """A zstandard stream reader whose errors are ``OSError`` (one of framing's STREAM_ERRORS)."""

    def __init__(self, reader: Any, error: type[BaseException]) -> None:
        self._reader = reader
        self._error = error

    def read(self, size: int = -1) -> bytes:
        try:
            return self._reader.read(size)
        except self._error as exc:
            raise OSError(f"zstd: {exc}") from exc

    read1 = read

    def close(self) -> None:
        self._reader.close()


def open_zstd(raw: BinaryIO) -> _ZstdReader | None:
    """A reader of the decompressed bytes, or None when ``zstandard`` is not installed."""
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        return None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return _ZstdReader(reader, getattr(zstandard, "ZstdError", ValueError))
