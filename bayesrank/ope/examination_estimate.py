"""Position bias from click logs: the probability that a user examines each position,
estimated under the position-based model (PBM).

Under the PBM a click at position k on item i is ``Bernoulli(theta_k gamma_i)``:
``theta_k`` the examination of position k, ``gamma_i`` the item's attraction. Clicks
identify ``theta`` only up to a common factor (``a theta`` and ``gamma / a`` click
alike), so the estimate is relative to the top position: ``theta_1 = 1``, the usual
assumption that the top of a list is always read (PBMEnv's default ``1/k``
examination is of that form). That is what position-based corrections need (they
divide by ratios of examinations) and what ``PBMUCB(examination=...)`` takes.

Two estimators, both on the tables of shows and clicks per (item, position), so that
a log of millions of rows costs one pass:

* ``method="em"`` (one logger, or several pooled): regression EM (Wang et al. 2018,
  "Position bias estimation for unbiased learning to rank in personal search") with
  one attraction per item (the paper's regression step fits a model of features; the
  items of a log are its catalogue here). Identified when every position is linked to
  the first through items shown at both (a logger that moves items between positions:
  epsilon-greedy, Thompson sampling); a logger that always puts an item at the same
  position is refused.
* ``method="harvest"`` (logs of two or more rankers): intervention harvesting
  (Agarwal et al. 2019, "Estimating position bias without intrusive interventions"):
  an item that one ranker shows at position k and another at position 1 is an
  intervention the rankers made without meaning to; ``theta_k`` is the ratio of its
  click rates there, pooled over such items and ranker pairs with weights
  ``n n' / (n + n')``. Needs no model of attraction; one ranker is refused (not
  identified: its positions and its items' attractions are confounded).

The rankers of a log: a variable ``ranker`` (one label per round) in the log, or a
sequence of logs, one per ranker.

Intervals: a Poisson bootstrap of the log's rows (each row weighted by a Poisson(1)
draw, the tables rebuilt, the estimator rerun), percentile intervals at ``level``.

Example:
    >>> import numpy as np, bayesrank as br
    >>> from bayesrank.simulation.click import PBMEnv
    >>> env = PBMEnv(np.linspace(0.2, 0.8, 6), np.array([1.0, 0.6, 0.3]))
    >>> rng = np.random.default_rng(0)
    >>> lists = np.argsort(rng.random((20000, 6)), axis=1)[:, :3]   # uniform logger
    >>> clicks = (rng.random((20000, 3)) < env.examination * env.attraction[lists])
    >>> log = br.ope.as_log(lists=lists, rewards=clicks.astype(float), v0=np.zeros(1), K=6,
    ...                     feedback="pbm")
    >>> est = position_bias(log, n_boot=50)
    >>> np.round(est["examination"].values, 1).tolist()
    [1.0, 0.6, 0.3]
"""

from __future__ import annotations

from collections.abc import Sequence
import numpy as np

from bayesrank._validate import check_choice, check_int, check_real
from bayesrank.ope.log import check_log

__all__ = ["METHODS", "position_bias"]

#: The estimators by name.
METHODS = ("em", "harvest")


# ------------------------------------------------------------------- the tables
def _clicks(log, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lists (n, L) int, clicks (n, L) float)`` of a checked PBM click log."""
    check_log(log)
    r = np.asarray(log["rewards"].values, float)
    feedback = log.attrs.get("feedback", "full")
    if feedback not in ("pbm", "full") or np.isnan(r).any():
        raise ValueError(
            f"{name}: position bias is estimated from PBM click logs, where every "
            "position's click or non-click is recorded (feedback 'pbm' or 'full'); got "
            f"feedback {feedback!r}" + (" with NaN rewards (unexamined positions say "
                                        "nothing of examination)" if np.isnan(r).any()
                                        else ""))
    if not np.all((r == 0) | (r == 1)):
        raise ValueError(f"{name}: rewards must be clicks in {{0, 1}}")
    return np.asarray(log["lists"].values, np.int64), r


def _tables(lists, clicks, K: int, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Shows N (K, L) and clicks C (K, L), each row counted ``weights`` (n,) times
    (None: once)."""
    n, L = lists.shape
    cell = (lists * L + np.arange(L)).ravel()
    w = None if weights is None else np.repeat(weights, L)
    N = np.bincount(cell, weights=w, minlength=K * L).reshape(K, L).astype(float)
    cw = clicks.ravel() if w is None else w * clicks.ravel()
    C = np.bincount(cell, weights=cw, minlength=K * L).reshape(K, L)
    return N, C


# --------------------------------------------------------------------- EM
def _linked(N: np.ndarray) -> np.ndarray:
    """(L,) bool: positions linked to position 1 through items shown at both ends
    of each link (the bipartite graph of items and positions, from position 1)."""
    shown = N > 0
    reach_pos = np.zeros(N.shape[1], bool)
    reach_pos[0] = True
    while True:
        items = shown[:, reach_pos].any(axis=1)
        new = shown[items].any(axis=0) | reach_pos
        if np.array_equal(new, reach_pos):
            return reach_pos
        reach_pos = new


def _em(N, C, theta=None, gamma=None, *, max_iter: int, tol: float):
    """Regression EM on the tables: ``(theta (L,) with theta_1 = 1, gamma (K,))``."""
    K, L = N.shape
    shows_k, shows_i = N.sum(0), N.sum(1)
    seen = shows_i > 0
    if theta is None:
        theta = np.full(L, 0.5)
    if gamma is None:
        gamma = np.clip(np.where(seen, C.sum(1) / np.maximum(shows_i, 1), 0.5) / 0.5,
                        1e-3, 1 - 1e-3)
    theta, gamma = theta.copy(), gamma.copy()
    for _ in range(max_iter):
        p = np.clip(theta[None, :] * gamma[:, None], 0.0, 1.0 - 1e-12)
        miss = N - C
        exam_only = theta[None, :] * (1 - gamma[:, None]) / (1 - p)  # E=1, R=0 | no click
        attr_only = (1 - theta[None, :]) * gamma[:, None] / (1 - p)  # E=0, R=1 | no click
        new_theta = (C + miss * exam_only).sum(0) / np.maximum(shows_k, 1e-300)
        new_gamma = np.where(seen, (C + miss * attr_only).sum(1)
                             / np.maximum(shows_i, 1e-300), gamma)
        new_theta = np.clip(new_theta, 1e-9, 1.0)
        new_gamma = np.clip(new_gamma, 1e-9, 1.0)
        done = np.max(np.abs(new_theta / new_theta[0] - theta / theta[0])) < tol
        theta, gamma = new_theta, new_gamma
        if done:
            break
    return theta / theta[0], np.where(seen, gamma * theta[0], np.nan)


# ---------------------------------------------------------------- harvesting
def _harvest(tables) -> tuple[np.ndarray, np.ndarray]:
    """``(theta (L,), pairs (L,))`` from per-ranker tables ``[(N_r, C_r), ...]``:
    theta_k / theta_1 pooled over items shown at k by one ranker and at 1 by another;
    ``pairs[k]`` the total weight behind position k (0: not identified)."""
    L = tables[0][0].shape[1]
    num, den = np.zeros(L), np.zeros(L)
    for r, (Nr, Cr) in enumerate(tables):
        for s, (Ns, Cs) in enumerate(tables):
            if r == s:
                continue
            nk, n1 = Nr, Ns[:, :1]
            both = (nk > 0) & (n1 > 0)
            w = np.where(both, nk * n1 / np.where(both, nk + n1, 1.0), 0.0)
            num += np.sum(w * np.where(both, Cr / np.where(nk > 0, nk, 1.0), 0.0), axis=0)
            den += np.sum(w * np.where(both, Cs[:, :1] / np.where(n1 > 0, n1, 1.0), 0.0),
                          axis=0)
    pairs = den
    theta = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    theta[0] = 1.0
    return theta, pairs


# -------------------------------------------------------------------- the entry
def position_bias(logs, *, method: str = "em", level: float = 0.9, n_boot: int = 200,
                  seed: int = 0, max_iter: int = 2000, tol: float = 1e-9):
    """Examination probabilities per position from PBM click logs (see the module
    docstring), relative to the top position, with bootstrap intervals.

    Args:
        logs: a log (:func:`~bayesrank.ope.as_log`; rewards the clicks, 0 or 1, at
            every position: ``feedback="pbm"`` or ``"full"``), with a variable
            ``ranker`` (one label per round) where rows come from several rankers;
            or a sequence of logs over the same K items and L positions, one per
            ranker. ``"harvest"`` needs two or more rankers; ``"em"`` pools them.
        method: "em" (regression EM) or "harvest" (intervention harvesting).
        level: the intervals' coverage, in (0, 1).
        n_boot: bootstrap resamples (>= 1).
        seed: the bootstrap's random seed.
        max_iter, tol: EM's most iterations and its stopping change in the
            estimate.

    Returns:
        An :class:`xarray.Dataset` over ``position`` (1..L): ``examination``
        (``theta_k / theta_1``: 1 at position 1), ``ci_low`` and ``ci_high`` (the
        percentile interval at ``level``); under "em" also ``attraction`` over
        ``item`` (``theta_1 gamma_i``, NaN for items never shown); attributes
        ``method``, ``level``, ``n`` (rows), ``n_boot`` and ``rankers``.

    Raises:
        TypeError: ``logs`` not a log or a sequence of logs.
        ValueError: a log that is not a PBM click log (NaN rewards, a cascade's
            feedback, rewards other than 0 and 1); logs of different K or L; a bad
            method, level or n_boot; positions not identified (EM: no item links
            them to position 1; harvesting: one ranker, or no item that one ranker
            shows there and another at position 1); each message says why.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> rng = np.random.default_rng(1)
        >>> lists = np.argsort(rng.random((5000, 4)), axis=1)[:, :2]  # a uniform logger
        >>> clicks = rng.random((5000, 2)) < np.array([1.0, 0.5]) * 0.6
        >>> log = br.ope.as_log(lists=lists, rewards=clicks.astype(float),
        ...                     v0=np.zeros(1), K=4, feedback="pbm")
        >>> est = br.ope.position_bias(log, n_boot=20)
        >>> round(float(est["examination"][1]), 1), est.attrs["method"]
        (0.5, 'em')
    """
    method = check_choice(method, "method", METHODS)
    level = check_real(level, "level", low=0, high=1, inclusive="neither")
    n_boot = check_int(n_boot, "n_boot", low=1)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_real(tol, "tol", low=0, inclusive="neither")
    import xarray as xr

    if isinstance(logs, xr.Dataset):
        logs = [logs]
    elif not (isinstance(logs, Sequence) and logs
              and all(isinstance(x, xr.Dataset) for x in logs)):
        raise TypeError("logs: expected a log (an xarray Dataset from as_log) or a "
                        f"non-empty sequence of logs, got {type(logs).__name__}")
    data = []
    for i, log in enumerate(logs):
        lists, clicks = _clicks(log, f"logs[{i}]" if len(logs) > 1 else "logs")
        if "ranker" in log.variables:
            ranker = np.asarray(log["ranker"].values)
            if ranker.shape != (lists.shape[0],):
                raise ValueError(f"ranker: expected one label per round ({lists.shape[0]},),"
                                 f" got shape {ranker.shape}")
            data += [(lists[ranker == r], clicks[ranker == r]) for r in np.unique(ranker)]
        else:
            data.append((lists, clicks))
    K = {int(log.attrs["K"]) for log in logs}
    L = {lists.shape[1] for lists, _ in data}
    if len(K) != 1 or len(L) != 1:
        raise ValueError(f"logs: expected the same K and L in every log, got K {sorted(K)} "
                         f"and L {sorted(L)}")
    K, L = K.pop(), L.pop()
    n = sum(lists.shape[0] for lists, _ in data)
    rng = np.random.default_rng(seed)
    alpha = (1 - level) / 2

    if method == "em":
        lists = np.concatenate([d[0] for d in data])
        clicks = np.concatenate([d[1] for d in data])
        N, C = _tables(lists, clicks, K)
        linked = _linked(N)
        if not linked.all():
            raise ValueError(
                "logs: examination is not identified at positions "
                f"{(np.flatnonzero(~linked) + 1).tolist()} (1-based): no item is shown "
                "both there and at a position linked to position 1, so the position "
                "and its items' attraction are confounded; log with a ranker that "
                "moves items between positions (epsilon-greedy, Thompson sampling), "
                "or give logs of two rankers to method='harvest'")
        theta, gamma = _em(N, C, max_iter=max_iter, tol=tol)
        # warm starts on EM's own scale (examinations at most 1): theta / theta_1 is
        # above 1 where a lower position reads as more examined than the top
        top = float(theta.max())
        t0, g0 = theta / top, np.clip(np.nan_to_num(gamma, nan=0.5) * top, 1e-9, 1.0)
        boots = []
        for _ in range(n_boot):
            Nb, Cb = _tables(lists, clicks, K, rng.poisson(1.0, lists.shape[0]))
            boots.append(_em(Nb, Cb, t0, g0, max_iter=max_iter, tol=tol)[0])
        attraction = gamma
    else:
        if len(data) < 2:
            raise ValueError(
                "logs: intervention harvesting needs the logs of two or more rankers "
                "(a 'ranker' variable in the log, or one log per ranker): with one ranker the position an "
                "item gets is the ranker's choice, so its examination and the item's "
                "attraction are confounded (use method='em' with a randomised logger)")
        tables = [_tables(lists, clicks, K) for lists, clicks in data]
        theta, pairs = _harvest(tables)
        if np.any(pairs[1:] <= 0):
            raise ValueError(
                "logs: examination is not identified at positions "
                f"{(np.flatnonzero(pairs <= 0) + 1).tolist()} (1-based): no item is "
                "shown there by one ranker and at position 1 by another")
        boots = []
        for _ in range(n_boot):
            tb = [_tables(lists, clicks, K, rng.poisson(1.0, lists.shape[0]))
                  for lists, clicks in data]
            boots.append(_harvest(tb)[0])
        attraction = None
    boots = np.asarray(boots)
    out = xr.Dataset(
        {"examination": ("position", theta),
         "ci_low": ("position", np.nanquantile(boots, alpha, axis=0)),
         "ci_high": ("position", np.nanquantile(boots, 1 - alpha, axis=0))},
        coords={"position": np.arange(1, L + 1)},
        attrs={"method": method, "level": level, "n": n, "n_boot": n_boot,
               "rankers": len(data)})
    if attraction is not None:
        out["attraction"] = ("item", attraction)
    return out
