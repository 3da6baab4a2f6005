"""What a HEAD-log entry was (from its message), and which entries form one logical move.

Messages embed the user's command line (``pull --rebase origin main (pick): local1``,
``pull -q: Fast-forward``), so we match the *command word* of the action (the text before the
first ``": "``) and an optional trailing ``(phase)``; anything unknown is ``"other"``. The
message is only a hint (``GIT_REFLOG_ACTION`` can replace it entirely,
https://git-scm.com/docs/git-sh-setup): the effect on the code comes from old/new and ancestry.

Grouping (file order, never time order):

- a rebase / ``pull --rebase`` burst, from an entry with phase ``(start)`` through the matching
  ``(finish)`` or ``(abort)`` of the same command, is ONE group;
- the two lines ``git branch -m`` writes when renaming the current branch (``X -> 0`` then
  ``0 -> X``) are ONE group that does not change the commit;
- in a linked worktree's own HEAD log, the message-less first line ``0 -> X`` that
  ``git worktree add`` writes, plus its ``reset: moving to HEAD`` at the same commit, are ONE
  group of kind ``worktree``;
- every other entry is its own group.

``detail_for`` gives a group's sub-kind: how a pull or merge went (``fast-forward``,
``merge``, ``rebase``), whether a rebase was aborted or left unfinished.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from timeline.collector import uncollected
from timeline.git.reflog import ReflogEntry
from timeline.model import is_zero_sha

__all__ = [
    "KINDS",
    "DETAILS",
    "DETAILED_KINDS",
    "Action",
    "Group",
    "parse_action",
    "classify",
    "classify_action",
    "group_entries",
    "is_branch_rename",
    "match_stashes",
    "detail_for",
    "heads_of",
    "single_detail",
    "single_kind",
    "special_groups",
    "stashed_positions",
]

KINDS = (
    "clone",
    "commit",
    "amend",
    "merge",
    "pull",
    "checkout",
    "reset",
    "rebase",
    "cherry-pick",
    "revert",
    "am",
    "stash",
    "branch",
    "worktree",
    "fetch",
    "push",
    "other",
)
# ``detail`` values: pull/merge mode, or how a rebase burst ended
DETAILS = ("fast-forward", "merge", "rebase", "aborted", "unfinished")
# the kinds of the groups that are not bursts and can have a detail (see detail_for)
DETAILED_KINDS = frozenset({"pull", "merge"})

_PHASE = re.compile(r"\s*\((?P<phase>[A-Za-z-]+)\)\s*$")
_CMD_KIND = {
    "clone": "clone",
    "commit": "commit",
    "merge": "merge",
    "pull": "pull",
    "checkout": "checkout",
    "switch": "checkout",
    "reset": "reset",
    "rebase": "rebase",
    "cherry-pick": "cherry-pick",
    "revert": "revert",
    "am": "am",
    "stash": "stash",
    "branch": "branch",
    "fetch": "fetch",
    "push": "push",
}
_COMMIT_PHASE_KIND = {
    "amend": "amend",
    "merge": "merge",
    "cherry-pick": "cherry-pick",
    "revert": "revert",
    "initial": "commit",
}
_BURST_END = ("finish", "abort")
_STASH_MSG = re.compile(r"^(?:WIP on|On) (?:[^:]*): (?:(?P<abbrev>[0-9a-f]{4,64}) )?")
STASH_WINDOW_S = 2
WORKTREE_WINDOW_S = 2


class Action(NamedTuple):
    """``"pull --rebase origin main (pick): local1"`` -> cmd "pull", phase "pick",
    action "pull --rebase origin main (pick)", rest "local1"."""

    cmd: str
    phase: str | None
    action: str
    rest: str


class _Head(NamedTuple):
    """What a message's action text (before the first ``": "``) says; shared by every entry
    with the same action text."""

    cmd: str
    phase: str | None
    action: str
    kind: str


@dataclass(slots=True)
class Group:
    entries: list[ReflogEntry]
    kind: str
    burst: bool = False  # a collapsed (start)..(finish|abort) run
    closed: bool = True  # False: a burst with no (finish)/(abort) entry
    rename: bool = False  # a current-branch rename pair (never a code change)
    aborted: bool = False  # a burst closed by (abort)

    @property
    def first(self) -> ReflogEntry:
        return self.entries[0]

    @property
    def last(self) -> ReflogEntry:
        return self.entries[-1]


def parse_action(message: str | None) -> Action | None:
    """Split a reflog message into command word, phase and the rest; None if it has no
    ``"<action>: "`` prefix (custom ``update-ref -m`` texts, no message at all)."""
    if not message or (head := _head(message)) is None:
        return None
    cut = message.find(": ")
    return Action(head.cmd, head.phase, head.action, message[cut + 2 :] if cut >= 0 else "")


# Action text -> its reading. Action texts repeat ("commit", "checkout", "pull origin main")
# while whole messages rarely do, so this is what is worth remembering.
_HEADS: dict[str, _Head] = {}


def _head(message: str | None) -> _Head | None:
    if not message:
        return None
    text, sep, _ = message.partition(": ")  # (cheaper than find and a slice)
    if not sep:
        if message[-1] != ":":
            return None
        text = message[:-1]
    head = _HEADS.get(text)
    if head is None:
        head = _read_head(text)
        if head is not None and len(_HEADS) < 4096 and len(text) < 200:
            _HEADS[text] = head
    return head


def _read_head(text: str) -> _Head | None:
    action = text.strip()
    if not action:
        return None
    phase = None
    if action[-1] == ")":
        m = _PHASE.search(action)
        if m:
            phase = m["phase"].lower()
    cut = action.find(" ")
    cmd = (action if cut < 0 else action[:cut]).split(None, 1)[0].lower()
    kind = _kind(cmd, phase)
    return _Head(cmd, phase, action, kind)


def classify(message: str | None) -> str:
    """Entry message -> one of ``KINDS``."""
    if message == "update by push" or message == "push":
        return "push"
    head = _head(message)
    return "other" if head is None else head.kind


def classify_action(a: Action | None) -> str:
    return "other" if a is None else _kind(a.cmd, a.phase)


def _kind(cmd: str, phase: str | None) -> str:
    kind = _CMD_KIND.get(cmd, "other")
    if kind == "commit" and phase:
        kind = _COMMIT_PHASE_KIND.get(phase, "commit")
    return kind


def detail_for(group: Group) -> str | None:
    """A group's sub-kind (one of ``DETAILS``), or None.

    - pull: ``rebase`` for a ``(start)``..``(finish)`` burst (``pull --rebase``, or
      ``pull.rebase`` from config, whose text has no ``--rebase``), else ``fast-forward`` /
      ``merge`` from the message's outcome (``pull --rebase: Fast-forward`` is a fast-forward:
      there was nothing to rebase);
    - merge: ``fast-forward`` or ``merge`` (also ``commit (merge)`` after a conflict);
    - rebase (and ``pull --rebase``) bursts that were aborted: ``aborted``; left without a
      ``(finish)``: ``unfinished``.
    """
    kind = group.kind
    if group.burst:
        if group.aborted:
            return "aborted"
        if not group.closed:
            return "unfinished"
        return "rebase" if kind == "pull" else None
    return single_detail(kind, group.first.message)


def single_detail(kind: str, message: str | None) -> str | None:
    """``detail_for`` of a group that is not a burst, from its kind and first message."""
    if kind not in DETAILED_KINDS:
        return None
    message = message or ""
    if message.endswith((": Fast-forward", ": fast-forward")):
        return "fast-forward"
    if "Merge made by" in message or message.startswith("commit (merge):"):
        return "merge"
    head = _head(message)
    if kind == "pull" and head is not None and head.phase is not None:
        return "rebase"  # a lone (pick)/(finish) line of a damaged burst
    return None


def is_branch_rename(message: str | None) -> bool:
    return message is not None and message.startswith("Branch: renamed ")


def _burst_end(heads: list[_Head | None], start: int) -> tuple[int, bool]:
    """Index of the entry closing the burst opened at ``start``, and whether it was closed.

    Closed by the first ``(finish)``/``(abort)`` of the same command word. If there is none
    before the next ``(start)`` (or the end), the burst is unterminated (still in progress,
    ``--quit``, or a damaged log) and keeps only the run of entries written by the rebase
    machinery itself (same command word, or ``rebase``); commits the user made while it was
    stopped stay events of their own (code may have run at those states).
    """
    cmd = heads[start].cmd  # type: ignore[union-attr]
    members = {cmd, "rebase"}
    last_member = start
    foreign = False
    for j in range(start + 1, len(heads)):
        h = heads[j]
        if h is not None and h.cmd == cmd and h.phase in _BURST_END:
            return j, True
        if h is not None and h.phase == "start":
            break
        if h is not None and h.cmd in members:
            if not foreign:
                last_member = j
        else:
            foreign = True
    return last_member, False


def group_entries(entries: list[ReflogEntry], *, linked_worktree: bool = False) -> list[Group]:
    """Group HEAD-log entries (in file order) into logical moves of HEAD.

    ``linked_worktree``: the entries are a linked worktree's own HEAD log, whose first line
    (message-less, from a zero id) is the worktree's creation.
    """
    with uncollected():  # a Group and a list per entry, no cycles
        heads = heads_of(entries)
        groups: list[Group] = []
        append = groups.append
        i = 0
        for start, group in special_groups(entries, heads, linked_worktree=linked_worktree):
            for j in range(i, start):
                append(Group([entries[j]], single_kind(entries[j], heads[j])))
            append(group)
            i = start + len(group.entries)
        for j in range(i, len(entries)):
            append(Group([entries[j]], single_kind(entries[j], heads[j])))
        return groups


def heads_of(entries: list[ReflogEntry]) -> list[_Head | None]:
    """What each entry's message says (None: no ``"<action>: "`` prefix), for
    ``special_groups`` and ``single_kind``."""
    return [_head(e.message) for e in entries]


def single_kind(entry: ReflogEntry, head: _Head | None) -> str:
    """The kind of a group of the one plain entry ``entry`` (``head``: ``heads_of``'s item)."""
    if head is None:
        return "push" if entry.message == "update by push" else "other"
    return head.kind


def special_groups(
    entries: list[ReflogEntry], heads: list[_Head | None], *, linked_worktree: bool = False
) -> list[tuple[int, Group]]:
    """The groups that are not one plain entry, each with the index of its first entry, in
    file order: bursts, branch-rename pairs (and lone halves), a linked worktree's creation.
    Every entry outside them is a group of its own, of kind ``single_kind``: that is what
    ``group_entries`` gives, and what a caller building one thing per entry can do without
    making a ``Group`` per entry (reading a 100,000-entry log).
    """
    specials: list[tuple[int, Group]] = []
    i = 0
    if linked_worktree and entries:
        worktree = _worktree_group(entries)
        if worktree is not None:
            specials.append((0, worktree))
            i = len(worktree.entries)
    # Entries that may open a group of more than one: a burst's (start), or a "Branch: ..." (a rename).
    for j, h in [(j, h) for j, h in enumerate(heads) if h is not None and (h.phase == "start" or h.kind == "branch")]:
        if j < i:  # inside the group found before
            continue
        if h.phase == "start":
            group = _burst_group(entries, heads, j)
        # "Branch: renamed ..." reads as kind "branch"; only those can be a rename
        elif h.kind == "branch" and is_branch_rename(entries[j].message):
            group = _rename_group(entries, j)
        else:
            continue
        specials.append((j, group))
        i = j + len(group.entries)
    return specials


def _worktree_group(entries: list[ReflogEntry]) -> Group | None:
    """A linked worktree's creation: its message-less first line, and the ``reset: moving to
    HEAD`` that ``git worktree add`` writes right after it (when there)."""
    e = entries[0]
    if not (e.message is None and is_zero_sha(e.old) and not is_zero_sha(e.new)):
        return None
    members = [e]
    nxt = entries[1] if len(entries) > 1 else None
    if (
        nxt is not None
        and nxt.message == "reset: moving to HEAD"
        and nxt.old == nxt.new == e.new
        and abs(nxt.ts - e.ts) <= WORKTREE_WINDOW_S
    ):
        members.append(nxt)
    return Group(members, kind="worktree")


def _burst_group(entries: list[ReflogEntry], heads: list[_Head | None], j: int) -> Group:
    """The burst that ``entries[j]`` (a (start)) opens, through its (finish) or (abort)."""
    end, closed = _burst_end(heads, j)
    kind = heads[j].kind  # type: ignore[union-attr]
    if kind == "other":  # e.g. a custom GIT_REFLOG_ACTION driving a rebase
        kind = "rebase"
    last = heads[end]
    aborted = closed and last is not None and last.phase == "abort"
    return Group(entries[j : end + 1], kind=kind, burst=True, closed=closed, aborted=aborted)


def _rename_group(entries: list[ReflogEntry], j: int) -> Group:
    """A branch rename at ``entries[j]``: git writes the old name's deletion and the new name's
    creation with the same message; a lone half stays a group of one."""
    e = entries[j]
    nxt = entries[j + 1] if j + 1 < len(entries) else None
    if (
        nxt is not None
        and is_zero_sha(e.new)
        and not is_zero_sha(e.old)
        and is_zero_sha(nxt.old)
        and nxt.new == e.old
        and nxt.message == e.message
    ):
        return Group([e, nxt], kind="branch", rename=True)
    return Group([e], kind="branch", rename=True)


def match_stashes(groups: list[Group], stash_entries: list[ReflogEntry]) -> None:
    """Mark ``reset: moving to HEAD`` groups that ``git stash`` wrote as kind "stash".

    ``git stash`` writes only ``reset: moving to HEAD`` (old == new) to the HEAD log; the
    stash itself goes to ``refs/stash``. We pair each such HEAD entry with the nearest unused
    stash-log entry within ``STASH_WINDOW_S`` seconds whose message looks like a stash
    (``WIP on <branch>: <abbrev> ...`` / ``On <branch>: ...``) and, when an abbreviated id is
    present, names the same commit. Popped or dropped stashes are gone from ``refs/stash`` and
    stay kind "reset".
    """
    singles = [g for g in groups if not g.burst and len(g.entries) == 1]
    for k in _stash_matches([g.first for g in singles], stash_entries):
        singles[k].kind = "stash"


def stashed_positions(
    entries: list[ReflogEntry], specials: list[tuple[int, Group]], stash_entries: list[ReflogEntry]
) -> set[int]:
    """``match_stashes`` for entries grouped by ``special_groups``: the indices of the entries
    (each a group of its own) that ``git stash`` wrote."""
    inside: set[int] = set()
    for start, group in specials:
        if group.burst or len(group.entries) != 1:
            inside.update(range(start, start + len(group.entries)))
    positions = [j for j, e in enumerate(entries) if e.message == "reset: moving to HEAD" and j not in inside]
    return {positions[k] for k in _stash_matches([entries[j] for j in positions], stash_entries)}


def _stash_matches(lone: list[ReflogEntry], stash_entries: list[ReflogEntry]) -> list[int]:
    """Which of ``lone`` (entries that are groups of their own, in file order) ``git stash``
    wrote: their indices. See ``match_stashes``."""
    candidates = []
    for s in stash_entries:
        m = _STASH_MSG.match(s.message or "")
        if m:
            candidates.append((s, m["abbrev"]))
    if not candidates:
        return []
    used: set[int] = set()
    matched: list[int] = []
    for k, e in enumerate(lone):
        if e.message != "reset: moving to HEAD" or e.old != e.new:
            continue
        best = None
        for idx, (s, abbrev) in enumerate(candidates):
            if idx in used or abs(s.ts - e.ts) > STASH_WINDOW_S:
                continue
            if abbrev and not e.new.startswith(abbrev):
                continue
            if best is None or abs(s.ts - e.ts) < abs(candidates[best][0].ts - e.ts):
                best = idx
        if best is not None:
            used.add(best)
            matched.append(k)
    return matched
