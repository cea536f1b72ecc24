"""What a log's user examined: the ``examined`` mask and the declared feedback model,
checked (:func:`valid_examination`), and the target's probability of examining each
position under that model (:func:`exam_value`), which ``dm`` and ``pair_dr`` multiply
by under ``feedback="cascade"``.

Feedback models (the log attribute ``feedback``):

* ``"full"``: every position is examined; every reward is observed.
* ``"cascade"``: the user scans top-down and stops; a position is examined iff the
  user went on past every position above it. Without an ``examined`` mask the
  model is the cascade: examined up to and including the first click (every
  position when there is none). With a mask (the user may go on after a click, as
  in the DCM, or give up without one, as in the DBN) the mask must be a top-down
  prefix, and the probability of going on past position l is fitted from the log
  separately after a click and after none (linear in the pair features, as the
  reward model).
* ``"pbm"``: every click and non-click is recorded, examination is latent (not
  observed, no mask); the reward model is fitted on the clicks as they are.

Under ``"cascade"`` the value of a list is sum_l E_l q_l with q_l = E[click at l |
examined] (the reward model) and E_l = prod_{j<l} g_j, g_j = q_j c1_j + (1 - q_j)
c0_j the probability of going on past j (c1, c0: after a click, after none; 0 and 1
under the pure cascade). This is exact when examination is a Markov chain down the
list whose step depends on the position, its item (and the one above) and whether
it was clicked: the cascade, Eq. 1 seen through a cascade, the DCM and the DBN.

Example:
    >>> import numpy as np
    >>> r = np.array([[0.0, 1.0, np.nan], [0.0, 0.0, 0.0]])
    >>> ex, fb = valid_examination(r, None, "cascade")
    >>> ex.tolist(), fb
    ([[True, True, False], [True, True, True]], 'cascade')
"""

from __future__ import annotations

import numpy as np

__all__ = ["FEEDBACK", "cascade_mask", "exam_value", "valid_examination"]

#: the feedback models a log may declare
FEEDBACK = ("full", "cascade", "pbm")


def cascade_mask(rewards) -> np.ndarray:
    """(n, L) bool: examined under the cascade, i.e. no click strictly above
    (a click: a reward > 0; NaN counts as none)."""
    click = np.nan_to_num(np.asarray(rewards, float)) > 0
    above = np.cumsum(click, axis=1) - click
    return above == 0


def _first(bad) -> tuple:
    i, j = (int(v) for v in np.argwhere(bad)[0])
    return i, j


def _mask(examined, shape) -> np.ndarray:
    arr = np.asarray(examined)
    if arr.shape != shape:
        raise ValueError(f"examined: expected shape {shape} (as lists), got {arr.shape}")
    if arr.dtype.kind == "b":
        return arr.copy()
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"examined: expected a bool mask, got dtype {arr.dtype}")
    if not np.isin(arr, (0, 1)).all():
        bad = ~np.isin(arr, (0, 1))
        i, j = _first(bad)
        raise ValueError(f"examined: expected True/False (or 1/0), got {arr[i, j].item()!r} "
                         f"in round {i} at position {j}")
    return arr.astype(bool)


def valid_examination(rewards, examined, feedback):
    """The checked ``(examined (n, L) bool or None, feedback str or None)`` of a log.

    Nothing declared (both None): ``(None, None)``, the log as before (a NaN reward
    is missing at random). ``examined`` alone: ``"full"`` when every position is
    examined, else ``"cascade"``. Under ``"pbm"`` the mask is None (latent).

    Raises:
        ValueError, TypeError: naming ``examined``, ``feedback`` or ``rewards`` and
            the first offending round and position: a reward at an unexamined
            position, a NaN at an examined one, a mask that is not a top-down prefix,
            a click (or any observed reward) below a cascade's first click when no
            mask is given, a NaN under ``"full"`` or ``"pbm"``, a mask under
            ``"pbm"``, a non-click reward under ``"cascade"``.
    """
    r = np.asarray(rewards, float)
    if examined is None and feedback is None:
        return None, None
    if feedback is not None and (not isinstance(feedback, str) or feedback not in FEEDBACK):
        raise ValueError(f"feedback: expected one of {list(FEEDBACK)}, got {feedback!r}")
    seen = ~np.isnan(r)
    ex = None if examined is None else _mask(examined, r.shape)
    if feedback is None:
        feedback = "full" if ex.all() else "cascade"
    if feedback == "pbm":
        if ex is not None:
            raise ValueError("examined: under feedback 'pbm' examination is latent (not "
                             "observed); leave examined out")
        if not seen.all():
            i, j = _first(~seen)
            raise ValueError(f"rewards: NaN in round {i} at position {j}, but under "
                             "feedback 'pbm' every click and non-click is recorded")
        return None, feedback
    if feedback == "full":
        if ex is not None and not ex.all():
            i, j = _first(~ex)
            raise ValueError(f"examined, feedback: round {i} does not examine position "
                             f"{j}, but feedback 'full' examines every position")
        if ex is not None and not seen.all():
            i, j = _first(~seen)
            raise ValueError(f"examined, rewards: round {i} examines position {j} but "
                             "its reward is NaN (an examined position's click or "
                             "non-click is observed)")
        if not seen.all():
            i, j = _first(~seen)
            raise ValueError(f"rewards: NaN in round {i} at position {j}, but under "
                             "feedback 'full' every reward is observed")
        return np.ones(r.shape, bool), feedback
    obs = r[seen]
    if not np.isin(obs, (0.0, 1.0)).all():
        i, j = _first(seen & ~np.isin(np.nan_to_num(r), (0.0, 1.0)))
        raise ValueError(f"rewards: feedback 'cascade' reads clicks (1) and non-clicks "
                         f"(0), got {r[i, j]} in round {i} at position {j}")
    if ex is None:
        ex = cascade_mask(r)
        below = seen & ~ex
        if below.any():
            i, j = _first(below)
            first = int(np.argmax(np.nan_to_num(r[i]) > 0))
            what = "a click" if r[i, j] == 1 else "a reward"
            raise ValueError(
                f"rewards: round {i} has {what} at position {j} below its first click "
                f"at position {first}; under feedback 'cascade' without an examined "
                "mask the user stops at the first click (pass examined= when the user "
                "may go on after a click)")
    else:
        after_gap = ex & (np.cumsum(~ex, axis=1) > 0)
        if after_gap.any():
            i, j = _first(after_gap)
            raise ValueError(f"examined: round {i} examines position {j} below an "
                             "unexamined position; feedback 'cascade' examines top-down "
                             "and stops")
        unexamined_reward = seen & ~ex
        if unexamined_reward.any():
            i, j = _first(unexamined_reward)
            raise ValueError(f"examined, rewards: round {i} has reward {r[i, j]} at "
                             f"position {j}, which it did not examine")
    missing = ex & ~seen
    if missing.any():
        i, j = _first(missing)
        raise ValueError(f"examined, rewards: round {i} examines position {j} but its "
                         "reward is NaN (an examined position's click or non-click is "
                         "observed)")
    return ex, feedback


def _reach(g) -> np.ndarray:
    """(..., L) prod_{j<l} g_j."""
    ones = np.ones_like(g[..., :1])
    return np.concatenate([ones, np.cumprod(g[..., :-1], axis=-1)], axis=-1)


def exam_value(q, c1, c0):
    """The value sum_l E_l q_l of lists (..., L) and its derivatives.

    Args:
        q: (..., L) P(click | examined) at each position.
        c1, c0: (..., L) P(go on past l | examined, clicked / not clicked).

    Returns:
        ``(value (...), E (..., L), dq, dc1, dc0)``: E_l the probability of
        examining l; dX the derivative of the value in each position's X.

    Example:
        >>> import numpy as np
        >>> q = np.array([0.5, 0.5])
        >>> v, E, dq, _, _ = exam_value(q, np.zeros(2), np.ones(2))
        >>> float(v), E.tolist(), dq.tolist()  # 1 - 0.5^2; d/dq_0 = 1 - q_1
        (0.75, [1.0, 0.5], [0.5, 0.5])
    """
    g = q * c1 + (1.0 - q) * c0
    E = _reach(g)
    L = q.shape[-1]
    T = np.zeros_like(q)  # value from l + 1 on, given l + 1 is reached
    for l in range(L - 2, -1, -1):
        T[..., l] = q[..., l + 1] + g[..., l + 1] * T[..., l + 1]
    dg = E * T
    return ((E * q).sum(axis=-1), E, E + dg * (c1 - c0), dg * q, dg * (1.0 - q))
