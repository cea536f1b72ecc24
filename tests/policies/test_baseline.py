"""The ranked-bandits baseline (:mod:`bayesrank.policies.baseline`): per position a
LinUCB on the shown item alone, checked against a ridge regression in NumPy."""

from __future__ import annotations

import jax
import numpy as np

import bayesrank as br


def test_baseline_scores_are_linucb_on_the_item_alone():
    env = br.RankingEnv.paper(seed=4, K=6, L=3, d=3, w_max=2.0)
    pol = br.RankedBaseline(env.items, L=3, alpha=1.5, lam=0.7)
    for t in range(30):
        a = pol.select()
        pol.update(a, np.asarray(env.sample(jax.random.key(t), a)))
    pol.select()
    first, pairs = (np.asarray(x) for x in pol.scores())
    lists, R = pol.history()
    V_items = np.asarray(env.items)
    for l in range(3):
        X = V_items[lists[:, l]]  # the item shown, not its neighbour
        V = 0.7 * np.eye(3) + X.T @ X
        theta = np.linalg.solve(V, X.T @ R[:, l])
        ucb = V_items @ theta + 1.5 * np.sqrt(
            np.einsum("kd,kd->k", V_items, np.linalg.solve(V, V_items.T).T))
        got = first if l == 0 else pairs[l - 1]
        if l == 0:
            np.testing.assert_allclose(got, ucb, rtol=1e-4)
        else:  # the same for every previous item
            np.testing.assert_allclose(got, np.broadcast_to(ucb, got.shape), rtol=1e-4)
    # The width and log det are those of this Gram matrix (NumPy's slogdet).
    V_l = [0.7 * np.eye(3) + V_items[lists[:, l]].T @ V_items[lists[:, l]]
           for l in range(3)]
    np.testing.assert_allclose(
        pol.logdet(), [np.linalg.slogdet(V)[1] for V in V_l], rtol=1e-8)


def test_thompson_baseline_has_no_width_and_is_not_a_ucb_policy():
    """``kind="ts"`` has no confidence width: the attributes are missing (hasattr is
    False) with a message that says why, and the class is not a UCB policy."""
    from bayesrank.policies.ucb import UCBPolicy

    env = br.RankingEnv.paper(seed=4, K=6, L=3, d=3)
    ts = br.RankedBaseline(env.items, L=3, kind="ts")
    ucb = br.RankedBaseline(env.items, L=3, kind="ucb")
    assert not hasattr(ts, "width") and not hasattr(ts, "logdet")
    assert hasattr(ucb, "width") and hasattr(ucb, "logdet")
    for name in ("width", "logdet"):
        try:
            getattr(ts, name)()
        except AttributeError as e:
            assert name in str(e) and "kind='ts'" in str(e)
        else:
            raise AssertionError(f"{name}: a kind='ts' baseline answered")
    assert not isinstance(ts, UCBPolicy) and not isinstance(ucb, UCBPolicy)
