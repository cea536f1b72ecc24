"""Python overhead on the hot path: the class API against its jitted core and plain
NumPy, best_list against a NumPy DP, and batch select throughput.

    python benchmarks/overhead.py [--quick]

Rows (conjugate RankTS, identity link, K = 100, L = 4, d = 10 unless said):

* one round, select + update: the class API (``policy.select()`` then
  ``policy.update(items, rewards)``), the jitted functional core called two ways (a
  jitted select then a jitted update; one jitted call that updates and then selects,
  which is how the class runs a round: an update waits for the next select), and a
  plain-NumPy round of
  the same maths (a draw per position from N(mu, P^-1) by a Cholesky solve, the
  separable O(L K) decode, a rank-one update of P and b and a Cholesky refactorisation);
* ``best_list`` from NumPy tables at K = 100 against a plain-NumPy max-plus DP;
* ``select_batch`` of 1,000 requests with distinct v0 (RankTS and RankUCB).

Every ratio is against a reference measured in the same run. Prints markdown tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import interleaved, machine, table, timeit  # noqa: E402

import bayesrank as br  # noqa: E402
from bayesrank.policies.parts.context import Context  # noqa: E402


class NumpyRankTS:
    """Conjugate RankTS in plain NumPy (the reference of the round's cost)."""

    def __init__(self, items, w, v0, *, noise=1.0, prior=1.0, seed=0):
        self.V, self.w, self.v0 = np.asarray(items), np.asarray(w), np.asarray(v0)
        L, d = len(w), self.V.shape[1]
        self.P = np.broadcast_to(np.eye(d) / prior**2, (L, d, d)).copy()
        self.b = np.zeros((L, d))
        self.C = np.linalg.cholesky(self.P)
        self.mu = np.zeros((L, d))
        self.s2 = noise**2
        self.rng = np.random.default_rng(seed)

    def select(self):
        L, d = self.b.shape
        z = self.rng.standard_normal((L, d))
        # theta = mu + sigma C^-T z (C lower Cholesky factor of the precision)
        eps = np.linalg.solve(np.swapaxes(self.C, 1, 2), z[:, :, None])[:, :, 0]
        theta = self.mu + np.sqrt(self.s2) * eps
        s = theta @ self.V.T  # (L, K): theta_l . v_j
        A, B = s, self.w[:, None] * s  # score of j after i at l: A[l, j] + B[l, i]
        items = np.empty(L, int)
        # backward separable DP: best next item is the same for every i
        nxt, H = np.empty(L, int), 0.0
        for l in range(L - 1, 0, -1):
            nxt[l] = int(np.argmax(A[l] + H))
            H = B[l] + (A[l, nxt[l]] + (H[nxt[l]] if np.ndim(H) else H))
        first = A[0] + self.w[0] * (theta[0] @ self.v0)
        items[0] = int(np.argmax(first + H))
        for l in range(1, L):
            items[l] = nxt[l]
        return items

    def update(self, items, r):
        X = self.V[items].copy()
        X[1:] += self.w[1:, None] * self.V[items[:-1]]
        X[0] += self.w[0] * self.v0
        self.P += X[:, :, None] * X[:, None, :] / self.s2
        self.b += X * r[:, None] / self.s2
        self.C = np.linalg.cholesky(self.P)
        y = np.linalg.solve(self.C, self.b[:, :, None])
        self.mu = np.linalg.solve(np.swapaxes(self.C, 1, 2), y)[:, :, 0]


def numpy_dp(first, pairs):
    """Plain-NumPy max-plus DP (forward pass, pointers, backtrack)."""
    val, ptr = first, []
    for tab in pairs:
        tot = val[:, None] + tab
        arg = tot.argmax(axis=0)
        ptr.append(arg)
        val = tot[arg, np.arange(tab.shape[1])]
    out = [int(val.argmax())]
    for arg in reversed(ptr):
        out.append(int(arg[out[-1]]))
    return np.array(out[::-1]), float(val.max())


def round_rows(repeat: int) -> list[dict]:
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    pol = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    r = np.asarray(env.sample(jax.random.key(0), np.zeros(4, int)))

    def cls():
        it = pol.select()
        pol.update(it, r)

    core = pol.core
    sel = jax.jit(core.select)
    upd = jax.jit(core.update)
    ctx = pol.context()
    st = [pol.state]
    key = jax.random.key(1)
    rj = jnp.asarray(r)

    def cor():
        s, out = sel(key, st[0], ctx)
        st[0] = upd(s, out.items, rj, ctx)
        jax.block_until_ready(st[0])

    @jax.jit
    def fused_step(key, state, items, rewards, ctx):
        state = core.update(state, items, rewards, ctx)
        return core.select(key, state, ctx)

    fst = [pol.state, jnp.zeros(4, jnp.int32)]

    def fused():
        s, out = fused_step(key, fst[0], fst[1], rj, ctx)
        fst[0], fst[1] = s, out.items
        np.asarray(out.items)

    ref = NumpyRankTS(env.items, env.w, env.v0)

    def npy():
        it = ref.select()
        ref.update(it, r)

    t = interleaved({"np": npy, "core": cor, "fused": fused, "cls": cls},
                    rounds=max(3, repeat // 10))
    t_np, t_core, t_fused, t_cls = t["np"], t["core"], t["fused"], t["cls"]
    return [
        {"path": "plain NumPy round (reference)", "us": 1e6 * t_np, "ratio": 1.0},
        {"path": "jitted core: select, then update (two calls)", "us": 1e6 * t_core,
         "ratio": t_core / t_np},
        {"path": "jitted core: update + select in one call", "us": 1e6 * t_fused,
         "ratio": t_fused / t_np},
        {"path": "class API (select + update)", "us": 1e6 * t_cls, "ratio": t_cls / t_np},
        {"path": "class / jitted core (two calls)", "us": "", "ratio": t_cls / t_core},
        {"path": "class / jitted core (one call)", "us": "", "ratio": t_cls / t_fused},
    ]


def best_list_rows(repeat: int) -> list[dict]:
    rng = np.random.default_rng(0)
    K, L = 100, 4
    first, pairs = rng.normal(size=K), rng.normal(size=(L - 1, K, K))
    a, b = br.best_list(first, pairs), numpy_dp(first, pairs)
    assert np.isclose(a[1], b[1])
    t_np = timeit(lambda: numpy_dp(first, pairs), repeat=repeat)
    t_br = timeit(lambda: br.best_list(first, pairs), repeat=repeat)
    return [
        {"path": "NumPy max-plus DP, K=100, L=4 (reference)", "us": 1e6 * t_np,
         "ratio": 1.0},
        {"path": "br.best_list from NumPy", "us": 1e6 * t_br, "ratio": t_br / t_np},
    ]


def batch_rows(repeat: int) -> list[dict]:
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    v0s = np.asarray(env.items)[np.random.default_rng(1).integers(0, 100, 1000)]
    rows = []
    for name, pol in (
        ("RankTS", br.RankTS(items=env.items, w=env.w, seed=0)),
        ("RankUCB", br.RankUCB(items=env.items, w=env.w, seed=0)),
    ):
        for t in range(20):
            it = pol.select()
            pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
        t_b = timeit(lambda pol=pol: pol.select_batch(v0s), repeat=repeat)
        t_1 = timeit(lambda pol=pol: pol.select(v0=v0s[0]), repeat=repeat)
        rows.append({"policy": name, "1,000 requests (ms)": 1e3 * t_b,
                     "one select (us)": 1e6 * t_1,
                     "batch / (1,000 x one select)": t_b / (1000 * t_1)})
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    rep = 50 if quick else 400
    print(f"machine: {machine()}\n")
    print("### One conjugate RankTS round, K=100, L=4, d=10\n")
    print(table(round_rows(rep)))
    print("\n### best_list from NumPy tables\n")
    print(table(best_list_rows(rep)))
    print("\n### select_batch: 1,000 requests with distinct v0, K=100, L=4, d=10\n")
    print(table(batch_rows(20 if quick else 50)))


if __name__ == "__main__":
    main()
