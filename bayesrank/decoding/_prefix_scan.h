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
    const REAL *R;     /* (np, q): the column vectors again, one per row (rescoring) */
    REAL c, slack;
} NAME(cols_t);

/* Best column for one row: max_j g_j + Ai + c sqrt(ni2 + 2 x.y_j + n2_j) over the
 * columns in order, stopping at the first block whose bound u_j + Ap falls below the
 * row's best (less a slack). The best starts at best0, the row's score with the
 * first column (the one with the highest bound), so the screen applies from the
 * first block on. Returns the best value (Gram form) and sets *arg to its position
 * in the order. */
static inline __attribute__((always_inline)) REAL
NAME(scan_impl)(const int q, const NAME(cols_t) *cs, const REAL *x, REAL ni2, REAL Ai,
                REAL Ap, REAL best0, int32_t *arg, int64_t *ev) {
    const int np = cs->np;
    const REAL *P = cs->P, *g = cs->g, *n2 = cs->n2, *u = cs->u;
    const REAL c = cs->c, slack = cs->slack;
    /* the screen compares c^2 sq with r |r|: no square root; widened by 1e-5
     * (float) or 1e-10 (double) against rounding */
    const REAL c2 = c * c * (REAL)(sizeof(REAL) == 4 ? 1.00001 : 1.0000000001);
    NAME(vm) absmask;
    for (int t = 0; t < VW; t++)
        absmask[t] = (VI)(((uint64_t)1 << (8 * sizeof(VI) - 1)) - 1);
    REAL best = best0;
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
                if (val[t / VW][t % VW] == m) { barg = jb + t; break; }
        }
    }
    *ev += jb;
    *arg = barg;
    return best;
}

typedef REAL (*NAME(scan_fn))(int, const NAME(cols_t) *, const REAL *, REAL, REAL, REAL,
                              REAL, int32_t *, int64_t *);

/* q known at compile time for the common sizes (the loops over q unroll) */
#define SCAN_Q(Q)                                                                     \
    CLONES static REAL NAME(scan_##Q)(int q, const NAME(cols_t) *cs, const REAL *x,   \
                                      REAL ni2, REAL Ai, REAL Ap, REAL best0,         \
                                      int32_t *arg, int64_t *ev) {                    \
        (void)q;                                                                      \
        return NAME(scan_impl)(Q, cs, x, ni2, Ai, Ap, best0, arg, ev);                \
    }
SCAN_Q(2) SCAN_Q(4) SCAN_Q(5) SCAN_Q(8) SCAN_Q(10) SCAN_Q(16) SCAN_Q(20)
#undef SCAN_Q

CLONES static REAL NAME(scan_any)(int q, const NAME(cols_t) *cs, const REAL *x, REAL ni2,
                                  REAL Ai, REAL Ap, REAL best0, int32_t *arg,
                                  int64_t *ev) {
    return NAME(scan_impl)(q, cs, x, ni2, Ai, Ap, best0, arg, ev);
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

/* The shift mu of bayesrank.decoding.prefix._center: of 0, the mean of the Ui, minus
 * the mean of the Uj and their midpoint, the one with the least mean
 * |Ui - mu| + |Uj + mu| on a strided sample of at most about 256 columns. */
static void NAME(center)(int K, int q, const REAL *Ui, const REAL *Uj, double *mu) {
    const int stride = K / 256 > 1 ? K / 256 : 1;
    double *cand = calloc((size_t)4 * q, sizeof(double));
    double cost[4] = {0, 0, 0, 0};
    if (!cand) { /* any shift keeps the bound valid: no memory, no shift */
        memset(mu, 0, sizeof(double) * (size_t)q);
        return;
    }
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

/* One backward pass: its inputs, the step being run and the buffers, shared by the
 * threads. Thread 0 prepares each step between barriers; all threads scan rows. */
typedef struct {
    int Lm1, K, q, T;
    const REAL *A, *B, *Ua, *Ub, *c;
    const uint8_t *mask;
    int32_t *ptr;
    int64_t *evals;
    /* the step: H(i) = max_j V(j) + Ai(i) + Bj(j) + cl |Ui(:, i) + Uj(:, j)| */
    const REAL *Ai, *Bj, *Ui, *Uj;
    REAL cl, slack, grow, gtop, ntop;
    int live, jtop, failed;
    REAL *V, *H;             /* (K) each: values to go into the step, out of it */
    REAL *mu, *ytop;         /* (q) each: the shift, the top column's vector */
    double *mud;             /* (q) */
    REAL *ucol, *Ap, *lb;    /* (K) each */
    uint64_t *key;           /* (2 K) */
    int32_t *idx, *ord;      /* (2 K), (Kp) */
    REAL *P;                 /* (2 q Kp + 3 Kp): P, R, g, n2, u of cols_t */
    NAME(cols_t) cs;
    NAME(scan_fn) scan;
    REAL umin[MAX_THREADS];  /* per thread: the least column bound its rows need */
    int64_t ev[MAX_THREADS]; /* per thread: pair scores */
    REAL *buf;               /* the block that holds V, H, ucol, Ap, lb */
    barrier_t bar;
} NAME(pass_t);

/* Rows of thread t (blocks of 64 rows, every T-th).
 * Phase 1: each row's part of the bound Ap and its exact score lb with the column of
 * the highest bound (a lower bound of its best), and the least column bound that can
 * still beat lb: umin = min over rows of thr(lb) - Ap.
 * Phase 2: the scan from lb, then each row's maximum rescored with the direct norm
 * |Ui + Uj| (the scan uses the Gram form). */
static void NAME(rows)(NAME(pass_t) *s, int t, int phase, REAL *x, int32_t *arg) {
    const int K = s->K, q = s->q;
    const REAL c = s->cl;
    REAL umin = INFINITY;
    int64_t ev = 0;
    for (int i0 = 64 * t; i0 < K; i0 += 64 * s->T) {
        const int i1 = i0 + 64 < K ? i0 + 64 : K;
        for (int i = i0; i < i1; i++) {
            if (!s->mask[i]) {
                if (phase == 2) {
                    s->H[i] = -INFINITY;
                    arg[i] = 0;
                }
                continue;
            }
            REAL ni2 = 0;
            for (int k = 0; k < q; k++) {
                x[k] = s->Ui[(size_t)k * K + i];
                ni2 += x[k] * x[k];
            }
            if (phase == 1) {
                REAL e = 0, dot = 0;
                for (int k = 0; k < q; k++) {
                    REAL d = x[k] - s->mu[k];
                    e += d * d;
                    dot += x[k] * s->ytop[k];
                }
                const REAL Ap = s->Ai[i] + c * SQRT(e) * s->grow;
                REAL sq = s->ntop + ni2 + 2 * dot;
                const REAL lb = (s->gtop + s->Ai[i]) + c * SQRT(sq > 0 ? sq : 0);
                const REAL need = lb - s->slack * (1 + (lb < 0 ? -lb : lb)) - Ap;
                s->Ap[i] = Ap;
                s->lb[i] = lb;
                umin = need < umin ? need : umin;
                continue;
            }
            int32_t pb;
            s->scan(q, &s->cs, x, ni2, s->Ai[i], s->Ap[i], s->lb[i], &pb, &ev);
            /* rescore with the direct norm, from the packed copy (in cache) */
            const REAL *y = s->cs.R + (size_t)pb * q;
            REAL d2 = 0;
            for (int k = 0; k < q; k++) {
                REAL d = x[k] + y[k];
                d2 += d * d;
            }
            s->H[i] = s->cs.g[pb] + s->Ai[i] + c * SQRT(d2);
            arg[i] = s->cs.ord[pb];
        }
    }
    s->umin[t] = umin;
    s->ev[t] = ev;
}

/* Thread 0, before phase 1 of step l: the step's arrays, the shift mu, each column's
 * part of the bound and the column of the highest bound. */
static void NAME(prepare)(NAME(pass_t) *s, int l) {
    const int K = s->K, q = s->q;
    const size_t o = (size_t)l * K, oq = (size_t)l * q * K;
    s->Ai = s->B + o;
    s->Bj = s->A + o;
    s->Ui = s->Ub + oq;
    s->Uj = s->Ua + oq;
    s->cl = s->c[l];
    const REAL *V = s->V, *Bj = s->Bj, *Uj = s->Uj, c = s->cl;
    NAME(center)(K, q, s->Ui, Uj, s->mud);
    for (int k = 0; k < q; k++) s->mu[k] = (REAL)s->mud[k];
    int jtop = -1;
    for (int j = 0; j < K; j++) {
        if (!(V[j] > -INFINITY)) continue;
        REAL e = 0;
        for (int k = 0; k < q; k++) {
            REAL d = Uj[(size_t)k * K + j] + s->mu[k];
            e += d * d;
        }
        REAL u = V[j] + Bj[j] + c * SQRT(e) * s->grow;
        s->ucol[j] = u == u ? u : -INFINITY;
        if (jtop < 0 || s->ucol[j] > s->ucol[jtop]) jtop = j;
    }
    s->live = jtop >= 0;
    s->jtop = jtop;
    if (!s->live) return;
    s->ntop = 0;
    for (int k = 0; k < q; k++) {
        s->ytop[k] = Uj[(size_t)k * K + jtop];
        s->ntop += s->ytop[k] * s->ytop[k];
    }
    s->gtop = V[jtop] + Bj[jtop];
}

/* Thread 0, between the phases: the columns some row may need (bound at least the
 * least umin; in late rounds a small part of them), sorted by bound descending with
 * the top column first, packed for the scan. */
static void NAME(pack)(NAME(pass_t) *s) {
    const int K = s->K, q = s->q, jtop = s->jtop;
    const REAL *V = s->V, *Bj = s->Bj, *Uj = s->Uj;
    REAL umin = INFINITY;
    for (int t = 0; t < s->T; t++) umin = s->umin[t] < umin ? s->umin[t] : umin;
    umin -= s->slack * (1 + (umin < 0 ? -umin : umin)); /* rounding of u + Ap */
    int nc = 0;
    for (int j = 0; j < K; j++) {
        if (!(V[j] > -INFINITY) || !(s->ucol[j] >= umin || j == jtop)) continue;
        s->key[nc] = j == jtop ? 0 : desc_key((double)s->ucol[j]);
        s->idx[nc++] = j;
    }
    radix_sort(s->key, s->idx, s->key + K, s->idx + K, nc);
    const int np = (nc + BJ - 1) / BJ * BJ;
    REAL *P = s->P, *R = P + (size_t)q * np;
    REAL *g = R + (size_t)q * np, *n2 = g + np, *u = n2 + np;
    for (int p = 0; p < np; p++) {
        const int j = p < nc ? s->idx[p] : jtop;
        REAL e = 0;
        for (int k = 0; k < q; k++) {
            const REAL y = p < nc ? Uj[(size_t)k * K + j] : 0;
            P[(size_t)k * np + p] = R[(size_t)p * q + k] = y;
            e += y * y;
        }
        g[p] = p < nc ? V[j] + Bj[j] : -INFINITY; /* padding never wins */
        n2[p] = e;
        u[p] = p < nc ? s->ucol[j] : -INFINITY;
        s->ord[p] = j;
    }
    s->cs = (NAME(cols_t)){q, np, P, g, n2, u, s->ord, R, s->cl, s->slack};
}

/* The steps L-1 .. 1 as thread t sees them: thread 0 prepares, everyone scans. */
static void NAME(work)(NAME(pass_t) *s, int t) {
    REAL *x = malloc(sizeof(REAL) * (size_t)s->q);
    if (!x) s->failed = 1;
    barrier_wait(&s->bar); /* every thread sees `failed` before it is read */
    for (int l = s->Lm1 - 1; l >= 0; l--) {
        int32_t *arg = s->ptr + (size_t)l * s->K;
        if (t == 0 && !s->failed) NAME(prepare)(s, l);
        barrier_wait(&s->bar);
        if (!s->failed && s->live) NAME(rows)(s, t, 1, x, arg);
        barrier_wait(&s->bar);
        if (t == 0 && !s->failed && s->live) NAME(pack)(s);
        barrier_wait(&s->bar);
        if (!s->failed && s->live) NAME(rows)(s, t, 2, x, arg);
        barrier_wait(&s->bar);
        if (t == 0 && !s->failed) {
            int64_t ev = 0;
            if (!s->live) {
                for (int i = 0; i < s->K; i++) { s->H[i] = -INFINITY; arg[i] = 0; }
            } else {
                for (int u = 0; u < s->T; u++) ev += s->ev[u];
            }
            s->evals[l] = ev;
            REAL *tmp = s->V; /* this step's values feed the next one */
            s->V = s->H;
            s->H = tmp;
        }
        barrier_wait(&s->bar); /* the next step reads the swapped buffers */
    }
    free(x);
}

typedef struct { NAME(pass_t) *s; int t; } NAME(arg_t);

static void *NAME(worker)(void *p) {
    NAME(arg_t) *a = p;
    barrier_gate(&a->s->bar);
    NAME(work)(a->s, a->t);
    return NULL;
}

/* The backward pass over L-1 steps (see ucb_backward in _prefix_scan.c): T threads
 * (fewer if some cannot start), created once. Returns -1 when out of memory. */
static int NAME(backward)(int Lm1, int K, int q, const REAL *A, const REAL *B,
                          const REAL *Ua, const REAL *Ub, const REAL *c,
                          const uint8_t *mask, int T, REAL *to_go, int32_t *ptr,
                          int64_t *evals) {
    const size_t Kp = ((size_t)K + BJ - 1) / BJ * BJ;
    NAME(pass_t) *s = calloc(1, sizeof *s);
    if (!s) return -1;
    *s = (NAME(pass_t)){.Lm1 = Lm1, .K = K, .q = q, .T = 1, .A = A, .B = B, .Ua = Ua,
                        .Ub = Ub, .c = c, .mask = mask, .ptr = ptr, .evals = evals};
    s->slack = 64 * (sizeof(REAL) == 4 ? FLT_EPSILON : DBL_EPSILON);
    s->grow = 1 + s->slack;
    s->buf = s->V = malloc(sizeof(REAL) * (size_t)K * 5);
    s->mu = malloc(sizeof(REAL) * (size_t)q * 2);
    s->mud = malloc(sizeof(double) * (size_t)q);
    s->key = malloc(sizeof(uint64_t) * (size_t)K * 2);
    s->idx = malloc(sizeof(int32_t) * ((size_t)K * 2 + Kp));
    s->P = malloc(sizeof(REAL) * (2 * (size_t)q * Kp + 3 * Kp));
    int rc = -1;
    if (!s->V || !s->mu || !s->mud || !s->key || !s->idx || !s->P) goto done;
    s->H = s->V + K;
    s->ucol = s->H + K;
    s->Ap = s->ucol + K;
    s->lb = s->Ap + K;
    s->ytop = s->mu + q;
    s->ord = s->idx + (size_t)K * 2;
    s->scan = NAME(pick_scan)(q);
    for (int i = 0; i < K; i++) s->V[i] = mask[i] ? 0 : -INFINITY;
    /* workers wait at the barrier's gate until the number that started is known */
    if (barrier_init(&s->bar) != 0) goto done;
    pthread_t th[MAX_THREADS];
    NAME(arg_t) args[MAX_THREADS];
    int started = 1;
    for (int t = 1; t < T; t++) {
        args[t] = (NAME(arg_t)){s, t};
        if (pthread_create(&th[t], NULL, NAME(worker), &args[t]) != 0) break;
        started++;
    }
    s->T = started;
    barrier_start(&s->bar, started);
    NAME(work)(s, 0);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    barrier_destroy(&s->bar);
    if (!s->failed) {
        memcpy(to_go, s->V, sizeof(REAL) * (size_t)K);
        rc = 0;
    }
done:
    free(s->buf);
    free(s->mu); free(s->mud); free(s->key); free(s->idx); free(s->P);
    free(s);
    return rc;
}

#undef NAME
#undef VW
#undef NV
#undef BJ
