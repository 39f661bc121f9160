"""Read-only views of a linker's maps (:mod:`ctxwin._core.pairing`) as of a number of
messages: a later request of the same history adds entries, never changes one, so a
pairing hands out views instead of copies."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ctxwin._core.model import Loc

__all__ = ["IndexView", "LocView"]


class LocView(Mapping[Loc, Loc]):
    """The linker's map limited to the locations of the first ``n`` messages."""

    __slots__ = ("_data", "_n")

    def __init__(self, data: dict[Loc, Loc], n: int) -> None:
        self._data = data
        self._n = n

    def get(self, key: Loc, default: Loc | None = None) -> Loc | None:  # type: ignore[override]
        value = self._data.get(key)
        return default if value is None or key[0] >= self._n else value

    def __getitem__(self, key: Loc) -> Loc:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self.get(key) is not None

    def __iter__(self) -> Iterator[Loc]:
        return (k for k in list(self._data) if k[0] < self._n)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class IndexView(Mapping[int, int]):
    """The linker's message -> round map as of ``n`` messages: positions from ``unrounded``
    on were in a turn with no call yet (a later call may put them in a round)."""

    __slots__ = ("_data", "_n")

    def __init__(self, data: dict[int, int], n: int, unrounded: int) -> None:
        self._data = data
        self._n = min(n, unrounded)

    def get(self, key: int, default: int | None = None) -> int | None:  # type: ignore[override]
        value = self._data.get(key)
        return default if value is None or key >= self._n else value

    def __getitem__(self, key: int) -> int:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.get(key) is not None

    def __iter__(self) -> Iterator[int]:
        return (k for k in list(self._data) if k < self._n)

    def __len__(self) -> int:
        return sum(1 for _ in self)
