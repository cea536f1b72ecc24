"""The impressions a policy keeps on the host, in a bounded ring buffer.

Closed-form and Laplace models never need them to select or update (their state holds
sufficient statistics or their own buffers); they serve diagnostics
(``policy.posterior``'s log_likelihood / observed_data groups) and ``policy.history()``.
At most ``capacity`` impressions are kept (the most recent ones); ``capacity=0`` keeps
none. Appending is O(rows), never a copy of what is kept.

Example:
    >>> import numpy as np
    >>> h = History(L=2, d=3, capacity=4)
    >>> for t in range(6):
    ...     h.append(np.array([[t, t]]), np.zeros((1, 2)), np.zeros((1, 3)))
    >>> h.arrays()[0][:, 0].tolist(), h.seen
    ([2, 3, 4, 5], 6)
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_int

__all__ = ["DEFAULT_CAPACITY", "History", "as_capacity"]

#: Impressions kept by default.
DEFAULT_CAPACITY = 10_000


def as_capacity(capacity, name: str = "max_history") -> int:
    """An int >= 0 (bools and other types refused)."""
    return check_int(capacity, name, low=0)


class History:
    """A ring buffer of (items (L,), rewards (L,), v0 (d,)) rows.

    Args:
        L: list length; d: item dimension; capacity: most rows kept.
    """

    def __init__(self, L: int, d: int, capacity: int = DEFAULT_CAPACITY):
        self.L, self.d = int(L), int(d)
        self.capacity = as_capacity(capacity)
        self.seen = 0  # rows ever appended
        self._w = 0  # rows written into the ring since it was made
        self._items = np.zeros((0, self.L), np.int64)
        self._rewards = np.zeros((0, self.L))
        self._v0 = np.zeros((0, self.d))

    def __len__(self) -> int:
        return min(self._w, self.capacity)

    def _grow(self, need: int) -> None:
        size = self._items.shape[0]
        if need <= size:
            return
        new = min(self.capacity, max(need, 2 * size, 64))
        pad = new - size
        self._items = np.concatenate([self._items, np.zeros((pad, self.L), np.int64)])
        self._rewards = np.concatenate([self._rewards, np.zeros((pad, self.L))])
        self._v0 = np.concatenate([self._v0, np.zeros((pad, self.d))])

    def append(self, items, rewards, v0s) -> None:
        """Add rows: items (n, L) ints, rewards (n, L), v0s (n, d)."""
        n = items.shape[0]
        cap = self.capacity
        self.seen += n
        if cap == 0 or n == 0:
            return
        if n > cap:  # only the last ``cap`` rows can survive
            items, rewards, v0s = items[-cap:], rewards[-cap:], v0s[-cap:]
            self._w += n - cap
            n = cap
        self._grow(min(cap, self._w + n))
        idx = (self._w + np.arange(n)) % cap
        self._items[idx], self._rewards[idx], self._v0[idx] = items, rewards, v0s
        self._w += n

    def append_one(self, items, rewards, v0) -> None:
        """Add one row: items (L,), rewards (L,), v0 (d,) (the per-round path)."""
        self.seen += 1
        cap = self.capacity
        if cap == 0:
            return
        if self._w < cap and self._w >= self._items.shape[0]:
            self._grow(self._w + 1)
        i = self._w % cap
        self._items[i], self._rewards[i], self._v0[i] = items, rewards, v0
        self._w += 1

    def arrays(self):
        """The kept rows, oldest first: items (m, L), rewards (m, L), v0 (m, d)."""
        m = len(self)
        if m == 0:
            return (np.zeros((0, self.L), np.int64), np.zeros((0, self.L)),
                    np.zeros((0, self.d)))
        if self._w <= self.capacity:
            order = np.arange(m)
        else:
            order = (self._w + np.arange(m)) % self.capacity
        return self._items[order], self._rewards[order], self._v0[order]

    def resize(self, capacity: int) -> None:
        """Keep at most ``capacity`` rows from now on (the most recent ones)."""
        items, rewards, v0s = self.arrays()
        seen = self.seen
        self.__init__(self.L, self.d, capacity)
        self.append(items, rewards, v0s)
        self.seen = seen
