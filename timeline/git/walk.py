"""One walk of the commit graph for many moves at once: which commits each move brought in and
took away, from the commits of one ``git log`` of all the moves' ends, read in git's order.

The lists are what ``git rev-list old..new`` and ``new..old`` give
(https://git-scm.com/docs/git-rev-list), ordered as ``git log --left-right old...new`` shows
them (https://git-scm.com/docs/git-log#_commit_ordering).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

__all__ = ["CommitWalk", "MAX_COMMITS_PER_SIDE", "MOVES_A_PASS"]

MAX_COMMITS_PER_SIDE = 50_000
# After every move's commits are known, a pass reads this many more commits before it stops
# (and goes on if one of them changes that): clock skew, as git's own walks allow for (SLOP).
_SLOP = 32
# ...and only once git's date order is this far below the oldest one-sided commit: a commit whose
# clock is behind its parent's (skew) may still be read late and repaint what lies under it.
_SKEW_S = 3_600
# Moves painted together in one pass over the graph: two bits each, so a commit's paint is a
# small integer whatever the number of moves (70,000 moves in one pass made each 17 kB, copied
# at every test); neighbours in the reflog share most of the history they walk.
MOVES_A_PASS = 32

Commit = tuple[str, int, tuple[str, ...]]  # (sha, committer timestamp, parents)
Sides = tuple[list[str], list[str], bool]  # (arrived, left, truncated)


class CommitWalk:
    """Which commits each of many moves (old, new) brought in and took away, from the commits of
    ONE ``git log <every end>``, read as git streams them (its walk: by committer date, newest
    first) and kept as a graph (parents and date a commit: memory grows with the commits read,
    not with the moves).

    A move whose new end reaches its old one down a line of one-parent commits (a commit, a
    fast-forward pull) brought in that line and took nothing away, and the other way round (a
    reset back); that is exact, and needs no pass. The others are painted in passes of
    ``MOVES_A_PASS`` neighbouring moves over the graph, each in git's order: bit ``2i`` =
    reachable from move ``i``'s old end, bit ``2i+1`` = from its new end (paint flows from a
    commit to its parents; on to commits already passed too, when a child comes late). A move
    brought in the commits with its new bit only (``old..new``) and took away those with its old
    bit only (``new..old``). A pass is done when no commit still ahead of it carries one bit of
    a move without the other (what lies below is reachable from both ends of every move, or
    from none), and git's date order has gone ``_SKEW_S`` (an hour) past every one-sided commit,
    ``_SLOP`` commits in a row (a same-second child, or one whose clock is behind its parent's,
    cannot still add paint to them). So a pass covers its moves' commits and an hour more,
    however long the history below them; git is read only as far as the deepest pass needs; and
    the lists are exactly the commits reachable from one end and not from the other: what ``git
    rev-list old..new`` gives, except with clock skew of more than an hour.
    """

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        self.tips = list(dict.fromkeys(end for pair in pairs for end in pair))
        self.order: dict[str, int] = {}  # commits read, by their place in git's order
        self.parents: dict[str, tuple[str, ...]] = {}
        self.dates: dict[str, int] = {}
        # each move's (arrived, left, truncated); None: not known (git stopped before)
        self.results: list[Sides | None] = [None] * len(pairs)
        self._feed: Iterator[Commit] = iter(())

    def run(self, feed: Iterator[Commit]) -> None:
        """Work out every move, reading ``feed`` (git's commits, in its order) only as far as
        needed; a move whose commits ``feed`` ends before is left ``None``."""
        self._feed = feed
        general: list[int] = []
        first: dict[tuple[str, str], int] = {}
        mirrors: list[tuple[int, int]] = []  # (move, an earlier move the other way)
        dates = self.dates
        for i, (old, new) in enumerate(self.pairs):
            line = self._line(new, old)
            if line is not None:
                self.results[i] = (line[:MAX_COMMITS_PER_SIDE], [], len(line) > MAX_COMMITS_PER_SIDE)
                continue
            line = self._line(old, new)
            if line is not None:
                self.results[i] = ([], line[:MAX_COMMITS_PER_SIDE], len(line) > MAX_COMMITS_PER_SIDE)
                continue
            # a checkout and the checkout back: the same commits, the sides swapped, in the same
            # order (git's queue starts with the two ends; only a tie of their dates would
            # order them otherwise)
            back = first.get((new, old))
            if back is not None and old in dates and new in dates and dates[old] != dates[new]:
                mirrors.append((i, back))
                continue
            first[(old, new)] = i
            general.append(i)
        for start in range(0, len(general), MOVES_A_PASS):
            self._pass(general[start : start + MOVES_A_PASS])
        for i, back in mirrors:
            sides = self.results[back]
            self.results[i] = None if sides is None else (sides[1], sides[0], sides[2])

    def _read(self) -> str | None:
        """The next commit of git's walk, kept in the graph; None when there is none."""
        try:
            sha, date, parents = next(self._feed)
        except StopIteration:
            return None
        self.order.setdefault(sha, len(self.order))
        self.parents[sha] = parents
        self.dates[sha] = date
        return sha

    def _known(self, sha: str) -> bool:
        """Whether ``sha`` is read, reading on until it is (False: git ended first)."""
        order = self.order
        while sha not in order:
            if self._read() is None:
                return False
        return True

    def _line(self, top: str, bottom: str) -> list[str] | None:
        """The commits from ``top`` down one-parent links to ``bottom`` (excluded), or None when
        that is not how they are joined (a merge on the way, or ``bottom`` passed by date)."""
        if top == bottom or not self._known(bottom):
            return None
        floor = self.dates[bottom] - _SKEW_S
        line: list[str] = []
        commit = top
        order, dates, all_parents = self.order, self.dates, self.parents
        while commit != bottom:
            if (commit not in order and not self._known(commit)) or dates[commit] < floor:
                return None
            parents = all_parents[commit]
            if len(parents) != 1:
                return None
            line.append(commit)
            commit = parents[0]
        return line

    def _pass(self, moves: list[int]) -> None:
        """Paint ``moves`` over the graph in git's order, then read each one's lists."""
        order, parents, dates = self.order, self.parents, self.dates
        olds = int("01" * len(moves), 2)
        ahead: dict[str, int] = {}  # paint of the commits referenced, not passed yet
        queue: list[tuple[int, str]] = []  # those of them read, by git's order
        waiting: set[str] = set()  # those not read yet (git gives them later than all read)
        paint: dict[str, int] = {}  # commits passed
        unsettled = 0  # commits ahead with one side of a move without the other
        oldest_half: int | None = None  # the oldest date of a one-sided commit passed

        def half(m: int) -> bool:
            return bool(((m >> 1) ^ m) & olds)

        def reach(sha: str, m: int) -> None:
            """Add the paint ``m`` to ``sha`` and, when it was passed already (a child came
            late), on to its ancestors."""
            nonlocal unsettled, oldest_half
            stack = [sha]
            while stack:
                c = stack.pop()
                if c in paint:
                    cur = paint[c]
                    new = cur | m
                    if new != cur:
                        paint[c] = new
                        stack.extend(parents[c])
                        if half(new) and (oldest_half is None or dates[c] < oldest_half):
                            oldest_half = dates[c]
                    continue
                cur = ahead.get(c, 0)
                if not cur:
                    if c in order:
                        heapq.heappush(queue, (order[c], c))
                    else:
                        waiting.add(c)
                new = cur | m
                if new != cur:
                    ahead[c] = new
                    unsettled += half(new) - half(cur)

        for bit, i in enumerate(moves):
            old_end, new_end = self.pairs[i]
            reach(old_end, 1 << (2 * bit))
            reach(new_end, 2 << (2 * bit))
        quiet = 0
        complete = True
        while True:
            if not queue:
                if not waiting:
                    break
                sha = self._read()
                if sha is None:  # git ended before this pass did
                    complete = False
                    break
                if sha in waiting:
                    waiting.discard(sha)
                    heapq.heappush(queue, (order[sha], sha))
                continue
            _, commit = heapq.heappop(queue)
            m = ahead.pop(commit)
            date = dates[commit]
            if half(m):
                unsettled -= 1
                if oldest_half is None or date < oldest_half:
                    oldest_half = date
            paint[commit] = m
            for p in parents[commit]:
                if p in paint:
                    reach(p, m)
                    continue
                cur = ahead.get(p, 0)  # (reach, inline: the common case)
                if not cur:
                    if p in order:
                        heapq.heappush(queue, (order[p], p))
                    else:
                        waiting.add(p)
                new = cur | m
                if new != cur:
                    ahead[p] = new
                    unsettled += half(new) - half(cur)
            if unsettled == 0 and (oldest_half is None or date < oldest_half - _SKEW_S):
                quiet += 1
                if quiet > _SLOP:
                    break
            else:
                quiet = 0
        self._settle(moves, paint, ahead, complete)

    def _settle(self, moves: list[int], paint: dict[str, int], ahead: dict[str, int], complete: bool) -> None:
        """Read the lists of each move of a finished pass; a move is left ``None`` when git
        ended first (not ``complete``) with a commit still ahead on one side of it only: its
        lists may lack commits git never gave."""
        for bit, i in enumerate(moves):
            old_bit = 1 << (2 * bit)
            both = old_bit | (old_bit << 1)
            if complete or all((m & both) in (0, both) for m in ahead.values()):
                self.results[i] = self._sides(self.pairs[i], paint, old_bit)

    def _sides(self, pair: tuple[str, str], paint: dict[str, int], old_bit: int) -> Sides:
        """A move's ``(arrived, left, truncated)`` ids, in the order ``git log --left-right
        old...new`` lists them: git pops the newest commit of a queue ordered by committer date
        (ties: first queued first), started with the two ends, and queues each parent when it
        first meets it; restricted to the commits it shows, that is the walk below (a child of
        a commit shown is shown too)."""
        both = old_bit | (old_bit << 1)
        dates, parents = self.dates, self.parents
        arrived: list[str] = []
        left: list[str] = []
        queue: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        order = 0
        for end in pair:
            one_side = paint.get(end, 0) & both
            if end not in seen and one_side and one_side != both:
                seen.add(end)
                heapq.heappush(queue, (-dates[end], order, end))
                order += 1
        push, pop, get, see = heapq.heappush, heapq.heappop, paint.get, seen.add
        c = pop(queue)[2] if queue else None
        while c is not None:
            (left if paint[c] & old_bit else arrived).append(c)
            nxt = None
            for p in parents[c]:
                one_side = get(p, 0) & both
                if not one_side or one_side == both or p in seen:
                    continue
                see(p)
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
        truncated = len(arrived) > MAX_COMMITS_PER_SIDE or len(left) > MAX_COMMITS_PER_SIDE
        return arrived[:MAX_COMMITS_PER_SIDE], left[:MAX_COMMITS_PER_SIDE], truncated
