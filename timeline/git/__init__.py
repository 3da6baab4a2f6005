"""Read a checkout's HEAD reflog as code events, safely (the repository is untrusted).

Public API::

    from timeline.git import GitError, GitHistory, read_history

    history = read_history("/path/to/checkout/or/any/subfolder")
    history.events        # list[CodeEvent], file order, ids "e1", "e2", ...
    history.diagnostics   # list[Diagnostic]: damaged lines, missing objects, gaps, ...

Modules: ``locate`` (git dirs, safe file reading, HEAD), ``reflog`` (tolerant parser),
``classify`` (message -> kind, burst collapse), ``objects`` (shadow-repo object queries),
``history`` (the pipeline). No git process ever runs against the repository itself.
"""

from timeline.git.errors import GitError
from timeline.git.history import GitHistory, read_history

__all__ = ["GitError", "GitHistory", "read_history"]
