"""timeline: tie every LLM-serving benchmark run to the commit it ran on.

Library entry point: ``timeline.build(paths, repo=..., log_tz=...)`` returns a ``Timeline`` (the
typed model); ``timeline.to_dict(result)`` is its JSON document, which ``timeline.load(path)``
reads back, and ``timeline.runs_frame(result)``, ``samples_frame``, ``events_frame``,
``shifts_frame`` its pandas frames. The model imports none of
these outputs: they read it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "build",
    "load",
    "Timeline",
    "to_dict",
    "runs_frame",
    "samples_frame",
    "events_frame",
    "shifts_frame",
    "__version__",
]
_FRAMES = ("runs_frame", "samples_frame", "events_frame", "shifts_frame")


def __getattr__(name: str):
    # Imported on first use (PEP 562): `timeline --help` must stay under 0.5 s (README, Speed), and the
    # pytest plugin must not slow the start of every test session.
    if name == "build":
        from timeline.builder import build

        return build
    if name == "load":
        from timeline.loader import load

        return load
    if name == "Timeline":
        from timeline.model import Timeline

        return Timeline
    if name == "to_dict":
        from timeline.export import timeline_to_dict

        return timeline_to_dict
    if name in _FRAMES:  # pandas is imported only when a frame is asked for
        import timeline.frames

        return getattr(timeline.frames, name)
    raise AttributeError(f"module 'timeline' has no attribute {name!r}")
