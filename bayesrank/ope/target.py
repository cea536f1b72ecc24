"""The target policy's lists: drawn once per distinct context (a bayesrank policy
through its pure ``select_batch_at``, never changing it), and turned into the
probabilities of each logged list's events."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_int, is_bool, is_integer

__all__ = [
    "TargetDraws",
    "TargetProbabilities",
    "draw_target",
    "refuse_foreign_items",
    "refuse_log_outside_target",
    "target_probabilities",
    "true_value",
]

EVENTS = ("position", "pair", "cascade")


def _drawer(target):
    """``draw(v0s (B, d)) -> (B, L)``: the target's lists, never changing the target.

    A bayesrank policy (it has ``select_batch_at``) is run as a pure function on an
    explicit copy of its state and round counter: successive draws thread that copy
    (round t, t + 1, ...) exactly as successive ``select_batch`` calls would, and
    nothing is written back. Any other object's ``select_batch`` is called as it is
    (it must not learn from drawing lists).
    """
    pure = getattr(target, "select_batch_at", None)
    if pure is None:
        return lambda v0s: target.select_batch(v0=v0s)
    # reading ``state`` applies a pending update (``flush``): it is part of what
    # the target has learnt
    at = {"state": target.state, "t": target.t}

    def draw(v0s):
        at["state"], lists = pure(at["state"], at["t"], v0=v0s)
        at["t"] += 1
        return lists

    return draw


def catalogue_size(log) -> int | None:
    """The number of items of the log's catalogue: its ``K`` attribute, else the rows
    of its ``items`` variable, else None (unknown)."""
    if "K" in log.attrs:
        return int(log.attrs["K"])
    if "items" in log:
        return int(log["items"].shape[0])
    return None


def refuse_foreign_items(lists, K: int | None, whose: str = "the log's") -> None:
    """Raise a ValueError naming ``target`` unless its lists hold item indices in
    [0, K) (K None: only >= 0), K the size of ``whose`` catalogue."""
    lists = np.asarray(lists)
    if lists.size == 0:
        return
    bad = lists < 0 if K is None else (lists < 0) | (lists >= K)
    if bad.any():
        shown = np.unique(lists[bad])
        where = "negative" if K is None else f"outside {whose} catalogue [0, {K})"
        raise ValueError(
            f"target: showed item indices {shown[:5].tolist()}"
            f"{' ...' if shown.size > 5 else ''}, {where}"
        )


def _target_K(target) -> int | None:
    """The K a target says it ranks (a bayesrank policy's), else None."""
    tK = getattr(target, "K", None)
    if is_integer(tK):
        return int(tK)
    return None


def _refuse_other_K(target, K: int | None, whose: str = "the log's") -> None:
    """A target that says its K (a bayesrank policy) must share the log's."""
    tK = _target_K(target)
    if K is not None and tK is not None and tK != K:
        raise ValueError(
            f"target: ranks K={tK} items, but {whose} catalogue has K={K}"
        )


def refuse_log_outside_target(log, target) -> None:
    """A log that names no catalogue of its own (no ``K`` attribute, no ``items``)
    must show only items of the target's, when the target says its K (a bayesrank
    policy), as ``target.fit(log)`` requires: else a ValueError naming ``lists``.

    A log with a catalogue is checked against the target's K instead (by
    :func:`draw_target`, naming ``target``)."""
    tK = _target_K(target)
    if tK is None or catalogue_size(log) is not None:
        return
    lists = np.asarray(log["lists"].values)
    bad = lists >= tK
    if bad.any():
        i, l = (int(j) for j in np.argwhere(bad)[0])
        raise ValueError(
            f"lists: the log shows item index {lists[i, l]} (round {i}, position {l}; "
            f"largest {lists.max()}), outside the target's catalogue [0, K) = [0, {tK}). "
            "The log has neither a K attribute nor items: the target's catalogue is "
            "the only one it can be from"
        )


def _draw(draw, v0, m: int) -> np.ndarray:
    out = np.asarray(draw(np.repeat(v0[None], m, 0)))
    if out.ndim != 2 or out.shape[0] != m:
        raise ValueError(f"target: select_batch returned shape {out.shape}, expected ({m}, L)")
    return out


class TargetDraws(NamedTuple):
    """The target's lists for a log, drawn once per distinct context.

    Attributes:
        contexts: (G, d) the distinct v0 rows of the log.
        inverse: (n,) the context group of each round.
        lists: (G, m, L) the target's lists per group (m = 1 when deterministic).
        deterministic: whether the target's lists are deterministic given v0.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, draw_target
        >>> class Fixed:
        ...     def select_batch(self, v0):
        ...         return np.tile([1, 0], (len(v0), 1))
        >>> log = as_log(np.array([[0, 1], [1, 1]]), np.ones((2, 2)), np.zeros(2))
        >>> draws = draw_target(log, Fixed())
        >>> draws.lists.shape, draws.deterministic
        ((1, 1, 2), True)
    """

    contexts: np.ndarray  # (G, d)
    inverse: np.ndarray  # (n,)
    lists: np.ndarray  # (G, m, L)
    deterministic: bool


class TargetProbabilities(NamedTuple):
    """A target's precomputed probabilities of each logged list's events.

    Pass it to :func:`~bayesrank.ope.evaluate` instead of a policy (e.g. from
    another library or an exact computation). Any subset of the fields may be
    given (None: not known); an estimator that needs a missing one is refused.
    The direct method and ``pair_dr`` need the target's lists (the reward model
    predicts their rewards) and are refused.

    Attributes:
        list: (n,) the target's P(the whole logged list).
        position: (n, L) P(a^l at position l).
        prefix: (n, L) P(the prefix a^1..a^l) (the "cascade" event).
        pair: (n, L) P(a^{l-1} at l-1 and a^l at l); at l = 0 P(a^1 at 1).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import TargetProbabilities, as_log, evaluate
        >>> log = as_log(np.array([[0], [1]]), np.array([[1.0], [0.0]]), np.zeros(2),
        ...              pscore_list=np.full(2, 0.5))
        >>> res = evaluate(log, TargetProbabilities(list=np.array([1.0, 0.0])),
        ...                ["list_ips"])
        >>> float(res.estimate.sel(estimator="list_ips"))  # mean of (1 / 0.5) 1 and 0
        1.0
    """

    list: np.ndarray | None = None
    position: np.ndarray | None = None
    prefix: np.ndarray | None = None
    pair: np.ndarray | None = None


def draw_target(log, target, *, n_draws=1000, deterministic=None) -> TargetDraws:
    """Draw the target's lists once per distinct v0 of the log, never changing it.

    Rounds are grouped by identical v0 rows; the target draws ``n_draws`` lists per
    group when random (RankTS), one list when deterministic. A bayesrank policy is
    run as a pure function of a copy of its state and round counter
    (``select_batch_at``): the target itself is never changed (a pending update is
    flushed, see ``Policy.flush``); another object's ``select_batch`` is called as
    it is.

    A target that says its K (a bayesrank policy) must share the log's catalogue:
    the log's ``K`` (or the rows of its ``items``), else, when the log names none,
    its lists must hold indices below the target's K (a ValueError naming
    ``lists`` otherwise, as ``target.fit(log)`` refuses the log).

    Args:
        log: the log Dataset (lists, v0).
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)`` lists.
        n_draws: Monte Carlo draws per distinct v0 for a random target.
        deterministic: whether the target's lists are deterministic given v0; None:
            judged from the first v0's ``n_draws`` draws (all equal: deterministic).

    Returns:
        :class:`TargetDraws`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, draw_target
        >>> class Coin:
        ...     rng = np.random.default_rng(0)
        ...     def select_batch(self, v0):
        ...         return self.rng.integers(0, 2, (len(v0), 1))
        >>> log = as_log(np.array([[0], [1]]), np.ones((2, 1)), np.zeros(2))
        >>> draw_target(log, Coin(), n_draws=50).lists.shape
        (1, 50, 1)
    """
    n_draws = check_int(n_draws, "n_draws", low=1)
    if deterministic is not None and not is_bool(deterministic):
        raise TypeError(
            f"deterministic: expected None or a bool, got {type(deterministic).__name__} "
            f"({deterministic!r})"
        )
    K = catalogue_size(log)
    _refuse_other_K(target, K)
    refuse_log_outside_target(log, target)
    lists = np.asarray(log["lists"].values)
    v0s = np.asarray(log["v0"].values, float)
    L = lists.shape[1]
    uniq, inv = np.unique(v0s, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    draw = _drawer(target)
    if deterministic is None:
        first = _draw(draw, uniq[0], n_draws)
        deterministic = bool((first == first[0]).all())
    else:
        first = None
    if deterministic:
        one = np.asarray(draw(uniq))
        if one.shape != (len(uniq), L):
            raise ValueError(
                f"target: select_batch returned shape {one.shape}, expected "
                f"({len(uniq)}, {L})"
            )
        draws = one[:, None, :]
    else:
        if first is None:  # deterministic=False was given: nothing drawn yet
            first = _draw(draw, uniq[0], n_draws)
        draws = [first] + [_draw(draw, uniq[g], n_draws) for g in range(1, len(uniq))]
        for D in draws:
            if D.shape[1] != L:
                raise ValueError(
                    f"target: lists of length {D.shape[1]}, the log's have {L}"
                )
        draws = np.stack(draws)
    if draws.dtype.kind not in "iu":
        raise TypeError(f"target: select_batch returned dtype {draws.dtype}, expected int")
    refuse_foreign_items(draws, K)
    return TargetDraws(uniq, inv, draws.astype(np.int64), bool(deterministic))


def _event_columns(L: int):
    """(event, l, columns) of every event the estimators use."""
    for l in range(L):
        yield "position", l, [l]
        yield "pair", l, [l - 1, l] if l else [0]
        yield "cascade", l, list(range(l + 1))


def _frequencies(draws, logged, cols, batch, B, weights=None):
    """P(event) of each logged row: over all draws (n_g,) and per batch (B, n_g).

    With ``weights`` (m,), the mean over the draws of ``weights`` times the event's
    indicator instead (the event's probability times the weights' conditional mean);
    ``cols`` empty is the sure event."""
    m = draws.shape[0]
    if not cols:
        sizes = np.bincount(batch, minlength=B)
        w = np.ones(m) if weights is None else weights
        per = np.bincount(batch, weights=w, minlength=B) / sizes
        k = logged.shape[0]
        return np.full(k, w.sum() / m), np.repeat(per[:, None], k, axis=1)
    keys = np.concatenate([draws[:, cols], logged[:, cols]])
    base = int(keys.max()) + 1
    if len(cols) * np.log2(max(base, 2)) < 62:  # rows as one int64 each: a fast 1-d unique
        keys = keys @ (base ** np.arange(len(cols), dtype=np.int64))
        _, inv = np.unique(keys, return_inverse=True)
    else:
        _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    U = int(inv.max()) + 1
    counts = np.bincount(batch * U + inv[:m], weights=weights,
                         minlength=B * U).reshape(B, U)
    sizes = np.bincount(batch, minlength=B)
    full = counts.sum(axis=0)[inv[m:]] / m
    per_batch = counts[:, inv[m:]] / sizes[:, None]
    return full, per_batch


def n_batches_of(draws: TargetDraws, n_batches: int) -> int:
    """The number of Monte Carlo batches: 1 for a deterministic target."""
    m = draws.lists.shape[1]
    return 1 if draws.deterministic else max(1, min(int(n_batches), m))


def probabilities_from_draws(lists, draws: TargetDraws, n_batches: int = 10):
    """``(probs, batch_probs)`` of :func:`target_probabilities` from drawn lists.

    Draw j of each group belongs to batch ``j % B``.
    """
    lists = np.asarray(lists)
    n, L = lists.shape
    B = n_batches_of(draws, n_batches)
    probs = {"list": np.zeros(n), **{e: np.zeros((n, L)) for e in EVENTS}}
    batch = {"list": np.zeros((B, n)), **{e: np.zeros((B, n, L)) for e in EVENTS}}
    bid = np.arange(draws.lists.shape[1]) % B
    for g, D in enumerate(draws.lists):  # one pass per distinct v0, not per round
        rows = np.flatnonzero(draws.inverse == g)
        if rows.size == 0:
            continue
        for event, l, cols in _event_columns(L):
            full, per = _frequencies(D, lists[rows], cols, bid, B)
            probs[event][rows, l] = full
            batch[event][:, rows, l] = per
    probs["list"] = probs["cascade"][:, -1].copy()
    batch["list"] = batch["cascade"][:, :, -1].copy()
    return probs, batch


def target_probabilities(
    log, target, *, n_draws=1000, n_batches=10, deterministic=None, return_draws=False
):
    """The target's probabilities of each logged list's events.

    Rounds are grouped by identical v0 rows; the target draws once per distinct v0
    (:func:`draw_target`): ``n_draws`` lists for a random target (RankTS), one list
    for a deterministic one (an exact 0/1 probability). The target is never changed
    (see :func:`draw_target`).

    Args:
        log: the log Dataset (lists, v0).
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)`` lists.
        n_draws: Monte Carlo draws per distinct v0 for a random target.
        n_batches: the draws are split into this many batches (for the Monte Carlo
            error of the estimates).
        deterministic: whether the target's lists are deterministic given v0; None:
            judged from the first v0's ``n_draws`` draws (all equal: deterministic).
        return_draws: also return the :class:`TargetDraws` (so that they can be
            reused, e.g. by the direct method, without drawing twice).

    Returns:
        ``(probs, batch_probs, deterministic)`` (and the draws last with
        ``return_draws``): probs maps "list" to (n,) and "position", "pair",
        "cascade" to (n, L); batch_probs the same with a leading batch axis (B, ...).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, target_probabilities
        >>> class Fixed:
        ...     def select_batch(self, v0):
        ...         return np.tile([1, 0], (len(v0), 1))
        >>> log = as_log(np.array([[1, 0], [1, 1]]), np.ones((2, 2)), np.zeros(2))
        >>> probs, _, det = target_probabilities(log, Fixed())
        >>> probs["list"], probs["position"][1], det
        (array([1., 0.]), array([1., 0.]), True)
    """
    draws = draw_target(log, target, n_draws=n_draws, deterministic=deterministic)
    probs, batch = probabilities_from_draws(log["lists"].values, draws, n_batches)
    if return_draws:
        return probs, batch, draws.deterministic, draws
    return probs, batch, draws.deterministic


def true_value(env, target, v0=None, n_draws=1000) -> float:
    """The target's expected total reward in ``env`` for a request with context v0.

    Exact (``env.expected_reward`` of its list) when the target's ``n_draws`` lists
    are all equal (a deterministic target), else their Monte Carlo average. The
    target is never changed, as in :func:`draw_target`.

    Args:
        env: a :class:`bayesrank.RankingEnv`.
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)``.
        v0: (d,) the context; None: ``env.v0``.
        n_draws: lists drawn from the target.

    Examples:
        >>> import numpy as np
        >>> import bayesrank as br
        >>> from bayesrank.ope import true_value
        >>> env = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
        >>> class Fixed:
        ...     def select_batch(self, v0):
        ...         return np.tile([1, 0], (len(v0), 1))
        >>> bool(np.isclose(true_value(env, Fixed()), env.expected_reward([1, 0])))
        True
    """
    if v0 is None:
        v0 = np.asarray(env.v0, float)
    else:
        v0 = np.asarray(v0, float)
        env = env.with_v0(v0)
    _refuse_other_K(target, int(env.K), "the env's")
    lists = _draw(_drawer(target), v0, check_int(n_draws, "n_draws", low=1))
    if lists.dtype.kind not in "iu":
        raise TypeError(f"target: select_batch returned dtype {lists.dtype}, expected int")
    if lists.shape[1] != env.L:
        raise ValueError(f"target: lists of length {lists.shape[1]}, the env's have {env.L}")
    refuse_foreign_items(lists, int(env.K), "the env's")
    if (lists == lists[0]).all():
        return float(env.expected_reward(lists[0]))
    return float(np.mean(np.asarray(env.expected_reward(lists))))
