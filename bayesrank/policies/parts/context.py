"""The request's context: the user's last item ``v0`` and the items available now.

In the paper ``v0`` is the vector of the user's last item: it changes with every request
and enters the features of position 1 only (``v_{a^1} + w_1 v0``). The mask says which
items may be shown to this request. Both travel explicitly through the functional core:
``core.select(key, state, ctx)`` and ``core.update(state, items, rewards, ctx)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Context"]


class Context(NamedTuple):
    """One request's context (arrays only, so it can be vmapped over requests).

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.RankTS(items=env.items, w=env.w)
        >>> ctx = policy.context(v0=env.items[3])      # a checked Context
        >>> ctx.v0.shape, ctx.mask.shape
        ((10,), (10,))
    """

    v0: Any  # (d,) the user's last item vector
    mask: Any  # (Kc,) bool, True where an item may be shown to this request
