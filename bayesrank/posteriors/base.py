"""The contract every per-position posterior model follows.

A model holds one independent posterior over theta^l for each of the L positions, in a
single state batched over positions (leading axis L). All methods except
``check_rewards``, ``to_datatree`` and ``config`` are pure JAX functions, so policies can
be jitted, scanned over rounds and vmapped over runs.

    state = model.init(L, p)                       # p: feature dimension (d, or 2d)
    state = model.update(state, x, y, valid)       # x (L, p), y (L,), valid (L,) bool
    theta, state = model.draw(key, state)          # theta (L, p): one draw per position
    mean = model.mean(state)                       # (L, p): posterior mean (or MAP)
    state = model.refresh(key, state)              # make ``mean`` current (MCMC: advance)
    chol, logdet_ratio = model.gram(state)         # optional: precision factor (L, p, p)
                                                   # and log det over the prior's (L,)
    model.check_rewards(y)                          # host-side support check, raises
    dt = model.to_datatree(state, position, key=key, data=None)  # ArviZ DataTree
                                                   # (host side; data = (X, y), the
                                                   # observations folded in: used by
                                                   # sufficient-statistic models,
                                                   # ignored by buffered ones)
    cfg = model.config(); type(model).from_config(cfg)   # JSON-able, for save/load

``draw`` returns the state too: MCMC models advance their chains there; conjugate
models return it unchanged. ``valid`` marks the positions whose reward counts (all True
for a normal impression; policies pass ``isfinite(reward)`` so that a NaN reward means
"position not observed", with the NaN replaced by 0 before the call).

``gram`` exists only for models whose posterior has a Gaussian precision (conjugate,
Laplace); UCB policies over other models (NUTS) keep their own Gram factor.
``refresh`` is a no-op for the closed-form and Laplace models (their mean is current
after ``update``); NUTS models advance their chains one round there.

Families: GaussianLinear, GaussianLinearUnknownNoise (closed form), LaplaceGLM
(Laplace approximation at the regularised MLE), BayesGLM / NumPyroModel (NUTS).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from bayesrank._validate import check_reward_support  # re-exported: its home
from bayesrank.model.links import Link

__all__ = ["PosteriorModel", "check_reward_support", "update_many"]


@runtime_checkable
class PosteriorModel(Protocol):
    """What a per-position posterior model provides (see the module docstring).

    Every family in :mod:`bayesrank.posteriors` follows it; a class of your own that
    does can be given to any policy as ``model=``. ``isinstance`` checks the method
    names only (a runtime-checkable protocol).

    Example:
        >>> import bayesrank as br
        >>> from bayesrank.posteriors import PosteriorModel
        >>> isinstance(br.GaussianLinear(), PosteriorModel)
        True
        >>> isinstance(object(), PosteriorModel)
        False
    """

    link: Link

    def init(self, L: int, p: int) -> Any:
        """The prior state for L positions and feature dimension p."""
        ...

    def update(self, state, x, y, valid=None) -> Any:
        """Fold one observation per position in: x (L, p), y (L,), valid (L,)."""
        ...

    def draw(self, key, state) -> tuple[Any, Any]:
        """One posterior draw per position, (L, p), and the (advanced) state."""
        ...

    def mean(self, state) -> Any:
        """The posterior mean (or MAP) per position, (L, p)."""
        ...

    def refresh(self, key, state) -> Any:
        """Make ``mean`` current (MCMC models advance their chains)."""
        ...

    def check_rewards(self, y) -> None:
        """Raise if the rewards ``y`` are outside the likelihood's support."""
        ...

    def to_datatree(self, state, position: int, *, key, data=None, **kwargs):
        """The posterior of one position as an ArviZ ``DataTree``."""
        ...

    def config(self) -> dict:
        """A JSON-able configuration; ``type(model).from_config`` rebuilds it."""
        ...


def update_many(model, state, X, Y, valid=None):
    """Fold n impressions into the state in order: X (n, L, p), Y (n, L).

    Args:
        model: a posterior model.
        state: its state.
        X: (n, L, p) features of n impressions.
        Y: (n, L) rewards.
        valid: (n, L) bool, True where the reward counts (default: all).

    Returns:
        The state after the n updates (one ``lax.scan``).

    Example:
        >>> import jax.numpy as jnp, bayesrank as br
        >>> from bayesrank.posteriors import update_many
        >>> model = br.GaussianLinear()
        >>> state = update_many(model, model.init(L=2, p=2), jnp.ones((5, 2, 2)),
        ...                     jnp.ones((5, 2)))
        >>> state.n.tolist()
        [5.0, 5.0]
    """
    if valid is None:
        valid = jnp.ones(Y.shape, bool)

    def body(s, xyv):
        x, y, v = xyv
        return model.update(s, x, y, v), None

    state, _ = jax.lax.scan(body, state, (X, Y, valid))
    return state
