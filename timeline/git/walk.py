"""One walk of the commit graph for many moves at once: which commits each move brought in and
took away, from the commits of one ``git log`` of all the moves' ends, read in git's order.

The lists are what ``git rev-list old..new`` and ``new..old`` give
(https://git-scm.com/docs/git-rev-list), ordered as ``git log --left-right old...new`` shows
them (https://git-scm.com/docs/git-log#_commit_ordering).
"""

from __future__ import annotations

import heapq

__all__ = ["CommitWalk", "MAX_COMMITS_PER_SIDE"]

MAX_COMMITS_PER_SIDE = 50_000
# After every move's commits are known, the walk reads this many more commits before it stops
# (and goes on if one of them changes that): clock skew, as git's own walks allow for (SLOP).
_SLOP = 32
# ...and only once git's date order is this far below the oldest one-sided commit: a commit whose
# clock is behind its parent's (skew) may still be read late and repaint what lies under it.
_SKEW_S = 3_600


class CommitWalk:
    """One walk of the commit graph for many moves (old, new) at once, fed the commits of
    ``git log <every end>`` in git's order (its walk: by committer date, newest first).

    Each commit read is painted with a bit per move side: bit ``2i`` = reachable from move
    ``i``'s old end, bit ``2i+1`` = from its new end (paint flows from a commit to its parents;
    on to commits already read too, when a child comes late). Move ``i`` brought in the commits
    with bit ``2i+1`` only (``old..new``) and took away those with bit ``2i`` only
    (``new..old``). Commits referenced but not read yet are the frontier; the walk is done when
    no frontier commit carries one bit of a move without the other (what lies below is
    reachable from both ends of every move, or from none), and git's date order has gone
    ``_SKEW_S`` (an hour) past every one-sided commit, ``_SLOP`` commits in a row (a
    same-second child, or one whose clock is behind its parent's, cannot still add paint to
    them). So it covers the moves' commits and an hour more, however long the history below them
    (a commit dated far in the past among them makes it read down to that date); and the lists
    are exactly the commits reachable from one end and not from the other: what ``git rev-list
    old..new`` gives, except with clock skew of more than an hour.
    """

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        paint: dict[str, int] = {}
        for i, (old, new) in enumerate(pairs):
            paint[old] = paint.get(old, 0) | (1 << (2 * i))
            paint[new] = paint.get(new, 0) | (2 << (2 * i))
        self.tips = list(paint)
        # bits 2i (the old sides): ((m >> 1) ^ m) & olds != 0 <=> one side of a move without the other
        self.olds = int("01" * len(pairs), 2)
        self.pending: dict[str, int] = paint  # the frontier: referenced, not read yet
        self.unsettled = sum(1 for m in paint.values() if self._half(m))
        self.paint: dict[str, int] = {}  # commits read
        self.parents: dict[str, tuple[str, ...]] = {}
        self.dates: dict[str, int] = {}
        self.oldest_half: int | None = None  # the oldest date of a one-sided commit read
        self.quiet = 0  # lines read in a row with the walk done

    def _half(self, m: int) -> bool:
        return bool(((m >> 1) ^ m) & self.olds)

    def add(self, sha: str, date: int, parents: tuple[str, ...]) -> bool:
        """Read one commit (the walk's next); True when the walk needs no more."""
        pending, paint, olds = self.pending, self.paint, self.olds
        m = pending.pop(sha, 0)
        half = bool(((m >> 1) ^ m) & olds)
        if half:
            self.unsettled -= 1
            if self.oldest_half is None or date < self.oldest_half:
                self.oldest_half = date
        paint[sha] = m
        self.parents[sha] = parents
        self.dates[sha] = date
        for p in parents:
            if p in paint:  # read already: a child came late
                self._spread(p, m)
                continue
            cur = pending.get(p, 0)
            new = cur | m if cur else m  # (the same int object down a line: little memory)
            if new != cur:
                pending[p] = new
                self.unsettled += bool(((new >> 1) ^ new) & olds) - bool(((cur >> 1) ^ cur) & olds)
        if self.unsettled == 0 and (self.oldest_half is None or date < self.oldest_half - _SKEW_S):
            self.quiet += 1
            return self.quiet > _SLOP
        self.quiet = 0
        return False

    def _spread(self, sha: str, m: int) -> None:
        """Add the paint ``m`` to ``sha`` and, if it was read already, to its ancestors read."""
        stack = [sha]
        paint, pending, parents, half = self.paint, self.pending, self.parents, self._half
        while stack:
            c = stack.pop()
            if c in paint:
                cur = paint[c]
                new = cur | m
                if new != cur:
                    paint[c] = new
                    stack.extend(parents[c])
                    if half(new) and (self.oldest_half is None or self.dates[c] < self.oldest_half):
                        self.oldest_half = self.dates[c]
                continue
            cur = pending.get(c, 0)
            new = cur | m if cur else m
            if new != cur:
                pending[c] = new
                self.unsettled += half(new) - (half(cur) if cur else 0)

    def settled(self, i: int) -> bool:
        """Whether move ``i``'s commits are all known (no frontier commit has one of its ends'
        paint without the other's)."""
        old_bit = 1 << (2 * i)
        both = old_bit | (old_bit << 1)
        return all((m & both) in (0, both) for m in self.pending.values())

    def sides(self, i: int) -> tuple[list[str], list[str], bool]:
        """Move ``i``'s ``(arrived, left, truncated)`` ids, in the order ``git log --left-right
        old...new`` lists them: git pops the newest commit of a queue ordered by committer date
        (ties: first queued first), started with the two ends, and queues each parent when it
        first meets it; restricted to the commits it shows, that is the walk below (a child of
        a commit shown is shown too)."""
        old, new = self.pairs[i]
        old_bit = 1 << (2 * i)
        new_bit = old_bit << 1
        both = old_bit | new_bit
        paint, dates, parents = self.paint, self.dates, self.parents
        arrived: list[str] = []
        left: list[str] = []
        truncated = False
        queue: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        order = 0
        for end in (old, new):
            if end not in seen and (paint.get(end, 0) & both) in (old_bit, new_bit):
                seen.add(end)
                heapq.heappush(queue, (-dates[end], order, end))
                order += 1
        push, pop = heapq.heappush, heapq.heappop
        c = pop(queue)[2] if queue else None
        while c is not None:
            side = left if paint[c] & old_bit else arrived
            if len(side) < MAX_COMMITS_PER_SIDE:
                side.append(c)
            else:
                truncated = True
            nxt = None
            for p in parents[c]:
                if p not in seen and (paint.get(p, 0) & both) in (old_bit, new_bit):
                    seen.add(p)
                    if nxt is None and not queue:
                        nxt = p  # alone in the queue: next anyway (a straight line)
                    else:
                        if nxt is not None:
                            push(queue, (-dates[nxt], order, nxt))
                            order += 1
                            nxt = None
                        push(queue, (-dates[p], order, p))
                        order += 1
            c = nxt if nxt is not None else (pop(queue)[2] if queue else None)
        return arrived, left, truncated
