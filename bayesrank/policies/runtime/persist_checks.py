"""The checks a loaded policy file passes before the policy is handed back.

Every array against a freshly built state (dtype, shape, finite, counts >= 0), the
Cholesky factors against their precisions, the Gram blocks symmetric positive
semi-definite, a latent w's chain inside its prior's support, the posterior
family's own invariants (its model's ``validate_loaded(state, "model")``, where it has
one: a Laplace model's buffered rewards in its link's support, zero rows past the
counts), and the kept history, its observed rewards in the model's support (the list
of invariants: :mod:`bayesrank.policies.runtime.persist`). Each failure raises
``_Bad`` (a ValueError) naming the field; ``load`` adds the path.

Example:
    >>> import numpy as np
    >>> from bayesrank.policies.runtime.persist_checks import _Bad, _refuse_non_psd
    >>> _refuse_non_psd(np.eye(2)[None], 1e-9, "Saa")                   # passes
    >>> try:
    ...     _refuse_non_psd(-np.eye(2)[None], 1e-9, "Saa")
    ... except _Bad as exc:
    ...     print(str(exc)[:58])
    Saa: expected positive semi-definite Gram matrices (sums o
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_reward_support

__all__: list[str] = []


def _is_key(x) -> bool:
    """Whether x is a typed JAX PRNG key array (stored as its key data)."""
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


class _Bad(ValueError):
    pass


def _refuse_bad_leaf(i: int, x: np.ndarray, ref, is_key: bool) -> None:
    name = f"state_{i}"
    if is_key:
        want = np.asarray(jax.random.key_data(ref))
        if x.dtype != want.dtype or x.shape != want.shape:
            raise _Bad(f"{name}: expected PRNG key data {want.dtype}{want.shape}, "
                       f"got {x.dtype}{x.shape}")
        return
    r = np.asarray(ref)
    if x.shape != r.shape:
        raise _Bad(f"{name}: expected shape {r.shape}, got {x.shape}")
    if x.dtype.kind != r.dtype.kind:
        raise _Bad(f"{name}: expected dtype kind {r.dtype} , got {x.dtype}")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise _Bad(f"{name}: expected finite values, found NaN or inf")
    if x.dtype.kind == "i" and x.size and x.min() < 0:
        raise _Bad(f"{name}: expected counts >= 0, found {x.min()}")


def _refuse_bad_factor(chol, prec, what: str) -> None:
    c = np.asarray(chol, float)
    if c.ndim < 2:
        return
    diag = np.diagonal(c, axis1=-2, axis2=-1)
    if not np.all(diag > 0):
        raise _Bad(f"{what}: a Cholesky factor has a non-positive diagonal")
    if np.any(np.triu(c, 1) != 0):
        raise _Bad(f"{what}: a Cholesky factor is not lower triangular")
    if prec is not None:
        p = np.asarray(prec, float)
        rebuilt = c @ np.swapaxes(c, -1, -2)
        scale = np.max(np.abs(p), axis=(-2, -1), keepdims=True)
        tol = 1e-8 if np.asarray(prec).dtype == np.float64 else 1e-4
        if not np.allclose(rebuilt / scale, p / scale, rtol=0, atol=tol):
            raise _Bad(f"{what}: the Cholesky factor does not match the precision")


def _gram_tol(x, n) -> float:
    """Relative rounding allowance of a sum of n outer products in x's precision: it
    grows like sqrt(n) (measured in float32: 7e-5 of the top eigenvalue after 1e6
    updates of rank-deficient items), capped at 1e-2."""
    eps = float(np.finfo(np.asarray(x).dtype).eps)
    return min(1e-2, 1e3 * eps * float(np.sqrt(1.0 + max(n, 0.0))))


def _valid_symmetric(x, tol: float, what: str) -> np.ndarray:
    a = np.asarray(x, float)
    scale = np.maximum(np.max(np.abs(a), axis=(-2, -1)), 1e-300)
    if np.any(np.max(np.abs(a - np.swapaxes(a, -1, -2)), axis=(-2, -1)) > tol * scale):
        raise _Bad(f"{what}: expected symmetric matrices")
    return a


def _refuse_non_psd(a: np.ndarray, tol: float, what: str) -> None:
    """Positive semi-definite up to rounding (relative to each matrix's largest
    eigenvalue): a Gram matrix, a sum of outer products."""
    eig = np.linalg.eigvalsh(0.5 * (a + np.swapaxes(a, -1, -2)))
    top = np.maximum(np.max(np.abs(eig), axis=-1), 1e-300)
    if np.any(eig.min(axis=-1) < -tol * top):
        raise _Bad(f"{what}: expected positive semi-definite Gram matrices (sums of "
                   f"outer products), found an eigenvalue {eig.min():.3g}")


#: State fields (by name) and what they must satisfy beyond being finite.
_NON_NEGATIVE = ("n", "yy", "q", "accept_sum")
_POSITIVE = ("width", "rate")


def _refuse_bad_state(obj, state, ref_items: np.ndarray) -> None:
    """The invariants of a consistent state (see the module docstring), naming the
    array (``state_<i>`` and its field)."""
    flat = jax.tree_util.tree_flatten_with_path(state)[0]
    index = {jax.tree_util.keystr(p): i for i, (p, _) in enumerate(flat)}

    def name(path: str) -> str:
        return f"state_{index[path]} ({path.lstrip('.')})"

    fields = {}
    for p, x in flat:
        field = getattr(p[-1], "name", None)
        if field is None or _is_key(x):
            continue
        what = name(jax.tree_util.keystr(p))
        a = np.asarray(x)
        if a.dtype.kind == "f" and field in _NON_NEGATIVE and a.size and a.min() < 0:
            raise _Bad(f"{what}: expected values >= 0, found {a.min()}")
        if field in _POSITIVE and a.size and not np.all(a > 0):
            raise _Bad(f"{what}: expected values > 0, found {a.min()}")
        if len(p) == 2 and getattr(p[0], "name", None) == "model":
            fields[field] = (what, a)
    # the Gram blocks of the pair features: (a, p) for LatentLaplace, (a - p, p) for
    # LatentW; both joints are Gram matrices
    first = ("Saa", "Sap") if "Saa" in fields else ("Scc", "Scp")
    if all(k in fields for k in (*first, "Spp")):
        (wa, saa), (_, sap), (wp, spp) = fields[first[0]], fields[first[1]], fields["Spp"]
        n = fields["n"][1] if "n" in fields else np.zeros(1)
        tol = _gram_tol(saa, float(np.max(n, initial=0.0)))
        for what, a in ((wa, saa), (wp, spp)):
            _refuse_non_psd(_valid_symmetric(a, tol, what), tol, what)
        joint = np.concatenate([np.concatenate([saa, sap], -1),
                                np.concatenate([np.swapaxes(sap, -1, -2), spp], -1)], -2)
        _refuse_non_psd(joint.astype(float), tol, f"{wa}, {first[1]} and Spp together")
    if all(k in fields for k in ("S", "u", "q")):  # a learnt-scale model's sums
        (ws, S), (_, u), (_, q) = fields["S"], fields["u"], fields["q"]
        n = fields["n"][1] if "n" in fields else np.zeros(1)
        tol = _gram_tol(S, float(np.max(n, initial=0.0)))
        _refuse_non_psd(_valid_symmetric(S, tol, ws), tol, ws)
        # the Gram matrix of (x, r): [[S, u], [u^T, q]] (Cauchy-Schwarz)
        joint = np.concatenate([np.concatenate([S, u[..., None]], -1),
                                np.concatenate([u[..., None, :], q[..., None, None]], -1)],
                               -2)
        _refuse_non_psd(joint.astype(float), tol, f"{ws}, u and q together")
    prior = getattr(obj.model, "w_prior", None)
    if prior is not None and "w" in fields:
        what, w = fields["w"]
        with jax.ensure_compile_time_eval():
            inside = np.asarray(prior.support(jnp.asarray(w)))
        if not np.all(inside):
            raise _Bad(f"{what}: the chain's w {w.tolist()} lies outside the support "
                       f"{prior.support} of the prior on w")
    _refuse_bad_family_state(obj, state)
    items = np.asarray(state.items)
    K = obj.K
    if not np.array_equal(items[:K], ref_items) or np.any(items[K:]):
        raise _Bad(f"{name('.items')}: the item vectors do not match arg_items "
                   "(zeros past K)")


def _refuse_bad_family_state(obj, state) -> None:
    """The posterior family's own invariants on its state (its ``validate_loaded``, for
    the families that state theirs: a Laplace model's rewards in its link's support,
    zero buffer rows past the counts), named by field path (``model.fit.y: ...``)."""
    check = getattr(getattr(obj, "model", None), "validate_loaded", None)
    if check is None:
        return
    try:
        check(state.model, "model")
    except (TypeError, ValueError) as e:
        raise _Bad(str(e)) from None


def _refuse_unsupported_rewards(rewards: np.ndarray, obj) -> None:
    """The kept rewards observed (not NaN) in the model's support, as ``update``
    asks (a Bernoulli link: {0, 1}; a Poisson one: counts)."""
    support = getattr(getattr(obj, "model", None), "reward_support", None)
    if support not in ("binary", "count"):
        return
    try:
        check_reward_support(rewards[~np.isnan(rewards)], support, "history_rewards")
    except (TypeError, ValueError) as e:
        raise _Bad(str(e)) from None


def _valid_history(data: dict, cfg: dict, obj) -> tuple:
    K, L, d = obj.K, obj.L, obj.items.shape[1]
    items = data.get("history_items")
    rewards = data.get("history_rewards")
    if items is None or rewards is None:
        raise _Bad("missing history_items / history_rewards")
    n = items.shape[0] if items.ndim == 2 else -1
    v0s = data.get("history_v0")
    if v0s is None and cfg["format"] == 1 and n >= 0:
        v0s = np.broadcast_to(np.asarray(obj.v0, float), (n, d))
    if v0s is None:
        raise _Bad("missing history_v0")
    if items.ndim != 2 or items.shape[1] != L or items.dtype.kind not in "iu":
        raise _Bad(f"history_items: expected ints of shape (n, {L}), got "
                   f"{items.dtype}{items.shape}")
    if items.size and (items.min() < 0 or items.max() >= K):
        raise _Bad(f"history_items: expected indices in [0, {K - 1}]")
    if rewards.shape != (n, L) or rewards.dtype.kind != "f":
        raise _Bad(f"history_rewards: expected floats of shape ({n}, {L}), got "
                   f"{rewards.dtype}{rewards.shape}")
    if np.any(np.isinf(rewards)):
        raise _Bad("history_rewards: expected finite rewards or NaN, found inf")
    _refuse_unsupported_rewards(rewards, obj)
    if v0s.shape != (n, d) or v0s.dtype.kind != "f" or not np.all(np.isfinite(v0s)):
        raise _Bad(f"history_v0: expected finite floats of shape ({n}, {d})")
    return items, rewards, np.asarray(v0s)
