"""Calibration of the draws RankTS really uses: warm-started NUTS inside the loop.

One bandit run is RankTS's own functional core (:func:`bayesrank.policies.ts.rank_ts`)
driven for T rounds, per round t = 1..T::

    state, sel = core.select(key_t, state, ctx)      # sel.params: the Thompson draw
    y_t ~ the likelihood under theta_true            # theta_true ~ the model's prior
    state = core.update(state, sel.items, y_t, ctx)  # ctx: the design's v0, no mask

so ``theta_t`` should be a draw from the posterior given the first t - 1 impressions.
At each checkpoint round t the in-loop draw is ranked, per coordinate, among ``draws``
thinned draws of a long fresh reference chain run on those same t - 1 impressions
(:func:`bayesrank.studies.calibration.sbc.posterior_draws` on a fresh model state). Over N
independent runs the ranks are uniform if and only if (up to the reference's own error,
checked by the fresh-chain SBC) the in-loop draws are exact posterior draws.

``lists="random"`` shows uniformly random lists instead (a non-adaptive design).

Example:
    >>> import jax
    >>> from bayesrank.posteriors import GaussianLinear
    >>> from bayesrank.studies.calibration.generative import Design
    >>> run = bandit_run(jax.random.key(0), GaussianLinear(), T=5, design=Design())
    >>> run.thetas.shape, run.x.shape
    ((5, 2, 5), (5, 2, 5))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.model import scores
from bayesrank.policies.parts.context import Context
from bayesrank.policies.ts import rank_ts
from bayesrank.posteriors.base import update_many
from bayesrank.simulation.play import play
from bayesrank.studies.calibration.generative import (
    Design,
    Generative,
    design_arrays,
    generative_for,
)
from bayesrank.studies.calibration.ranks import rank_of
from bayesrank.studies.calibration.sbc import lag1_autocorrelation, posterior_draws

__all__ = ["BanditRun", "InLoopResult", "bandit_run", "run_inloop"]


class BanditRun(NamedTuple):
    """One bandit run's record."""

    thetas: jax.Array  # (T, L, p) the draw of each round
    x: jax.Array  # (T, L, p) features shown
    y: jax.Array  # (T, L) rewards
    theta_true: jax.Array  # (L, p)
    adapting: jax.Array  # (T, L) bool, chain in warm-up at the draw (False if n/a)


class InLoopResult(NamedTuple):
    """Ranks of the in-loop draws within reference runs."""

    rounds: tuple  # checkpoint rounds
    ranks: np.ndarray  # (R, N, L * p) rank of theta_t among the reference draws
    M: int  # reference draws per rank
    lag1: np.ndarray  # (R,) mean lag-1 autocorrelation of the reference draws
    adapting: np.ndarray  # (R,) share of (run, position) chains adapting at round t


def bandit_run(key, model, *, T: int, design: Design = Design(),
               generative: Generative | None = None, lists: str = "argmax"):
    """Run RankTS's functional core for T rounds on the design (pure; jittable).

    Args:
        key: a JAX PRNG key (the truth, the draws and the rewards are split off it).
        model: the per-position posterior RankTS samples from.
        T: rounds.
        design: items, w and v0 (one context for every request, no mask).
        generative: the simulated truth (default: the model's own prior/likelihood).
        lists: "argmax" (RankTS's list under its draw) or "random" (uniform lists,
            a non-adaptive design; the draw is still made and recorded).

    Returns:
        BanditRun.

    Example:
        >>> import jax
        >>> from bayesrank.posteriors import GaussianLinear
        >>> run = bandit_run(jax.random.key(0), GaussianLinear(), T=5,
        ...                  design=Design(K=4, L=2, d=2))
        >>> run.thetas.shape, run.y.shape, run.theta_true.shape
        ((5, 2, 2), (5, 2), (2, 2))
        >>> bool(run.adapting.any())  # conjugate draws: no chain to adapt
        False
    """
    if lists not in ("argmax", "random"):
        raise ValueError(f"lists: expected 'argmax' or 'random', got {lists!r}")
    gen = generative_for(model) if generative is None else generative
    items, W, v0 = (jnp.asarray(a) for a in design_arrays(design))
    L, p, K = design.L, design.d, design.K
    core = rank_ts(model, items, W)
    ctx = Context(v0, jnp.ones((K,), bool))
    k_true, k_loop = jax.random.split(key)
    params = gen.prior(k_true, L, p)
    diagnose = getattr(model, "diagnostics", None)

    round_keys = jax.random.split(k_loop, T)

    def keys(t):
        k_draw, k_list, k_y = jax.random.split(round_keys[t], 3)
        return k_draw, k_y, k_list

    def choose(sel, k_list):
        if lists == "argmax":
            return sel.items
        return jax.random.randint(k_list, (L,), 0, K)

    def record(r):
        adapting = (
            diagnose(r.before.model)["adapting"] if diagnose is not None
            else jnp.zeros((L,), bool)
        )
        return r.sel.params, truth.features(r.items), r.rewards, adapting

    truth = _Truth(gen, params, items, W, v0)
    _, (thetas, x, y, adapting) = play(
        core, truth, core.init(), T, keys=keys, ctx=ctx, choose=choose, record=record
    )
    return BanditRun(thetas, x, y, params["theta"], adapting)


class _Truth(NamedTuple):
    """The simulated truth as an environment of :func:`play`: rewards from the
    generative model's likelihood under the true parameters."""

    gen: Any
    params: Any
    items: Any
    W: Any
    v0: Any

    def features(self, shown):
        return scores.list_features(self.items, self.W, self.v0, shown)

    def sample(self, key, shown):
        return self.gen.rewards(key, self.params, self.features(shown))


def _valid_rounds(rounds) -> tuple:
    rounds = tuple(int(r) for r in rounds)
    if not rounds or any(r < 1 for r in rounds) or list(rounds) != sorted(set(rounds)):
        raise ValueError(f"rounds: expected increasing positive ints, got {rounds}")
    return rounds


def run_inloop(
    key,
    model,
    reference: Callable[[int], object],
    *,
    rounds=(10, 100, 1000),
    n_runs: int = 100,
    draws: int = 99,
    thin_every: int = 5,
    warmup: int = 300,
    design: Design = Design(),
    generative: Generative | None = None,
    lists: str = "argmax",
) -> InLoopResult:
    """Rank RankTS's in-loop draws at ``rounds`` within long reference runs.

    Args:
        key: a JAX PRNG key.
        model: the in-loop model (e.g. ``BayesGLM(link="logistic", n_max=T)``),
            driven as RankTS drives it.
        reference: ``n -> model`` building the reference sampler with room for n
            impressions (e.g. a fresh-chain ``BayesGLM`` with ``n_max=n``); it is
            called once with n = max(rounds) - 1 and, at round t, conditions on the
            first t - 1 impressions (the rest passed as not observed).
        rounds: checkpoint rounds (the draw of round t uses t - 1 impressions).
        n_runs: independent bandit runs N (theta_true from the prior per run).
        draws, thin_every, warmup: the reference chain's kept draws, thinning and
            warm-up (in ``draw`` calls).
        design, generative, lists: see :func:`bandit_run`.

    Returns:
        InLoopResult.

    Example:
        A conjugate model is its own (exact) reference:

        >>> import jax
        >>> from bayesrank.posteriors import GaussianLinear
        >>> res = run_inloop(
        ...     jax.random.key(0), GaussianLinear(), lambda n: GaussianLinear(),
        ...     rounds=(2, 4), n_runs=3, draws=9, thin_every=1, warmup=0,
        ...     design=Design(K=4, L=2, d=2),
        ... )
        >>> res.rounds, res.ranks.shape, res.M  # ranks: (rounds, runs, L * p)
        ((2, 4), (2, 3, 4), 9)
        >>> bool(((res.ranks >= 0) & (res.ranks <= 9)).all())
        True
    """
    rounds = _valid_rounds(rounds)
    T = rounds[-1]
    L, p = design.L, design.d
    run = jax.jit(lambda k: bandit_run(k, model, T=T, design=design,
                                       generative=generative, lists=lists))
    keys = jax.random.split(key, n_runs)
    records = [run(jax.random.fold_in(k, 0)) for k in keys]
    # one reference model (buffer T - 1) for every round: the impressions after
    # round t - 1 are passed with valid=False (not observed), so one compile serves
    ref = reference(max(T - 1, 1))
    n_rows = T - 1

    def one(k, x, y, t, theta):
        kd, kr = jax.random.split(k)
        valid = jnp.broadcast_to((jnp.arange(n_rows) < t - 1)[:, None], (n_rows, L))
        state = update_many(ref, ref.init(L, p), x, y, valid)
        d = posterior_draws(kd, ref, state, draws=draws, thin_every=thin_every,
                            warmup=warmup)
        return rank_of(kr, theta.astype(d.dtype), d).reshape(-1), \
            lag1_autocorrelation(d)

    f = jax.jit(one)
    ranks, lag1, adapting = [], [], []
    for t in rounds:
        out = [
            f(jax.random.fold_in(k, t), rec.x[:n_rows], rec.y[:n_rows], t,
              rec.thetas[t - 1])
            for k, rec in zip(keys, records)
        ]
        ranks.append(np.stack([np.asarray(o[0]) for o in out]))
        lag1.append(float(np.mean([np.asarray(o[1]) for o in out])))
        adapting.append(
            float(np.mean([np.asarray(r.adapting[t - 1]) for r in records]))
        )
    return InLoopResult(rounds, np.stack(ranks).astype(np.int64), draws,
                        np.asarray(lag1), np.asarray(adapting))
