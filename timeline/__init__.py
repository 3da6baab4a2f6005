"""timeline: tie every LLM-serving benchmark run to the commit it ran on.

Library entry point: ``timeline.build(paths, repo=..., log_tz=...)`` returns a ``Timeline``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["build", "Timeline", "__version__"]


def __getattr__(name: str):
    # Imported on first use (PEP 562): `timeline --help` must stay under 0.5 s (README, Speed), and the
    # pytest plugin must not slow the start of every test session.
    if name == "build":
        from timeline.builder import build

        return build
    if name == "Timeline":
        from timeline.model import Timeline

        return Timeline
    raise AttributeError(f"module 'timeline' has no attribute {name!r}")
