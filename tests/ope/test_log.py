"""The log format: a catalogue of bad inputs, each named in the message, and a NetCDF
round trip."""

import jax
import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.ope import (
    EpsilonGreedyLogger,
    SoftmaxLogger,
    UniformLogger,
    as_log,
    check_log,
    collect,
)

N, L, D, K = 4, 3, 2, 5


def good(**over):
    rng = np.random.default_rng(0)
    kw = {
        "lists": rng.integers(0, K, (N, L)),
        "rewards": rng.normal(size=(N, L)),
        "v0": rng.normal(size=(N, D)),
        # a uniform logger's (L = 3): every row obeys the invariants between them
        "pscore_list": np.full(N, K**-3.0),
        "pscore_position": np.full((N, L), 1 / K),
        "pscore_pair": np.tile([1 / K, 1 / K**2, 1 / K**2], (N, 1)),
        "pscore_cascade": np.tile([1 / K, 1 / K**2, 1 / K**3], (N, 1)),
        "items": rng.normal(size=(K, D)),
    }
    kw.update(over)
    return kw


def test_a_valid_log_has_the_documented_layout():
    kw = good()
    kw["rewards"][1, 2] = np.nan  # not observed: allowed
    ds = as_log(**kw, K=K)
    assert ds["lists"].dims == ("round", "position")
    assert ds["v0"].dims == ("round", "dim")
    assert ds["pscore_list"].dims == ("round",)
    assert dict(ds.sizes) == {"round": N, "position": L, "dim": D, "item": K}
    assert ds["items"].dims == ("item", "dim")
    np.testing.assert_array_equal(ds["items"].values, kw["items"])
    np.testing.assert_array_equal(ds["lists"].values, kw["lists"])
    assert np.isnan(ds["rewards"].values[1, 2])


def test_a_shared_v0_is_broadcast():
    ds = as_log(**good(v0=np.array([1.0, 2.0])))
    np.testing.assert_array_equal(ds["v0"].values, np.tile([1.0, 2.0], (N, 1)))


def test_pscores_are_optional():
    kw = good()
    ds = as_log(kw["lists"], kw["rewards"], kw["v0"])  # no pscores, no items
    assert set(ds.data_vars) == {"lists", "rewards", "v0"}


BAD = [
    ("lists", {"lists": np.zeros(N, int)}, ValueError),
    ("lists", {"lists": np.zeros((N, L)) + 0.5}, TypeError),
    ("lists", {"lists": np.full((N, L), K)}, ValueError),  # >= K
    ("lists", {"lists": np.full((N, L), -1)}, ValueError),
    ("rewards", {"rewards": np.zeros((N, L + 1))}, ValueError),
    ("rewards", {"rewards": np.full((N, L), np.inf)}, ValueError),
    ("rewards", {"rewards": np.full((N, L), "a")}, TypeError),
    ("v0", {"v0": np.zeros((N + 1, D))}, ValueError),
    ("v0", {"v0": np.full((N, D), np.nan)}, ValueError),
    ("v0", {"v0": np.full((N, D), np.inf)}, ValueError),
    ("pscore_list", {"pscore_list": np.zeros(N)}, ValueError),
    ("pscore_list", {"pscore_list": np.full(N, 1.5)}, ValueError),
    ("pscore_list", {"pscore_list": np.full((N, L), 0.5)}, ValueError),
    ("pscore_position", {"pscore_position": np.full((N, L), np.nan)}, ValueError),
    ("pscore_pair", {"pscore_pair": np.full((N, L), -0.1)}, ValueError),
    ("pscore_cascade", {"pscore_cascade": np.full((N, L - 1), 0.5)}, ValueError),
    ("items", {"items": np.zeros((K, D + 1))}, ValueError),  # d differs from v0's
    ("items", {"items": np.zeros((K - 1, D))}, ValueError),  # rows differ from K
    ("items", {"items": np.full((K, D), np.nan)}, ValueError),
    ("items", {"items": np.full((K, D), np.inf)}, ValueError),
    ("items", {"items": np.zeros(K)}, ValueError),
    ("items", {"items": np.full((K, D), "a")}, TypeError),
]


@pytest.mark.parametrize("name, over, exc", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_inputs_name_the_variable(name, over, exc):
    with pytest.raises(exc, match=f"^{name}:"):
        as_log(**good(**over), K=K)


def test_indices_above_K_pass_when_K_is_unknown():
    kw = good(lists=np.full((N, L), K + 3))
    del kw["items"]
    as_log(**kw)


def test_items_set_K_and_must_cover_the_lists():
    assert as_log(**good()).attrs["K"] == K
    with pytest.raises(ValueError, match="^items:"):
        as_log(**good(lists=np.full((N, L), K)))  # K rows, item index K used


# the bad values a Dataset can hold under the log's dims (same shape, numeric)
BAD_DS = [b for b in BAD if np.shape(next(iter(b[1].values()))) == np.shape(good()[b[0]])
          and np.asarray(next(iter(b[1].values()))).dtype.kind != "U"]


@pytest.mark.parametrize("name, over, exc", BAD_DS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_DS)])
def test_check_log_catches_the_same_errors(name, over, exc):
    ds = as_log(**good(), K=K)
    arr = np.asarray(good(**over)[name])
    bad = ds.copy()
    bad[name] = (ds[name].dims, arr)
    with pytest.raises(exc, match=f"^{name}:"):
        check_log(bad, K=K)


def test_check_log_rejects_a_missing_variable_and_wrong_dims():
    ds = as_log(**good())
    with pytest.raises(ValueError, match="^rewards:"):
        check_log(ds.drop_vars("rewards"))
    with pytest.raises(ValueError, match="^pscore_position:"):
        check_log(ds.assign(pscore_position=ds["pscore_position"].transpose()))
    with pytest.raises(TypeError, match="^log:"):
        check_log({"lists": 1})


def test_a_log_round_trips_through_netcdf(tmp_path):
    kw = good()
    kw["rewards"][0, 1] = np.nan
    ds = as_log(**kw, K=K)
    ds.to_netcdf(tmp_path / "l.nc")
    back = xr.open_dataset(tmp_path / "l.nc").load()
    assert check_log(back) is back
    assert int(back.attrs["K"]) == K
    for name in ds.data_vars:
        np.testing.assert_array_equal(back[name].values, ds[name].values)
    # the stored K is enforced when reading back
    back["lists"] = (("round", "position"), np.full((N, L), K))
    with pytest.raises(ValueError, match="^lists:"):
        check_log(back)


# ------------------------------------------- propensities that contradict each other
def _row(name, i, values):
    """good()'s ``name`` with row i set to ``values``."""
    arr = np.array(good()[name], float)
    arr[i] = values
    return arr


#: (the names the message starts with, edits of row 2): each row breaks an invariant
#: every logger obeys, and was accepted (issue 46, item 2)
CONTRADICTIONS = {
    # the list more probable than its own prefix (pscore_cascade[:, -2] = 0.01)
    "list above its prefix": ("pscore_cascade, pscore_list", {
        "pscore_list": _row("pscore_list", 2, 0.5),
        "pscore_cascade": _row("pscore_cascade", 2, [0.2, 0.01, 0.01])}),
    "prefix rises": ("pscore_cascade", {
        "pscore_list": _row("pscore_list", 2, 0.5),
        "pscore_cascade": _row("pscore_cascade", 2, [0.2, 0.01, 0.5])}),
    "list below its last prefix": ("pscore_cascade, pscore_list", {
        "pscore_list": _row("pscore_list", 2, 1e-4)}),
    "position below the list": ("pscore_position, pscore_list", {
        "pscore_position": _row("pscore_position", 2, [0.2, 1e-3, 0.2])}),
    "pair below the list": ("pscore_pair, pscore_list", {
        "pscore_pair": _row("pscore_pair", 2, [0.2, 0.04, 1e-3])}),
    "position below the last prefix": ("pscore_position, pscore_cascade", {
        "pscore_list": None,
        "pscore_position": _row("pscore_position", 2, [1e-3, 0.2, 0.2])}),
    "pair below the last prefix": ("pscore_pair, pscore_cascade", {
        "pscore_list": None, "pscore_pair": _row("pscore_pair", 2, [1e-4, 0.04, 0.04])}),
    "position below the list, no prefixes": ("pscore_position, pscore_list", {
        "pscore_cascade": None, "pscore_pair": None,
        "pscore_list": _row("pscore_list", 2, 0.5)}),
    "float32": ("pscore_cascade, pscore_list", {
        "pscore_list": _row("pscore_list", 2, 0.5).astype(np.float32),
        "pscore_cascade": _row("pscore_cascade", 2, [0.2, 0.01, 0.01]).astype(np.float32)}),
}


@pytest.mark.parametrize("case", list(CONTRADICTIONS))
def test_propensities_that_contradict_each_other_are_refused(case):
    names, over = CONTRADICTIONS[case]
    with pytest.raises(ValueError, match=rf"^{names}: .*round 2\b") as err:
        as_log(**good(**over), K=K)
    assert "not the propensities of any logger" in str(err.value)
    # and in a log read back
    ok = {k: v for k, v in good().items() if over.get(k, 0) is not None}
    ds = as_log(**ok, K=K)
    for k, v in over.items():
        if v is not None:
            ds[k] = (ds[k].dims, v)
    with pytest.raises(ValueError, match=rf"^{names}: .*round 2\b"):
        check_log(ds)


def test_the_first_offending_round_is_named():
    casc = np.array(good()["pscore_cascade"])
    casc[[1, 3], 2] = 0.1  # rounds 1 and 3 rise at the last position
    with pytest.raises(ValueError, match=r"^pscore_cascade: .*round 1\b"):
        as_log(**good(pscore_cascade=casc), K=K)


@pytest.mark.parametrize("case", ["exact", "rounding 1e-9", "float32", "list only",
                                  "equal throughout", "no list, no prefixes"])
def test_propensities_that_agree_within_rounding_are_taken(case):
    kw = good()
    if case == "rounding 1e-9":  # the list and its last prefix computed apart
        kw["pscore_list"] = kw["pscore_list"] * (1 + 1e-9)
        kw["pscore_position"] = np.full((N, L), K**-3.0) * (1 - 1e-9)
        kw["pscore_cascade"] = np.tile([K**-3.0, K**-3.0 * (1 + 2e-9), K**-3.0], (N, 1))
    elif case == "float32":
        for k in ("pscore_list", "pscore_position", "pscore_pair", "pscore_cascade"):
            kw[k] = kw[k].astype(np.float32)
    elif case == "list only":
        kw = {k: v for k, v in kw.items() if k not in ("pscore_position", "pscore_pair",
                                                        "pscore_cascade")}
    elif case == "equal throughout":  # a deterministic logger: every propensity 1
        for k in ("pscore_list", "pscore_position", "pscore_pair", "pscore_cascade"):
            kw[k] = np.ones_like(kw[k])
    elif case == "no list, no prefixes":
        kw = {k: v for k, v in kw.items() if k not in ("pscore_list", "pscore_cascade")}
    check_log(as_log(**kw, K=K))


def _every_logger(K, L):
    scores = np.random.default_rng(3).normal(size=(L, K)) * 3
    base = np.arange(L) % K
    return {
        "uniform": UniformLogger(K, L),
        "epsilon_greedy": EpsilonGreedyLogger(lambda v0: base, K, L, 0.2),
        "epsilon_greedy_0": EpsilonGreedyLogger(lambda v0: base, K, L, 0.0),
        "softmax": SoftmaxLogger(scores),
        "softmax_cold": SoftmaxLogger(scores, temperature=0.05),
        "softmax_fn": SoftmaxLogger(lambda v0: scores + v0[0], K=K, L=L),
    }


@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("kind", list(_every_logger(2, 2)))
@pytest.mark.parametrize("K_, L_", [(5, 3), (40, 12)])
def test_logs_of_every_logger_keep_the_invariants(kind, x64, K_, L_):
    """collect's logs pass, in JAX's float32 and float64, and so do their propensities
    stored in float32."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        env = br.RankingEnv.paper(seed=0, K=K_, L=L_, d=3)
        logger = _every_logger(K_, L_)[kind]
        log = collect(env, logger, 300, seed=1)
    finally:
        jax.config.update("jax_enable_x64", before)
    check_log(log)
    f32 = log.assign({k: log[k].astype(np.float32) for k in
                      ("pscore_list", "pscore_position", "pscore_pair", "pscore_cascade")})
    check_log(f32)
