"""The last few values a server computed, by key, shared by every session (each runs in a thread of the server):
what pages keep so that a page opened again does not compute the same thing twice. No streamlit."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """At most `size` values, the least recently read or written dropped first; thread-safe."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"Recent keeps at least one value, got size {size}")
        self.size = size
        self._kept: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            if key not in self._kept:
                return None
            self._kept.move_to_end(key)
            return self._kept[key]

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
