"""Prefix sums of a list that changes in place, in O(log n) (a Fenwick tree)."""

from __future__ import annotations

__all__ = ["Sums"]


class Sums:
    """The tokens of each message as the window leaves it, with prefix sums in O(log n)
    (a Fenwick tree): the cost rule needs what a jump would re-write after a position."""

    __slots__ = ("_tree", "_values")

    def __init__(self) -> None:
        self._values: list[int] = []
        self._tree: list[int] = [0]

    def append(self, value: int) -> None:
        self._values.append(value)
        i = len(self._values)
        lowbit = i & -i
        # the new node covers (i - lowbit, i]: it, plus the nodes that cover the values
        # before it in that range, (i - lowbit, i - 1]
        total, tree, j, stop = value, self._tree, i - 1, i - lowbit
        while j > stop:
            total += tree[j]
            j -= j & -j
        tree.append(total)

    def __len__(self) -> int:
        return len(self._values)

    def copy(self) -> Sums:
        """An independent copy."""
        twin = Sums()
        twin._values, twin._tree = list(self._values), list(self._tree)
        return twin

    def __getitem__(self, i: int) -> int:
        return self._values[i]

    def __setitem__(self, i: int, value: int) -> None:
        delta = value - self._values[i]
        self._values[i] = value
        j = i + 1
        while j < len(self._tree):
            self._tree[j] += delta
            j += j & -j

    def prefix(self, n: int) -> int:
        """The tokens of the first ``n`` messages."""
        total = 0
        while n > 0:
            total += self._tree[n]
            n -= n & -n
        return total
