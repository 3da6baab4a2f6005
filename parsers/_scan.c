/* The line scanner of the SGLang fast path (parsers/sglang_fast.py): a block of whole lines in one
 * pass, in C.
 *
 * A ShapeIndex holds the shapes the fast path has judged (a line with every digit 1-9 made 0, as
 * bytes.translate does in sglang_fast._zeroed) and their numbers. scan(block) finds each line of a
 * block (each ends in a newline; bytes after the last one are not a line), makes its shape on the
 * fly and looks it up: three int64 arrays, as bytearrays, of each line's shape number (-1: a shape
 * the index does not hold, to be judged by Python and added), start and end (the offset of its
 * newline). It is the numpy reading of sglang_fast._FastFeeder.block, which stays the reference
 * (tests/parsers/test_scan.py compares the two): every offset is checked against the block's
 * length, and a log is untrusted bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define LOW7 0x7F7F7F7F7F7F7F7FULL

/* Each byte 0x31-0x39 ('1'-'9') made 0x30, the others kept: Bit Twiddling Hacks' "determine if a
 * word has a byte between m and n" (https://graphics.stanford.edu/~seander/bithacks.html), exact
 * per byte because no step carries out of a byte: bytes of 0x80 and more are left out by ~x. */
static inline uint64_t zero_digits(uint64_t x) {
    uint64_t low = x & LOW7;
    uint64_t digit = ((ONES * (127 + 0x3A) - low) & ~x & (low + ONES * (127 - 0x30))) & HIGHS;
    return x & ~((digit >> 7) * 0x0F);
}

static inline uint64_t mix(uint64_t h, uint64_t word) {
    h ^= word;
    h *= 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

typedef struct {
    uint64_t hash;
    Py_ssize_t length;
    char *shape; /* NULL: an empty slot */
    int64_t number;
} Slot;

#define RECENT 1024 /* lines shorter than this try the shapes last seen with their length first... */
#define WAYS 4 /* ...the last four: a busy server's lines of one length come in several shapes (the
                * digits of #running-req and #token trade places), and one tried 68% of
                * benchmarks/gen.py's lines at their own shape, four 98% */

typedef struct {
    PyObject_HEAD
    Slot *slots;
    Py_ssize_t capacity; /* a power of two */
    Py_ssize_t count;
    char *scratch; /* one line's shape */
    Py_ssize_t scratch_size;
    Py_ssize_t recent[RECENT][WAYS]; /* by line length: 1 + the slots of the shapes last seen, the
                                      * latest first; 0: none */
} ShapeIndex;

/* The shape of line[0:length] into out (room for length bytes), and its hash: each 8 bytes as a
 * word (the last one padded with zero bytes), then the length. */
static uint64_t shape_of(const char *line, Py_ssize_t length, char *out) {
    uint64_t h = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, line + i, 8);
        word = zero_digits(word);
        memcpy(out + i, &word, 8);
        h = mix(h, word);
    }
    if (i < length) {
        uint64_t word = 0;
        memcpy(&word, line + i, (size_t)(length - i));
        word = zero_digits(word); /* the zero bytes past the line stay zero */
        memcpy(out + i, &word, (size_t)(length - i));
        h = mix(h, word);
    }
    return mix(h, (uint64_t)length);
}

#if defined(__SSE2__) /* every x86-64 processor */
#include <emmintrin.h>

/* Do the 16 bytes at line have the 16 bytes of shape at shape? zero_digits sixteen bytes at once:
 * a byte over '0' and under ':' (a signed compare: bytes of 0x80 and more are negative, never
 * digits) loses its low nibble. */
static inline int same_16(const char *line, const char *shape) {
    __m128i x = _mm_loadu_si128((const __m128i *)line);
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0')), _mm_cmplt_epi8(x, _mm_set1_epi8(':')));
    __m128i zeroed = _mm_andnot_si128(_mm_and_si128(digit, _mm_set1_epi8(0x0F)), x);
    return _mm_movemask_epi8(_mm_cmpeq_epi8(zeroed, _mm_loadu_si128((const __m128i *)shape))) == 0xFFFF;
}
#endif

/* Does line[0:length] have this shape (of the same length)? No hash: a shape last seen with a
 * line's length is most often its own. Sixteen bytes at a time where SSE2 is there (the last
 * sixteen overlap the ones before: no byte outside the line is read), else word by word. */
static int has_shape(const char *line, Py_ssize_t length, const char *shape) {
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    if (length >= 16) {
        for (; i + 16 <= length; i += 16)
            if (!same_16(line + i, shape + i))
                return 0;
        return i == length || same_16(line + length - 16, shape + length - 16);
    }
#endif
    for (; i + 8 <= length; i += 8) {
        uint64_t word, wanted;
        memcpy(&word, line + i, 8);
        memcpy(&wanted, shape + i, 8);
        if (zero_digits(word) != wanted)
            return 0;
    }
    if (i < length) {
        uint64_t word = 0, wanted = 0;
        memcpy(&word, line + i, (size_t)(length - i));
        memcpy(&wanted, shape + i, (size_t)(length - i));
        if (zero_digits(word) != wanted)
            return 0;
    }
    return 1;
}

static Slot *find(ShapeIndex *self, uint64_t hash, const char *shape, Py_ssize_t length) {
    size_t mask = (size_t)self->capacity - 1;
    size_t at = (size_t)hash & mask;
    for (;;) {
        Slot *slot = &self->slots[at];
        if (slot->shape == NULL ||
            (slot->hash == hash && slot->length == length && memcmp(slot->shape, shape, (size_t)length) == 0))
            return slot;
        at = (at + 1) & mask;
    }
}

static void free_slots(Slot *slots, Py_ssize_t capacity) {
    for (Py_ssize_t i = 0; i < capacity; i++)
        PyMem_Free(slots[i].shape);
    PyMem_Free(slots);
}

static int allocate(ShapeIndex *self, Py_ssize_t capacity) {
    Slot *slots = PyMem_Calloc((size_t)capacity, sizeof(Slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Slot *old = self->slots;
    Py_ssize_t old_capacity = self->capacity;
    self->slots = slots;
    self->capacity = capacity;
    memset(self->recent, 0, sizeof(self->recent)); /* slots move */
    for (Py_ssize_t i = 0; i < old_capacity; i++) { /* moved, not copied */
        if (old[i].shape != NULL)
            *find(self, old[i].hash, old[i].shape, old[i].length) = old[i];
    }
    PyMem_Free(old);
    return 0;
}

static int ensure_scratch(ShapeIndex *self, Py_ssize_t length) {
    if (length <= self->scratch_size)
        return 0;
    Py_ssize_t size = length < 4096 ? 4096 : length;
    char *scratch = PyMem_Realloc(self->scratch, (size_t)size);
    if (scratch == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->scratch = scratch;
    self->scratch_size = size;
    return 0;
}

static PyObject *index_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":ShapeIndex", names))
        return NULL;
    ShapeIndex *self = (ShapeIndex *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (allocate(self, 64) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void index_dealloc(ShapeIndex *self) {
    if (self->slots != NULL)
        free_slots(self->slots, self->capacity);
    PyMem_Free(self->scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *index_add(ShapeIndex *self, PyObject *args) {
    Py_buffer shape;
    long long number;
    if (!PyArg_ParseTuple(args, "y*L:add", &shape, &number))
        return NULL;
    PyObject *result = NULL;
    if (number < 0) {
        PyErr_SetString(PyExc_ValueError, "a shape's number is 0 or more");
        goto done;
    }
    if (ensure_scratch(self, shape.len) < 0)
        goto done;
    uint64_t hash = shape_of(shape.buf, shape.len, self->scratch);
    if (shape.len && memcmp(self->scratch, shape.buf, (size_t)shape.len) != 0) { /* scratch: NULL for 0 */
        PyErr_SetString(PyExc_ValueError, "not a shape: it has digits other than 0");
        goto done;
    }
    if (2 * (self->count + 1) > self->capacity && allocate(self, 2 * self->capacity) < 0)
        goto done;
    Slot *slot = find(self, hash, shape.buf, shape.len);
    if (slot->shape == NULL) {
        char *copy = PyMem_Malloc(shape.len ? (size_t)shape.len : 1);
        if (copy == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(copy, shape.buf, (size_t)shape.len);
        slot->shape = copy;
        slot->hash = hash;
        slot->length = shape.len;
        self->count++;
    }
    slot->number = number;
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&shape);
    return result;
}

/* Room for count lines in the three bytearrays of index_scan's columns (each doubled at least). */
static int grow(PyObject **columns, int64_t **cells, Py_ssize_t *capacity, Py_ssize_t count) {
    if (count <= *capacity)
        return 0;
    Py_ssize_t wanted = 2 * *capacity > count ? 2 * *capacity : count;
    for (int c = 0; c < 3; c++) {
        if (PyByteArray_Resize(columns[c], wanted * 8) < 0)
            return -1;
        cells[c] = (int64_t *)PyByteArray_AS_STRING(columns[c]);
    }
    *capacity = wanted;
    return 0;
}

static PyObject *index_scan(ShapeIndex *self, PyObject *args) {
    Py_buffer block;
    if (!PyArg_ParseTuple(args, "y*:scan", &block))
        return NULL;
    PyObject *result = NULL;
    /* ids, starts, ends: bytearrays written in place, shrunk to the lines found */
    PyObject *columns[3] = {PyByteArray_FromStringAndSize(NULL, 0), PyByteArray_FromStringAndSize(NULL, 0),
                            PyByteArray_FromStringAndSize(NULL, 0)};
    int64_t *cells[3] = {NULL, NULL, NULL};
    Py_ssize_t capacity = 0, n = 0;
    const char *data = block.buf;
    const Py_ssize_t size = block.len;
    if (columns[0] == NULL || columns[1] == NULL || columns[2] == NULL || ensure_scratch(self, size) < 0 ||
        grow(columns, cells, &capacity, size / 64 + 64) < 0)
        goto done;
    for (Py_ssize_t start = 0; start < size; n++) {
        const char *newline = memchr(data + start, '\n', (size_t)(size - start));
        if (newline == NULL) /* bytes after the last newline: not a line */
            break;
        Py_ssize_t end = newline - data, length = end - start;
        if (grow(columns, cells, &capacity, n + 1) < 0)
            goto done;
        Slot *slot = NULL;
        Py_ssize_t *recent = length < RECENT ? self->recent[length] : NULL;
        for (int way = 0; recent != NULL && way < WAYS && recent[way]; way++) {
            Slot *guess = &self->slots[recent[way] - 1];
            if (has_shape(data + start, length, guess->shape)) {
                slot = guess;
                Py_ssize_t seen = recent[way]; /* to the front */
                memmove(recent + 1, recent, (size_t)way * sizeof(*recent));
                recent[0] = seen;
                break;
            }
        }
        if (slot == NULL) {
            uint64_t hash = shape_of(data + start, length, self->scratch);
            slot = find(self, hash, self->scratch, length);
            if (slot->shape != NULL && recent != NULL) { /* (not among the ways: has_shape would have matched) */
                memmove(recent + 1, recent, (WAYS - 1) * sizeof(*recent));
                recent[0] = slot - self->slots + 1;
            }
        }
        cells[0][n] = slot->shape == NULL ? -1 : slot->number;
        cells[1][n] = start;
        cells[2][n] = end;
        start = end + 1;
    }
    for (int c = 0; c < 3; c++)
        if (PyByteArray_Resize(columns[c], n * 8) < 0)
            goto done;
    result = PyTuple_Pack(3, columns[0], columns[1], columns[2]);
done:
    for (int c = 0; c < 3; c++)
        Py_XDECREF(columns[c]);
    PyBuffer_Release(&block);
    return result;
}

static const double POWERS_OF_TEN[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};

/* The plain decimal of data[offset:offset + bytes] (bytes <= 8; code: 0 digits only, k + 1 a
 * point with k digits after it), as sglang_fast._decimals reads it, the same SWAR steps (Lemire,
 * "Quickly parsing eight digits", 2022): the digits' low nibbles in the word's top bytes, the
 * point's byte squeezed out, three multiply-shift steps to one integer, divided by the power of
 * ten; exact doubles both, so float(text) exactly. */
static double read_decimal(const unsigned char *data, Py_ssize_t size, int64_t offset, int64_t bytes, int64_t code) {
    uint64_t x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (bytes > 0 && offset <= size - 8) { /* one load, the bytes after the value shifted out */
        memcpy(&x, data + offset, 8);
        x = (x & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - bytes));
    } else
#endif
        for (int64_t j = 0; j < bytes; j++) /* the first character in the lowest byte of the value's bytes */
            x |= (uint64_t)(data[offset + j] & 0x0F) << (8 * (8 - bytes + j));
    if (code) {
        int point = 8 - (int)code; /* the point's byte */
        uint64_t below = (1ULL << (8 * point)) - 1;
        uint64_t above = point == 7 ? 0 : ~((1ULL << (8 * (point + 1))) - 1);
        x = (x & above) | ((x & below) << 8); /* the digits before the point move up over it */
    }
    x = x * 10 + (x >> 8);
    x = ((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32)) +
         ((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))) >>
        32;
    return (double)x / POWERS_OF_TEN[code ? code - 1 : 0];
}

static int64_t item(const Py_buffer *column, Py_ssize_t k) {
    int64_t value;
    memcpy(&value, (const char *)column->buf + 8 * k, 8);
    return value;
}

/* *shape = line k's shape number (ids: the lines'), checked against the tables' shapes; 0, or -1
 * (a ValueError set). */
static int shape_of_line(const Py_buffer *ids, Py_ssize_t k, Py_ssize_t shapes, int64_t *shape) {
    *shape = item(ids, k);
    if (*shape < 0 || *shape >= shapes) {
        PyErr_SetString(PyExc_ValueError, "a line's shape number is not in the tables");
        return -1;
    }
    return 0;
}

static int plain_decimal_fits(const Py_buffer *block, int64_t offset, int64_t bytes, int64_t code) {
    return offset >= 0 && bytes >= 0 && bytes <= 8 && offset <= block->len - bytes && code >= 0 && code <= bytes;
}

/* decimals(block, at, width, point): read_decimal of each value; at, width, point: int64 buffers
 * of one length. A float64 bytearray. */
static PyObject *scan_decimals(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer block, at, width, point;
    if (!PyArg_ParseTuple(args, "y*y*y*y*:decimals", &block, &at, &width, &point))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = at.len / 8;
    if (at.len % 8 || width.len != at.len || point.len != at.len) {
        PyErr_SetString(PyExc_ValueError, "at, width and point: int64 columns of one length");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t offset = item(&at, k), bytes = item(&width, k), code = item(&point, k);
        if (!plain_decimal_fits(&block, offset, bytes, code)) {
            PyErr_SetString(PyExc_ValueError, "a value outside the block, or no plain decimal of up to 8 bytes");
            Py_CLEAR(result);
            goto done;
        }
        out[k] = read_decimal(block.buf, block.len, offset, bytes, code);
    }
done:
    PyBuffer_Release(&block);
    PyBuffer_Release(&at);
    PyBuffer_Release(&width);
    PyBuffer_Release(&point);
    return result;
}

/* series(block, ids, starts, offsets, widths, points, count): count series of a block's lines
 * (each line's shape number and start; offsets, widths and points: count rows of a column a shape
 * number, a series' row saying where its value is in the line, its width, -1: none, and its decimal
 * point code, -1: no plain decimal), in one pass over the lines. For each series, five bytearrays
 * over the lines with a value, written in place (no copy): their numbers in the block and their
 * values' offsets and widths (int64), the plain decimals read (float64, 0 for the others) and
 * which were (bool). */
typedef struct {
    PyObject *columns[5]; /* rows, at, width, numbers, plain: bytearrays of room for every line */
    int64_t *rows, *at, *width;
    double *numbers;
    char *plain;
    Py_ssize_t m;
} Series;

static PyObject *scan_series(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer block, ids, starts, offsets, widths, points;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*n:series", &block, &ids, &starts, &offsets, &widths, &points, &count))
        return NULL;
    PyObject *result = NULL;
    Series *series = NULL;
    Py_ssize_t n = ids.len / 8, shapes = 0;
    if (count < 1 || count > PY_SSIZE_T_MAX / 8 || ids.len % 8 || starts.len != ids.len || offsets.len % (8 * count) ||
        widths.len != offsets.len || points.len != offsets.len) {
        PyErr_SetString(PyExc_ValueError,
                        "ids and starts, offsets, widths and points (count rows each): int64 columns of one length");
        goto done;
    }
    shapes = offsets.len / (8 * count);
    series = PyMem_Calloc((size_t)count, sizeof *series);
    if (series == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    static const int WIDTHS[5] = {8, 8, 8, 8, 1};
    for (Py_ssize_t s = 0; s < count; s++) {
        Series *one = &series[s];
        for (int c = 0; c < 5; c++)
            if ((one->columns[c] = PyByteArray_FromStringAndSize(NULL, n * WIDTHS[c])) == NULL)
                goto done;
        one->rows = (int64_t *)PyByteArray_AS_STRING(one->columns[0]);
        one->at = (int64_t *)PyByteArray_AS_STRING(one->columns[1]);
        one->width = (int64_t *)PyByteArray_AS_STRING(one->columns[2]);
        one->numbers = (double *)PyByteArray_AS_STRING(one->columns[3]);
        one->plain = PyByteArray_AS_STRING(one->columns[4]);
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t shape;
        if (shape_of_line(&ids, k, shapes, &shape) < 0)
            goto done;
        int64_t start = item(&starts, k);
        for (Py_ssize_t s = 0; s < count; s++) {
            Py_ssize_t cell = s * shapes + shape;
            int64_t bytes = item(&widths, cell);
            if (bytes < 0)
                continue;
            int64_t shift = item(&offsets, cell), code = item(&points, cell);
            if (start < 0 || shift < 0 || start > block.len || shift > block.len) {
                PyErr_SetString(PyExc_ValueError, "a line or a value outside the block");
                goto done;
            }
            int64_t offset = start + shift; /* no overflow: both at most the block's length */
            if (offset > block.len - bytes || (code >= 0 && !plain_decimal_fits(&block, offset, bytes, code))) {
                PyErr_SetString(PyExc_ValueError, "a value outside the block, or no plain decimal of up to 8 bytes");
                goto done;
            }
            Series *one = &series[s];
            Py_ssize_t m = one->m++;
            one->rows[m] = k;
            one->at[m] = offset;
            one->width[m] = bytes;
            one->plain[m] = code >= 0;
            one->numbers[m] = code >= 0 ? read_decimal(block.buf, block.len, offset, bytes, code) : 0.0;
        }
    }
    result = PyTuple_New(count);
    for (Py_ssize_t s = 0; result != NULL && s < count; s++) {
        Series *one = &series[s];
        for (int c = 0; c < 5; c++)
            if (PyByteArray_Resize(one->columns[c], one->m * WIDTHS[c]) < 0) {
                Py_CLEAR(result);
                goto done;
            }
        PyObject *columns = PyTuple_Pack(5, one->columns[0], one->columns[1], one->columns[2], one->columns[3],
                                         one->columns[4]);
        if (columns == NULL)
            Py_CLEAR(result);
        else
            PyTuple_SET_ITEM(result, s, columns);
    }
done:
    for (Py_ssize_t s = 0; series != NULL && s < count; s++)
        for (int c = 0; c < 5; c++)
            Py_XDECREF(series[s].columns[c]);
    PyMem_Free(series);
    PyBuffer_Release(&block);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&widths);
    PyBuffer_Release(&points);
    return result;
}

/* stamps(block, rows, ids, starts, clocks, dates): of the stamped lines rows (block line numbers;
 * each line's shape number and start; by shape number, where its "HH:MM:SS" starts and its
 * "YYYY-MM-DD", -1: a time-only stamp), which have a time that is no real one (as
 * sglang_fast._unreal tells: hour under 24, minutes and seconds under 60, by their digits' bytes),
 * as a bool bytearray; the offset of the first dated line's date (-1: none) and whether all the
 * dated lines have that date. */
static PyObject *scan_stamps(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer block, rows, ids, starts, clocks, dates;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*:stamps", &block, &rows, &ids, &starts, &clocks, &dates))
        return NULL;
    PyObject *result = NULL, *bad = NULL;
    Py_ssize_t n = rows.len / 8, lines = ids.len / 8, shapes = clocks.len / 8;
    if (rows.len % 8 || ids.len % 8 || starts.len != ids.len || clocks.len % 8 || dates.len != clocks.len) {
        PyErr_SetString(PyExc_ValueError, "rows, ids and starts, clocks and dates: int64 columns");
        goto done;
    }
    bad = PyByteArray_FromStringAndSize(NULL, n);
    if (bad == NULL)
        goto done;
    const unsigned char *data = block.buf;
    char *out = PyByteArray_AS_STRING(bad);
    int64_t first = -1;
    int one_day = 1;
    for (Py_ssize_t r = 0; r < n; r++) {
        int64_t k = item(&rows, r);
        int64_t shape = k >= 0 && k < lines ? item(&ids, k) : -1;
        if (shape < 0 || shape >= shapes) {
            PyErr_SetString(PyExc_ValueError, "a line not in the block, or its shape not in the tables");
            goto done;
        }
        int64_t start = item(&starts, k), clock = item(&clocks, shape), date = item(&dates, shape);
        if (start < 0 || start > block.len || clock < 0 || clock > block.len - 8 - start || date < -1 ||
            (date >= 0 && date > block.len - 10 - start)) {
            PyErr_SetString(PyExc_ValueError, "a stamp outside the block");
            goto done;
        }
        const unsigned char *time = data + start + clock;
        out[r] = !((time[0] < '2' || (time[0] == '2' && time[1] < '4')) && time[3] < '6' && time[6] < '6');
        if (date >= 0) {
            if (first < 0)
                first = start + date;
            else if (one_day && memcmp(data + first, data + start + date, 10) != 0)
                one_day = 0;
        }
    }
    result = Py_BuildValue("(OLO)", bad, (long long)first, one_day ? Py_True : Py_False);
done:
    Py_XDECREF(bad);
    PyBuffer_Release(&block);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&clocks);
    PyBuffer_Release(&dates);
    return result;
}

/* Days since 0001-01-01 of a date (Python's date.toordinal() - 1), -1 for no real date. */
static int64_t day_number(int64_t year, int64_t month, int64_t day) {
    static const int before_month[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (year < 1 || month < 1 || month > 12 || day < 1)
        return -1;
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day > month_days[month - 1] + (month == 2 && leap))
        return -1;
    int64_t y = year - 1;
    return y * 365 + y / 4 - y / 100 + y / 400 + before_month[month - 1] + (month > 2 && leap) + day - 1;
}

static inline int64_t two_digits(const unsigned char *at) {
    return (at[0] - '0') * 10 + (at[1] - '0');
}

/* dates(block, clocks, dates, base, before, wrap_s, last_day): the stamps of a stretch's stamped
 * lines dated as sglang_fast._Stamps dates them (its numpy reading is the reference): clocks, the
 * offsets of their "HH:MM:SS"; dates, of their "YYYY-MM-DD" (-1: a time-only stamp, dated by the
 * stamp before it, a day later each time its time goes back more than wrap_s seconds; base: the
 * day of those before any dated one; before: the seconds of the stamp before the first, -1 for
 * the first's own). (days, keys) as int64 bytes (keys: HHMMSS as a number), or None when a date
 * is no real one or a day is past last_day. */
static PyObject *scan_dates(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer block, clocks, dates;
    long long base, before, wrap_s, last_day;
    if (!PyArg_ParseTuple(args, "y*y*y*LLLL:dates", &block, &clocks, &dates, &base, &before, &wrap_s, &last_day))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = clocks.len / 8;
    int64_t *days = NULL, *keys = NULL;
    if (clocks.len % 8 || dates.len != clocks.len) {
        PyErr_SetString(PyExc_ValueError, "clocks and dates: int64 columns of one length");
        goto done;
    }
    days = PyMem_Malloc((size_t)(n ? n : 1) * 8);
    keys = PyMem_Malloc((size_t)(n ? n : 1) * 8);
    if (days == NULL || keys == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *data = block.buf;
    int64_t earlier = before, wraps = 0, dated_day = 0, dated_wraps = 0;
    int any_dated = 0, datable = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t clock = item(&clocks, k), date = item(&dates, k);
        if (clock < 0 || clock > block.len - 8 || date < -1 || (date >= 0 && date > block.len - 10)) {
            PyErr_SetString(PyExc_ValueError, "a stamp outside the block");
            goto done;
        }
        const unsigned char *time = data + clock;
        int64_t hour = two_digits(time), minute = two_digits(time + 3), second = two_digits(time + 6);
        int64_t seconds = hour * 3600 + minute * 60 + second;
        keys[k] = hour * 10000 + minute * 100 + second;
        if (k == 0 && earlier < 0)
            earlier = seconds;
        if (date >= 0) {
            const unsigned char *d = data + date;
            int64_t day = day_number(two_digits(d) * 100 + two_digits(d + 2), two_digits(d + 5), two_digits(d + 8));
            if (day < 0)
                datable = 0;
            days[k] = dated_day = day;
            dated_wraps = wraps;
            any_dated = 1;
        } else {
            wraps += earlier - seconds > wrap_s;
            days[k] = (any_dated ? dated_day - dated_wraps : base) + wraps;
        }
        if (days[k] > last_day)
            datable = 0;
        earlier = seconds;
    }
    if (!datable)
        result = Py_NewRef(Py_None);
    else
        result = Py_BuildValue("(y#y#)", (char *)days, n * 8, (char *)keys, n * 8);
done:
    PyMem_Free(days);
    PyMem_Free(keys);
    PyBuffer_Release(&block);
    PyBuffer_Release(&clocks);
    PyBuffer_Release(&dates);
    return result;
}

/* classify(ids, kinds, stats, header, generic): each line's kind (kinds by shape number, ids the
 * lines' shape numbers) and, in one pass, the lines (int64 block line numbers, ascending) of a stats
 * line's kind or a header line's (a stamp), of the stats kind alone, and of the generic kind: four
 * bytearrays, written in place. */
static PyObject *scan_classify(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer ids, kinds;
    long long stats, header, generic;
    if (!PyArg_ParseTuple(args, "y*y*LLL:classify", &ids, &kinds, &stats, &header, &generic))
        return NULL;
    PyObject *result = NULL, *columns[4] = {NULL, NULL, NULL, NULL};
    int64_t *cells[4]; /* code, stamped, stats, generic */
    Py_ssize_t n = ids.len / 8, shapes = kinds.len / 8, counts[4] = {n, 0, 0, 0};
    if (ids.len % 8 || kinds.len % 8) {
        PyErr_SetString(PyExc_ValueError, "ids and kinds: int64 columns");
        goto done;
    }
    for (int c = 0; c < 4; c++) {
        if ((columns[c] = PyByteArray_FromStringAndSize(NULL, n * 8)) == NULL)
            goto done;
        cells[c] = (int64_t *)PyByteArray_AS_STRING(columns[c]);
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t shape;
        if (shape_of_line(&ids, k, shapes, &shape) < 0)
            goto done;
        int64_t kind = item(&kinds, shape);
        cells[0][k] = kind;
        cells[1][counts[1]] = k;
        counts[1] += kind == stats || kind == header;
        cells[2][counts[2]] = k;
        counts[2] += kind == stats;
        cells[3][counts[3]] = k;
        counts[3] += kind == generic;
    }
    for (int c = 1; c < 4; c++)
        if (PyByteArray_Resize(columns[c], counts[c] * 8) < 0)
            goto done;
    result = PyTuple_Pack(4, columns[0], columns[1], columns[2], columns[3]);
done:
    for (int c = 0; c < 4; c++)
        Py_XDECREF(columns[c]);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&kinds);
    return result;
}

/* The 8 bytes at p as a big-endian word: two such words compare as the bytes do (memcmp). */
static inline uint64_t big_endian(const char *p) {
    uint64_t word;
    memcpy(&word, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

/* extremes(block, rows, ids, starts, dates): of the stamped lines rows (block line numbers; each
 * line's shape number and start; by shape number, where its "YYYY-MM-DD" starts, -1: a time-only
 * stamp), the earliest and the latest stamp as (k, k) into rows, or None when a stamp is time-only.
 * In order (each date and "HH:MM:SS" at or after the one before: the common case), the first and the
 * last; else the first of the least and the last of the greatest "YYYY-MM-DD HH:MM:SS" (numpy's
 * argmin, and argmax from the end, of those 19 bytes: sglang_fast._Stamps, the reference). */
static PyObject *scan_extremes(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer block, rows, ids, starts, dates;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*:extremes", &block, &rows, &ids, &starts, &dates))
        return NULL;
    PyObject *result = NULL;
    const char **stamps = NULL;
    Py_ssize_t n = rows.len / 8, lines = ids.len / 8, shapes = dates.len / 8;
    if (n == 0 || rows.len % 8 || ids.len % 8 || starts.len != ids.len || dates.len % 8) {
        PyErr_SetString(PyExc_ValueError, "rows (one or more), ids and starts, dates: int64 columns");
        goto done;
    }
    stamps = PyMem_Malloc((size_t)n * sizeof *stamps);
    if (stamps == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int ordered = 1;
    uint64_t last[3] = {0, 0, 0}; /* the words of the stamp before */
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t row = item(&rows, k), shape = row >= 0 && row < lines ? item(&ids, row) : -1;
        if (shape < 0 || shape >= shapes) {
            PyErr_SetString(PyExc_ValueError, "a row not in the block, or a shape number not in the table");
            goto done;
        }
        int64_t date = item(&dates, shape), start = item(&starts, row);
        if (date < 0) { /* a time-only stamp: dated from the one before it, not here */
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (start < 0 || date > block.len || start > block.len - 19 - date) {
            PyErr_SetString(PyExc_ValueError, "a stamp outside the block");
            goto done;
        }
        const char *stamp = stamps[k] = (const char *)block.buf + start + date;
        /* "YYYY-MM-" and "YY-MM-DD", then "HH:MM:SS", as big-endian words compare as the text does */
        uint64_t head = big_endian(stamp), day = big_endian(stamp + 2), clock = big_endian(stamp + 11);
        if (k && ordered)
            ordered = head > last[0] || (head == last[0] && (day > last[1] || (day == last[1] && clock >= last[2])));
        last[0] = head;
        last[1] = day;
        last[2] = clock;
    }
    Py_ssize_t low = 0, high = n - 1;
    if (!ordered) {
        high = 0;
        for (Py_ssize_t k = 1; k < n; k++) {
            if (memcmp(stamps[k], stamps[low], 19) < 0)
                low = k;
            if (memcmp(stamps[k], stamps[high], 19) >= 0)
                high = k;
        }
    }
    result = Py_BuildValue("(nn)", low, high);
done:
    PyMem_Free(stamps);
    PyBuffer_Release(&block);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&dates);
    return result;
}

static PyObject *index_len(ShapeIndex *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(self->count);
}

static PyMethodDef index_methods[] = {
    {"add", (PyCFunction)index_add, METH_VARARGS,
     "add(shape, number): remember a shape (a line with its digits 1-9 made 0) as number (0 or more)."},
    {"scan", (PyCFunction)index_scan, METH_VARARGS,
     "scan(block) -> (ids, starts, ends): each newline-ended line's shape number (-1: unknown), start "
     "and end (its newline's offset), as int64 bytearrays."},
    {"size", (PyCFunction)index_len, METH_NOARGS, "size(): how many shapes it holds."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ShapeIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "timeline.parsers._scan.ShapeIndex",
    .tp_basicsize = sizeof(ShapeIndex),
    .tp_dealloc = (destructor)index_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ShapeIndex(): line shapes by number, and the scanner of blocks of lines.",
    .tp_methods = index_methods,
    .tp_new = index_new,
};

static PyMethodDef scan_functions[] = {
    {"decimals", scan_decimals, METH_VARARGS,
     "decimals(block, at, width, point) -> the plain decimals at offsets at, as a float64 bytearray."},
    {"classify", scan_classify, METH_VARARGS,
     "classify(ids, kinds, stats, header, generic) -> (code, stamped, stats rows, generic rows): each line's "
     "kind, and the lines of some kinds."},
    {"extremes", scan_extremes, METH_VARARGS,
     "extremes(block, rows, ids, starts, dates) -> (earliest, latest) of the stamped lines rows, or None "
     "when a stamp is time-only."},
    {"stamps", scan_stamps, METH_VARARGS,
     "stamps(block, rows, ids, starts, clocks, dates) -> (bad, first date's offset, one day): the stamped "
     "lines' times that are no real ones."},
    {"dates", scan_dates, METH_VARARGS,
     "dates(block, clocks, dates, base, before, wrap_s, last_day) -> (days, keys) or None: a stretch's "
     "stamps dated."},
    {"series", scan_series, METH_VARARGS,
     "series(block, ids, starts, offsets, widths, points, count) -> a (rows, at, width, numbers, plain) a "
     "series: count series' values in a block's lines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_scan",
    .m_doc = "The SGLang fast path's line scanner (parsers/_scan.c).",
    .m_size = -1,
    .m_methods = scan_functions,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ShapeIndexType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&scan_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&ShapeIndexType);
    if (PyModule_AddObject(module, "ShapeIndex", (PyObject *)&ShapeIndexType) < 0) {
        Py_DECREF(&ShapeIndexType);
        Py_DECREF(module);
        return NULL;
    }
    /* The version of the functions above that sglang_fast.SCANNER_INTERFACE expects: a module built
     * from an older _scan.c (an editable install not rebuilt after a pull) is then not used. */
    if (PyModule_AddIntConstant(module, "INTERFACE", 5) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
