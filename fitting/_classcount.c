/* Characters per class in one pass over a str's own storage (PEP 393: 1, 2 or 4 bytes per code
 * point), with a class table per code point built once per rule. The compiled counterpart of
 * estimate.py's pure-Python _ClassCounter: same classes, same counts (tests/test_classcount.py
 * proves it over arbitrary code points). Optional: setup.py builds it when a C compiler is there;
 * without it, or with WINDOWFIT_PURE=1, estimate.py counts in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_CLASSES 127
#define BMP 0x10000
#define ASTRAL_BLOCKS 0x1000 /* 256-code-point blocks of planes 1-16 */
#define LEAF_FLAG 0x8000
#define LANES 4 /* interleaved tallies: consecutive equal classes do not wait on one counter */
#define SHORT 64 /* below this many code points, one tally */

typedef struct {
    PyObject_HEAD
    int n;
    uint8_t group[MAX_CLASSES]; /* 0 ascii, 1 cjk, 2 other: the seed class each class lies in */
    uint8_t bmp[BMP];           /* class of every code point below U+10000 */
    uint16_t astral[ASTRAL_BLOCKS]; /* a block's class, or LEAF_FLAG | leaf index when classes share it */
    uint8_t *leaves;            /* 256 classes per shared astral block */
    PyObject *weights;          /* tuple of n ints for weighted(), or NULL */
    long long w64[MAX_CLASSES]; /* the same weights, when every one fits in 64 bits (big == 0) */
    int big;
} Counter;

static void
Counter_dealloc(Counter *self)
{
    PyMem_Free(self->leaves);
    Py_XDECREF(self->weights);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Counter(n, fallback, ranges, groups, weights=()): ranges an iterable of (first, last, class) code point
 * ranges, inclusive and not overlapping; groups a bytes of n seed classes (0 ascii, 1 cjk, 2 other); weights
 * n non-negative ints for weighted(), or empty. Code points in no range belong to class fallback. */
static int
Counter_init(Counter *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"n", "fallback", "ranges", "groups", "weights", NULL};
    int n, fallback;
    PyObject *ranges, *weights = NULL;
    Py_buffer groups;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiOy*|O!", kwlist, &n, &fallback, &ranges, &groups,
                                     &PyTuple_Type, &weights)) {
        return -1;
    }
    if (weights != NULL && PyTuple_GET_SIZE(weights) == 0) {
        weights = NULL;
    }
    if (weights != NULL && PyTuple_GET_SIZE(weights) != n) {
        PyBuffer_Release(&groups);
        PyErr_SetString(PyExc_ValueError, "one weight per class, or none");
        return -1;
    }
    self->big = 0;
    for (Py_ssize_t i = 0; weights != NULL && i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(weights, i);
        int overflow = 0;
        long long x = PyLong_Check(w) ? PyLong_AsLongLongAndOverflow(w, &overflow) : -1;
        if (!PyLong_Check(w) || (x < 0 && !overflow) || overflow < 0) {
            PyBuffer_Release(&groups);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "a weight is a non-negative int");
            }
            return -1;
        }
        self->big |= overflow;
        self->w64[i] = x;
    }
    Py_XINCREF(weights);
    Py_XSETREF(self->weights, weights);
    if (n < 1 || n > MAX_CLASSES || fallback < 0 || fallback >= n || groups.len != n) {
        PyBuffer_Release(&groups);
        PyErr_Format(PyExc_ValueError, "1 to %d classes, a fallback among them and one group each", MAX_CLASSES);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        uint8_t g = ((const uint8_t *)groups.buf)[i];
        if (g > 2) {
            PyBuffer_Release(&groups);
            PyErr_SetString(PyExc_ValueError, "a group is 0 (ascii), 1 (cjk) or 2 (other)");
            return -1;
        }
        self->group[i] = g;
    }
    PyBuffer_Release(&groups);
    self->n = n;

    uint8_t *table = PyMem_Malloc(0x110000); /* the whole code space, folded into blocks below */
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(table, fallback, 0x110000);
    PyObject *iter = PyObject_GetIter(ranges);
    if (iter == NULL) {
        PyMem_Free(table);
        return -1;
    }
    PyObject *item;
    while ((item = PyIter_Next(iter)) != NULL) {
        long first, last;
        int cls;
        int ok = PyArg_ParseTuple(item, "lli;a range is (first, last, class)", &first, &last, &cls);
        Py_DECREF(item);
        if (!ok) {
            Py_DECREF(iter);
            PyMem_Free(table);
            return -1;
        }
        if (first < 0 || first > last || last > 0x10FFFF || cls < 0 || cls >= n) {
            Py_DECREF(iter);
            PyMem_Free(table);
            PyErr_Format(PyExc_ValueError, "not a code point range of a class: %ld-%ld (%d)", first, last, cls);
            return -1;
        }
        memset(table + first, cls, (size_t)(last - first + 1));
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        PyMem_Free(table);
        return -1;
    }
    memcpy(self->bmp, table, BMP);
    int shared = 0;
    for (int b = 0; b < ASTRAL_BLOCKS; b++) {
        const uint8_t *block = table + BMP + ((size_t)b << 8);
        if (memcmp(block, block + 1, 255) != 0) {
            shared++;
        }
    }
    PyMem_Free(self->leaves);
    self->leaves = shared ? PyMem_Malloc((size_t)shared << 8) : NULL;
    if (shared && self->leaves == NULL) {
        PyMem_Free(table);
        PyErr_NoMemory();
        return -1;
    }
    int leaf = 0;
    for (int b = 0; b < ASTRAL_BLOCKS; b++) {
        const uint8_t *block = table + BMP + ((size_t)b << 8);
        if (memcmp(block, block + 1, 255) == 0) {
            self->astral[b] = block[0];
        }
        else {
            memcpy(self->leaves + ((size_t)leaf << 8), block, 256);
            self->astral[b] = (uint16_t)(LEAF_FLAG | leaf);
            leaf++;
        }
    }
    PyMem_Free(table);
    return 0;
}

static inline uint8_t
class_of(const Counter *self, Py_UCS4 cp)
{
    if (cp < BMP) {
        return self->bmp[cp];
    }
    uint16_t a = self->astral[(cp >> 8) - (BMP >> 8)];
    return (a & LEAF_FLAG) ? self->leaves[((size_t)(a & ~LEAF_FLAG) << 8) | (cp & 0xFF)] : (uint8_t)a;
}

/* Tallies per class of text into out[n]; -1 with an exception set if text is not a str. */
static int
tally(const Counter *self, PyObject *text, Py_ssize_t *out)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "count() needs a str, not %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {
        return -1;
    }
#endif
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const int n = self->n;
    Py_ssize_t lanes[LANES][MAX_CLASSES];
    Py_ssize_t i = 0;
    if (len < SHORT) { /* one lane: clearing four costs more than it saves */
        memset(out, 0, sizeof(Py_ssize_t) * (size_t)n);
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *p = data;
            for (; i < len; i++) {
                out[self->bmp[p[i]]]++;
            }
        }
        else if (kind == PyUnicode_2BYTE_KIND) {
            const Py_UCS2 *p = data;
            for (; i < len; i++) {
                out[self->bmp[p[i]]]++;
            }
        }
        else {
            const Py_UCS4 *p = data;
            for (; i < len; i++) {
                out[class_of(self, p[i])]++;
            }
        }
        return 0;
    }
    for (int k = 0; k < LANES; k++) {
        memset(lanes[k], 0, sizeof(Py_ssize_t) * (size_t)n);
    }
#define TALLY(CLASS)                                                                                                  \
    for (; i + LANES <= len; i += LANES) {                                                                            \
        lanes[0][CLASS(i)]++;                                                                                         \
        lanes[1][CLASS(i + 1)]++;                                                                                     \
        lanes[2][CLASS(i + 2)]++;                                                                                     \
        lanes[3][CLASS(i + 3)]++;                                                                                     \
    }                                                                                                                 \
    for (; i < len; i++) {                                                                                            \
        lanes[0][CLASS(i)]++;                                                                                         \
    }
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = data;
        const uint8_t *bmp = self->bmp;
#define CLASS1(j) bmp[p[j]]
        TALLY(CLASS1)
    }
    else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *p = data;
        const uint8_t *bmp = self->bmp;
#define CLASS2(j) bmp[p[j]]
        TALLY(CLASS2)
    }
    else {
        const Py_UCS4 *p = data;
#define CLASS4(j) class_of(self, p[j])
        TALLY(CLASS4)
    }
#undef TALLY
    for (int c = 0; c < n; c++) {
        out[c] = lanes[0][c] + lanes[1][c] + lanes[2][c] + lanes[3][c];
    }
    return 0;
}

/* count(text) -> (ascii, cjk, other, per_class): the seed's three classes and this rule's own. */
static PyObject *
Counter_count(Counter *self, PyObject *text)
{
    Py_ssize_t out[MAX_CLASSES];
    if (tally(self, text, out) < 0) {
        return NULL;
    }
    Py_ssize_t groups[3] = {0, 0, 0};
    PyObject *classes = PyTuple_New(self->n);
    if (classes == NULL) {
        return NULL;
    }
    for (int c = 0; c < self->n; c++) {
        groups[self->group[c]] += out[c];
        PyObject *v = PyLong_FromSsize_t(out[c]);
        if (v == NULL) {
            Py_DECREF(classes);
            return NULL;
        }
        PyTuple_SET_ITEM(classes, c, v);
    }
    PyObject *result = PyTuple_New(4);
    if (result == NULL) {
        Py_DECREF(classes);
        return NULL;
    }
    for (int g = 0; g < 3; g++) {
        PyObject *v = PyLong_FromSsize_t(groups[g]);
        if (v == NULL) {
            Py_DECREF(classes);
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, g, v);
    }
    PyTuple_SET_ITEM(result, 3, classes);
    return result;
}

/* count_groups(text) -> (ascii, cjk, other): only the seed's three classes. */
static PyObject *
Counter_count_groups(Counter *self, PyObject *text)
{
    Py_ssize_t out[MAX_CLASSES];
    if (tally(self, text, out) < 0) {
        return NULL;
    }
    Py_ssize_t groups[3] = {0, 0, 0};
    for (int c = 0; c < self->n; c++) {
        groups[self->group[c]] += out[c];
    }
    return Py_BuildValue("(nnn)", groups[0], groups[1], groups[2]);
}

/* weighted(text) -> sum(count_i * weight_i) over the classes of text: a rule's tokens of text times its
 * denominator, without a tuple of counts (Estimator.block). In 64-bit integers while nothing overflows,
 * else in Python's integers (the same exact result). */
static PyObject *
Counter_weighted(Counter *self, PyObject *text)
{
    if (self->weights == NULL) {
        PyErr_SetString(PyExc_ValueError, "this counter was made without weights");
        return NULL;
    }
    Py_ssize_t out[MAX_CLASSES];
    if (tally(self, text, out) < 0) {
        return NULL;
    }
    int c = 0;
#if defined(__GNUC__) || defined(__clang__)
    if (!self->big) {
        long long acc = 0;
        for (; c < self->n; c++) {
            long long p;
            if (__builtin_mul_overflow((long long)out[c], self->w64[c], &p) || __builtin_add_overflow(acc, p, &acc)) {
                break;
            }
        }
        if (c == self->n) {
            return PyLong_FromLongLong(acc);
        }
    }
#endif
    PyObject *sum = PyLong_FromLong(0);
    for (c = 0; sum != NULL && c < self->n; c++) {
        PyObject *k = PyLong_FromSsize_t(out[c]);
        PyObject *p = k == NULL ? NULL : PyNumber_Multiply(k, PyTuple_GET_ITEM(self->weights, c));
        Py_XDECREF(k);
        if (p == NULL) {
            Py_DECREF(sum);
            return NULL;
        }
        Py_SETREF(sum, PyNumber_Add(sum, p));
        Py_DECREF(p);
    }
    return sum;
}

/* dot(a, b) -> sum(a[i] * b[i]) over two tuples of ints of one length: in 64-bit integers while
 * nothing overflows, else in Python's integers (the same exact result). */
static PyObject *
dot(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "dot() takes two tuples of ints");
        return NULL;
    }
    PyObject *a = args[0], *b = args[1];
    Py_ssize_t len = PyTuple_GET_SIZE(a);
    if (PyTuple_GET_SIZE(b) != len) {
        PyErr_SetString(PyExc_ValueError, "dot() needs two tuples of one length");
        return NULL;
    }
#if defined(__GNUC__) || defined(__clang__)
    long long acc = 0;
    Py_ssize_t i = 0;
    for (; i < len; i++) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(a, i), &overflow);
        if (overflow) {
            break;
        }
        if (x == -1 && PyErr_Occurred()) {
            return NULL;
        }
        long long y = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(b, i), &overflow);
        if (overflow) {
            break;
        }
        if (y == -1 && PyErr_Occurred()) {
            return NULL;
        }
        long long p;
        if (__builtin_mul_overflow(x, y, &p) || __builtin_add_overflow(acc, p, &acc)) {
            break;
        }
    }
    if (i == len) {
        return PyLong_FromLongLong(acc);
    }
#endif
    PyObject *sum = PyLong_FromLong(0);
    for (Py_ssize_t j = 0; sum != NULL && j < len; j++) {
        PyObject *p = PyNumber_Multiply(PyTuple_GET_ITEM(a, j), PyTuple_GET_ITEM(b, j));
        if (p == NULL) {
            Py_DECREF(sum);
            return NULL;
        }
        Py_SETREF(sum, PyNumber_Add(sum, p));
        Py_DECREF(p);
    }
    return sum;
}

/* brackets(data) -> how many '[' and '{' bytes a bytes object holds: the bound the JSON readers check a
 * line's nesting depth against (fitting/_json.py, MAX_DEPTH) before they walk it, in one pass instead of two
 * bytes.count() calls. '[' (0x5B) and '{' (0x7B) differ only in bit 0x20, and no other byte ORed with 0x20
 * gives 0x7B, so one compare per byte, which compilers vectorise. */
static PyObject *
brackets(PyObject *module, PyObject *data)
{
    (void)module;
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "brackets() takes bytes");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        count += (p[i] | 0x20) == 0x7B;
    }
    return PyLong_FromSsize_t(count);
}

static PyMethodDef Counter_methods[] = {
    {"count", (PyCFunction)Counter_count, METH_O, "count(text) -> (ascii, cjk, other, per_class)"},
    {"count_groups", (PyCFunction)Counter_count_groups, METH_O, "count_groups(text) -> (ascii, cjk, other)"},
    {"weighted", (PyCFunction)Counter_weighted, METH_O, "weighted(text) -> sum of count_i * weight_i"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "windowfit.fitting._classcount.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_dealloc = (destructor)Counter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counter(n, fallback, ranges, groups, weights=()): characters per class of a rule, from a table per code point.",
    .tp_methods = Counter_methods,
    .tp_init = (initproc)Counter_init,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef module_methods[] = {
    {"dot", (PyCFunction)(void (*)(void))dot, METH_FASTCALL, "dot(a, b) -> sum of a[i] * b[i], exactly"},
    {"brackets", (PyCFunction)brackets, METH_O, "brackets(data) -> count of b'[' and b'{' in data"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "windowfit.fitting._classcount",
    .m_doc = "Characters per class of an estimator rule, counted in C (see fitting/estimate.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__classcount(void)
{
    if (PyType_Ready(&CounterType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(m, "Counter", (PyObject *)&CounterType) < 0) {
        Py_DECREF(&CounterType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
