"""The in-loop study: RankTS's loop reproduced, and the rank test's verdicts on an
exact model (must pass) and a broken one (must fail)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank import decode, scores
from bayesrank.calibration.generative import Design, design_arrays
from bayesrank.calibration.inloop import bandit_run, run_inloop
from bayesrank.calibration.ranks import pit_from_ranks
from bayesrank.calibration.sbc import ScaledDraws
from bayesrank.calibration.uniformity import uniformity_test
from bayesrank.posteriors import GaussianLinear

DESIGN = Design(K=8, L=2, d=3, w_max=1.0, seed=2)


def test_bandit_run_shows_the_argmax_list_of_each_draw():
    model = GaussianLinear()
    run = bandit_run(jax.random.key(0), model, T=12, design=DESIGN)
    items, W, v0 = (jnp.asarray(a) for a in design_arrays(DESIGN))
    links = (model.link,) * DESIGN.L
    for t in range(12):
        first, pairs = scores.pair_scores(run.thetas[t], items, W[:, 0], v0, links)
        best, _ = decode.dp_decode(first, pairs)
        np.testing.assert_allclose(run.x[t], scores.list_features(items, W, v0, best))


def test_bandit_run_draw_of_round_t_uses_t_minus_1_impressions():
    # with GaussianLinear, the draw's key fixes the standard normal; the posterior
    # must be the closed form on the first t - 1 rows
    model = GaussianLinear()
    run = bandit_run(jax.random.key(1), model, T=6, design=DESIGN)
    state = model.init(DESIGN.L, DESIGN.d)
    for t in range(6):
        # the posterior mean before round t's draw equals the batch solve on t rows
        X, Y = np.asarray(run.x[:t]), np.asarray(run.y[:t])
        for l in range(DESIGN.L):
            P = np.eye(DESIGN.d) + X[:, l].T @ X[:, l]
            want = np.linalg.solve(P, X[:, l].T @ Y[:, l])
            np.testing.assert_allclose(model.mean(state)[l], want, atol=1e-8)
        state = model.update(state, run.x[t], run.y[t])


@pytest.mark.parametrize("factor, passes", [(1.0, True), (0.5, False)])
def test_inloop_exact_draws_pass_and_half_sd_draws_fail(factor, passes):
    model = GaussianLinear() if factor == 1.0 else ScaledDraws(GaussianLinear(), factor)
    res = run_inloop(jax.random.key(3), model, lambda n: GaussianLinear(),
                     rounds=(3, 15), n_runs=150, draws=39, thin_every=1, warmup=0,
                     design=DESIGN)
    assert res.ranks.shape == (2, 150, 6)
    for r in range(2):
        p = uniformity_test(pit_from_ranks(res.ranks[r], 39), n_null=2000).p_value
        assert (p > 0.01) == passes, (r, p)


def test_rounds_must_increase():
    with pytest.raises(ValueError, match="rounds"):
        run_inloop(jax.random.key(0), GaussianLinear(), lambda n: GaussianLinear(),
                   rounds=(10, 5))


def test_lists_must_be_argmax_or_random():
    with pytest.raises(ValueError, match="lists"):
        bandit_run(jax.random.key(0), GaussianLinear(), T=2, lists="best")
