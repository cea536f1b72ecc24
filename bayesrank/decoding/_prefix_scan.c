/* bayesrank._prefix_scan: the identity-link UCB backward pass as a per-row scan in C.
 *
 * Each backward step H(i) = max_j [V(j) + Ai(i) + Bj(j) + c |Ui(:, i) + Uj(:, j)|] is
 * bounded by the separable V(j) + Bj(j) + c |Uj(:, j) + mu| + Ai(i) + c |Ui(:, i) - mu|
 * (triangle inequality, the shift mu of bayesrank.decoding.prefix, inflated by 64
 * machine epsilons). The columns are sorted once per step by their part of the bound,
 * descending; each row scans them in blocks and stops at the first block whose bound
 * falls below its best so far: no later column can beat it, so the step is exact.
 * Inside a block, a screen without square roots (c^2 sq >= r |r|) skips the exact
 * scores of blocks where no column can beat the best. Rows are split over threads.
 * The maxima are rescored with the direct norm. The Python side
 * (bayesrank.decoding.native) documents the contract and checks the arguments.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64

/* the vector helpers are always inlined: no vector crosses a call */
#pragma GCC diagnostic ignored "-Wpsabi"

/* AVX2 + FMA where the CPU has them, chosen at load time; plain code elsewhere */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

/* A key that sorts ascending as x sorts descending (NaN: after -inf, arbitrary). */
static inline uint64_t desc_key(double x) {
    uint64_t b;
    if (x != x) return UINT64_MAX;
    memcpy(&b, &x, sizeof b);
    b = (b >> 63) ? ~b : (b | 0x8000000000000000ULL); /* ascending in x */
    return ~b;
}

/* LSD radix sort of n keys (with their indices) by bytes; tk, ti: scratch of n. */
static void radix_sort(uint64_t *k, int32_t *ix, uint64_t *tk, int32_t *ti, int n) {
    for (int sh = 0; sh < 64; sh += 8) {
        size_t cnt[257] = {0};
        for (int i = 0; i < n; i++) cnt[((k[i] >> sh) & 255) + 1]++;
        int one = 0;
        for (int b = 1; b <= 256; b++) one |= cnt[b] == (size_t)n;
        if (one) continue; /* every key has the same byte here */
        for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
        for (int i = 0; i < n; i++) {
            size_t d = cnt[(k[i] >> sh) & 255]++;
            tk[d] = k[i];
            ti[d] = ix[i];
        }
        memcpy(k, tk, sizeof(uint64_t) * (size_t)n);
        memcpy(ix, ti, sizeof(int32_t) * (size_t)n);
    }
}

/* A reusable barrier for the threads of one backward pass (pthread_barrier_t is not
 * everywhere), with a gate: the workers wait until the number that started is set. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count, waiting, open;
    unsigned long generation;
} barrier_t;

static int barrier_init(barrier_t *b) {
    b->count = 1;
    b->waiting = b->open = 0;
    b->generation = 0;
    if (pthread_mutex_init(&b->mu, NULL) != 0) return -1;
    if (pthread_cond_init(&b->cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return -1;
    }
    return 0;
}

static void barrier_start(barrier_t *b, int count) {
    pthread_mutex_lock(&b->mu);
    b->count = count;
    b->open = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void barrier_gate(barrier_t *b) {
    pthread_mutex_lock(&b->mu);
    while (!b->open) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void barrier_wait(barrier_t *b) {
    pthread_mutex_lock(&b->mu);
    unsigned long gen = b->generation;
    if (++b->waiting == b->count) {
        b->waiting = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (gen == b->generation) pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
}

static void barrier_destroy(barrier_t *b) {
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
}

#define REAL double
#define SFX _d
#define VI int64_t
#define SQRT sqrt
#ifndef NV_D
#define NV_D 8
#endif
#define NV NV_D
#include "_prefix_scan.h"
#undef REAL
#undef SFX
#undef VI
#undef SQRT
#undef NV

#define REAL float
#define SFX _f
#define VI int32_t
#define SQRT sqrtf
#ifndef NV_F
#define NV_F 4
#endif
#define NV NV_F
#include "_prefix_scan.h"
#undef REAL
#undef SFX
#undef VI
#undef SQRT
#undef NV

/* Whether a struct-module format names one item of the kind: 'f' a real of the given
 * size (d or f), 'b' a bool (?), 'i' a signed integer (b h i l q) of the given size. */
static int format_ok(const char *f, char kind) {
    const uint16_t one = 1;
    const int little = *(const uint8_t *)&one == 1;
    if (f == NULL) f = "B";
    /* native byte order only: '<' on a big-endian host, '>' or '!' on a
     * little-endian one would be read as garbage */
    if ((*f == '<' && !little) || ((*f == '>' || *f == '!') && little)) return 0;
    while (*f == '@' || *f == '=' || *f == '<' || *f == '>' || *f == '!') f++;
    if (f[0] == '\0' || f[1] != '\0') return 0;
    switch (kind) {
    case 'f': return f[0] == 'd' || f[0] == 'f';
    case 'b': return f[0] == '?';
    default: return strchr("bhilq", f[0]) != NULL;
    }
}

/* ---- the XLA FFI handler: the same pass called by XLA with its own buffers ------- */

#include "xla/ffi/api/c_api.h" /* vendored from jaxlib: bayesrank/decoding/_vendor */

static XLA_FFI_Error *ffi_error(const XLA_FFI_Api *api, XLA_FFI_Error_Code code,
                                const char *msg) {
    XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, msg,
                                   code};
    return api->XLA_FFI_Error_Create(&a);
}

/* Arguments A (L-1, K), B (L-1, K), Ua (L-1, q, K), Ub (L-1, q, K), c (L-1) of one
 * float type, mask (K) bool, threads () int32; results to_go (K) of the float type,
 * ptr (L-1, K) int32, pair_evals (L-1) int32 (clipped). */
static XLA_FFI_Error *ucb_backward_ffi(XLA_FFI_CallFrame *cf) {
    for (XLA_FFI_InternalExtension *e = cf->extension_start; e; e = e->next) {
        if (e->type == XLA_FFI_Extension_Metadata) { /* XLA asks which API we speak */
            XLA_FFI_Metadata *m = ((XLA_FFI_Metadata_Extension *)e)->metadata;
            m->api_version.major_version = XLA_FFI_API_MAJOR;
            m->api_version.minor_version = XLA_FFI_API_MINOR;
            m->traits = 0;
            return NULL;
        }
    }
    if (cf->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
    const XLA_FFI_Api *api = cf->api;
    if (cf->args.size != 7 || cf->rets.size != 3)
        return ffi_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                         "bayesrank_ucb_backward: expected 7 arguments and 3 results");
    XLA_FFI_Buffer *in[7], *out[3];
    for (int i = 0; i < 7; i++) {
        if (cf->args.types[i] != XLA_FFI_ArgType_BUFFER)
            return ffi_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "bayesrank_ucb_backward: expected buffer arguments");
        in[i] = cf->args.args[i];
    }
    for (int i = 0; i < 3; i++) {
        if (cf->rets.types[i] != XLA_FFI_RetType_BUFFER)
            return ffi_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                             "bayesrank_ucb_backward: expected buffer results");
        out[i] = cf->rets.rets[i];
    }
    const XLA_FFI_DataType dt = in[0]->dtype;
    int ok = (dt == XLA_FFI_DataType_F32 || dt == XLA_FFI_DataType_F64) &&
             in[0]->rank == 2 && in[2]->rank == 3;
    const int64_t Lm1 = ok ? in[0]->dims[0] : 0, K = ok ? in[0]->dims[1] : 0;
    const int64_t q = ok ? in[2]->dims[1] : 0;
    for (int i = 0; ok && i < 5; i++) ok = in[i]->dtype == dt;
    ok = ok && in[1]->rank == 2 && in[1]->dims[0] == Lm1 && in[1]->dims[1] == K;
    for (int i = 2; ok && i < 4; i++)
        ok = in[i]->rank == 3 && in[i]->dims[0] == Lm1 && in[i]->dims[1] == q &&
             in[i]->dims[2] == K;
    ok = ok && in[4]->rank == 1 && in[4]->dims[0] == Lm1;
    ok = ok && in[5]->dtype == XLA_FFI_DataType_PRED && in[5]->rank == 1 &&
         in[5]->dims[0] == K;
    ok = ok && in[6]->dtype == XLA_FFI_DataType_S32 && in[6]->rank == 0;
    ok = ok && out[0]->dtype == dt && out[0]->rank == 1 && out[0]->dims[0] == K;
    ok = ok && out[1]->dtype == XLA_FFI_DataType_S32 && out[1]->rank == 2 &&
         out[1]->dims[0] == Lm1 && out[1]->dims[1] == K;
    ok = ok && out[2]->dtype == XLA_FFI_DataType_S32 && out[2]->rank == 1 &&
         out[2]->dims[0] == Lm1;
    ok = ok && Lm1 >= 1 && K >= 1 && q >= 1 && Lm1 < INT32_MAX && K < INT32_MAX &&
         q < INT32_MAX;
    if (!ok)
        return ffi_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                         "bayesrank_ucb_backward: expected A, B (L-1, K), Ua, Ub "
                         "(L-1, q, K), c (L-1) of one float type, mask (K) bool, "
                         "threads () int32");
    int T = *(const int32_t *)in[6]->data;
    T = T < 1 ? 1 : T > MAX_THREADS ? MAX_THREADS : T;
    int64_t *ev = calloc((size_t)Lm1, sizeof(int64_t));
    if (!ev)
        return ffi_error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                         "bayesrank_ucb_backward: out of memory");
    int rc;
    if (dt == XLA_FFI_DataType_F64)
        rc = backward_d((int)Lm1, (int)K, (int)q, in[0]->data, in[1]->data, in[2]->data,
                        in[3]->data, in[4]->data, in[5]->data, T, out[0]->data,
                        out[1]->data, ev);
    else
        rc = backward_f((int)Lm1, (int)K, (int)q, in[0]->data, in[1]->data, in[2]->data,
                        in[3]->data, in[4]->data, in[5]->data, T, out[0]->data,
                        out[1]->data, ev);
    if (rc < 0) {
        free(ev);
        return ffi_error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                         "bayesrank_ucb_backward: out of memory");
    }
    int32_t *ev32 = out[2]->data;
    for (int64_t l = 0; l < Lm1; l++) ev32[l] = ev[l] > INT32_MAX ? INT32_MAX : (int32_t)ev[l];
    free(ev);
    return NULL;
}

/* A C-contiguous buffer of exactly n items of the given kind and size. */
static int get(PyObject *o, Py_buffer *b, int writable, Py_ssize_t n, Py_ssize_t size,
               char kind, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, b, flags) < 0) return -1;
    if (!format_ok(b->format, kind) || b->itemsize != size || b->len != n * size) {
        static const char *kinds[] = {"reals", "bools", "signed integers"};
        PyErr_Format(PyExc_ValueError,
                     "%s: expected a contiguous buffer of %zd %s of %zd bytes, got "
                     "%zd bytes of %zd-byte items (format %s)", name, n,
                     kinds[kind == 'f' ? 0 : kind == 'b' ? 1 : 2], size, b->len,
                     b->itemsize, b->format ? b->format : "B");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *ucb_backward(PyObject *self, PyObject *args) {
    PyObject *o[9];
    int Lm1, K, q, T;
    (void)self;
    if (!PyArg_ParseTuple(args, "iiiiOOOOOOOOO", &Lm1, &K, &q, &T, &o[0], &o[1], &o[2],
                          &o[3], &o[4], &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    if (Lm1 < 1 || K < 1 || q < 1 || T < 1 || T > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError,
                     "expected L-1 >= 1, K >= 1, q >= 1 and 1 <= threads <= %d, got "
                     "%d, %d, %d, %d", MAX_THREADS, Lm1, K, q, T);
        return NULL;
    }
    Py_buffer b[9];
    int n = 0;
    Py_buffer probe;
    if (PyObject_GetBuffer(o[0], &probe, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    const Py_ssize_t rs = probe.itemsize;
    const int real = format_ok(probe.format, 'f');
    PyBuffer_Release(&probe);
    if (!real || (rs != 4 && rs != 8)) {
        PyErr_SetString(PyExc_TypeError, "A: expected float32 or float64 items");
        return NULL;
    }
    const Py_ssize_t sizes[9][2] = {
        {(Py_ssize_t)Lm1 * K, rs}, {(Py_ssize_t)Lm1 * K, rs},
        {(Py_ssize_t)Lm1 * q * K, rs}, {(Py_ssize_t)Lm1 * q * K, rs}, {Lm1, rs},
        {K, 1}, {K, rs}, {(Py_ssize_t)Lm1 * K, 4}, {Lm1, 8}};
    static const char *names[9] = {"A", "B", "Ua", "Ub", "c", "mask",
                                   "to_go", "ptr", "evals"};
    static const char kinds[9] = {'f', 'f', 'f', 'f', 'f', 'b', 'f', 'i', 'i'};
    for (; n < 9; n++)
        if (get(o[n], &b[n], n >= 6, sizes[n][0], sizes[n][1], kinds[n], names[n]) < 0)
            break;
    int rc = -2;
    if (n == 9) {
        Py_BEGIN_ALLOW_THREADS
        if (rs == 8)
            rc = backward_d(Lm1, K, q, b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf,
                            b[5].buf, T, b[6].buf, b[7].buf, b[8].buf);
        else
            rc = backward_f(Lm1, K, q, b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf,
                            b[5].buf, T, b[6].buf, b[7].buf, b[8].buf);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < n; i++) PyBuffer_Release(&b[i]);
    if (rc == -2) return NULL;
    if (rc < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ucb_backward", ucb_backward, METH_VARARGS,
     "ucb_backward(Lm1, K, q, threads, A, B, Ua, Ub, c, mask, to_go, ptr, evals): the "
     "identity-link UCB backward pass, written into to_go, ptr and evals. Use "
     "bayesrank.decoding.native, which checks the arguments."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_prefix_scan",
                                    "The identity-link UCB backward pass in C.", -1,
                                    methods, NULL, NULL, NULL, NULL};

/* Bumped whenever the kernel's contract changes: bayesrank.decoding.native ignores a
 * build of another version (a stale build in an editable install). */
#define KERNEL_VERSION 2

PyMODINIT_FUNC PyInit__prefix_scan(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *cap = PyCapsule_New((void *)ucb_backward_ffi, NULL, NULL);
    if (PyModule_AddIntConstant(m, "KERNEL_VERSION", KERNEL_VERSION) < 0 || !cap ||
        PyModule_AddObject(m, "ffi_handler", cap) < 0) {
        Py_XDECREF(cap);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
