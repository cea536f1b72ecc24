"""Writes tests/ope/data/obp_cascade_dr.npz: Open Bandit Pipeline's
``SlateCascadeDoublyRobust`` on random slate cases, for tests/ope/test_cascade_dr.py.

obp 0.5.7 needs Python < 3.11 and bayesrank >= 3.12, so this script runs in its own
environment and imports nothing of bayesrank:

    python3.10 -m venv /tmp/obp && /tmp/obp/bin/pip install "numpy<2" scipy \
        "scikit-learn<1.4" pandas tqdm matplotlib seaborn pyyaml mypy-extensions
    /tmp/obp/bin/pip install --no-deps obp==0.5.7
    /tmp/obp/bin/python scripts/obp_cascade_dr_fixture.py

obp.utils imports torch for its neural policies only; where torch is missing an
empty module stands in (the slate estimators never touch it).
"""

import sys
import types
from pathlib import Path

import numpy as np

try:
    import torch  # noqa: F401
except ImportError:
    def _stub(name):
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: type(attr, (), {})  # a class for any name
        sys.modules[name] = mod
        return mod

    for sub in ("", ".nn", ".optim", ".nn.functional", ".utils", ".utils.data"):
        child = _stub("torch" + sub)
        if sub:
            parent, _, leaf = ("torch" + sub).rpartition(".")
            setattr(sys.modules[parent], leaf, child)

import obp  # noqa: E402
from obp.ope import SlateCascadeDoublyRobust  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "ope" / "data" / "obp_cascade_dr.npz"


def case(seed, n, L, K):
    """A logged slate dataset with cascade clicks, the logger's and the target's prefix
    propensities, the target's conditional action distribution (some actions
    impossible) and a random Q-hat."""
    rng = np.random.default_rng(seed)
    action = rng.integers(0, K, size=(n, L))
    # the logger: independent per slot with probabilities p_l(a)
    p = rng.dirichlet(np.ones(K), size=L)
    pscore_cascade = np.cumprod(p[np.arange(L), action], axis=1)
    # the target: a distribution over the next action given the slot (random per
    # round and slot), a third of the actions impossible
    dist = rng.dirichlet(np.ones(K), size=(n, L)) * (rng.random((n, L, K)) > 0.33)
    dist[..., 0] += 1e-3  # never all zero
    dist /= dist.sum(axis=2, keepdims=True)
    pi_cascade = np.cumprod(dist[np.arange(n)[:, None], np.arange(L), action], axis=1)
    # cascade clicks: click with probability 0.3, stop at the first (0 after)
    click = rng.random((n, L)) < 0.3
    first = np.cumsum(np.cumsum(click, axis=1), axis=1) <= 1
    reward = (click & first).astype(float)
    q_hat = rng.uniform(0, 2, size=(n, L, K))
    est = SlateCascadeDoublyRobust(len_list=L, n_unique_action=K).estimate_policy_value(
        slate_id=np.repeat(np.arange(n), L),
        action=action.reshape(-1),
        reward=reward.reshape(-1),
        position=np.tile(np.arange(L), n),
        pscore_cascade=pscore_cascade.reshape(-1),
        evaluation_policy_pscore_cascade=pi_cascade.reshape(-1),
        q_hat=q_hat.reshape(-1),
        evaluation_policy_action_dist=dist.reshape(-1),
    )
    return {"action": action, "reward": reward, "pscore_cascade": pscore_cascade,
            "pi_cascade": pi_cascade, "q_hat": q_hat, "action_dist": dist,
            "obp_estimate": np.float64(est)}


def main():
    cases = {}
    for i, (n, L, K) in enumerate(((50, 3, 4), (400, 4, 6), (1000, 2, 10), (7, 5, 3))):
        for k, v in case(i, n, L, K).items():
            cases[f"case{i}_{k}"] = v
    cases["obp_version"] = np.array(obp.__version__)
    np.savez_compressed(OUT, **cases)
    print(f"wrote {OUT}: obp {obp.__version__}, "
          + ", ".join(f"{float(cases[f'case{i}_obp_estimate']):.6f}" for i in range(4)))


if __name__ == "__main__":
    main()
