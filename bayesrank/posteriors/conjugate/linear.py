"""The shared core of the conjugate linear models (:mod:`~bayesrank.posteriors.conjugate.gaussian`,
:mod:`~bayesrank.posteriors.conjugate.unknown_noise`): prior in precision form, stabilised forgetting of the
compensated sums, shape guards, the refined mean, and host-side checks for
``to_datatree`` and ``from_config``.

Example:
    >>> from bayesrank.posteriors.conjugate.gaussian import GaussianLinear
    >>> m0, P0, C0, logdet0 = GaussianLinear(prior_scale=2.0, noise_scale=1.0).prior(3)
    >>> P0.diagonal().tolist(), round(float(logdet0), 4)     # 3 log(1/4)
    ([0.25, 0.25, 0.25], -4.1589)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import Part
from bayesrank._validate import check_int, check_position, check_reward_support
from bayesrank.model.links import get_link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import update_args
from bayesrank.posteriors.linalg import refined_mean, two_sum
from bayesrank.posteriors.prior_checks import valid_discount, valid_L_p, valid_prior

__all__ = ["reward_bound"]


def reward_bound(dtype=None, *, square_unit=None, over=1.0) -> tuple[float, str]:
    """The largest reward magnitude a conjugate model takes in ``dtype`` (None: the
    default float, float32 unless x64 is on) and why (docs/units.md):
    ``2^(maxexp - 28) min(1, over)`` (float32: 2^100 = 1.3e30; a score sums L
    rewards; ``over``: a model whose sums hold rewards over s^2 passes s^2), and at
    most ``square_unit 2^(maxexp/2 - 14)`` (float32: 2^50) where the sums hold
    squared rewards in units of ``square_unit``.

    Example:
        >>> reward_bound("float32", square_unit=1.0)
        (1125899906842624.0, 'float32: the sums hold their squares over 1.0^2')
    """
    dtype = jnp.dtype(jnp.result_type(float) if dtype is None else dtype)
    maxexp = int(jnp.finfo(dtype).maxexp)
    bound, why = 2.0 ** (maxexp - 28), f"{dtype.name}: a score sums L of them"
    if over < 1.0:
        bound, why = bound * over, f"{dtype.name}: the sums hold them over {over:g}"
    if square_unit is not None and square_unit * 2.0 ** (maxexp // 2 - 14) < bound:
        bound = float(square_unit) * 2.0 ** (maxexp // 2 - 14)
        why = f"{dtype.name}: the sums hold their squares over {square_unit!r}^2"
    return bound, why


class _ConjugateLinear(Part):
    """Prior handling, shape guards and host-side helpers shared by both models."""

    link = get_link("identity")
    reward_support = "real"  # any finite reward
    vmappable = True

    def __init__(self, prior_mean, prior_scale, discount=1.0):
        self.prior_mean, self.prior_scale, self._p = valid_prior(
            prior_mean, prior_scale
        )
        self.discount = valid_discount(discount)

    def _forget(self, prec, b, prec_lo, b_lo):
        """Stabilised forgetting of the compensated sums (P, b) towards the prior
        (identity at gamma=1)."""
        if self.discount == 1.0:
            return prec, b, prec_lo, b_lo
        g = jnp.asarray(self.discount, b.dtype)
        m0, P0, _, _ = self.prior(b.shape[-1])
        P0, m0 = P0.astype(b.dtype), m0.astype(b.dtype)
        prec, e_p = two_sum(g * prec, (1.0 - g) * P0)
        b, e_b = two_sum(g * b, (1.0 - g) * (P0 @ m0))
        return prec, b, g * prec_lo + e_p, g * b_lo + e_b

    # ------------------------------------------------------------------ prior
    def prior(self, p: int):
        """The prior in precision form for dimension p.

        Returns:
            m0 (p,), P0 (p, p) prior precision (relative to s^2 for the NIG model),
            C0 (p, p) its lower Cholesky factor, logdet0 () = log det P0.
        """
        dtype = jnp.result_type(float)
        m0 = jnp.broadcast_to(jnp.asarray(self.prior_mean, dtype), (p,))
        scale = jnp.asarray(self.prior_scale, dtype)
        if scale.ndim < 2:
            sd = jnp.broadcast_to(scale, (p,))
            P0 = jnp.diag(1.0 / sd**2)
            C0 = jnp.diag(1.0 / sd)
        else:
            # The one O(p^3) step: the prior covariance is turned into a precision
            # once, at init; updates never invert anything.
            cov_chol = jnp.linalg.cholesky(scale)
            P0 = linalg.chol_solve(cov_chol, jnp.eye(p, dtype=dtype))
            P0 = 0.5 * (P0 + P0.T)
            C0 = jnp.linalg.cholesky(P0)
        return m0, P0, C0, linalg.chol_logdet(C0)

    def _init_common(self, L: int, p: int):
        L, p = valid_L_p(L, p, self._p)
        m0, P0, C0, logdet0 = self.prior(p)
        tile = lambda a: jnp.broadcast_to(a, (L, *a.shape))
        return (
            tile(P0),
            tile(C0),
            tile(P0 @ m0),
            jnp.zeros((L,), jnp.int32),
            tile(logdet0),
        )

    @staticmethod
    def _zero_lo(state_args):
        """The compensation terms of a fresh state: zeros like prec and b."""
        prec, b = state_args[0], state_args[2]
        return jnp.zeros_like(prec), jnp.zeros_like(b)

    # ------------------------------------------------------------ shape guards
    @staticmethod
    def _valid_update_args(state, x, y, valid):
        return update_args(x, y, valid, *state.b.shape, state.b.dtype)

    # ------------------------------------------------------------ common maths
    def mean(self, state) -> jax.Array:
        """Posterior mean of theta per position, (L, p): ``prec^{-1} b``, refined
        against the compensated sums (see the module docstring)."""
        return jax.vmap(refined_mean)(
            state.chol, state.prec, state.prec_lo, state.b, state.b_lo
        )

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards within :meth:`reward_bound` (raises
        ValueError/TypeError naming ``rewards``)."""
        bound, why = self.reward_bound()
        check_reward_support(y, "real", name="rewards", bound=bound, why=why)

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken (:func:`reward_bound`)."""
        return reward_bound(dtype)

    def validate_loaded(self, state, name: str = "model") -> None:
        """Host-side check of a state read from a file (``load`` calls it), beside the
        loader's generic ones (the factor lower triangular and matching prec): the
        carried ``logdet`` is the factor's, ``2 sum log diag(chol)``.

        Raises:
            ValueError: naming ``name.logdet`` and what was expected.
        """
        chol = np.asarray(state.chol, float)
        want = 2.0 * np.sum(np.log(np.abs(np.diagonal(chol, axis1=-2, axis2=-1))), -1)
        got = np.asarray(state.logdet, float)
        if not np.all(np.abs(got - want) <= 1e-3 * (1.0 + np.abs(want))):
            k = int(np.argmax(np.abs(got - want)))
            raise ValueError(f"{name}.logdet: expected log det prec = {want[k]:.6g} "
                             f"(from chol) at position {k}, got {got[k]:.6g}")

    def gram(self, state):
        """The posterior precision's lower Cholesky factor and its log det over the
        prior's, per position: ``chol`` (L, p, p) and ``logdet_ratio`` (L,).

        UCB widths read these (no second copy of the matrix): with the default UCB
        model ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)`` the precision
        is exactly the paper's ``V_t = lam I + sum x x^T``.
        """
        p = state.b.shape[-1]
        logdet0 = self.prior(p)[3].astype(state.logdet.dtype)
        return state.chol, state.logdet - logdet0

    def refresh(self, key, state):
        """Make :meth:`mean` current; closed-form models already are (no-op)."""
        del key
        return state

    # ------------------------------------------------------------ host helpers
    @staticmethod
    def _valid_position(state, position) -> int:
        return check_position(position, state.b.shape[0])

    @staticmethod
    def _valid_data(data, state, position: int):
        if data is None:
            return None
        try:
            X, y = data
        except (TypeError, ValueError):
            raise TypeError("data: expected a pair (X (n, p), y (n,))") from None
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        p = state.b.shape[1]
        if X.ndim != 2 or X.shape[1] != p:
            raise ValueError(f"data: expected X of shape (n, {p}), got {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(
                f"data: expected y of shape (n,) = ({X.shape[0]},), got {y.shape}"
            )
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("data: expected finite values, found NaN or inf")
        n_state = int(np.asarray(state.n)[position])
        if X.shape[0] > n_state:
            raise ValueError(
                f"data: the state of position {position} holds {n_state} observations, "
                f"but data has {X.shape[0]}; pass the observations folded into it"
            )
        # Fewer rows are allowed (a policy's bounded history keeps the most recent
        # ones): the posterior is still exact, the data groups cover what was kept.
        return X, y

    @staticmethod
    def _data_attrs(data, state, position: int) -> dict:
        """DataTree attributes saying how much of the data the groups hold."""
        n_state = int(np.asarray(state.n)[position])
        m = 0 if data is None else int(data[0].shape[0])
        return {"observations": n_state, "observations_in_data_groups": m}

    @staticmethod
    def _valid_draws(draws, chains) -> tuple[int, int]:
        return check_int(draws, "draws", low=1), check_int(chains, "chains", low=1)


def select_valid(valid, new, old):
    """The state ``new`` at the positions where ``valid (L,)`` holds, ``old``
    elsewhere (leaf by leaf, leading axis L)."""

    def pick(a, b):
        v = valid.reshape(valid.shape + (1,) * (a.ndim - 1))
        return jnp.where(v, a, b)

    return jax.tree_util.tree_map(pick, new, old)


def config_kwargs(cfg: dict, expected: str) -> dict:
    """The constructor arguments of a config whose ``class`` is ``expected``
    (TypeError/ValueError naming ``cfg`` otherwise)."""
    if not isinstance(cfg, dict):
        raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
    name = cfg.get("class", expected)
    if name != expected:
        raise ValueError(f"cfg: describes a {name!r}, not a {expected!r}")
    return {k: v for k, v in cfg.items() if k != "class"}
