"""One decoder for every policy: the exact best list under a tables part's scores.

Pairwise kinds are decoded by the *backward* max-sum DP of :mod:`bayesrank.decoding.backward`
(positions L..2), which does not involve position 1: ``H_l(i)`` is the best total of
positions l+1..L after item i at position l, with pointers to the best next item. Position 1 then picks
``argmax_j first(j) + H_1(j)`` and follows the pointers. Because only position 1
depends on the request's v0, a batch of requests with a shared mask and a shared
(deterministic) estimate shares the backward pass: O(L K^2) once (O(L K) when
separable) plus O(K + L) per request.

Dispatch (fixed at trace time by the part's kind and ``distinct``):

* separable: O(L K) backward pass; ``distinct=True``: the exact host search of
  :func:`bayesrank.decoding.search.separable_search_decode`;
* monotone, K < :data:`FAST_K_MONOTONE` (CPU; :data:`FAST_K` on other backends),
  bonus, K < :data:`FAST_K` (identity link on CPU: :data:`FAST_K_NATIVE` or
  :data:`FAST_K_PREFIX`): dense
  tables and the O(L K^2) backward pass;
* monotone, K >= :data:`FAST_K_MONOTONE` (CPU): the host backward pass of
  :func:`bayesrank.decoding.monotone.monotone_backward`, which scans only the Pareto front
  of (value-to-go, item part) per step (exp link: the convex hull trick). Exact, no
  K x K array, memory O(K); near O(L K log K) on data in general position, O(L K^2) time
  on adversarial data (front of size K);
* bonus, K >= :data:`FAST_K` (for the identity link on CPU :data:`FAST_K_NATIVE`
  where the C kernel runs, else :data:`FAST_K_PREFIX`):
  separable upper bounds of the bonus
  (triangle inequality) prune the pairs, only pairs the bounds cannot exclude are scored
  exactly. Identity link (RankUCB, GenRankUCB): on the CPU, the C kernel of
  :mod:`bayesrank.decoding.native` (each row scans one sorted order up to its own
  bound) when it is built, else in compiled code by
  :func:`bayesrank.decoding.prefix.ucb_backward_prefix` (candidates are a prefix of one
  order, searched in windows); other links: the host pass of
  :func:`bayesrank.decoding.bounded.ucb_backward` (onion layers). Exact, no K x K array,
  memory O(K q + block); O(L K^2) time in the worst case (a bonus so wide that nothing
  can be pruned);
* ``distinct=True`` (any K): the fast paths do not apply; the exact host search of
  :func:`bayesrank.decoding.search.search_decode` over dense tables (O(L K^2) memory; the
  separable kind keeps its O(L K) search);
* window (S > 2): :func:`bayesrank.decoding.window.window_decode`, O(L K^S), at any K (no fast
  path).

``method`` ("auto", "fast" or "dense") overrides the K threshold for the monotone and
bonus kinds without ``distinct`` ("fast" is exact too, at any K; it runs through
``jax.pure_callback``). The fast paths return an exact best list whose value equals
the dense DP's; among tied lists they may pick another one than the dense DP.

Masked items get -inf (never shown). Ties go to the smallest item index at each step.
"""

from __future__ import annotations

import jax

from bayesrank.decoding import native
from bayesrank.decoding.backward import (
    Backward,
    backward_dense,
    backward_separable,
    pick,
)
from bayesrank.decoding.bounded import ucb_backward_in_jit
from bayesrank.decoding.dense import decode_in_jit
from bayesrank.decoding.monotone import monotone_backward_in_jit
from bayesrank.decoding.native import ucb_backward_fast
from bayesrank.decoding.separable import separable_in_jit
from bayesrank.decoding.window import window_decode

__all__ = [
    "FAST_K",
    "FAST_K_MONOTONE",
    "FAST_K_NATIVE",
    "FAST_K_PREFIX",
    "METHODS",
    "backward",
    "decode_tables",
    "identity_ucb_threshold",
    "pick",
    "use_fast",
]

#: Item count from which "auto" decodes the monotone and bonus kinds without K x K
#: tables (read at trace time). Below it the dense tables take at most
#: (L-1) * 4096^2 * 8 bytes (400 MB at L = 4) and their DP time does not depend on
#: the posterior, while the pruned UCB step is slow in early rounds (wide bonus).
FAST_K = 4096
#: Item count from which "auto" decodes the monotone kind (a point estimate under a
#: nonlinear link) by the Pareto-front scan, on the CPU backend (the smaller of the
#: two thresholds applies). The scan needs no bound on the posterior's spread; in
#: float32 it overtakes the dense DP a little below this size, in float64 sooner
#: (figures: docs/performance.md, "Why the code is written this way";
#: ``benchmarks/decode_crossover.py``). Other backends keep :data:`FAST_K`: there the
#: dense DP runs on the accelerator and the host scan would add a transfer per select.
FAST_K_MONOTONE = 640
#: Item count from which "auto" decodes UCB scores under the identity link (RankUCB,
#: GenRankUCB) by the compiled prefix search of :mod:`bayesrank.decoding.prefix`, on
#: the CPU backend (the smaller of this and :data:`FAST_K` applies). In float32 it
#: beats the dense DP below this size in early and late rounds alike, by a margin
#: that grows with K (figures: docs/performance.md, "Why the code is written this
#: way"; ``benchmarks/decode_scale.py``).
FAST_K_PREFIX = 512
#: The same threshold where the C kernel of :mod:`bayesrank.decoding.native` runs the
#: step (built, enabled, CPU): in float32 it overtakes the dense DP a little below
#: this size, in early and late rounds alike (figures: docs/performance.md, "Why the
#: code is written this way"; ``benchmarks/decode_scale.py``).
FAST_K_NATIVE = 256
METHODS = ("auto", "fast", "dense")


def identity_ucb_threshold() -> int:
    """Item count from which "auto" decodes identity-link UCB scores without tables on
    the CPU: :data:`FAST_K_NATIVE` where the C kernel runs the step, else
    :data:`FAST_K_PREFIX` (the compiled search)."""
    return FAST_K_NATIVE if native.in_use() else FAST_K_PREFIX


def use_fast(part, K: int, method: str = "auto") -> bool:
    """Whether a pairwise part of K items takes a fast (no K x K) backward pass."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    if part.kind not in ("monotone", "bonus") or method == "dense":
        return False
    if method == "fast":
        return True
    if jax.default_backend() == "cpu":
        if part.kind == "monotone":
            return K >= min(FAST_K_MONOTONE, FAST_K)
        if part.link.name == "identity":
            return K >= min(identity_ucb_threshold(), FAST_K)
    return K >= FAST_K


def backward(part, rest, mask, *, method: str = "auto") -> Backward:
    """The backward pass of a pairwise part; mask (K,) bool."""
    if part.kind == "separable":
        return backward_separable(*part.separable(rest), mask)
    if use_fast(part, mask.shape[-1], method):
        if part.kind == "monotone":
            to_go, ptr, _ = monotone_backward_in_jit(*part.factors(rest), part.link, mask)
        elif part.link.name == "identity":
            to_go, ptr, _ = ucb_backward_fast(*part.factors(rest), mask)
        else:
            to_go, ptr, _ = ucb_backward_in_jit(*part.factors(rest), part.link, mask)
        return Backward(to_go, ptr)
    return backward_dense(part.dense(rest), mask)


def decode_tables(part, first, rest, mask, *, distinct: bool, method: str = "auto"):
    """Exact best list of one request: ``(items (L,) int32, value ())``.

    Args:
        part: a tables part (its ``kind`` picks the route).
        first: (K,) position 1's scores (None for window parts).
        rest: the part's positions 2..L (window parts: the list of tables).
        mask: (K,) bool, True where an item may be shown.
        distinct: forbid repeated items (pairwise kinds only).
        method: "auto" (fast path from :data:`FAST_K` items, from
            :data:`FAST_K_MONOTONE` for the monotone kind on CPU), "fast" or "dense".

    Example:
        The tables RankUCB maximised in one round, decoded again, and checked
        against :func:`bayesrank.best_list` on the dense tables:

        >>> import jax, numpy as np, bayesrank as br
        >>> from bayesrank.decoding import decode_tables
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankUCB(items=env.items, w=env.w, alpha=1.0).core
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = core.select(jax.random.key(0), core.init(), ctx)
        >>> rest = core.tables.rest(sel.params, state.items)
        >>> first = core.tables.first(sel.params, state.items, rest, env.v0)
        >>> items, value = decode_tables(core.tables, first, rest, ctx.mask,
        ...                              distinct=False)
        >>> items.tolist() == sel.items.tolist()
        True
        >>> pairs = np.asarray(core.tables.dense(rest))
        >>> _, best = br.best_list(np.asarray(first), pairs)
        >>> bool(np.isclose(value, best, rtol=1e-5))
        True
    """
    if part.kind == "window":
        return window_decode(rest, mask=mask)
    if distinct:
        if part.kind == "separable":
            A, B = part.separable(rest)
            return separable_in_jit(first, A, B, distinct=True, mask=mask)
        return decode_in_jit(first, part.dense(rest), distinct=True, mask=mask)
    return pick(first, backward(part, rest, mask, method=method), mask)
