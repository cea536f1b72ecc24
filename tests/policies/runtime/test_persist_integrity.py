"""save/load are right or refused (issue 35, item 2).

A catalogue grouped by entry point:

* ``save``: every prior on a latent w that save takes, load rebuilds (HalfNormal,
  truncations, ``.expand([L])``, ...); the others are refused at save time, naming
  ``w`` and why, with nothing written;
* ``load(path, w=prior)``: the prior replaces the saved one; a bad ``w=`` names ``w``;
* ``load`` of an edited file: refused by the content digest (any edit), and, when the
  digest was recomputed by hand, still refused by the state's invariants when the
  state is inconsistent. Every refusal leaves the file as it was.
"""

import json

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.distributions import transforms

import bayesrank as br
from bayesrank.policies.runtime import persist
from bayesrank.posteriors.w_prior import prior_config


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=1, K=6, L=3, d=4, w_max=2.0)


def _played(pol, env, T=12):
    for t in range(T):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    return pol


def _latent(env, prior, seed=0):
    return br.RankTS(items=env.items, L=env.L, w=prior, seed=seed)


def _arrays(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _write(path, arrays, redigest=False):
    arrays = dict(arrays)
    if redigest:
        arrays["digest"] = np.frombuffer(persist._digest(arrays).encode(), np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _cfg(arrays):
    return json.loads(bytes(arrays["config_json"]).decode())


def _with_cfg(arrays, **changes):
    cfg = _cfg(arrays)
    cfg.update(changes)
    return {**arrays, "config_json": np.frombuffer(json.dumps(cfg).encode(), np.uint8)}


def _leaves(pol):
    return [np.asarray(jax.random.key_data(x) if persist._is_key(x) else x)
            for x in jax.tree_util.tree_leaves(pol.state)]


def _as_format_4(pol, arrays):
    """A format-5 file's arrays as an older format held them: a latent w's sums of
    a and p (Saa = Scc + Scp + Scp^T + Spp, Sap = Scp + Spp, ba = bc + bp)."""
    if type(pol.state.model).__name__ != "LatentWState":
        return arrays
    Scc, Scp, Spp, bc, bp = (arrays[f"state_{i}"].astype(np.float64) for i in range(5))
    old = (Scc + Scp + np.swapaxes(Scp, -1, -2) + Spp, Scp + Spp, Spp, bc + bp, bp)
    dtype = arrays["state_0"].dtype
    return {**arrays, **{f"state_{i}": a.astype(dtype) for i, a in enumerate(old)}}


def _close_state(a, b):
    """Equal leaves, floats to float32 rounding (a migrated latent w's sums)."""
    return all(np.allclose(x, y, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(y).max()))
               if np.asarray(x).dtype.kind == "f" else np.array_equal(x, y)
               for x, y in zip(_leaves(a), _leaves(b)))


def _same_state(a, b):
    return all(np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b)))


def _refused(exc, cls, path, *words):
    """Load ``path`` expecting ``exc``; the message names the path and holds the
    words; the file is left exactly as it was."""
    before = path.read_bytes()
    with pytest.raises(exc) as info:
        cls.load(path)
    msg = str(info.value)
    assert msg.startswith(f"path: {path}: "), msg
    for w in words:
        assert w in msg, msg
    assert path.read_bytes() == before
    return msg


# ============================================================ save: priors on w
PRIORS = {
    "Normal": lambda: dist.Normal(0.0, 5.0),
    "HalfNormal": lambda: dist.HalfNormal(2.0),
    "TruncatedNormal low": lambda: dist.TruncatedNormal(0.5, 1.0, low=1.0),
    "TruncatedNormal low high": lambda: dist.TruncatedNormal(0.0, 1.0, low=-1.0, high=2.0),
    "TruncatedNormal high": lambda: dist.TruncatedNormal(0.0, 1.0, high=3.0),
    "Normal expanded": lambda: dist.Normal(0.0, 5.0).expand([3]),
    "Normal batched": lambda: dist.Normal(np.array([0.0, 1.0, 2.0]), 5.0),
    "TruncatedNormal expanded": lambda: dist.TruncatedNormal(0.0, 1.0, low=0.0).expand([3]),
    "truncated Cauchy": lambda: dist.TruncatedDistribution(dist.Cauchy(0.0, 1.0), low=0.0),
    "Gamma": lambda: dist.Gamma(2.0, 1.0),
    "Laplace": lambda: dist.Laplace(1.0, 2.0),
}


@pytest.mark.parametrize("name", sorted(PRIORS))
def test_every_prior_save_takes_load_rebuilds(env, name, tmp_path):
    pol = _played(_latent(env, PRIORS[name]()), env)
    path = tmp_path / "p.npz"
    pol.save(path)
    back = br.RankTS.load(path)
    a, b = pol.model.w_prior, back.model.w_prior
    assert type(b) is type(a) and b.batch_shape == a.batch_shape
    assert prior_config(b) == prior_config(a)
    x = np.asarray(pol.state.model.w)  # inside the support
    # the rebuilt prior's parameters are float64 values: in float32 its densities and
    # the grid's sums may round differently in the last bit
    eps = np.finfo(x.dtype).eps
    np.testing.assert_allclose(np.asarray(b.log_prob(x)), np.asarray(a.log_prob(x)),
                               rtol=max(1e-12, 8 * eps))
    assert _same_state(pol, back)
    np.testing.assert_allclose(back.w_hat, pol.w_hat, rtol=max(1e-12, 8 * eps))
    np.testing.assert_array_equal(back.select(), pol.select())


UNSAVABLE = {
    "affine transform": (
        lambda: dist.TransformedDistribution(dist.Normal(0.0, 1.0),
                                             transforms.AffineTransform(0.0, 2.0)),
        "TransformedDistribution"),
    "mixture": (
        lambda: dist.MixtureSameFamily(dist.Categorical(probs=np.array([0.5, 0.5])),
                                       dist.Normal(np.array([-1.0, 1.0]), 1.0)),
        "MixtureSameFamily"),
}


@pytest.mark.parametrize("name", sorted(UNSAVABLE))
def test_save_refuses_a_prior_load_cannot_rebuild(env, name, tmp_path):
    make, cls_name = UNSAVABLE[name]
    pol = _played(_latent(env, make()), env, T=3)
    before = _leaves(pol), pol.t
    path = tmp_path / "p.npz"
    with pytest.raises(ValueError) as info:
        pol.save(path)
    msg = str(info.value)
    assert msg.startswith("w: cannot save") and cls_name in msg, msg
    assert "not among the priors a file can rebuild" in msg
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file
    assert all(np.array_equal(x, y) for x, y in zip(_leaves(pol), before[0]))
    assert pol.t == before[1]
    # an older file under the name stays as it was
    path.write_bytes(b"old")
    with pytest.raises(ValueError, match="^w: cannot save"):
        pol.save(path)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["p.npz"]


# ========================================================== load(path, w=prior)
@pytest.fixture(scope="module")
def half(env, tmp_path_factory):
    """A played RankTS with w ~ HalfNormal(2) (its chain's w > 0), saved once."""
    path = tmp_path_factory.mktemp("integrity") / "half.npz"
    pol = _played(_latent(env, dist.HalfNormal(2.0)), env)
    pol.save(path)
    return pol, path


def test_load_with_w_replaces_the_saved_prior(half):
    pol, path = half
    prior = dist.Gamma(2.0, 1.0)
    back = br.RankTS.load(path, w=prior)
    assert back.model.w_prior is prior
    assert _same_state(pol, back) and back.t == pol.t


def test_load_with_w_and_a_base_model(half):
    pol, path = half
    prior = dist.HalfNormal(3.0)
    back = br.RankTS.load(path, model=br.GaussianLinear(), w=prior)
    assert back.model.w_prior is prior and _same_state(pol, back)


def test_load_with_w_reads_a_file_whose_prior_was_not_stored(half, tmp_path):
    """Files written before the fix hold an unsavable prior as its class name only:
    load() names w=, load(w=prior) reads them."""
    pol, path0 = half
    arrays = _arrays(path0)
    cfg = _cfg(arrays)
    cfg["config"]["model"]["config"]["w_prior"] = {"class": "HalfNormal", "params": None}
    old = {k: v for k, v in _with_cfg(_as_format_4(pol, arrays), format=3,
                                      config=cfg["config"]).items() if k != "digest"}
    path = tmp_path / "old.npz"
    _write(path, old)
    _refused(ValueError, br.RankTS, path, "'HalfNormal' cannot be rebuilt", "pass w=")
    back = br.RankTS.load(path, w=dist.HalfNormal(2.0))
    assert _close_state(pol, back)
    np.testing.assert_array_equal(back.select(), br.RankTS.load(path0).select())


BAD_W = {
    # name -> (the w given, the exception, words; the path too when it is the file's)
    "an array for a latent w": (lambda: np.ones(3), TypeError, ["w: load() takes w= only"]),
    "a number": (lambda: 2.0, TypeError, ["w: load() takes w= only"]),
    "support excludes the chain's w": (
        lambda: dist.TruncatedNormal(0.0, 1.0, high=-1.0), ValueError,
        ["path: ", "(model.w)", "outside the support"]),
    "wrong batch shape": (lambda: dist.Normal(0.0, 1.0).expand([5]), ValueError,
                          ["path: ", "w: "]),
    "the model already has a prior": (
        "model", ValueError, ["path: ", "w: the model already learns w"]),
}


@pytest.mark.parametrize("name", sorted(BAD_W))
def test_a_bad_w_at_load_names_w(half, name):
    _pol, path = half
    make, exc, words = BAD_W[name]
    before = path.read_bytes()
    kwargs = {"w": make()} if make != "model" else {
        "w": dist.HalfNormal(1.0),
        "model": br.posteriors.LatentW(br.GaussianLinear(), dist.HalfNormal(2.0))}
    with pytest.raises(exc) as info:
        br.RankTS.load(path, **kwargs)
    msg = str(info.value)
    assert all(w in msg for w in words), msg
    assert path.read_bytes() == before


def test_w_at_load_for_a_known_w_names_w_and_the_path(env, tmp_path):
    path = tmp_path / "known.npz"
    br.RankTS(items=env.items, w=env.w, seed=0).save(path)
    with pytest.raises(ValueError) as info:
        br.RankTS.load(path, w=dist.Normal(0.0, 1.0))
    msg = str(info.value)
    assert msg.startswith(f"w: {path} holds a policy without a latent w"), msg


# =========================================================== load: edited files
@pytest.fixture(scope="module")
def known(env, tmp_path_factory):
    """A played RankTS with known w (fixed-scale conjugate state), saved once."""
    path = tmp_path_factory.mktemp("integrity") / "known.npz"
    model = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)
    pol = _played(br.RankTS(model=model, items=env.items, w=env.w, seed=3), env)
    pol.add_items(np.asarray(env.items[:2]) + 0.5)  # capacity past K: zero rows
    pol.save(path)
    return pol, path


@pytest.fixture(scope="module")
def learnt(env, tmp_path_factory):
    """A played RankTS with the default model (learnt scales: running sums)."""
    path = tmp_path_factory.mktemp("integrity") / "learnt.npz"
    pol = _played(br.RankTS(items=env.items, w=env.w, seed=3), env)
    pol.save(path)
    return pol, path


def _index(pol, field):
    """The state index of a field path such as 'model.Scc'."""
    paths = [jax.tree_util.keystr(p).lstrip(".")
             for p, _ in jax.tree_util.tree_flatten_with_path(pol.state)[0]]
    return paths.index(field)


def _edit(field, fn):
    def tamper(pol, arrays):
        i = _index(pol, field)
        return {**arrays, f"state_{i}": fn(arrays[f"state_{i}"].copy(), pol)}
    return tamper


def _setitem(idx, value):
    def fn(a, pol):
        a[idx] = value(a) if callable(value) else value
        return a
    return fn


def _reverse_items(a, pol):
    a[: pol.K] = a[: pol.K][::-1]
    return a


def _minus_100_identity(a, pol):
    a[:] = -100 * np.eye(a.shape[-1])
    return a


def _huge_cross(a, pol):
    a[0] = 1e3 * np.eye(a.shape[-1])  # |Scp| >> Scc, Spp: [[Scc, Scp], [Scp^T, Spp]] < 0
    return a


def _asymmetric(a, pol):
    a[0, 0, 1] += 1.0
    return a


def _huge(a, pol):
    return 1e3 * a  # |u| >> S, q: [[S, u], [u^T, q]] < 0


# name -> (which file, the edit, the words of the invariant that refuses it with a
# recomputed digest; None: only the digest sees the edit)
EDITS = {
    "state items reversed": ("half", _edit("items", _reverse_items), "arg_items"),
    "state items reversed (known w)": ("known", _edit("items", _reverse_items),
                                       "arg_items"),
    "an item row past K not zero": ("known", _edit("items", _setitem(-1, 1.0)),
                                    "zeros past K"),
    "Scc = -100 I": ("half", _edit("model.Scc", _minus_100_identity),
                     "(model.Scc): expected positive semi-definite"),
    "Scc not symmetric": ("half", _edit("model.Scc", _asymmetric),
                          "(model.Scc): expected symmetric"),
    "Scp too large for Scc, Spp": ("half", _edit("model.Scp", _huge_cross),
                                   "Scp and Spp together"),
    "chain w outside the prior's support": (
        "half", _edit("model.w", _setitem(0, -1.0)), "(model.w): the chain's w"),
    "negative slice width": ("half", _edit("model.width", _setitem(1, -0.5)),
                             "(model.width): expected values > 0"),
    "zero slice width": ("half", _edit("model.width", _setitem(1, 0.0)),
                         "(model.width): expected values > 0"),
    "negative count": ("half", _edit("model.n", _setitem(0, -1.0)),
                       "(model.n): expected values >= 0"),
    "negative sum of squares": ("half", _edit("model.yy", _setitem(2, -1.0)),
                                "(model.yy): expected values >= 0"),
    "K = 99 with 6 item rows": ("half", lambda pol, a: _with_cfg(a, K=99),
                                "config_json: K=99, but arg_items holds 6 items"),
    "K = 99 (known w)": ("known", lambda pol, a: _with_cfg(a, K=99), "K=99"),
    "precision not symmetric": ("known", _edit("model.prec", _asymmetric),
                                "the Cholesky factor does not match the precision"),
    "S not symmetric (learnt scales)": ("learnt", _edit("model.S", _asymmetric),
                                        "(model.S): expected symmetric"),
    "S = -100 I (learnt scales)": ("learnt", _edit("model.S", _minus_100_identity),
                                   "(model.S): expected positive semi-definite"),
    "u too large for S, q (learnt scales)": ("learnt", _edit("model.u", _huge),
                                             "u and q together"),
    "negative sum of squares q": ("learnt", _edit("model.q", _setitem(1, -1.0)),
                                  "(model.q): expected values >= 0"),
    # only the digest sees these: consistent states, other numbers
    "negated u (learnt scales)": ("learnt", _edit("model.u", lambda a, pol: -a), None),
    "negated b_c": ("half", _edit("model.bc", lambda a, pol: -a), None),
    "negated b (known w)": ("known", _edit("model.b", lambda a, pol: -a), None),
    # the conjugate families' own invariants (their validate_loaded)
    "logdet not the factor's (known w)": (
        "known", _edit("model.logdet", lambda a, pol: a + 1.0), "model.logdet: expected log det"),
    "a half count (learnt scales)": (
        "learnt", _edit("model.n", _setitem(0, 2.5)), "model.n: expected whole counts"),
    "a reward unit not a power of two (learnt scales)": (
        "learnt", _edit("model.scale", lambda a, pol: a * 3.0),
        "model.scale: expected one power of two"),
    "a history reward changed": (
        "half", lambda pol, a: {**a, "history_rewards": a["history_rewards"] + 1.0}, None),
    "the seed changed": ("half", lambda pol, a: _with_cfg(a, seed=7), None),
    "the round counter changed": ("known", lambda pol, a: _with_cfg(a, t=3), None),
    "an extra array": ("half", lambda pol, a: {**a, "extra": np.zeros(2)}, None),
    "the digest edited": (
        "half", lambda pol, a: {**a, "digest": a["digest"][::-1].copy()}, None),
    "the digest as floats": (
        "half", lambda pol, a: {**a, "digest": a["digest"].astype(float)}, None),
}


@pytest.fixture(scope="module")
def files(half, known, learnt):
    return {"half": half, "known": known, "learnt": learnt}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_edited_file_is_refused(case, files, tmp_path):
    """As an editor leaves it (the stored digest unchanged): refused, naming the
    broken invariant where there is one, else the digest."""
    which, tamper, words = EDITS[case]
    pol, path0 = files[which]
    path = tmp_path / "bad.npz"
    _write(path, tamper(pol, _arrays(path0)))
    _refused(ValueError, type(pol), path,
             words or "the file's content does not match its digest (edited or corrupted)")


@pytest.mark.parametrize("case", sorted(c for c, v in EDITS.items() if v[2]))
def test_a_recomputed_digest_still_meets_the_invariants(case, files, tmp_path):
    which, tamper, words = EDITS[case]
    pol, path0 = files[which]
    path = tmp_path / "bad.npz"
    _write(path, tamper(pol, _arrays(path0)), redigest=True)
    _refused(ValueError, type(pol), path, words)


def test_the_digest_covers_every_array_and_the_configuration(files):
    _pol, path = files["half"]
    arrays = _arrays(path)
    assert _cfg(arrays)["format"] == persist.FORMAT == 5
    assert bytes(arrays["digest"]).decode() == persist._digest(arrays)
    assert len(bytes(arrays["digest"])) == 64


def test_a_format_4_file_without_its_digest_is_refused(files, tmp_path):
    _pol, path0 = files["half"]
    path = tmp_path / "bad.npz"
    _write(path, {k: v for k, v in _arrays(path0).items() if k != "digest"})
    _refused(ValueError, br.RankTS, path, "missing digest")


@pytest.mark.parametrize("which", ["half", "known"])
def test_files_from_before_the_digest_load_through_the_checks(which, files, tmp_path):
    """Format 3 (no digest): a consistent file loads as it was; an inconsistent one
    is refused by the invariants."""
    pol, path0 = files[which]
    old = {k: v for k, v in _with_cfg(_as_format_4(pol, _arrays(path0)), format=3).items()
           if k != "digest"}
    path = tmp_path / "old.npz"
    _write(path, old)
    back = type(pol).load(path)
    assert _close_state(pol, back)
    np.testing.assert_array_equal(back.select(), type(pol).load(path0).select())
    _write(path, _edit("items", _reverse_items)(pol, old))
    _refused(ValueError, type(pol), path, "arg_items")


# ======================================== load: a posterior family's own invariants
# (issue 58, item 7) Every Laplace family states what its update lets into a state
# (``validate_loaded``): the buffered rewards in the link's support, zero rows past the
# counts, lower triangular factors, a latent form's counts those of its fit. The
# edits below keep the digest recomputed, so only those invariants can refuse them.
LAPLACE_FILES = {
    # name -> (model, w (None: the env's known w; else a prior), reward kind)
    "logistic": (lambda: br.LaplaceGLM("logistic", 1.0, n_max=16), None, "click"),
    "logistic learnt": (lambda: br.LaplaceGLM("logistic", n_max=16), None, "click"),
    "probit": (lambda: br.LaplaceGLM("probit", 1.0, n_max=16), None, "click"),
    "exp": (lambda: br.LaplaceGLM("exp", 1.0, n_max=16), None, "count"),
    "latent logistic": (lambda: br.LaplaceGLM("logistic", 1.0, n_max=16),
                        lambda: dist.Normal(0.0, 2.0), "click"),
    "latent logistic learnt": (lambda: br.LaplaceGLM("logistic", n_max=16),
                               lambda: dist.Normal(0.0, 2.0), "click"),
}


@pytest.fixture(scope="module")
def laplace_files(env, tmp_path_factory):
    """Played Laplace policies (6 rounds of 16 buffer rows: rows past the counts),
    saved once each, built on first use."""
    made = {}

    def get(which):
        if which not in made:
            model, w, kind = LAPLACE_FILES[which]
            pol = br.RankTS(items=env.items, L=env.L, model=model(),
                            w=env.w if w is None else w(), seed=3)
            rng = np.random.default_rng(0)
            for _ in range(6):
                it = pol.select()
                r = (rng.random(env.L) < 0.5) if kind == "click" else \
                    rng.poisson(1.5, env.L)
                pol.update(it, r.astype(float))
            path = tmp_path_factory.mktemp("laplace") / "p.npz"
            pol.save(path)
            made[which] = pol, path
        return made[which]

    return get


def _history_reward(value):
    def tamper(pol, arrays):
        r = arrays["history_rewards"].copy()
        r[0, 0] = value
        return {**arrays, "history_rewards": r}
    return tamper


def _upper(a, pol):
    a[..., 0, 1] = 0.5
    return a


# name -> (which file, the edit, the words of the refusal)
FAMILY_EDITS = {
    "a reward 7.0 under the logistic link": (
        "logistic", _edit("model.y", _setitem((0, 0), 7.0)),
        "model.y: expected rewards in {0, 1} for the logistic link, got 7.0"),
    "a reward 0.5 under the logistic link": (
        "logistic", _edit("model.y", _setitem((1, 2), 0.5)),
        "model.y: expected rewards in {0, 1} for the logistic link, got 0.5"),
    "a reward -1 under the logistic link": (
        "logistic", _edit("model.y", _setitem((2, 5), -1.0)),
        "model.y: expected rewards in {0, 1} for the logistic link, got -1.0"),
    "a reward 7.0 under the probit link": (
        "probit", _edit("model.y", _setitem((0, 3), 7.0)),
        "model.y: expected rewards in {0, 1} for the probit link, got 7.0"),
    "a reward 7.0 with a learnt scale": (
        "logistic learnt", _edit("model.y", _setitem((0, 0), 7.0)),
        "model.y: expected rewards in {0, 1} for the logistic link, got 7.0"),
    "a count -1 under the exp link": (
        "exp", _edit("model.y", _setitem((0, 0), -1.0)),
        "model.y: expected non-negative integer rewards for the exp link, got -1.0"),
    "a count 2.5 under the exp link": (
        "exp", _edit("model.y", _setitem((1, 1), 2.5)),
        "model.y: expected non-negative integer rewards for the exp link, got 2.5"),
    "a reward past the count": (
        "logistic", _edit("model.y", _setitem((0, -1), 1.0)),
        "model.y: expected zeros past the rows held (position 0 holds 6: n = 6)"),
    "a feature row past the count": (
        "logistic learnt", _edit("model.x", _setitem((1, 6), 1.0)),
        "model.x: expected zeros past the rows held (position 1 holds 6: n = 6)"),
    "a count lowered below the rows held": (
        "exp", _edit("model.n", _setitem(2, 4)),
        "expected zeros past the rows held (position 2 holds 4: n = 4)"),
    "a reward 7.0 in a latent form's fit": (
        "latent logistic", _edit("model.fit.y", _setitem((0, 0), 7.0)),
        "model.fit.y: expected rewards in {0, 1} for the logistic link, got 7.0"),
    "a reward 7.0 in a latent form's fit, learnt scale": (
        "latent logistic learnt", _edit("model.fit.y", _setitem((1, 0), 7.0)),
        "model.fit.y: expected rewards in {0, 1} for the logistic link, got 7.0"),
    "a latent form's fit row past the count": (
        "latent logistic", _edit("model.fit.x", _setitem((0, 10), 1.0)),
        "model.fit.x: expected zeros past the rows held"),
    "a latent form's fit factor not lower triangular": (
        "latent logistic learnt", _edit("model.fit.chol", _upper),
        "model.fit.chol: expected lower triangular Cholesky factors"),
    "a latent form's count not its fit's": (
        "latent logistic", _edit("model.n", _setitem(0, 9.0)),
        "model.n: expected the fit's counts model.fit.n = [6, 6, 6], got [9.0, 6.0"),
    "a history reward 7.0 under the logistic link": (
        "logistic", _history_reward(7.0),
        "history_rewards: a Bernoulli likelihood needs rewards in {0, 1}"),
    "a history count 2.5 under the exp link": (
        "exp", _history_reward(2.5),
        "history_rewards: a Poisson likelihood needs non-negative integer rewards"),
}


@pytest.mark.parametrize("case", sorted(FAMILY_EDITS))
def test_a_state_update_would_refuse_is_refused_at_load(case, laplace_files, tmp_path):
    """Refused with the digest recomputed, naming the field path; the file saved as
    it was still loads as it was saved."""
    which, tamper, words = FAMILY_EDITS[case]
    pol, path0 = laplace_files(which)
    path = tmp_path / "bad.npz"
    _write(path, tamper(pol, _arrays(path0)), redigest=True)
    _refused(ValueError, br.RankTS, path, words)
    back = br.RankTS.load(path0)
    assert _same_state(pol, back) and back.t == pol.t
    np.testing.assert_array_equal(back.select(), br.RankTS.load(path0).select())
