/* Order statistics and exact sums of a float64 array, in C: the compiled forms of
 * timeline.detect.order_statistics and timeline.detect.exact_sums, whose numpy versions stay the
 * reference (tests/test_detect.py compares the two).
 *
 * Radix selection: each double's bits are made an unsigned key in the doubles' order (a positive
 * one's sign bit set, a negative one's bits all flipped); each pass counts the keys in each of
 * 2**BITS buckets of their range and keeps only the buckets that hold a wanted rank, whose range is
 * then 2**BITS times smaller: at most six passes, whatever the values, and a few hundred keys left
 * after the first on a run's series.
 *
 * Exact sums: each double is an integer mantissa times a power of two (frexp); the mantissas and
 * their squares are added in 128-bit integers, one a binary exponent, and those put together as
 * Python integers. Pure functions: no I/O, no state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BITS 11
#define BUCKETS (1 << BITS)
#define SMALL 32 /* this many keys or fewer: sorted by insertion */
#define SIGN 0x8000000000000000ULL

typedef struct {
    Py_ssize_t rank; /* among the keys of the current range */
    Py_ssize_t slot; /* where its value goes in the result */
} Want;

typedef struct {
    Py_ssize_t bucket, start, count; /* a bucket holding wanted ranks, where its keys are gathered */
    Py_ssize_t first, wants;         /* those ranks: want[first .. first + wants) */
} Group;

static inline uint64_t key_of(double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits ^ ((uint64_t)((int64_t)bits >> 63) | SIGN);
}

static inline double value_of(uint64_t key) {
    uint64_t bits = key & SIGN ? key ^ SIGN : ~key;
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static int by_rank(const void *a, const void *b) {
    Py_ssize_t x = ((const Want *)a)->rank, y = ((const Want *)b)->rank;
    return (x > y) - (x < y);
}

static inline int bit_length(uint64_t x) {
    return x ? 64 - __builtin_clzll(x) : 0;
}

/* out[w.slot] = the w.rank-th smallest of keys[0 .. n) for each of the nw wants (sorted by rank);
 * spare: room for n keys; keys[keys_sink] and spare[spare_sink]: a slot past both, of no use (the
 * keys of no wanted bucket are put there); map: room for BUCKETS; ranged: low and high are the
 * keys' least and greatest (the caller found them as it made the keys: one pass fewer), else they
 * are found here. keys and spare are reordered. 0, or -1 (no memory). */
static int pick(uint64_t *keys, uint64_t *spare, Py_ssize_t n, Py_ssize_t keys_sink, Py_ssize_t spare_sink,
                Want *want, Py_ssize_t nw, uint64_t *out, Py_ssize_t *map, int ranged, uint64_t low, uint64_t high) {
    if (n <= SMALL) {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint64_t key = keys[i];
            Py_ssize_t j = i;
            for (; j > 0 && keys[j - 1] > key; j--)
                keys[j] = keys[j - 1];
            keys[j] = key;
        }
        for (Py_ssize_t w = 0; w < nw; w++)
            out[want[w].slot] = keys[want[w].rank];
        return 0;
    }
    if (!ranged) {
        low = high = keys[0];
        for (Py_ssize_t i = 1; i < n; i++) {
            low = keys[i] < low ? keys[i] : low;
            high = keys[i] > high ? keys[i] : high;
        }
    }
    if (low == high) {
        for (Py_ssize_t w = 0; w < nw; w++)
            out[want[w].slot] = low;
        return 0;
    }
    int length = bit_length(high - low);
    int shift = length > BITS ? length - BITS : 0;
    Py_ssize_t buckets = (Py_ssize_t)((high - low) >> shift) + 1;
    memset(map, 0, (size_t)buckets * sizeof *map);
    for (Py_ssize_t i = 0; i < n; i++)
        map[(keys[i] - low) >> shift]++;
    Group *groups = malloc((size_t)nw * sizeof *groups);
    if (groups == NULL)
        return -1;
    Py_ssize_t count = 0, before = 0, w = 0;
    for (Py_ssize_t b = 0; b < buckets && w < nw; b++) {
        Py_ssize_t inside = map[b];
        if (want[w].rank < before + inside) {
            Group *group = &groups[count++];
            group->bucket = b;
            group->count = inside;
            group->first = w;
            for (; w < nw && want[w].rank < before + inside; w++)
                want[w].rank -= before;
            group->wants = w - group->first;
        }
        before += inside;
    }
    int result = 0;
    if (shift == 0) { /* a bucket a key */
        for (Py_ssize_t g = 0; g < count; g++)
            for (Py_ssize_t i = 0; i < groups[g].wants; i++)
                out[want[groups[g].first + i].slot] = low + (uint64_t)groups[g].bucket;
        goto done;
    }
    /* map: where the next key of each wanted bucket goes in spare; for the other buckets the sink,
     * where each key overwrites the one before: no branch, which the keys of a series with few
     * distinct values (accept lengths) took one way or the other at random (3x the time) */
    for (Py_ssize_t b = 0; b < buckets; b++)
        map[b] = spare_sink;
    Py_ssize_t start = 0;
    for (Py_ssize_t g = 0; g < count; g++) {
        groups[g].start = start;
        map[groups[g].bucket] = start;
        start += groups[g].count;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = keys[i];
        Py_ssize_t *at = &map[(key - low) >> shift];
        Py_ssize_t to = *at;
        spare[to] = key;
        *at = to + (to != spare_sink);
    }
    for (Py_ssize_t g = 0; g < count && result == 0; g++) {
        Py_ssize_t at = groups[g].start;
        result = pick(spare + at, keys + at, groups[g].count, spare_sink - at, keys_sink - at, want + groups[g].first,
                      groups[g].wants, out, map, 0, 0, 0);
    }
done:
    free(groups);
    return result;
}

/* view = values' buffer, a contiguous float64 one; 0, or -1 (a TypeError naming the function set,
 * nothing to release). */
static int float64_values(PyObject *values, Py_buffer *view, const char *function) {
    if (PyObject_GetBuffer(values, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != sizeof(double) || view->format == NULL || strcmp(view->format, "d") != 0) {
        PyErr_Format(PyExc_TypeError, "%s: values must be a contiguous float64 buffer", function);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *order_statistics(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *values, *ranks;
    if (!PyArg_ParseTuple(args, "OO", &values, &ranks))
        return NULL;
    Py_buffer view;
    if (float64_values(values, &view, "order_statistics") < 0)
        return NULL;
    PyObject *result = NULL, *listed = NULL;
    Want *want = NULL;
    uint64_t *keys = NULL, *spare = NULL, *out = NULL;
    Py_ssize_t *map = NULL;
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
    listed = PySequence_Fast(ranks, "order_statistics: ranks must be a sequence of integers");
    if (listed == NULL)
        goto done;
    Py_ssize_t nw = PySequence_Fast_GET_SIZE(listed);
    want = malloc((size_t)(nw ? nw : 1) * sizeof *want);
    out = malloc((size_t)(nw ? nw : 1) * sizeof *out);
    keys = malloc((size_t)(n + 1) * sizeof *keys); /* and pick's sinks */
    spare = malloc((size_t)(n + 1) * sizeof *spare);
    map = malloc(BUCKETS * sizeof *map);
    if (want == NULL || out == NULL || keys == NULL || spare == NULL || map == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nw; i++) {
        Py_ssize_t rank = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(listed, i));
        if (rank == -1 && PyErr_Occurred())
            goto done;
        if (rank < 0 || rank >= n) {
            PyErr_Format(PyExc_IndexError, "order_statistics: rank %zd out of range for %zd values", rank, n);
            goto done;
        }
        want[i].rank = rank;
        want[i].slot = i;
    }
    qsort(want, (size_t)nw, sizeof *want, by_rank);
    const double *data = view.buf;
    uint64_t low = UINT64_MAX, high = 0; /* the keys' range, found as they are made */
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = key_of(data[i]);
        keys[i] = key;
        low = key < low ? key : low;
        high = key > high ? key : high;
    }
    if (nw && pick(keys, spare, n, n, n, want, nw, out, map, 1, low, high) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyList_New(nw);
    if (result == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nw; i++) {
        PyObject *value = PyFloat_FromDouble(value_of(out[i]));
        if (value == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, value);
    }
done:
    free(want);
    free(out);
    free(keys);
    free(spare);
    free(map);
    Py_XDECREF(listed);
    PyBuffer_Release(&view);
    return result;
}

#ifdef __SIZEOF_INT128__
/* 2**20 mantissas (under 2**53) or their squares (under 2**106) add up to under 2**127: exact. */
#define SUMMED_AT_ONCE (1 << 20)

/* value as a Python integer */
static PyObject *long_of(__int128 value) {
    unsigned __int128 size = value < 0 ? -(unsigned __int128)value : (unsigned __int128)value;
    PyObject *high = PyLong_FromUnsignedLongLong((unsigned long long)(size >> 64));
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)size);
    PyObject *bits = PyLong_FromLong(64);
    PyObject *shifted = NULL, *whole = NULL, *result = NULL;
    if (high == NULL || low == NULL || bits == NULL)
        goto done;
    shifted = PyNumber_Lshift(high, bits);
    if (shifted == NULL)
        goto done;
    whole = PyNumber_Or(shifted, low);
    if (whole == NULL)
        goto done;
    result = value < 0 ? PyNumber_Negative(whole) : Py_NewRef(whole);
done:
    Py_XDECREF(high);
    Py_XDECREF(low);
    Py_XDECREF(bits);
    Py_XDECREF(shifted);
    Py_XDECREF(whole);
    return result;
}

/* *into += value << shift; 0, or -1 (an exception set) */
static int add_shifted(PyObject **into, __int128 value, long shift) {
    PyObject *number = long_of(value), *places = PyLong_FromLong(shift), *shifted = NULL, *sum = NULL;
    if (number != NULL && places != NULL && (shifted = PyNumber_Lshift(number, places)) != NULL)
        sum = PyNumber_Add(*into, shifted);
    Py_XDECREF(number);
    Py_XDECREF(places);
    Py_XDECREF(shifted);
    if (sum == NULL)
        return -1;
    Py_SETREF(*into, sum);
    return 0;
}

static PyObject *exact_sums(PyObject *Py_UNUSED(module), PyObject *values) {
    Py_buffer view;
    if (float64_values(values, &view, "exact_sums") < 0)
        return NULL;
    PyObject *result = NULL, *total = NULL, *squares = NULL;
    __int128 *sums = NULL, *square_sums = NULL;
    const double *data = view.buf;
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(double);
    int low = INT_MAX, high = INT_MIN, exponent;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!isfinite(data[i])) {
            PyErr_SetString(PyExc_ValueError, "exact_sums: values must be finite");
            goto done;
        }
        if (data[i] != 0) {
            frexp(data[i], &exponent);
            low = exponent < low ? exponent : low;
            high = exponent > high ? exponent : high;
        }
    }
    if (low == INT_MAX) { /* all zero */
        result = Py_BuildValue("(iii)", 0, 0, 0);
        goto done;
    }
    Py_ssize_t size = (Py_ssize_t)(high - low) + 1;
    sums = calloc((size_t)size, sizeof *sums);
    square_sums = calloc((size_t)size, sizeof *square_sums);
    total = PyLong_FromLong(0);
    squares = PyLong_FromLong(0);
    if (sums == NULL || square_sums == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (total == NULL || squares == NULL)
        goto done;
    for (Py_ssize_t start = 0; start < n; start += SUMMED_AT_ONCE) {
        Py_ssize_t stop = n - start > SUMMED_AT_ONCE ? start + SUMMED_AT_ONCE : n;
        for (Py_ssize_t i = start; i < stop; i++) {
            if (data[i] == 0)
                continue;
            double fraction = frexp(data[i], &exponent);
            int64_t mantissa = (int64_t)(fraction * 9007199254740992.0); /* * 2**53: exact */
            sums[exponent - low] += mantissa;
            square_sums[exponent - low] += (__int128)mantissa * mantissa;
        }
        for (Py_ssize_t b = 0; b < size; b++) {
            if (sums[b] == 0 && square_sums[b] == 0)
                continue;
            if (add_shifted(&total, sums[b], (long)b) < 0 || add_shifted(&squares, square_sums[b], 2 * (long)b) < 0)
                goto done;
            sums[b] = square_sums[b] = 0;
        }
    }
    result = Py_BuildValue("(OOi)", total, squares, low - 53);
done:
    free(sums);
    free(square_sums);
    Py_XDECREF(total);
    Py_XDECREF(squares);
    PyBuffer_Release(&view);
    return result;
}
#endif

static PyMethodDef select_functions[] = {
    {"order_statistics", order_statistics, METH_VARARGS,
     "order_statistics(values, ranks) -> the ranks-th smallest (0-based) of a contiguous float64 buffer "
     "without nan, as floats, in the order of ranks (-0.0 ordered before 0.0)."},
#ifdef __SIZEOF_INT128__
    {"exact_sums", exact_sums, METH_O,
     "exact_sums(values) -> (total, squares, low): each finite value of a contiguous float64 buffer is an "
     "integer times 2**low, and those integers add up to total, their squares to squares."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef select_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_select",
    .m_doc = "Order statistics by radix selection, and exact sums (timeline/_select.c).",
    .m_size = -1,
    .m_methods = select_functions,
};

PyMODINIT_FUNC PyInit__select(void) {
    PyObject *module = PyModule_Create(&select_module);
    if (module == NULL)
        return NULL;
    /* The version of the functions above that detect.SELECT_INTERFACE expects: a module built from
     * an older _select.c (an editable install not rebuilt after a pull) is then not used. */
    if (PyModule_AddIntConstant(module, "INTERFACE", 2) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
