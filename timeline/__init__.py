"""timeline: tie every LLM-serving benchmark run to the commit it ran on.

Library entry point: ``timeline.build(paths, repo=..., log_tz=...)`` returns a ``Timeline``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from timeline.builder import build
from timeline.model import Timeline

__all__ = ["build", "Timeline", "__version__"]
