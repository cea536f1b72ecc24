/* The per-row scan of bayesrank._prefix_scan, for one real type.
 *
 * Included twice by _prefix_scan.c: with REAL = double, SFX = _d and with
 * REAL = float, SFX = _f. VW is the number of REALs in a 32-byte vector, VI the
 * signed integer type of a lane's mask, ABSBITS the lane mask that clears the sign.
 */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NAME(x) CAT(x, SFX)
#define VW (32 / (int)sizeof(REAL))
#define BJ (NV * VW)      /* columns per block */

typedef REAL NAME(vr) __attribute__((vector_size(32)));
typedef VI NAME(vm) __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) NAME(vr) NAME(load)(const REAL *p) {
    NAME(vr) v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) NAME(vr)
NAME(vmax)(NAME(vr) a, NAME(vr) b) {
    NAME(vm) gt = a > b;
    return (NAME(vr))((gt & (NAME(vm))a) | (~gt & (NAME(vm))b));
}

static inline __attribute__((always_inline)) REAL NAME(hmax)(NAME(vr) v) {
    REAL m = v[0];
    for (int t = 1; t < VW; t++) m = v[t] > m ? v[t] : m;
    return m;
}

/* The columns of one step, sorted by their bound u descending and padded to a
 * multiple of BJ (padding: g = u = -inf, zero vectors). */
typedef struct {
    int q, np;
    const REAL *P;     /* (q, np): column vectors, one row per coordinate */
    const REAL *g;     /* (np): V(j) + Bj(j) */
    const REAL *n2;    /* (np): |Uj(j)|^2 */
    const REAL *u;     /* (np): the separable bound's column part, descending */
    const int32_t *ord;/* (np): column index j */
    REAL c, slack;
} NAME(cols_t);

/* Best column for one row: max_j g_j + Ai + c sqrt(ni2 + 2 x.y_j + n2_j) over the
 * columns in order, stopping at the first block whose bound u_j + Ap falls below the
 * row's best (less a slack). Returns the best value (Gram form) and its column. */
static inline __attribute__((always_inline)) REAL
NAME(scan_impl)(const int q, const NAME(cols_t) *cs, const REAL *x, REAL ni2, REAL Ai,
                REAL Ap, int32_t *arg, int64_t *ev) {
    const int np = cs->np;
    const REAL *P = cs->P, *g = cs->g, *n2 = cs->n2, *u = cs->u;
    const REAL c = cs->c, slack = cs->slack;
    /* the screen compares c^2 sq with r |r|: no square root; widened by 1e-5
     * (float) or 1e-10 (double) against rounding */
    const REAL c2 = c * c * (REAL)(sizeof(REAL) == 4 ? 1.00001 : 1.0000000001);
    NAME(vm) absmask;
    for (int t = 0; t < VW; t++)
        absmask[t] = (VI)(((uint64_t)1 << (8 * sizeof(VI) - 1)) - 1);
    REAL best = -INFINITY;
    int32_t barg = 0;
    int jb;
    for (jb = 0; jb < np; jb += BJ) {
        const REAL thr = best - slack * ((REAL)1 + (best < 0 ? -best : best));
        if (u[jb] + Ap < thr) break;  /* u descending: no later column can win */
        NAME(vr) acc[NV];
        for (int v = 0; v < NV; v++) acc[v] = NAME(load)(n2 + jb + VW * v) + ni2;
        for (int k = 0; k < q; k++) {
            const REAL xk = 2 * x[k];
            const REAL *Pk = P + (size_t)k * np + jb;
            for (int v = 0; v < NV; v++) acc[v] += xk * NAME(load)(Pk + VW * v);
        }
        /* screen: g + Ai + c sqrt(sq) >= thr  <=>  c^2 sq >= r |r|, r = thr - Ai - g
         * (skipped while the row has no best: r would be -inf - (-inf) on padding) */
        if (best > -INFINITY) {
            const REAL bA = thr - Ai;
            NAME(vr) dmax;
            for (int v = 0; v < NV; v++) {
                NAME(vr) r = bA - NAME(load)(g + jb + VW * v);
                NAME(vr) ar = (NAME(vr))((NAME(vm))r & absmask);
                NAME(vr) d = c2 * acc[v] - r * ar;
                dmax = v == 0 ? d : NAME(vmax)(dmax, d);
            }
            if (!(NAME(hmax)(dmax) >= 0)) continue;
        }
        /* some column may beat the best: score the block exactly */
        NAME(vr) val[NV], vmx;
        for (int v = 0; v < NV; v++) {
            NAME(vr) sq = acc[v], rt;
            NAME(vm) pos = sq > 0;
            sq = (NAME(vr))(pos & (NAME(vm))sq);
            for (int t = 0; t < VW; t++) rt[t] = SQRT(sq[t]);
            val[v] = (NAME(load)(g + jb + VW * v) + Ai) + c * rt;
            vmx = v == 0 ? val[v] : NAME(vmax)(vmx, val[v]);
        }
        const REAL m = NAME(hmax)(vmx);
        if (m > best) {
            best = m;
            for (int t = 0; t < BJ; t++)
                if (val[t / VW][t % VW] == m) { barg = cs->ord[jb + t]; break; }
        }
    }
    *ev += jb;
    *arg = barg;
    return best;
}

typedef REAL (*NAME(scan_fn))(int, const NAME(cols_t) *, const REAL *, REAL, REAL, REAL,
                              int32_t *, int64_t *);

/* q known at compile time for the common sizes (the loops over q unroll) */
#define SCAN_Q(Q)                                                                     \
    CLONES static REAL NAME(scan_##Q)(int q, const NAME(cols_t) *cs, const REAL *x,   \
                                      REAL ni2, REAL Ai, REAL Ap, int32_t *arg,       \
                                      int64_t *ev) {                                  \
        (void)q;                                                                      \
        return NAME(scan_impl)(Q, cs, x, ni2, Ai, Ap, arg, ev);                       \
    }
SCAN_Q(2) SCAN_Q(4) SCAN_Q(5) SCAN_Q(8) SCAN_Q(10) SCAN_Q(16) SCAN_Q(20)
#undef SCAN_Q

CLONES static REAL NAME(scan_any)(int q, const NAME(cols_t) *cs, const REAL *x, REAL ni2,
                                  REAL Ai, REAL Ap, int32_t *arg, int64_t *ev) {
    return NAME(scan_impl)(q, cs, x, ni2, Ai, Ap, arg, ev);
}

static NAME(scan_fn) NAME(pick_scan)(int q) {
    switch (q) {
    case 2: return NAME(scan_2);
    case 4: return NAME(scan_4);
    case 5: return NAME(scan_5);
    case 8: return NAME(scan_8);
    case 10: return NAME(scan_10);
    case 16: return NAME(scan_16);
    case 20: return NAME(scan_20);
    default: return NAME(scan_any);
    }
}

/* The shift mu of bayesrank.decode_prefix._center: of 0, the mean of the Ui, minus
 * the mean of the Uj and their midpoint, the one with the least mean
 * |Ui - mu| + |Uj + mu| on a strided sample of at most about 256 columns. */
static void NAME(center)(int K, int q, const REAL *Ui, const REAL *Uj, double *mu) {
    const int stride = K / 256 > 1 ? K / 256 : 1;
    double *cand = calloc((size_t)4 * q, sizeof(double));
    double cost[4] = {0, 0, 0, 0};
    int ns = 0;
    for (int s = 0; s < K; s += stride) {
        ns++;
        for (int k = 0; k < q; k++) {
            cand[q + k] += Ui[(size_t)k * K + s];
            cand[2 * q + k] -= Uj[(size_t)k * K + s];
        }
    }
    for (int k = 0; k < q; k++) {
        cand[q + k] /= ns;
        cand[2 * q + k] /= ns;
        cand[3 * q + k] = 0.5 * (cand[q + k] + cand[2 * q + k]);
    }
    for (int m = 0; m < 4; m++)
        for (int s = 0; s < K; s += stride) {
            double a = 0, b = 0;
            for (int k = 0; k < q; k++) {
                double d = Ui[(size_t)k * K + s] - cand[m * q + k];
                double e = Uj[(size_t)k * K + s] + cand[m * q + k];
                a += d * d;
                b += e * e;
            }
            cost[m] += sqrt(a) + sqrt(b);
        }
    int best = 0;
    for (int m = 1; m < 4; m++)
        if (cost[m] < cost[best]) best = m;
    memcpy(mu, cand + (size_t)best * q, sizeof(double) * q);
    free(cand);
}

typedef struct {
    const NAME(cols_t) *cs;
    NAME(scan_fn) scan;
    int K, q, t, T;
    const REAL *Ai, *Ui, *Uj, *V, *Bj;
    const double *mu;
    const uint8_t *rows;
    REAL grow;
    REAL *H;
    int32_t *arg;
    int64_t ev;
} NAME(job_t);

/* Rows of one thread (blocks of 64 rows, every T-th): scan, then rescore each
 * row's maximum with the direct norm |Ui + Uj| (the scan uses the Gram form). */
static void *NAME(rows)(void *p) {
    NAME(job_t) *jb = p;
    const int K = jb->K, q = jb->q;
    const REAL c = jb->cs->c;
    REAL *x = malloc(sizeof(REAL) * (size_t)q);
    for (int i0 = 64 * jb->t; i0 < K; i0 += 64 * jb->T) {
        const int i1 = i0 + 64 < K ? i0 + 64 : K;
        for (int i = i0; i < i1; i++) {
            if (!jb->rows[i]) {
                jb->H[i] = -INFINITY;
                jb->arg[i] = 0;
                continue;
            }
            double ni2 = 0, e = 0;
            for (int k = 0; k < q; k++) {
                x[k] = jb->Ui[(size_t)k * K + i];
                ni2 += (double)x[k] * x[k];
                double d = x[k] - jb->mu[k];
                e += d * d;
            }
            const REAL Ap = jb->Ai[i] + (REAL)(c * sqrt(e)) * jb->grow;
            int32_t a;
            jb->scan(q, jb->cs, x, (REAL)ni2, jb->Ai[i], Ap, &a, &jb->ev);
            REAL d2 = 0;
            for (int k = 0; k < q; k++) {
                REAL d = x[k] + jb->Uj[(size_t)k * K + a];
                d2 += d * d;
            }
            jb->H[i] = jb->V[a] + jb->Bj[a] + jb->Ai[i] + c * SQRT(d2);
            jb->arg[i] = a;
        }
    }
    free(x);
    return NULL;
}

/* One step H(i) = max_j V(j) + Ai(i) + Bj(j) + c |Ui(:, i) + Uj(:, j)| for the rows
 * with rows[i] (others: -inf, 0); j ranges over V(j) > -inf. Returns the pair
 * scores computed, or -1 when out of memory. */
static int64_t NAME(step)(int K, int q, const REAL *V, const REAL *Ai, const REAL *Bj,
                          const REAL *Ui, const REAL *Uj, REAL c, const uint8_t *rows,
                          int T, REAL *H, int32_t *arg) {
    const REAL slack = 64 * (sizeof(REAL) == 4 ? FLT_EPSILON : DBL_EPSILON);
    const REAL grow = 1 + slack;
    double *mu = malloc(sizeof(double) * (size_t)q);
    uint64_t *key = malloc(sizeof(uint64_t) * (size_t)K * 2);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)K * 2);
    REAL *ucol = malloc(sizeof(REAL) * (size_t)K);
    if (!mu || !key || !idx || !ucol) {
        free(mu); free(key); free(idx); free(ucol);
        return -1;
    }
    NAME(center)(K, q, Ui, Uj, mu);
    int n = 0;
    for (int j = 0; j < K; j++) {
        if (!(V[j] > -INFINITY)) continue;
        double e = 0;
        for (int k = 0; k < q; k++) {
            double d = Uj[(size_t)k * K + j] + mu[k];
            e += d * d;
        }
        REAL uj = V[j] + Bj[j] + (REAL)(c * sqrt(e)) * grow;
        ucol[j] = uj;
        key[n] = desc_key((double)uj);
        idx[n] = j;
        n++;
    }
    if (n == 0) {
        for (int i = 0; i < K; i++) { H[i] = -INFINITY; arg[i] = 0; }
        free(mu); free(key); free(idx); free(ucol);
        return 0;
    }
    radix_sort(key, idx, key + K, idx + K, n);
    const int np = (n + BJ - 1) / BJ * BJ;
    REAL *P = malloc(sizeof(REAL) * ((size_t)q * np + 3 * (size_t)np));
    int32_t *ord = malloc(sizeof(int32_t) * (size_t)np);
    if (!P || !ord) {
        free(mu); free(key); free(idx); free(ucol); free(P); free(ord);
        return -1;
    }
    REAL *g = P + (size_t)q * np, *n2 = g + np, *u = n2 + np;
    for (int p = 0; p < np; p++) {
        if (p < n) {
            const int j = idx[p];
            REAL e = 0;
            for (int k = 0; k < q; k++) {
                const REAL y = Uj[(size_t)k * K + j];
                P[(size_t)k * np + p] = y;
                e += y * y;
            }
            g[p] = V[j] + Bj[j];
            n2[p] = e;
            u[p] = ucol[j];
            ord[p] = j;
        } else {
            for (int k = 0; k < q; k++) P[(size_t)k * np + p] = 0;
            g[p] = u[p] = -INFINITY;
            n2[p] = 0;
            ord[p] = idx[0];
        }
    }
    NAME(cols_t) cs = {q, np, P, g, n2, u, ord, c, slack};
    NAME(job_t) jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < T; t++) {
        jobs[t] = (NAME(job_t)){&cs, NAME(pick_scan)(q), K, q, t, T, Ai, Ui, Uj, V, Bj,
                                mu, rows, grow, H, arg, 0};
        if (t > 0) started[t] = pthread_create(&th[t], NULL, NAME(rows), &jobs[t]) == 0;
    }
    NAME(rows)(&jobs[0]);
    int64_t ev = jobs[0].ev;
    for (int t = 1; t < T; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else NAME(rows)(&jobs[t]);  /* no thread: run its rows here */
        ev += jobs[t].ev;
    }
    free(mu); free(key); free(idx); free(ucol); free(P); free(ord);
    return ev;
}

/* The backward pass over L-1 steps (see ucb_backward in _prefix_scan.c). */
static int NAME(backward)(int Lm1, int K, int q, const REAL *A, const REAL *B,
                          const REAL *Ua, const REAL *Ub, const REAL *c,
                          const uint8_t *mask, int T, REAL *to_go, int32_t *ptr,
                          int64_t *evals) {
    REAL *H = malloc(sizeof(REAL) * (size_t)K * 2);
    if (!H) return -1;
    REAL *V = H + K;
    for (int i = 0; i < K; i++) H[i] = 0;
    for (int l = Lm1 - 1; l >= 0; l--) {
        for (int i = 0; i < K; i++) V[i] = mask[i] ? H[i] : -INFINITY;
        const size_t o = (size_t)l * K, oq = (size_t)l * q * K;
        evals[l] = NAME(step)(K, q, V, B + o, A + o, Ub + oq, Ua + oq, c[l], mask, T, H,
                              ptr + o);
        if (evals[l] < 0) { free(H); return -1; }
    }
    memcpy(to_go, H, sizeof(REAL) * (size_t)K);
    free(H);
    return 0;
}

#undef NAME
#undef VW
#undef NV
#undef BJ
