"""The decoders against brute force over all lists, and against each other."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.api import best_list
from bayesrank.decoding.dense import decode_in_jit, dp_decode
from bayesrank.decoding.search import search_decode, separable_search_decode
from bayesrank.decoding.separable import separable_decode, separable_in_jit
from bayesrank.decoding.window import window_decode


def list_score(first, pairs, a):
    return first[a[0]] + sum(pairs[l - 1, a[l - 1], a[l]] for l in range(1, len(a)))


def all_scores(first, pairs, *, distinct=False, mask=None):
    """{list: total score} over every allowed list."""
    K, L = first.shape[0], pairs.shape[0] + 1
    out = {}
    for a in itertools.product(range(K), repeat=L):
        if distinct and len(set(a)) < L:
            continue
        if mask is not None and not mask[list(a)].all():
            continue
        out[a] = list_score(first, pairs, a)
    return out


def instance(seed, K, L, integer=False):
    rng = np.random.default_rng(seed)
    if integer:  # many ties
        return (
            rng.integers(-2, 3, size=K).astype(float),
            rng.integers(-2, 3, size=(L - 1, K, K)).astype(float),
        )
    return rng.normal(size=K), rng.normal(size=(L - 1, K, K))


CASES = [
    (s, K, L) for s, (K, L) in enumerate(itertools.product([1, 2, 3, 5], [1, 2, 3, 4]))
]


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed,K,L", CASES)
def test_best_list_equals_brute_force(seed, K, L, integer):
    first, pairs = instance(seed, K, L, integer)
    brute = all_scores(first, pairs)
    items, value = best_list(first, pairs)
    assert items.shape == (L,)
    assert float(value) == pytest.approx(max(brute.values()), abs=1e-12)
    assert list_score(first, pairs, np.asarray(items)) == pytest.approx(float(value))


@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_distinct_equals_brute_force_over_permutations(seed, integer, use_mask):
    rng = np.random.default_rng(100 + seed)
    K, L = int(rng.integers(3, 7)), int(rng.integers(1, 4))
    first, pairs = instance(seed, K, L, integer)
    mask = None
    if use_mask:
        mask = np.ones(K, bool)
        n_off = int(rng.integers(0, K - L + 1))
        mask[rng.choice(K, size=n_off, replace=False)] = False
    brute = all_scores(first, pairs, distinct=True, mask=mask)
    items, value = best_list(first, pairs, distinct=True, mask=mask)
    items = np.asarray(items)
    assert len(set(items.tolist())) == L
    assert float(value) == pytest.approx(max(brute.values()))
    assert list_score(first, pairs, items) == pytest.approx(float(value))
    if mask is not None:
        assert mask[items].all()


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_masked_items_never_ranked(seed, distinct):
    rng = np.random.default_rng(seed)
    K, L = 6, 3
    # The masked items are made the most attractive ones.
    first, pairs = rng.normal(size=K), rng.normal(size=(L - 1, K, K))
    mask = rng.random(K) < 0.6
    mask[:L] = True
    first[~mask] += 100.0
    pairs[:, :, ~mask] += 100.0
    items, value = best_list(first, pairs, mask=mask, distinct=distinct)
    assert mask[np.asarray(items)].all()
    brute = all_scores(first, pairs, distinct=distinct, mask=mask)
    assert float(value) == pytest.approx(max(brute.values()))


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_top_k_equals_k_best_of_brute_force(seed, integer, distinct):
    K, L, k = 4, 3, 7
    first, pairs = instance(seed, K, L, integer)
    brute = all_scores(first, pairs, distinct=distinct)
    items, values = best_list(first, pairs, top_k=k, distinct=distinct)
    want = sorted(brute.values(), reverse=True)[:k]
    assert items.shape == (k, L)
    np.testing.assert_allclose(values, want, atol=1e-12)
    assert len({tuple(a) for a in items.tolist()}) == k  # no list twice
    for a, v in zip(items, values):
        assert brute[tuple(a.tolist())] == pytest.approx(v)


def test_top_k_larger_than_the_number_of_lists():
    first, pairs = instance(0, 2, 2)
    items, values = best_list(first, pairs, top_k=10)
    assert items.shape == (4, 2)
    np.testing.assert_allclose(values, sorted(all_scores(first, pairs).values())[::-1])


@pytest.mark.parametrize("seed", range(10))
def test_separable_decode_equals_dense_dp(seed):
    rng = np.random.default_rng(seed)
    K, L = int(rng.integers(1, 9)), int(rng.integers(1, 6))
    first, A, B = (
        rng.normal(size=K),
        rng.normal(size=(L - 1, K)),
        rng.normal(size=(L - 1, K)),
    )
    pairs = A[:, None, :] + B[:, :, None]
    items, value = separable_decode(first, A, B)
    _, dense_value = dp_decode(first, pairs)
    assert float(value) == pytest.approx(float(dense_value))
    assert list_score(first, pairs, np.asarray(items)) == pytest.approx(float(value))


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_separable_in_jit_with_mask_equals_best_list(seed, distinct):
    rng = np.random.default_rng(seed)
    K, L = 7, 4
    first, A, B = (
        rng.normal(size=K),
        rng.normal(size=(L - 1, K)),
        rng.normal(size=(L - 1, K)),
    )
    mask = np.ones(K, bool)
    mask[rng.choice(K, size=2, replace=False)] = False
    pairs = A[:, None, :] + B[:, :, None]
    items, value = jax.jit(
        lambda a, b, c, m: separable_in_jit(a, b, c, distinct=distinct, mask=m)
    )(first, A, B, mask)
    _, want = best_list(first, pairs, distinct=distinct, mask=mask)
    assert float(value) == pytest.approx(float(want))
    assert mask[np.asarray(items)].all()
    assert list_score(first, pairs, np.asarray(items)) == pytest.approx(float(value))


def window_list_score(scores, a, S):
    total = 0.0
    for l, s in enumerate(scores):
        lo = max(0, l - (S - 1))
        total += s[tuple(a[lo : l + 1])]
    return total


@pytest.mark.parametrize(
    "seed,K,L,S",
    [
        (0, 4, 4, 3),
        (1, 3, 5, 3),
        (2, 3, 5, 4),
        (3, 2, 6, 4),
        (4, 3, 2, 3),
        (5, 3, 3, 4),
        (6, 4, 3, 1),
    ],
)
def test_window_decode_equals_brute_force(seed, K, L, S):
    rng = np.random.default_rng(seed)
    scores = [rng.normal(size=(K,) * (min(l, S - 1) + 1)) for l in range(L)]
    if seed % 2:  # integer-valued: ties
        scores = [np.round(2 * s) for s in scores]
    S_eff = max(s.ndim for s in scores)
    brute = max(
        window_list_score(scores, a, S_eff)
        for a in itertools.product(range(K), repeat=L)
    )
    items, value = window_decode(scores)
    assert items.shape == (L,)
    assert float(value) == pytest.approx(brute)
    assert window_list_score(scores, np.asarray(items), S_eff) == pytest.approx(brute)


def test_window_decode_with_mask_equals_brute_force():
    rng = np.random.default_rng(7)
    K, L, S = 4, 4, 3
    scores = [rng.normal(size=(K,) * (min(l, S - 1) + 1)) for l in range(L)]
    mask = np.array([True, False, True, True])
    brute = max(
        window_list_score(scores, a, S)
        for a in itertools.product(np.flatnonzero(mask), repeat=L)
    )
    items, value = window_decode(scores, mask=mask)
    assert mask[np.asarray(items)].all()
    assert float(value) == pytest.approx(brute)


def test_window_decode_with_s2_equals_dp():
    first, pairs = instance(3, 5, 4)
    _, v1 = window_decode([first, *pairs])
    _, v2 = dp_decode(first, pairs)
    assert float(v1) == pytest.approx(float(v2))


@pytest.mark.parametrize(
    "scores,match",
    [
        (np.zeros((3, 4)), "scores: expected a list or tuple"),
        ([], "scores: expected at least one"),
        ([np.zeros((2, 2))], r"scores\[0\]"),
        ([np.zeros(3), np.zeros((3, 4))], r"scores\[1\]"),
        ([np.zeros(3), np.zeros((3, 3, 3)), np.zeros((3, 3))], r"scores\[1\]"),
        (
            [np.zeros(3), np.zeros((3, 3)), np.zeros((3, 3, 3)), np.zeros((3, 3))],
            r"scores\[3\]",
        ),
        ([np.zeros(3), np.full((3, 3), np.nan)], r"scores\[1\].*NaN"),
    ],
)
def test_window_decode_rejects_bad_layouts(scores, match):
    with pytest.raises((ValueError, TypeError), match=match):
        window_decode(scores)


def test_vmap_dp_decode_equals_python_loop():
    rng = np.random.default_rng(0)
    firsts, pairs = rng.normal(size=(16, 6)), rng.normal(size=(16, 3, 6, 6))
    items, values = jax.vmap(dp_decode)(firsts, pairs)
    for b in range(16):
        i_b, v_b = dp_decode(firsts[b], pairs[b])
        np.testing.assert_array_equal(items[b], i_b)
        assert float(values[b]) == float(v_b)


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("use_mask", [False, True])
def test_decode_in_jit_equals_best_list(distinct, use_mask):
    rng = np.random.default_rng(1)
    K, L = 6, 4
    fn = jax.jit(
        lambda f, p, m: decode_in_jit(
            f, p, distinct=distinct, mask=m if use_mask else None
        )
    )
    for seed in range(5):
        first, pairs = instance(seed, K, L, integer=seed % 2 == 1)
        mask = rng.random(K) < 0.8
        mask[:L] = True
        items, value = fn(first, pairs, mask)
        assert items.dtype == jnp.int32 and items.shape == (L,)
        _, want = best_list(
            first, pairs, distinct=distinct, mask=mask if use_mask else None
        )
        assert float(value) == pytest.approx(float(want))
        assert list_score(first, pairs, np.asarray(items)) == pytest.approx(
            float(value)
        )


def test_decode_in_jit_distinct_under_vmap_and_scan():
    rng = np.random.default_rng(2)
    firsts, pairs = rng.normal(size=(5, 5)), rng.normal(size=(5, 2, 5, 5))
    items, values = jax.jit(jax.vmap(lambda f, p: decode_in_jit(f, p, distinct=True)))(
        firsts, pairs
    )

    def body(c, x):
        return c, decode_in_jit(*x, distinct=True)

    _, (items_s, values_s) = jax.lax.scan(body, 0, (firsts, pairs))
    for b in range(5):
        i_b, v_b = best_list(firsts[b], pairs[b], distinct=True)
        np.testing.assert_array_equal(items[b], i_b)
        np.testing.assert_array_equal(items_s[b], i_b)
        assert float(values[b]) == pytest.approx(float(v_b))
        assert float(values_s[b]) == pytest.approx(float(v_b))


def test_decode_in_jit_distinct_infeasible_gives_minus_one():
    # Only item 0 can be shown anywhere, so no distinct list of length 2 exists.
    first = np.array([0.0, -np.inf, -np.inf])
    pairs = np.full((1, 3, 3), -np.inf)
    pairs[:, :, 0] = 0.0
    items, value = jax.jit(lambda f, p: decode_in_jit(f, p, distinct=True))(
        first, pairs
    )
    assert np.asarray(items).tolist() == [-1, -1] and float(value) == -np.inf


def test_integer_scores_with_mask():
    items, value = best_list(
        np.arange(3), np.zeros((1, 3, 3), int), mask=np.array([True, False, True])
    )
    assert float(value) == 2.0 and 1 not in np.asarray(items).tolist()


def test_search_with_separable_scores_equals_dense_search():
    rng = np.random.default_rng(4)
    K, L = 8, 4
    first, A, B = (
        rng.normal(size=K),
        rng.normal(size=(L - 1, K)),
        rng.normal(size=(L - 1, K)),
    )
    pairs = A[:, None, :] + B[:, :, None]
    i1, v1 = separable_search_decode(first, A, B, distinct=True, k=5)
    i2, v2 = search_decode(first, pairs, distinct=True, k=5)
    np.testing.assert_allclose(v1, v2)
    np.testing.assert_array_equal(i1, i2)


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "first,pairs,kw,err,match",
    [
        (np.zeros(0), np.zeros((0, 0, 0)), {}, ValueError, "first"),
        (np.zeros((2, 2)), np.zeros((1, 2, 2)), {}, ValueError, "first"),
        (np.zeros(3), np.zeros((1, 3, 2)), {}, ValueError, "pairs"),
        (np.zeros(3), np.zeros((3, 3)), {}, ValueError, "pairs"),
        (np.array([0.0, np.nan]), np.zeros((1, 2, 2)), {}, ValueError, "first"),
        (np.zeros(2), np.full((1, 2, 2), np.inf), {}, ValueError, "pairs"),
        (np.array(["a", "b"]), np.zeros((1, 2, 2)), {}, TypeError, "first"),
        (np.zeros(2), np.zeros((2, 2, 2)), {"distinct": True}, ValueError, "K >= L"),
        (
            np.zeros(3),
            np.zeros((1, 3, 3)),
            {"mask": np.ones(2, bool)},
            ValueError,
            "mask",
        ),
        (np.zeros(3), np.zeros((1, 3, 3)), {"mask": np.ones(3)}, TypeError, "mask"),
        (
            np.zeros(3),
            np.zeros((1, 3, 3)),
            {"mask": np.zeros(3, bool)},
            ValueError,
            "mask",
        ),
        (
            np.zeros(3),
            np.zeros((2, 3, 3)),
            {"mask": np.array([1, 1, 0], bool), "distinct": True},
            ValueError,
            "mask",
        ),
        (np.zeros(3), np.zeros((1, 3, 3)), {"top_k": 0}, ValueError, "top_k"),
        (np.zeros(3), np.zeros((1, 3, 3)), {"top_k": 1.5}, TypeError, "top_k"),
        (np.full(2, -np.inf), np.zeros((1, 2, 2)), {}, ValueError, "-inf"),
    ],
)
def test_bad_input_raises_naming_the_argument(first, pairs, kw, err, match):
    with pytest.raises(err, match=match):
        best_list(first, pairs, **kw)


def test_single_position_is_fine():
    items, value = best_list(np.array([0.5, 2.0, 1.0]), np.zeros((0, 3, 3)))
    assert np.asarray(items).tolist() == [1] and float(value) == 2.0


def test_decode_in_jit_checks_shapes():
    with pytest.raises(ValueError, match="K >= L"):
        decode_in_jit(np.zeros(2), np.zeros((2, 2, 2)), distinct=True)
    with pytest.raises(ValueError, match=r"B: expected the shape of A"):
        separable_in_jit(np.zeros(3), np.zeros((2, 3)), np.zeros((1, 3)))
