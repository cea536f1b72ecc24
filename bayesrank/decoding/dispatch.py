"""One decoder for every policy: the exact best list under score tables given as arrays.

The entry, :func:`decode_tables`, takes a static :class:`~bayesrank.decoding.spec.DecodeSpec`
and the tables as a NamedTuple of arrays (:mod:`bayesrank.decoding.spec`); it reads no
object of the layers above.

Pairwise kinds are decoded by the *backward* max-sum DP of :mod:`bayesrank.decoding.backward`
(positions L..2), which does not involve position 1: ``H_l(i)`` is the best total of
positions l+1..L after item i at position l, with pointers to the best next item. Position 1 then picks
``argmax_j first(j) + H_1(j)`` and follows the pointers. Because only position 1
depends on the request's v0, a batch of requests with a shared mask and a shared
(deterministic) estimate shares the backward pass: O(L K^2) once (O(L K) when
separable) plus O(K + L) per request.

Dispatch (fixed at trace time by the spec's kind, link and ``distinct``):

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

``spec.method`` ("auto", "fast" or "dense") overrides the K threshold for the monotone and
bonus kinds without ``distinct`` ("fast" is exact too, at any K; it runs through
``jax.pure_callback``). The fast paths return an exact best list whose value equals
the dense DP's; among tied lists they may pick another one than the dense DP.

Masked items get -inf (never shown). Ties go to the smallest item index at each step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

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
from bayesrank.decoding.spec import (
    METHODS,
    DecodeSpec,
    dense_pairs,
    valid_spec,
    valid_tables,
)
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


def identity_ucb_threshold() -> int:
    """Item count from which "auto" decodes identity-link UCB scores without tables on
    the CPU: :data:`FAST_K_NATIVE` where the C kernel runs the step, else
    :data:`FAST_K_PREFIX` (the compiled search)."""
    return FAST_K_NATIVE if native.in_use() else FAST_K_PREFIX


def use_fast(spec: DecodeSpec, K: int) -> bool:
    """Whether pairwise tables of K items under ``spec`` take a fast (no K x K)
    backward pass (the kind and ``spec.method`` decide, then K and the backend)."""
    spec = valid_spec(spec)
    kind, method = spec.kind, spec.method
    if kind not in ("monotone", "bonus") or method == "dense":
        return False
    if method == "fast":
        return True
    if jax.default_backend() == "cpu":
        if kind == "monotone":
            return K >= min(FAST_K_MONOTONE, FAST_K)
        if spec.link.name == "identity":
            return K >= min(identity_ucb_threshold(), FAST_K)
    return K >= FAST_K


def backward(spec: DecodeSpec, tables, mask) -> Backward:
    """The backward pass of pairwise tables over positions L..2.

    Args:
        spec: a :class:`~bayesrank.decoding.spec.DecodeSpec` of a pairwise kind.
        tables: the NamedTuple of the spec's kind (:mod:`~.spec`), (L-1, K) fields.
        mask: (K,) bool, True where an item may be shown.

    Returns:
        :class:`~bayesrank.decoding.backward.Backward`: ``to_go`` (K,) and ``ptr``
        (L-1, K) int32.

    Raises:
        TypeError, ValueError: as :func:`~bayesrank.decoding.spec.valid_tables`.
    """
    if mask is None:
        raise TypeError("mask: expected a (K,) bool array, got None")
    spec, _, tables, mask = valid_tables(spec, tables, mask=mask)
    if spec.kind == "window":
        raise ValueError("spec.kind: window tables have no pairwise backward pass")
    return _backward(spec, tables, mask)


def _backward(spec: DecodeSpec, tables, mask) -> Backward:
    """:func:`backward` of a checked spec, tables and mask (no checks)."""
    if spec.kind == "separable":
        return backward_separable(tables.A, tables.B, mask)
    if use_fast(spec, mask.shape[-1]):
        if spec.kind == "monotone":
            to_go, ptr, _ = monotone_backward_in_jit(*tables, spec.link, mask)
        elif spec.link.name == "identity":
            to_go, ptr, _ = ucb_backward_fast(*tables, mask)
        else:
            to_go, ptr, _ = ucb_backward_in_jit(*tables, spec.link, mask)
        return Backward(to_go, ptr)
    return backward_dense(dense_pairs(spec, tables), mask)


def decode_tables(spec: DecodeSpec, first, tables, mask):
    """Exact best list of one request: ``(items (L,) int32, value ())``.

    Args:
        spec: a :class:`~bayesrank.decoding.spec.DecodeSpec` (static): its ``kind``
            picks the route, ``distinct`` forbids repeated items (pairwise kinds
            only), ``method`` is "auto" (fast path from :data:`FAST_K` items, from
            :data:`FAST_K_MONOTONE` for the monotone kind on CPU), "fast" or "dense".
        first: (K,) position 1's scores (None for the window kind).
        tables: the NamedTuple of the spec's kind (:mod:`bayesrank.decoding.spec`)
            for positions 2..L ((L-1, K) fields; (L-1, q, K) ``Ua``/``Ub`` and
            (L-1,) ``c`` for the bonus kind), or
            :class:`~bayesrank.decoding.spec.WindowScores`.
        mask: (K,) bool, True where an item may be shown (None: every item).

    Returns:
        ``(items, value)``: items (L,) int32 and the list's total score ().

    Raises:
        TypeError, ValueError: tables, ``first`` or ``mask`` that do not fit the
            spec or each other, or scores that are not real and finite or ``-inf``
            (:func:`~bayesrank.decoding.spec.valid_tables`; shapes and dtypes are
            checked under ``jax.jit`` too, values only for concrete arrays).

    Example:
        The tables RankUCB maximised in one round, decoded again, and checked
        against :func:`bayesrank.best_list` on the dense tables:

        >>> import jax, numpy as np, bayesrank as br
        >>> from bayesrank.decoding import decode_tables
        >>> from bayesrank.decoding.spec import dense_pairs
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankUCB(items=env.items, w=env.w, alpha=1.0).core
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = core.select(jax.random.key(0), core.init(), ctx)
        >>> rest = core.tables.rest(sel.params, state.items)
        >>> first = core.tables.first(sel.params, state.items, rest, env.v0)
        >>> spec, tables = core.tables.spec(), core.tables.decodable(rest)
        >>> items, value = decode_tables(spec, first, tables, ctx.mask)
        >>> items.tolist() == sel.items.tolist()
        True
        >>> _, best = br.best_list(np.asarray(first), np.asarray(dense_pairs(spec, tables)))
        >>> bool(np.isclose(value, best, rtol=1e-5))
        True
    """
    spec, first, tables, mask = valid_tables(spec, tables, first, mask)
    if spec.kind == "window":
        return window_decode(tables.scores, mask=mask)
    if mask is None:
        mask = jnp.ones(tables.A.shape[-1], bool)
    if spec.distinct:
        if spec.kind == "separable":
            return separable_in_jit(first, tables.A, tables.B, distinct=True, mask=mask)
        return decode_in_jit(first, dense_pairs(spec, tables), distinct=True, mask=mask)
    return pick(first, _backward(spec, tables, mask), mask)
