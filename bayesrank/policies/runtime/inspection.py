"""What a :class:`~bayesrank.policies.base.Policy` shows of itself, read-only: the
score tables of its last select, the features its models learn from, and its
posterior (as an ArviZ DataTree). A mixin of ``Policy``; it reads the policy's state,
history and compiled programs and changes none of them.

    policy.scores(*, v0=None) -> (first (K,), pairs (L-1, K, K))
    policy.features(lists, v0=None) -> (..., L, p)
    policy.posterior_mean() -> (L, p);  policy.posterior(position) -> DataTree
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_position, check_v0
from bayesrank.policies.runtime.rounds import posterior_key

__all__ = ["Inspection"]


class Inspection:
    """Read-only views of a policy (see the module docstring)."""

    def scores(self, *, v0=None):
        """The tables the last :meth:`select` maximised, for a request with ``v0``.

        Pairwise policies return ``(first (K,), pairs (L-1, K, K))`` (the Thompson
        draw's or the optimistic scores), so ``best_list(*policy.scores(v0=v))``
        reproduces ``select(v0=v)`` at the same estimate; window policies return
        the list of window tables. O(L K^2) memory: meant for moderate K.

        Args:
            v0: (d,) the request's last item; None: the v0 of the last select.
        """
        if self._last is None:
            raise RuntimeError("scores: call select() first")
        params = self._last.params
        v = self._last_v0 if v0 is None else jnp.asarray(check_v0(v0, self.items.shape[1]))
        out = self._scores(params, self.state.items, v)
        K = self.K
        if self._core.tables.kind == "window":
            return [t[(slice(0, K),) * t.ndim] for t in out]
        first, pairs = out
        return first[:K], pairs[:, :K, :K]

    # ---------------------------------------------------------------- the posterior
    def features(self, lists, v0=None) -> np.ndarray:
        """(..., L, p) the features each position's model learns from, for shown
        lists (..., L) in the context v0 (d,) or (..., d) (default: the
        constructor's)."""
        lists = np.asarray(lists)
        d = self.items.shape[1]
        v = np.asarray(self.v0 if v0 is None else v0, float)
        v = np.broadcast_to(v, lists.shape[:-1] + (d,)).reshape(-1, d)
        flat = jnp.asarray(lists.reshape(-1, self.L), jnp.int32)
        if flat.shape[0] == 0:  # no lists yet (a fresh policy): p from one dummy list
            p = self._features_prog(self.state.items, jnp.zeros((1, self.L), jnp.int32),
                                    jnp.zeros((1, d))).shape[-1]
            return np.zeros(lists.shape + (p,))
        feats = self._features_prog(self.state.items, flat, jnp.asarray(v))
        return np.asarray(feats).reshape(lists.shape + (-1,))

    def posterior_mean(self) -> np.ndarray:
        """(L, p) posterior mean of each position's parameter (for the UCB policies,
        the estimate ``theta_hat`` they are centred on)."""
        return np.asarray(self.model.mean(self.state.model))

    def posterior(self, position: int, **kwargs):
        """The posterior of a 0-based position's parameter as an ArviZ DataTree.

        Groups: posterior, sample_stats, log_likelihood, log_prior, observed_data; so
        ``arviz.summary``, ``arviz.rhat``, ``arviz.ess`` and ``arviz.psense_summary``
        work on it. Closed-form models are summarised as exact draws; NUTS models run
        several fresh chains on the current data. ``kwargs`` go to the model's
        ``to_datatree`` (e.g. ``chains``, ``draws``).
        """
        check_position(position, self.L)
        key = posterior_key(self.key, self.t)
        # One protocol: models that keep only sufficient statistics read ``data``;
        # models with their own (possibly windowed) buffers ignore it.
        items, rewards, v0s = self._history_arrays()
        x = self.features(items, v0s)
        seen = np.isfinite(rewards[:, position])
        data = (x[seen, position, :], rewards[seen, position])
        return self.model.to_datatree(
            self.state.model, int(position), key=key, data=data, **kwargs
        )
