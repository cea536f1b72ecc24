"""Benchmark (pruning, not time): how many UCB pairs each separable bound leaves in play.

RankUCB's backward step is ``H(i) = max_j [V(j) + Ai_i + Bj_j + c ||Ui_i + Uj_j||]``.
With each row's exact best known in advance (from the dense table: an *oracle*, the
least any search pruned by the bound could score), prints per step the share of
the K^2 pairs whose upper bound still reaches their row's best, for

* one global shift mu (the compiled prefix search's bound,
  ``||Ui + Uj|| <= ||Ui + mu|| + ||Uj - mu||``): mu = 0, the mean of the Uj, minus
  the mean of the Ui;
* column groups: the j's in C groups around centres m_s (Lloyd's k-means, strided
  seeds), each j keeping its own distance to its centre:
  ``||Ui + Uj|| <= ||Ui + m_s|| + ||Uj - m_s||``;
* the same groups with a ball radius per group (``||Uj - m_s|| <= r_s``);
* the tangent plane of the square root (not separable: one matrix product per pair,
  no square root): ``||x|| <= (||x||^2 + t^2) / (2 t)`` for any t > 0, with
  ``||Ui + Uj||^2 = |Ui|^2 + 2 Ui.Uj + |Uj|^2``, at ``t_i = ||Ui + mean Uj||`` and at
  the norm of the row's best pair (tight where the winners are).

A second table models the compiled prefix search (:mod:`bayesrank.decoding.prefix`) in
NumPy: the j's sorted by their global-shift bound, scored in its windows against
the rows whose bound still reaches their best so far; and the same with each row's
window test refined by the column groups (the largest group bound over the window's
j's). It prints the share of pairs scored. A last column models a tangent screen in
that search: past the first window, the live rows are first screened by the tangent
bound at their best so far, and only the rows it cannot exclude are scored exactly
(the share of pairs scored exactly; the screen itself costs the plain search's
pairs).

On RankUCB after ``--observed`` random lists (20: early rounds, a wide bonus; the
paper's instance, L = 4, d = 10), in float64. The README's notes on the early-round
target of the catalogue-scale issue quote this script.

Usage:
    python benchmarks/ucb_bounds.py                 # K = 3,000, 20 lists
    python benchmarks/ucb_bounds.py --K 1000 --observed 20000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, parse  # noqa: E402
from decode_scale import ucb_factors  # noqa: E402

from bayesrank.decoding.prefix import windows  # noqa: E402


def groups(X, C, iters=10):
    """Lloyd's k-means on the rows of X from C strided seeds: (labels, centres)."""
    cen = X[np.linspace(0, len(X) - 1, C).astype(int)].copy()
    for _ in range(iters):
        lab = ((X[:, None, :] - cen[None]) ** 2).sum(2).argmin(1)
        for s in range(C):
            if np.any(lab == s):
                cen[s] = X[lab == s].mean(0)
    return ((X[:, None, :] - cen[None]) ** 2).sum(2).argmin(1), cen


def in_play(bound, S, best):
    """Share of pairs whose bound reaches their row's best (checking first that it
    bounds every exact score S, up to rounding)."""
    if not np.all(bound >= S - 1e-9 * (1.0 + np.abs(S))):
        raise AssertionError("a bound is below an exact pair score")
    return float(np.mean(bound >= best[:, None]))


def scores(V, Ai, Bj, Ui, Uj, c):
    """The step's exact pair scores S (K, K): row i, column j."""
    return (V + Bj)[None, :] + Ai[:, None] + c * np.linalg.norm(Ui[:, None] + Uj[None],
                                                                axis=2)


def shifts(Ui, Uj):
    """The global shifts compared: (name, mu)."""
    return (("mu=0", 0 * Uj[0]), ("mu=mean Uj", Uj.mean(0)), ("mu=-mean Ui", -Ui.mean(0)))


def tangent(V, Ai, Bj, Ui, Uj, c, t):
    """The tangent-plane bound (K, K) at ``t`` (K,) > 0 per row:
    ``c ||x|| <= c (||x||^2 + t^2) / (2 t)``."""
    k = c / (2.0 * t)
    gram = (Ui * Ui).sum(1)[:, None] + 2.0 * Ui @ Uj.T + (Uj * Uj).sum(1)[None, :]
    return (V + Bj)[None, :] + Ai[:, None] + k[:, None] * (gram + (t * t)[:, None])


def step_shares(S, V, Ai, Bj, Ui, Uj, c, Cs):
    """{bound name: share of pairs in play} for one backward step (S its scores)."""
    v = V + Bj
    best = S.max(1)
    out = {}
    for name, mu in shifts(Ui, Uj):
        bound = ((v + c * np.linalg.norm(Uj - mu, axis=1))[None, :] + Ai[:, None]
                 + c * np.linalg.norm(Ui + mu, axis=1)[:, None])
        out[name] = in_play(bound, S, best)
    for C in Cs:
        lab, cen = groups(Uj, C)
        to_centre = np.linalg.norm(Ui[:, None] + cen[None], axis=2)  # (K, C)
        own = np.linalg.norm(Uj - cen[lab], axis=1)
        radius = np.array([own[lab == s].max() if np.any(lab == s) else 0.0
                           for s in range(C)])
        row = Ai[:, None] + c * to_centre[:, lab]
        out[f"{C} groups"] = in_play(row + (v + c * own)[None, :], S, best)
        out[f"{C} balls"] = in_play(row + (v + c * radius[lab])[None, :], S, best)
    step = (V, Ai, Bj, Ui, Uj, c)
    out["tangent, t = |Ui + mean Uj|"] = in_play(
        tangent(*step, np.linalg.norm(Ui + Uj.mean(0), axis=1)), S, best)
    at_best = np.linalg.norm(Ui + Uj[S.argmax(1)], axis=1)
    out["tangent, t at the best"] = in_play(tangent(*step, at_best), S, best)
    return out


def windowed_shares(S, V, Ai, Bj, Ui, Uj, c, Cs):
    """{search: share of pairs scored} of the NumPy model of the windowed search,
    per global shift, plain and with each row's window test refined by groups."""
    v = V + Bj
    K = len(v)
    refine = {C: groups(Uj, C) for C in Cs}
    out = {}
    for name, mu in shifts(Ui, Uj):
        u = v + c * np.linalg.norm(Uj - mu, axis=1)
        ap = Ai + c * np.linalg.norm(Ui + mu, axis=1)
        order = np.argsort(-u, kind="stable")
        for C in (None, *Cs):
            if C is not None:
                lab, cen = refine[C]
                u_g = v + c * np.linalg.norm(Uj - cen[lab], axis=1)
                ap_g = Ai[:, None] + c * np.linalg.norm(Ui[:, None] + cen[None], axis=2)
            best = np.full(K, -np.inf)
            pairs = 0
            for start, size in windows(K):
                js = order[start:start + size]
                live = u[js[0]] + ap >= best
                if C is not None:
                    top = np.full(C, -np.inf)
                    np.maximum.at(top, lab[js], u_g[js])
                    live &= (top[None, :] + ap_g).max(1) >= best
                pairs += int(live.sum()) * size
                best[live] = np.maximum(best[live], S[np.ix_(live, js)].max(1))
            if not np.allclose(best, S.max(1)):
                raise AssertionError("the windowed model missed a row's best")
            out[name if C is None else f"{name}, {C} groups"] = pairs / K**2
        out[f"{name}, tangent screen: exact"] = screened(S, V, Ai, Bj, Ui, Uj, c, u, ap)
    return out


def screened(S, V, Ai, Bj, Ui, Uj, c, u, ap):
    """Share of pairs scored exactly by the windowed search with a tangent screen:
    past the first window, a live row is scored exactly only where the tangent bound
    at its best so far reaches that best."""
    K = len(u)
    order = np.argsort(-u, kind="stable")
    best, arg = np.full(K, -np.inf), np.zeros(K, int)
    exact = 0
    for w, (start, size) in enumerate(windows(K)):
        js = order[start:start + size]
        live = u[js[0]] + ap >= best
        if w > 0:
            t = np.maximum(np.linalg.norm(Ui + Uj[arg], axis=1), 1e-12)
            T = tangent(V[js], Ai[live], Bj[js], Ui[live], Uj[js], c, t[live])
            live[live] = T.max(1) >= best[live]
        exact += int(live.sum()) * size
        top = S[np.ix_(live, js)]
        better = top.max(1) > best[live]
        rows = np.flatnonzero(live)[better]
        best[rows] = top.max(1)[better]
        arg[rows] = js[top.argmax(1)[better]]
    if not np.allclose(best, S.max(1)):
        raise AssertionError("the screened model missed a row's best")
    return exact / K**2


def table(rows):
    """Print {step: {name: share}} as a Markdown table."""
    names = list(rows[0][1])
    print("| step (backward) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for l, shares in rows:
        print(f"| {l + 2} -> {l + 1} | "
              + " | ".join(_pct(shares[n]) for n in names) + " |")


def _pct(x):
    """A share in per cent: one decimal, two below 1 %."""
    return f"{100 * x:.1f} %" if x >= 0.01 or x == 0 else f"{100 * x:.2f} %"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=3000)
    ap.add_argument("--observed", type=int, default=20,
                    help="random lists observed before the select (20: early rounds)")
    ap.add_argument("--groups", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--window-groups", type=int, nargs="+", default=[16, 32])
    args = parse(ap, argv, K=300, groups=[8, 32], window_groups=[8])
    jax.config.update("jax_enable_x64", True)
    A, B, Ua, Ub, c = (np.asarray(x) for x in ucb_factors(args.K, args.observed))
    print(machine())
    print(f"RankUCB after {args.observed} lists, K = {args.K:,d}: share of the K^2 pairs "
          "of each backward step whose bound reaches the row's exact best\n")
    H = np.zeros(args.K)
    rows, scored = [], []
    for l in range(A.shape[0] - 1, -1, -1):
        step = (H, B[l], A[l], Ub[l].T, Ua[l].T, c[l])
        S = scores(*step)
        rows.append((l, step_shares(S, *step, args.groups)))
        scored.append((l, windowed_shares(S, *step, args.window_groups)))
        H = S.max(1)
    table(rows)
    print("\nShare of the pairs scored by a NumPy model of the windowed prefix search "
          "(global shift; refined by column groups)\n")
    table(scored)


if __name__ == "__main__":
    main()
