"""The in-loop study: RankTS's loop reproduced, and the rank test's verdicts on an
exact model (must pass) and a broken one (must fail)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.dense import dp_decode
from bayesrank.model import scores
from bayesrank.posteriors import GaussianLinear
from bayesrank.studies.calibration.generative import Design, design_arrays
from bayesrank.studies.calibration.inloop import bandit_run, run_inloop
from bayesrank.studies.calibration.ranks import pit_from_ranks
from bayesrank.studies.calibration.sbc import ScaledDraws
from bayesrank.studies.calibration.uniformity import uniformity_test

DESIGN = Design(K=8, L=2, d=3, w_max=1.0, seed=2)


def test_bandit_run_shows_the_argmax_list_of_each_draw():
    model = GaussianLinear()
    run = bandit_run(jax.random.key(0), model, T=12, design=DESIGN)
    items, W, v0 = (jnp.asarray(a) for a in design_arrays(DESIGN))
    links = (model.link,) * DESIGN.L
    for t in range(12):
        first, pairs = scores.pair_scores(run.thetas[t], items, W[:, 0], v0, links)
        best, _ = dp_decode(first, pairs)
        np.testing.assert_allclose(run.x[t], scores.list_features(items, W, v0, best))


def test_bandit_run_draw_of_round_t_is_a_draw_given_the_first_t_minus_1_rows():
    # RankTS's Thompson draw of round t is model.draw(k_t, state after t - 1
    # impressions), k_t the round's draw key: replayed here through the model alone
    model = GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # the closed form below
    key = jax.random.key(1)
    T = 6
    run = bandit_run(key, model, T=T, design=DESIGN)
    round_keys = jax.random.split(jax.random.split(key)[1], T)
    state = model.init(DESIGN.L, DESIGN.d)
    for t in range(T):
        k_draw = jax.random.split(round_keys[t], 3)[0]
        want, _ = model.draw(k_draw, state)
        np.testing.assert_allclose(run.thetas[t], want, rtol=1e-10, atol=1e-12)
        # and the posterior mean is the batch closed form on the first t rows
        X, Y = np.asarray(run.x[:t]), np.asarray(run.y[:t])
        for l in range(DESIGN.L):
            P = np.eye(DESIGN.d) + X[:, l].T @ X[:, l]
            np.testing.assert_allclose(
                model.mean(state)[l], np.linalg.solve(P, X[:, l].T @ Y[:, l]),
                atol=1e-8)
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
