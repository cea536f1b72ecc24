"""save/load: round trips, atomic writes, versions, and a catalogue of tampered files
(each a ValueError naming the path, nothing named by the file ever reached)."""

import io
import json
import zipfile
from pathlib import Path

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.policies.runtime import persist
from bayesrank.policies.runtime.persist import FORMAT


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=1, K=6, L=3, d=4, w_max=2.0)


def _played(pol, env, T=15):
    for t in range(T):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    return pol


@pytest.fixture(scope="module")
def saved(env, tmp_path_factory):
    """A played RankTS saved once; tests tamper with copies of its arrays."""
    path = tmp_path_factory.mktemp("persist") / "ts.npz"
    model = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # the fixed state
    pol = _played(br.RankTS(model=model, items=env.items, w=env.w, seed=3), env)
    pol.save(path)
    with np.load(path) as z:
        return path, {k: z[k] for k in z.files}


def _write(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _cfg(arrays):
    return json.loads(bytes(arrays["config_json"]).decode())


def _with_cfg(arrays, **changes):
    cfg = _cfg(arrays)
    for k, v in changes.items():
        if v is _DROP:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    out = dict(arrays)
    out["config_json"] = np.frombuffer(json.dumps(cfg).encode(), np.uint8)
    return out


_DROP = object()


def _state_index(arrays, pred):
    """Index of the first state leaf satisfying pred(array)."""
    n = _cfg(arrays)["n_state"]
    return next(i for i in range(n) if pred(arrays[f"state_{i}"]))


def _set_leaf(arrays, pred, fn):
    out = dict(arrays)
    i = _state_index(arrays, pred)
    out[f"state_{i}"] = fn(arrays[f"state_{i}"].copy())
    return out


def _is_prec(a):
    return a.ndim == 3 and a.shape[1] == a.shape[2] and np.allclose(a, np.swapaxes(a, 1, 2)) \
        and not np.allclose(np.triu(a, 1), 0)


def _is_chol(a):
    return a.ndim == 3 and a.shape[1] == a.shape[2] and np.allclose(np.triu(a, 1), 0)


def _first_int(a):
    return a.dtype.kind == "i" and a.ndim == 1


def _set(a, idx, value):
    a[idx] = value
    return a


def _neg_diag(a):
    a[0, 1, 1] = -abs(a[0, 1, 1])
    return a


def _upper(a):
    a[0, 0, 2] = 0.5
    return a


def _perturb(a):
    a[0, 2, 1] += 0.3
    return a


# name -> a function of the saved arrays giving the tampered arrays (or raw bytes),
# and the words the message must hold
TAMPERED = {
    "missing config_json": (lambda a: {k: v for k, v in a.items() if k != "config_json"},
                            "missing config_json"),
    "config not JSON": (lambda a: {**a, "config_json": np.frombuffer(b"{nope", np.uint8)},
                        "not valid JSON"),
    "config not UTF-8": (lambda a: {**a, "config_json": np.frombuffer(b"\xff\xfe", np.uint8)},
                         "not valid JSON"),
    "config a JSON list": (lambda a: {**a, "config_json": np.frombuffer(b"[1]", np.uint8)},
                           "JSON object"),
    "config as floats": (lambda a: {**a, "config_json": np.zeros(3)}, "UTF-8 bytes"),
    "newer format": (lambda a: _with_cfg(a, format=FORMAT + 1), "upgrade bayesrank"),
    "format zero": (lambda a: _with_cfg(a, format=0), "format must be an int >= 1"),
    "format string": (lambda a: _with_cfg(a, format="2"), "format must be an int"),
    "wrong class": (lambda a: _with_cfg(a, **{"class": "RankUCB"}), "not a RankTS"),
    "negative seed": (lambda a: _with_cfg(a, seed=-1), "seed: expected an integer >= 0"),
    "negative round counter": (lambda a: _with_cfg(a, t=-5), "t: expected an integer >= 0"),
    "float round counter": (lambda a: _with_cfg(a, t=2.5), "t must be an int"),
    "round counter past int64": (lambda a: _with_cfg(a, t=2**63),
                                 "config_json: t: expected a round counter <= 2**63 - 1"),
    "round counter 2**70": (lambda a: _with_cfg(a, t=2**70),
                            "config_json: t: expected a round counter <= 2**63 - 1"),
    "round counter missing": (lambda a: _with_cfg(a, t=_DROP), "t must be an int"),
    "K zero": (lambda a: _with_cfg(a, K=0), "K: expected an integer >= 1"),
    "n_state too large": (lambda a: _with_cfg(a, n_state=99), "missing state arrays"),
    "n_state too small": (lambda a: _with_cfg(a, n_state=2), "does not match"),
    "key_leaves bad": (lambda a: _with_cfg(a, key_leaves=["x"]), "key_leaves"),
    "key_leaves out of range": (lambda a: _with_cfg(a, key_leaves=[500]), "key_leaves"),
    "negative max_history": (lambda a: _with_cfg(a, max_history=-1), "max_history"),
    "config entry not a dict": (lambda a: _with_cfg(a, config=[1]), "config must be"),
    "unknown model class": (
        lambda a: _with_cfg(a, config={**_cfg(a)["config"],
                                       "model": {"class": "os.system", "config": {}}}),
        "configuration is not valid"),
    "model config wrong": (
        lambda a: _with_cfg(a, config={**_cfg(a)["config"], "model": {
            "class": "GaussianLinear", "config": {"class": "GaussianLinear",
                                                  "noise_scale": -1.0}}}),
        "noise_scale"),
    "missing state array": (lambda a: {k: v for k, v in a.items() if k != "state_1"},
                            "missing state arrays: state_1"),
    "NaN in the precision": (lambda a: _set_leaf(a, _is_prec, lambda x: _set(x, (0, 0, 0),
                                                                              np.nan)),
                             "finite"),
    "inf in the precision": (lambda a: _set_leaf(a, _is_prec, lambda x: _set(x, (1, 1, 1),
                                                                              np.inf)),
                             "finite"),
    "negative count": (lambda a: _set_leaf(a, _first_int, lambda x: _set(x, 0, -3)),
                       "counts >= 0"),
    "state leaf wrong shape": (lambda a: _set_leaf(a, _is_prec, lambda x: x[:, :2]),
                               "expected shape"),
    "state leaf wrong dtype": (lambda a: _set_leaf(a, _is_prec, lambda x: x.astype(int)),
                               "dtype"),
    "factor with negative diagonal": (lambda a: _set_leaf(a, _is_chol, _neg_diag),
                                      "non-positive diagonal"),
    "factor not triangular": (lambda a: _set_leaf(a, _is_chol, _upper),
                              "not lower triangular"),
    "factor not matching the precision": (lambda a: _set_leaf(a, _is_chol, _perturb),
                                          "does not match the precision"),
    "history item out of range": (
        lambda a: {**a, "history_items": a["history_items"] + 100}, "history_items"),
    "history items as floats": (
        lambda a: {**a, "history_items": a["history_items"].astype(float)},
        "history_items"),
    "history rewards inf": (
        lambda a: {**a, "history_rewards": np.full_like(a["history_rewards"], np.inf)},
        "history_rewards"),
    "history rewards short": (
        lambda a: {**a, "history_rewards": a["history_rewards"][:-1]}, "history_rewards"),
    "history v0 NaN": (
        lambda a: {**a, "history_v0": np.full_like(a["history_v0"], np.nan)}, "history_v0"),
    "history v0 missing": (lambda a: {k: v for k, v in a.items() if k != "history_v0"},
                           "history_v0"),
    "items as strings": (lambda a: {**a, "arg_items": a["arg_items"].astype(str)},
                         "arg_items"),
    "items with NaN": (lambda a: {**a, "arg_items": np.full_like(a["arg_items"], np.nan)},
                       "items"),
    "w with wrong length": (lambda a: {**a, "arg_w": a["arg_w"][:2]}, "w: expected"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_tampered_file_is_a_value_error_naming_the_path(case, saved, tmp_path):
    path0, arrays = saved
    tamper, words = TAMPERED[case]
    path = tmp_path / "bad.npz"
    _write(path, tamper(arrays))
    with pytest.raises(ValueError) as info:
        br.RankTS.load(path)
    msg = str(info.value)
    assert msg.startswith(f"path: {path}: ") and words in msg, msg


RAW = {
    "empty file": b"",
    "text": b"hello, not a policy\n",
    "random bytes": bytes(np.random.default_rng(0).integers(0, 256, 300, np.uint8)),
    "zip of nothing": None,  # built below
    "npy single array": None,
}


@pytest.mark.parametrize("case", list(RAW) + ["truncated 10%", "truncated 50%",
                                             "truncated 90%", "one byte flipped"])
def test_unreadable_file_is_a_value_error(case, saved, tmp_path):
    path0, _ = saved
    good = path0.read_bytes()
    if case.startswith("truncated"):
        raw = good[: int(len(good) * int(case.split()[1][:-1]) / 100)]
    elif case == "one byte flipped":
        # flip a byte inside the first member's compressed data: a CRC error on read
        raw = bytearray(good)
        raw[len(raw) // 3] ^= 0xFF
        raw = bytes(raw)
    elif case == "zip of nothing":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w"):
            pass
        raw = buf.getvalue()
    elif case == "npy single array":
        buf = io.BytesIO()
        np.save(buf, np.zeros(3))
        raw = buf.getvalue()
    else:
        raw = RAW[case]
    path = tmp_path / "bad.npz"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match=f"path: {path}: "):
        br.RankTS.load(path)


def test_a_file_never_reaches_code_it_names(env, tmp_path):
    """A NumPyroModel file naming builtins / os functions through attribute paths: the
    registry refuses the names, nothing is imported or called (the canary is never
    written)."""
    from bayesrank.posteriors import NumPyroModel
    from bayesrank.posteriors.nuts import numpyro_models as models
    canary = tmp_path / "canary"
    pol = br.RankTS(model=NumPyroModel(models.glm, link="logistic"),
                    items=env.items, w=env.w, seed=0)
    path = tmp_path / "nuts.npz"
    pol.save(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    cfg = _cfg(arrays)
    for name in ["bayesrank.posteriors.numpyro_models:dist.distribution.inspect.builtins.print",
                 "bayesrank.posteriors.numpyro_models:numpyro.logging.os.system",
                 f"pathlib:Path.touch('{canary}')", "os:system", "builtins:exec"]:
        mcfg = json.loads(json.dumps(cfg["config"]["model"]))
        mcfg["config"]["model"] = name
        bad = _with_cfg(arrays, config={**cfg["config"], "model": mcfg})
        _write(tmp_path / "bad.npz", bad)
        with pytest.raises(ValueError, match="path: .*bad.npz: "):
            br.RankTS.load(tmp_path / "bad.npz")
    assert not canary.exists()


def test_saved_file_records_versions_and_loads_exactly(env, tmp_path):
    pol = _played(br.RankUCB(items=env.items, w=env.w), env)
    path = tmp_path / "u.npz"
    pol.save(path)
    with np.load(path) as z:
        cfg = json.loads(bytes(z["config_json"]).decode())
    assert cfg["format"] == FORMAT and cfg["bayesrank"] == br.__version__
    back = br.RankUCB.load(path)
    for a, b in zip(jax.tree_util.tree_leaves(pol.state), jax.tree_util.tree_leaves(back.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(pol.select(), back.select())


def test_format_1_files_are_migrated(saved, tmp_path):
    path0, arrays = saved
    old = _with_cfg(arrays, format=1, bayesrank=_DROP, max_history=_DROP,
                    history_seen=_DROP)
    old = {k: v for k, v in old.items() if k != "history_v0"}
    path = tmp_path / "old.npz"
    _write(path, old)
    back = br.RankTS.load(path)
    items, rewards = back.history()
    np.testing.assert_array_equal(items, arrays["history_items"])
    assert back.max_history == 10_000


def test_format_2_files_get_zero_compensation_terms(saved, tmp_path):
    """Format 2 stored conjugate states without prec_lo / b_lo: they load with zeros
    there (the plain sums they held) and serve the same lists."""
    path0, arrays = saved
    ref = br.RankTS.load(path0)
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(ref.state)[0]]
    drop = [i for i, p in enumerate(paths)
            if getattr(p[-1], "name", None) in ("prec_lo", "b_lo")]
    assert len(drop) == 2
    keep = [i for i in range(len(paths)) if i not in drop]
    cfg = _cfg(arrays)
    old = _with_cfg(arrays, format=2, n_state=len(keep),
                    key_leaves=[keep.index(k) for k in cfg["key_leaves"]])
    old = {k: v for k, v in old.items() if not k.startswith("state_")}
    for new_i, i in enumerate(keep):
        old[f"state_{new_i}"] = arrays[f"state_{i}"]
    path = tmp_path / "v2.npz"
    _write(path, old)
    back = br.RankTS.load(path)
    model = back.state.model
    assert not np.any(np.asarray(model.prec_lo)) and not np.any(np.asarray(model.b_lo))
    np.testing.assert_allclose(back.posterior_mean(), ref.posterior_mean(), rtol=1e-12)
    np.testing.assert_array_equal(back.select(), ref.select())


def test_save_is_atomic(env, tmp_path, monkeypatch):
    """A failure while writing leaves the previous file intact and no temporary file."""
    pol = _played(br.RankTS(items=env.items, w=env.w, seed=0), env, T=3)
    path = tmp_path / "p.npz"
    pol.save(path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        pol.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


def test_file_size_is_bounded_by_the_kept_history(env, tmp_path):
    """With the default bound (10,000 impressions), the file after 40,000 updates is
    no larger than after 20,000."""
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    rng = np.random.default_rng(0)
    sizes = []
    for _ in range(2):
        items = rng.integers(0, env.K, (20_000, env.L))
        pol.update(items, rng.normal(size=(20_000, env.L)))
        pol.save(tmp_path / "p.npz")
        sizes.append((tmp_path / "p.npz").stat().st_size)
    assert sizes[1] <= sizes[0]
    assert len(pol.history()[0]) == 10_000


@pytest.mark.parametrize("bad", [-1, 2.5, "10", True, None])
def test_bad_max_history(env, bad):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    with pytest.raises((TypeError, ValueError), match="max_history: expected an integer"):
        pol.max_history = bad
    assert pol.max_history == 10_000


@pytest.mark.parametrize("bad", [3, 2.5, ["a"], object()])
def test_bad_path_type(env, bad):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    with pytest.raises(TypeError, match="path: expected a str or os.PathLike"):
        pol.save(bad)
    with pytest.raises(TypeError, match="path: expected a str or os.PathLike"):
        br.RankTS.load(bad)


@pytest.mark.parametrize("t", [2**31, 2**32 + 3, 2**40, 2**63 - 2])
def test_a_file_with_a_round_counter_past_int32_loads_and_selects(saved, tmp_path, t):
    """A counter a file can hold (a JSON integer up to 2**63 - 1; the digest
    recomputed, as save would write it) loads, selects round t with its key (the
    pure core's list there) and goes on: no OverflowError, and save keeps it."""
    _, arrays = saved
    edited = _with_cfg(arrays, t=t)
    edited["digest"] = np.frombuffer(persist._digest(edited).encode(), np.uint8)
    path = tmp_path / "late.npz"
    _write(path, edited)
    pol = br.RankTS.load(path)
    assert pol.t == t
    hi, lo = divmod(t, 2**32)
    key = pol.key
    if hi:  # the documented key past 2**32 (Policy.t)
        key = jax.random.fold_in(jax.random.fold_in(key, np.uint32(hi)),
                                 np.uint32(2**32 - 1))
    key = jax.random.fold_in(key, np.uint32(lo))
    want = np.asarray(pol.core.select(key, pol.state, pol.context())[1].items)
    np.testing.assert_array_equal(pol.select(), want)
    assert pol.t == t + 1
    pol.save(tmp_path / "again.npz")
    assert br.RankTS.load(tmp_path / "again.npz").t == t + 1


# ------------------------------------------- files written before the latent-w move
@pytest.mark.parametrize("name", ["learnt", "fixed"])
def test_a_latent_w_file_of_format_4_loads_as_its_replayed_history(name):
    """Files saved by format 4 (sums of a and p; written at 155cd21's LatentW) load
    as sums of c = a - p and p: equal to a fresh policy fed the file's kept
    history, and with the same posterior of w."""
    import numpyro.distributions as dist

    path = Path(__file__).parents[1] / "data" / f"latent_w_{name}_format4.npz"
    old = br.RankTS.load(path)
    items, rewards = old.history()
    kw = {} if name == "learnt" else {
        "model": br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)}
    fresh = br.RankTS(items=np.asarray(old.items), L=3, w=dist.Normal(0.0, 5.0), **kw)
    for it, r in zip(items, rewards):
        fresh.update(it, r)
    got, want = old.state.model, fresh.state.model
    for field in ("Scc", "Scp", "Spp", "bc", "bp", "yy", "n"):
        a, b = np.asarray(getattr(got, field)), np.asarray(getattr(want, field))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max(),
                                   err_msg=field)
    np.testing.assert_allclose(old.w_hat, fresh.w_hat, rtol=1e-3, atol=1e-3)
