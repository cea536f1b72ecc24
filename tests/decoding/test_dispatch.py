"""The decoder dispatcher (:mod:`bayesrank.decoding.dispatch`): every route (separable,
dense, the catalogue-scale fast paths, distinct, masks, windows) returns a list whose
value under the tables' own scores (written here from the definition in NumPy) is the
best one found by brute force over every list."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.dispatch import decode_tables, use_fast
from bayesrank.decoding.spec import (
    BonusTables,
    DecodeSpec,
    MonotoneTables,
    SeparableTables,
    WindowScores,
)
from bayesrank.model.links import get_link

K, L, D = 6, 3, 3


def _brute(first, pair, mask, distinct):
    best = -np.inf
    for lst in itertools.product(np.flatnonzero(mask), repeat=L):
        if distinct and len(set(lst)) < L:
            continue
        v = first[lst[0]] + sum(pair(l - 1, lst[l - 1], lst[l]) for l in range(1, L))
        best = max(best, v)
    return best


def _tables(kind, rng):
    """Random tables of a kind and their pair score written from the definition."""
    A, B = rng.normal(size=(L - 1, K)), rng.normal(size=(L - 1, K))
    if kind == "separable":
        return SeparableTables(jnp.asarray(A), jnp.asarray(B)), \
            lambda l, i, j: A[l, j] + B[l, i]
    if kind == "monotone":
        return MonotoneTables(jnp.asarray(A), jnp.asarray(B)), \
            lambda l, i, j: 1.0 / (1.0 + np.exp(-(A[l, j] + B[l, i])))
    Ua, Ub = rng.normal(size=(L - 1, D, K)), rng.normal(size=(L - 1, D, K))
    c = rng.uniform(0.5, 2.0, L - 1)

    def pair(l, i, j):
        z = A[l, j] + B[l, i] + c[l] * np.linalg.norm(Ua[l, :, j] + Ub[l, :, i])
        return 1.0 / (1.0 + np.exp(-z))

    return BonusTables(*(jnp.asarray(x) for x in (A, B, Ua, Ub, c))), pair


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("method", ["dense", "fast"])
@pytest.mark.parametrize("kind", ["separable", "monotone", "bonus"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_route_finds_the_best_list(kind, method, distinct, seed):
    rng = np.random.default_rng(seed)
    tabs, pair = _tables(kind, rng)
    first = rng.normal(size=K)
    mask = rng.random(K) < 0.8
    mask[:L] = True
    spec = DecodeSpec(kind, get_link("logistic"), distinct, method)
    lst, value = decode_tables(spec, jnp.asarray(first), tabs, jnp.asarray(mask))
    lst = np.asarray(lst)
    best = _brute(first, pair, mask, distinct)
    assert mask[lst].all()
    if distinct:
        assert len(set(lst.tolist())) == L
    got = first[lst[0]] + sum(pair(l - 1, lst[l - 1], lst[l]) for l in range(1, L))
    np.testing.assert_allclose(got, best, rtol=1e-5)
    np.testing.assert_allclose(float(value), best, rtol=1e-5)


def test_window_scores_decode_to_the_brute_force_best():
    rng = np.random.default_rng(3)
    scores = [rng.normal(size=(K,)), rng.normal(size=(K, K)), rng.normal(size=(K, K, K))]
    lst, value = decode_tables(DecodeSpec("window"), None,
                               WindowScores([jnp.asarray(x) for x in scores]),
                               jnp.ones(K, bool))
    best = max(scores[0][a] + scores[1][a, b] + scores[2][a, b, c]
               for a, b, c in itertools.product(range(K), repeat=3))
    a, b, c = np.asarray(lst)
    np.testing.assert_allclose(scores[0][a] + scores[1][a, b] + scores[2][a, b, c], best)
    np.testing.assert_allclose(float(value), best, rtol=1e-5)


@pytest.mark.parametrize(
    "spec, tables, exc, match",
    [
        ("monotone", None, TypeError, "spec: expected a DecodeSpec"),
        (DecodeSpec("pairs"), None, ValueError, "spec.kind: expected one of"),
        (DecodeSpec("monotone", method="quick"), None, ValueError,
         "method: expected one of"),
        (DecodeSpec("monotone"), SeparableTables(jnp.zeros((2, K)), jnp.zeros((2, K))),
         TypeError, "tables: a 'monotone' spec expects MonotoneTables"),
        (DecodeSpec("bonus"), (jnp.zeros((2, K)),) * 5, TypeError,
         "tables: a 'bonus' spec expects BonusTables"),
    ],
)
def test_bad_specs_and_tables_are_refused(spec, tables, exc, match):
    tables = tables if tables is not None else MonotoneTables(
        jnp.zeros((L - 1, K)), jnp.zeros((L - 1, K)))
    with pytest.raises(exc, match=match):
        decode_tables(spec, jnp.zeros(K), tables, jnp.ones(K, bool))


def test_a_spec_is_static_and_hashable():
    """Equal specs hash equal (a jit cache key); the table NamedTuples are pytrees of
    arrays only, so a traced decode compiles once per spec."""
    import jax

    lk = get_link("logistic")
    assert hash(DecodeSpec("bonus", lk, True)) == hash(DecodeSpec("bonus", lk, True))
    tabs = MonotoneTables(jnp.zeros((L - 1, K)), jnp.ones((L - 1, K)))
    assert len(jax.tree_util.tree_leaves(tabs)) == 2
    traces = []

    @jax.jit
    def run(first, tabs, mask):
        traces.append(1)
        return decode_tables(DecodeSpec("monotone", lk), first, tabs, mask)

    for seed in range(3):
        rng = np.random.default_rng(seed)
        tabs = MonotoneTables(*(jnp.asarray(rng.normal(size=(L - 1, K))) for _ in "AB"))
        run(jnp.asarray(rng.normal(size=K)), tabs, jnp.ones(K, bool))
    assert len(traces) == 1


def test_use_fast_routes_by_kind_size_and_method():
    lk = get_link("logistic")
    mono, sep = DecodeSpec("monotone", lk), DecodeSpec("separable")
    assert not use_fast(mono, 100) and use_fast(mono, 10**6)
    assert use_fast(mono._replace(method="fast"), 10)
    assert not use_fast(mono._replace(method="dense"), 10**6)
    assert not use_fast(sep._replace(method="fast"), 10**6)  # O(L K) already
    with pytest.raises(ValueError, match="method: expected one of"):
        use_fast(mono._replace(method="quick"), 10)


def test_auto_takes_the_front_scan_earlier_than_the_ucb_bounds_on_cpu(monkeypatch):
    """On the CPU "auto" scans the Pareto front for the monotone kind from
    FAST_K_MONOTONE items and decodes identity-link UCB without tables from
    FAST_K_NATIVE (C kernel) or FAST_K_PREFIX (compiled search), while the host bound-and-prune of other links waits for
    FAST_K (its pruning is weak in early rounds); the thresholds are the documented
    ones."""
    import jax

    from bayesrank.decoding import dispatch as decoder
    from bayesrank.decoding import native

    mono = DecodeSpec("monotone", get_link("logistic"))
    ucb = DecodeSpec("bonus", get_link("logistic"))
    ridge_ucb = DecodeSpec("bonus", get_link("identity"))
    assert jax.default_backend() == "cpu"
    assert (decoder.FAST_K_MONOTONE, decoder.FAST_K_NATIVE, decoder.FAST_K_PREFIX,
            decoder.FAST_K) == (640, 256, 512, 4096)
    assert not use_fast(mono, 639) and use_fast(mono, 640)
    k = 256 if native.in_use() else 512  # the C kernel, else the compiled search
    assert decoder.identity_ucb_threshold() == k
    assert not use_fast(ridge_ucb, k - 1) and use_fast(ridge_ucb, k)
    monkeypatch.setattr(native, "USE_NATIVE", False)
    assert not use_fast(ridge_ucb, 511) and use_fast(ridge_ucb, 512)
    assert not use_fast(ucb, 1500) and not use_fast(ucb, 4095) and use_fast(ucb, 4096)
    assert not use_fast(mono._replace(method="dense"), 10**6)
    assert use_fast(ucb._replace(method="fast"), 10)


def test_auto_at_640_items_selects_without_dense_tables_and_as_the_dense_dp(monkeypatch):
    """A logistic RankTS of 640 items under "auto" never builds the K x K tables and
    picks the list the dense DP picks for the same draws (same seed, same data)."""
    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    env = br.RankingEnv.paper(seed=3, K=640, L=3, d=4, link="logistic")
    rng = np.random.default_rng(0)
    lists = rng.integers(0, env.K, size=(40, env.L))
    rewards = (rng.random((40, env.L)) < 0.5).astype(float)
    model = lambda: br.LaplaceGLM(link="logistic", prior_scale=1.0, n_max=64)  # noqa: E731
    auto = br.RankTS(model=model(), items=env.items, w=env.w, seed=1)
    auto.update(lists, rewards)
    calls = []
    orig = decoder.dense_pairs
    monkeypatch.setattr(decoder, "dense_pairs", lambda *a: calls.append(1) or orig(*a))
    got = [np.asarray(auto.select()) for _ in range(3)]
    assert not calls
    monkeypatch.setattr(decoder, "dense_pairs", orig)
    monkeypatch.setattr(decoder, "FAST_K_MONOTONE", 10**9)
    dense = br.RankTS(model=model(), items=env.items, w=env.w, seed=1)
    dense.update(lists, rewards)
    want = [np.asarray(dense.select()) for _ in range(3)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_rank_ucb_at_the_threshold_runs_the_prefix_search_and_picks_the_dense_list(
        monkeypatch):
    """RankUCB (ridge model, identity link) at the identity-link threshold in use
    (the C kernel's, else the compiled search's) under "auto" never builds the K x K
    tables and picks the list of the dense DP, early (20 lists) and late."""
    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    env = br.RankingEnv.paper(seed=2, K=decoder.identity_ucb_threshold(), L=3, d=4)
    rng = np.random.default_rng(0)
    lists = rng.integers(0, env.K, size=(400, env.L))
    rewards = rng.normal(size=(400, env.L))
    orig = decoder.dense_pairs
    for n in (20, 400):
        calls = []
        monkeypatch.setattr(decoder, "dense_pairs",
                            lambda *a: calls.append(1) or orig(*a))
        auto = br.RankUCB(items=env.items, w=env.w, seed=1)
        auto.update(lists[:n], rewards[:n])
        got = np.asarray(auto.select())
        assert not calls
        monkeypatch.setattr(decoder, "dense_pairs", orig)
        monkeypatch.setattr(decoder, "FAST_K_PREFIX", 10**9)
        monkeypatch.setattr(decoder, "FAST_K_NATIVE", 10**9)
        dense = br.RankUCB(items=env.items, w=env.w, seed=1)
        dense.update(lists[:n], rewards[:n])
        np.testing.assert_array_equal(got, np.asarray(dense.select()))
        monkeypatch.undo()


# --- refusals: every table checked against the others, named in the message --------

def _z(*shape, dtype=np.float32):
    return jnp.zeros(shape, dtype)


_SEP = SeparableTables(_z(L - 1, K), _z(L - 1, K))
_MONO = MonotoneTables(_z(L - 1, K), _z(L - 1, K))
_BONUS = BonusTables(_z(L - 1, K), _z(L - 1, K), _z(L - 1, D, K), _z(L - 1, D, K),
                     jnp.ones(L - 1))

#: (spec, first, tables, mask, exception, message) of decode_tables (K = 6 items,
#: L = 3 positions, q = 3); first/mask None stand for (K,) zeros / a full mask.
BAD_DECODE = {
    "B_short_K": (DecodeSpec("separable"), None, _SEP._replace(B=_z(L - 1, K - 1)),
                  None, ValueError,
                  r"tables\.B: expected shape \(L-1, K\) = \(2, 6\), got \(2, 5\)"),
    "B_other_L": (DecodeSpec("separable"), None, _SEP._replace(B=_z(L, K)), None,
                  ValueError,
                  r"tables\.B: expected shape \(L-1, K\) = \(2, 6\), got \(3, 6\)"),
    "A_1d": (DecodeSpec("separable"), None, _SEP._replace(A=_z(K)), None, ValueError,
             r"tables\.A: expected shape \(L-1, K\) = \(L-1, 6\), got \(6,\)"),
    "monotone_B_short_K": (DecodeSpec("monotone"), None,
                           _MONO._replace(B=_z(L - 1, K - 1)), None, ValueError,
                           r"tables\.B: expected shape \(L-1, K\) = \(2, 6\)"),
    "first_short": (DecodeSpec("separable"), _z(K - 1), _SEP, None, ValueError,
                    r"first: expected shape \(K,\) = \(6,\), got \(5,\)"),
    "first_2d": (DecodeSpec("monotone"), _z(1, K), _MONO, None, ValueError,
                 r"first: expected shape \(K,\) = \(6,\), got \(1, 6\)"),
    "mask_short": (DecodeSpec("separable"), None, _SEP, jnp.ones(K - 1, bool),
                   ValueError, r"mask: expected a \(K,\) = \(6,\) bool array"),
    "mask_int": (DecodeSpec("monotone"), None, _MONO, jnp.ones(K, int), TypeError,
                 "mask: expected a bool array"),
    "A_complex": (DecodeSpec("separable"), None,
                  _SEP._replace(A=np.zeros((L - 1, K), complex)), None, TypeError,
                  r"tables\.A: expected real scores .*complex"),
    "B_object": (DecodeSpec("monotone"), None,
                 _MONO._replace(B=np.zeros((L - 1, K), object)), None, TypeError,
                 r"tables\.B: expected real scores .*object"),
    "A_bool": (DecodeSpec("separable"), None,
               _SEP._replace(A=np.zeros((L - 1, K), bool)), None, TypeError,
               r"tables\.A: expected real scores .*bool"),
    "first_complex": (DecodeSpec("separable"), np.zeros(K, complex), _SEP, None,
                      TypeError, r"first: expected real scores .*complex"),
    "A_nan": (DecodeSpec("separable"), None,
              _SEP._replace(A=jnp.full((L - 1, K), jnp.nan)), None, ValueError,
              r"tables\.A: scores must be finite or -inf"),
    "B_plus_inf": (DecodeSpec("monotone"), None,
                   _MONO._replace(B=jnp.full((L - 1, K), jnp.inf)), None, ValueError,
                   r"tables\.B: scores must be finite or -inf"),
    "Ub_other_q": (DecodeSpec("bonus"), None, _BONUS._replace(Ub=_z(L - 1, D + 1, K)),
                   None, ValueError,
                   r"tables\.Ub: expected shape \(L-1, q, K\) = \(2, 3, 6\), "
                   r"got \(2, 4, 6\)"),
    "Ua_2d": (DecodeSpec("bonus"), None, _BONUS._replace(Ua=_z(L - 1, K)), None,
              ValueError, r"tables\.Ua: expected shape \(L-1, q, K\) = \(2, q, 6\)"),
    "c_short": (DecodeSpec("bonus"), None, _BONUS._replace(c=jnp.ones(L - 2)), None,
                ValueError, r"tables\.c: expected shape \(L-1,\) = \(2,\), got \(1,\)"),
    "c_negative": (DecodeSpec("bonus"), None, _BONUS._replace(c=-jnp.ones(L - 1)),
                   None, ValueError, r"tables\.c: expected finite widths >= 0"),
    "Ua_inf": (DecodeSpec("bonus"), None,
               _BONUS._replace(Ua=jnp.full((L - 1, D, K), jnp.inf)), None, ValueError,
               r"tables\.Ua: expected finite values"),
    "window_with_first": (DecodeSpec("window"), None,
                          WindowScores([_z(K), _z(K, K)]), None, ValueError,
                          "first: expected None for the window kind"),
    "link_unknown": (DecodeSpec("monotone", "tandem"), None, _MONO, None, ValueError,
                     "spec.link: unknown link 'tandem'"),
    "link_number": (DecodeSpec("bonus", 3), None, _BONUS, None, TypeError,
                    "spec.link: expected a link name, a Link or a callable"),
    "distinct_int": (DecodeSpec("separable", distinct=1), None, _SEP, None, TypeError,
                     r"spec.distinct: expected a bool, got int \(1\)"),
}


@pytest.mark.parametrize("case", BAD_DECODE.values(), ids=BAD_DECODE.keys())
def test_decode_tables_refuses_bad_tables_naming_the_argument(case):
    spec, first, tables, mask, exc, match = case
    # (K,) zeros where none is catalogued; for the window kind that is the mistake:
    # position 1's scores given beside tables.scores[0]
    first = _z(K) if first is None else first
    mask = jnp.ones(K, bool) if mask is None else mask
    with pytest.raises(exc, match=match):
        decode_tables(spec, first, tables, mask)


@pytest.mark.parametrize("case", ["B_short_K", "first_short", "Ub_other_q", "c_short",
                                  "A_complex", "mask_short"])
def test_decode_tables_refuses_bad_shapes_and_dtypes_under_jit(case):
    """Shapes and dtypes are static: the named refusal comes at trace time too."""
    import jax

    spec, first, tables, mask, exc, match = BAD_DECODE[case]
    first = _z(K) if first is None else first
    mask = jnp.ones(K, bool) if mask is None else mask
    if case == "A_complex":
        tables = tables._replace(A=jnp.zeros((L - 1, K), jnp.complex64))
    with pytest.raises(exc, match=match):
        jax.jit(lambda f, t, m: decode_tables(spec, f, t, m))(first, tables, mask)


@pytest.mark.parametrize("kind", ["separable", "monotone", "bonus"])
def test_backward_refuses_tables_of_mismatched_shapes(kind):
    from bayesrank.decoding.dispatch import backward

    tabs = {"separable": _SEP, "monotone": _MONO, "bonus": _BONUS}[kind]
    with pytest.raises(ValueError, match=r"tables\.B: expected shape \(L-1, K\)"):
        backward(DecodeSpec(kind), tabs._replace(B=_z(L - 1, K + 1)), jnp.ones(K, bool))
    with pytest.raises(ValueError, match=r"mask: expected a \(K,\) = \(6,\)"):
        backward(DecodeSpec(kind), tabs, jnp.ones(K + 1, bool))


@pytest.mark.parametrize("name", ["logistic", "probit", "exp", "identity"])
@pytest.mark.parametrize("kind", ["monotone", "bonus"])
@pytest.mark.parametrize("method", ["dense", "fast"])
def test_a_link_given_by_name_decodes_as_its_link_object(name, kind, method):
    rng = np.random.default_rng(7)
    tabs, _ = _tables(kind, rng)
    first, mask = jnp.asarray(rng.normal(size=K)), jnp.ones(K, bool)
    by_name = decode_tables(DecodeSpec(kind, name, False, method), first, tabs, mask)
    by_link = decode_tables(DecodeSpec(kind, get_link(name), False, method), first,
                            tabs, mask)
    np.testing.assert_array_equal(np.asarray(by_name[0]), np.asarray(by_link[0]))
    np.testing.assert_allclose(float(by_name[1]), float(by_link[1]), rtol=1e-6)


@pytest.mark.parametrize("kind", ["separable", "monotone"])
def test_integer_and_list_tables_decode_as_their_float_arrays(kind):
    rng = np.random.default_rng(5)
    A, B = rng.integers(-3, 4, (L - 1, K)), rng.integers(-3, 4, (L - 1, K))
    first, mask = rng.integers(-3, 4, K), jnp.ones(K, bool)
    cls = SeparableTables if kind == "separable" else MonotoneTables
    spec = DecodeSpec(kind)
    want = decode_tables(spec, jnp.asarray(first, jnp.float32),
                         cls(jnp.asarray(A, jnp.float32), jnp.asarray(B, jnp.float32)),
                         mask)
    for got in (decode_tables(spec, jnp.asarray(first), cls(jnp.asarray(A),
                                                            jnp.asarray(B)), mask),
                decode_tables(spec, first.tolist(), cls(A.tolist(), B.tolist()),
                              mask)):
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
        assert float(got[1]) == float(want[1])
