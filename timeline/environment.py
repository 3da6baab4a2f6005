"""What the outside world looks like to a build: the clock, the process environment, the host
name and the machine's zone file.

Passed in (httpie style) so tests can swap the clock and the machine's zone (``TZ`` in
``environ``, else the ``localtime`` zone file).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from timeline.clock import LOCALTIME


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Environment:
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], datetime] = _utc_now
    host: Callable[[], str] = socket.gethostname
    localtime: Path = LOCALTIME
    stdin: Callable[[], BinaryIO] = lambda: sys.stdin.buffer  # read for a path of "-"
