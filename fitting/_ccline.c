/* One Claude Code JSON Lines line scanned straight from its bytes, for the fold of fitting/ccfold.py: the
 * line validated as JSON as strictly as orjson reads it, and only what the fold reads from it returned (the
 * envelope's ids, the message's id and usage, and its content summed as ccfold._blocks sums it), without the
 * Python objects orjson.loads would build. Whatever it is not sure of (invalid JSON or UTF-8, a byte order
 * mark, lone surrogates, floats or huge integers where their value or text counts, duplicates among the keys
 * it reads, keys written with escapes where keys are read, nesting near _json.MAX_DEPTH, a shape the fold
 * refuses) it does not guess: scan() returns None and ccfold.py reads the line as before (orjson.loads and
 * ccfold._record, the reference the tests compare this with). Optional like _classcount: setup.py builds it
 * when a C compiler is there; without it, or with WINDOWFIT_PURE=1, the fold reads every line in Python.
 *
 * Characters are counted per group (0 ascii, 1 cjk, 2 other) from a Table built from the same ranges as
 * estimate.py builds the seed's compiled Counter from (estimate._check_classes of its classes), so the
 * classes are the counter's. A tool_use block's characters are those of its input as orjson.dumps writes it
 * again: compact, keys in input order, strings with '"', '\\' and control characters escaped (\b \t \n \f \r,
 * the others \u00XX; 0x7f, U+2028 and all else as they are), integers as written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
/* SSE2 (every x86-64 has it) reads strings a block at a time; without it, or built with -DCCLINE_SCALAR (as
 * tests/test_ccline.py builds it, to hold it to the same records), string() reads character by character. */
#if defined(__SSE2__) && !defined(CCLINE_SCALAR)
#define CCLINE_SSE2 1
#include <emmintrin.h>
#endif

#define CODE_POINTS 0x110000
#define MAX_NESTING 190 /* below _json.MAX_DEPTH (200): deeper lines are the Python path's to judge */
#define MAX_KEYS 512    /* keys of one object inside a tool input checked for duplicates; more: defer */
#define MAX_DIGITS 18   /* integer digits read exactly (orjson reads up to 64 bits; past 18 digits: defer) */

/* ---------------------------------------------------------------------------------------------------- */
/* Table: the group of every code point. */

/* The group of a UTF-8 character from its first two bytes alone, for string()'s blocks: PAIRS entries
 * indexed by PAIR(lead, second) (the low six bits of each), for a lead C2-F4 and a continuation byte: the
 * group + 4 * (the character's bytes - 2) when every code point the two bytes begin has that one group (a
 * two-byte character's own; 64 code points for three bytes, 4096 for four), else SLOW, as for an overlong
 * form, a surrogate, a code point past U+10FFFF or a byte that cannot lead (C0, C1, F5-FF): those are read
 * character by character. */
#define PAIRS 0x4000
#define PAIR(lead, second) (((lead) & 0x3F) | (((second) & 0x3F) << 8))
#define SLOW 3

typedef struct {
    PyObject_HEAD
    uint8_t *group; /* CODE_POINTS entries */
    uint8_t *pair;  /* PAIRS entries, derived from group */
    uint8_t two;    /* the group of every code point 0x80-0x7FF (all two-byte characters), or SLOW */
} Table;

static void
Table_dealloc(Table *self)
{
    PyMem_Free(self->group);
    PyMem_Free(self->pair);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The group of code points first to first + n - 1, or SLOW when they are not all of one. */
static uint8_t
one_group(const uint8_t *group, uint32_t first, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        if (group[first + i] != group[first]) {
            return SLOW;
        }
    }
    return group[first];
}

/* The pair table of a group table (see PAIRS), or NULL when out of memory. */
static uint8_t *
pair_table(const uint8_t *group)
{
    uint8_t *pair = PyMem_Malloc(PAIRS);
    if (pair == NULL) {
        return NULL;
    }
    memset(pair, SLOW, PAIRS);
    for (uint32_t lead = 0xC2; lead <= 0xF4; lead++) {
        for (uint32_t second = 0x80; second <= 0xBF; second++) {
            uint8_t *at = &pair[PAIR(lead, second)], g = SLOW;
            if (lead <= 0xDF) {
                g = group[((lead & 0x1F) << 6) | (second & 0x3F)];
            }
            else if (lead <= 0xEF) {
                if (!((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F))) {
                    g = one_group(group, ((lead & 0x0F) << 12) | ((second & 0x3F) << 6), 64);
                }
            }
            else if (!((lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F))) {
                g = one_group(group, ((lead & 0x07) << 18) | ((second & 0x3F) << 12), 4096);
            }
            *at = g == SLOW ? SLOW : (uint8_t)(g + 4 * (lead <= 0xDF ? 0 : lead <= 0xEF ? 1 : 2));
        }
    }
    return pair;
}

/* Table(n, fallback, ranges, groups): as _classcount.Counter's arguments. */
static int
Table_init(Table *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"n", "fallback", "ranges", "groups", NULL};
    int n, fallback;
    PyObject *ranges;
    Py_buffer groups;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiOy*", kwlist, &n, &fallback, &ranges, &groups)) {
        return -1;
    }
    uint8_t group_of[128];
    if (n < 1 || n > 127 || fallback < 0 || fallback >= n || groups.len != n) {
        PyBuffer_Release(&groups);
        PyErr_SetString(PyExc_ValueError, "1 to 127 classes, a fallback among them and one group each");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        group_of[i] = ((const uint8_t *)groups.buf)[i];
        if (group_of[i] > 2) {
            PyBuffer_Release(&groups);
            PyErr_SetString(PyExc_ValueError, "a group is 0 (ascii), 1 (cjk) or 2 (other)");
            return -1;
        }
    }
    PyBuffer_Release(&groups);
    uint8_t *table = PyMem_Malloc(CODE_POINTS);
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(table, group_of[fallback], CODE_POINTS);
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
        if (!ok || first < 0 || first > last || last >= CODE_POINTS || cls < 0 || cls >= n) {
            Py_DECREF(iter);
            PyMem_Free(table);
            if (ok) {
                PyErr_Format(PyExc_ValueError, "not a code point range of a class: %ld-%ld (%d)", first, last, cls);
            }
            return -1;
        }
        memset(table + first, group_of[cls], (size_t)(last - first + 1));
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        PyMem_Free(table);
        return -1;
    }
    uint8_t *pair = pair_table(table);
    if (pair == NULL) {
        PyMem_Free(table);
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(self->group);
    PyMem_Free(self->pair);
    self->group = table;
    self->pair = pair;
    self->two = one_group(table, 0x80, 0x800 - 0x80);
    return 0;
}

/* groups(text) -> (ascii, cjk, other) of a str, for the tests (the table against estimate._groups). */
static PyObject *
Table_groups(Table *self, PyObject *text)
{
    if (self->group == NULL || !PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "groups() needs a str and a built table");
        return NULL;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), out[3] = {0, 0, 0};
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < len; i++) {
        out[self->group[PyUnicode_READ(kind, data, i)]]++;
    }
    return Py_BuildValue("(nnn)", out[0], out[1], out[2]);
}

static PyMethodDef Table_methods[] = {
    {"groups", (PyCFunction)Table_groups, METH_O, "groups(text) -> (ascii, cjk, other)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "windowfit.fitting._ccline.Table",
    .tp_basicsize = sizeof(Table),
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(n, fallback, ranges, groups): the group (ascii, cjk, other) of every code point.",
    .tp_methods = Table_methods,
    .tp_init = (initproc)Table_init,
    .tp_new = PyType_GenericNew,
};

/* ---------------------------------------------------------------------------------------------------- */
/* Scanner: one fold's reader of lines, with the tokens it has added per block kind. */

enum { K_TEXT, K_THINKING, K_CALL, K_RESULT, KINDS };
static const char *const KIND_NAMES[KINDS] = {"text", "thinking", "tool_call", "tool_result"};

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
} Span;

/* One message line's tokens per block kind, for the fold to take a left-out line's back (kinds_of). */
typedef struct {
    int64_t line;
    int64_t add[KINDS];
    uint8_t present; /* bit k: a block of kind k met (its tokens may be 0) */
} LineKinds;

typedef struct {
    PyObject_HEAD
    Table *table;
    int64_t wa, wc, wo, den, bo;
    int64_t fa, fc, fo, fden; /* the floor rule's weights (size.FLOOR_RULE), for ccplan: 0 0 0 1 counts none */
    int64_t sums[KINDS];
    uint8_t present[KINDS];
    Span *keys; /* the keys of the objects open inside a tool input, for duplicates */
    Py_ssize_t nkeys;
    int64_t line;    /* the number (from 1) of the line scan_lines is scanning; 0 in scan() */
    LineKinds *log;  /* each message line's sums per kind, as scan_lines read them (in line order) */
    Py_ssize_t nlog, caplog;
} Scanner;

static PyObject *S_user, *S_assistant, *S_unknown, *S_empty, *S_call, *S_result, *S_empty_tuple;

static void
Scanner_dealloc(Scanner *self)
{
    Py_XDECREF(self->table);
    PyMem_Free(self->keys);
    PyMem_Free(self->log);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Scanner(table, wa, wc, wo, denominator, block_overhead, fa=0, fc=0, fo=0, fden=1): ScriptRule._weights and
 * block_overhead_tokens, and the floor rule's weights (each block's floor: ccfold._floor). */
static int
Scanner_init(Scanner *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"table", "wa", "wc", "wo", "denominator", "block_overhead", "fa", "fc", "fo", "fden", NULL};
    PyObject *table;
    long long wa, wc, wo, den, bo, fa = 0, fc = 0, fo = 0, fden = 1;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwds, "O!LLLLL|LLLL", kwlist, &TableType, &table, &wa, &wc, &wo, &den, &bo, &fa, &fc, &fo, &fden)) {
        return -1;
    }
    if (((Table *)table)->group == NULL || wa < 0 || wc < 0 || wo < 0 || den <= 0 || bo < 0 || fa < 0 || fc < 0 ||
        fo < 0 || fden <= 0) {
        PyErr_SetString(PyExc_ValueError, "a built table, weights >= 0, a denominator > 0, an overhead >= 0");
        return -1;
    }
    Py_INCREF(table);
    Py_XSETREF(self->table, (Table *)table);
    self->wa = wa, self->wc = wc, self->wo = wo, self->den = den, self->bo = bo;
    self->fa = fa, self->fc = fc, self->fo = fo, self->fden = fden;
    memset(self->sums, 0, sizeof self->sums);
    memset(self->present, 0, sizeof self->present);
    self->line = 0;
    self->nlog = 0;
    if (self->keys == NULL) {
        self->keys = PyMem_Malloc(sizeof(Span) * MAX_KEYS * 4);
        if (self->keys == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* The parser's state over one line. ok() is 0 while it goes on; any hazard sets defer. */
typedef struct {
    const uint8_t *p, *end;
    const uint8_t *group, *pair; /* the table's */
    uint64_t two;                /* INC of the table's two-byte group, or 0 when they have none */
    int depth;
    Scanner *s;
} P;

#define DEFER -1

static inline void
ws(P *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\n' || *x->p == '\r' || *x->p == '\t')) {
        x->p++;
    }
}

static inline int
hexval(uint8_t c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c |= 0x20;
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

static inline int
hex4(const uint8_t *p)
{
    int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);
    if ((a | b | c | d) < 0) {
        return -1;
    }
    return (a << 12) | (b << 8) | (c << 4) | d;
}

/* The escape at *pp (its backslash), validated: its character counted into k, what orjson's re-serialisation
 * writes beyond one character into *ex, and *pp moved past it. */
static inline int
escape(const uint8_t **pp, const uint8_t *end, const uint8_t *g, int64_t k[3], int64_t *ex)
{
    const uint8_t *p = *pp;
    uint32_t cp;
    if (end - p < 2) {
        return DEFER;
    }
    switch (p[1]) {
    case '/':
        k[0]++;
        *pp = p + 2;
        return 0;
    case '"':
    case '\\':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        k[0]++, (*ex)++;
        *pp = p + 2;
        return 0;
    case 'u':
        break;
    default:
        return DEFER;
    }
    if (end - p < 6) {
        return DEFER;
    }
    int h = hex4(p + 2);
    if (h < 0) {
        return DEFER;
    }
    p += 6;
    if (h >= 0xDC00 && h <= 0xDFFF) {
        return DEFER; /* a lone low surrogate */
    }
    if (h >= 0xD800 && h <= 0xDBFF) {
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u') {
            return DEFER; /* a lone high surrogate */
        }
        int l = hex4(p + 2);
        if (l < 0xDC00 || l > 0xDFFF) {
            return DEFER;
        }
        p += 6;
        cp = 0x10000 + (((uint32_t)h - 0xD800) << 10) + ((uint32_t)l - 0xDC00);
        k[g[cp]]++;
    }
    else if (h < 0x20) {
        k[0]++;
        *ex += (h == 8 || h == 9 || h == 10 || h == 12 || h == 13) ? 1 : 5;
    }
    else if (h == '"' || h == '\\') {
        k[0]++, (*ex)++;
    }
    else {
        k[g[h]]++;
    }
    *pp = p;
    return 0;
}

#if defined(CCLINE_SSE2)
/* The set bits of a 16-bit mask (x86-64's baseline has no popcnt instruction). */
static const uint8_t POP8[256] = {
#define B2(n) n, n + 1, n + 1, n + 2
#define B4(n) B2(n), B2(n + 1), B2(n + 1), B2(n + 2)
#define B6(n) B4(n), B4(n + 1), B4(n + 1), B4(n + 2)
    B6(0), B6(1), B6(1), B6(2)
#undef B2
#undef B4
#undef B6
};

/* The escapes string() takes inside a block, by the byte after the backslash: 1 + what orjson's
 * re-serialisation writes beyond one character (it writes \/ as /, the others as they are); 0: any other. */
static const uint8_t ESCAPES[256] = {['"'] = 2, ['\\'] = 2, ['/'] = 1, ['b'] = 2, ['f'] = 2, ['n'] = 2, ['r'] = 2, ['t'] = 2};

/* What one character adds to a block's count, by its pair table entry: one to its group's lane (16 bits
 * each, the last one counting SLOW characters), less its bytes (its group + 4 * (bytes - 2)), for the
 * block's count starts at its bytes and so ends with its ASCII characters in the first lane. */
#define L(g, n) (((uint64_t)1 << (16 * (g))) - (n))
static const uint64_t INC[16] = {L(0, 2), L(1, 2), L(2, 2), L(3, 0), L(0, 3), L(1, 3), L(2, 3), L(3, 0),
                                  L(0, 4), L(1, 4), L(2, 4), L(3, 0), L(3, 0), L(3, 0), L(3, 0), L(3, 0)};
#undef L

/* What a block's two-byte character adds when all of them are of one group (see string()), else 0. */
static inline uint64_t
two_inc(const Table *t)
{
    return t->two == SLOW ? 0 : INC[t->two];
}
#else
static inline uint64_t
two_inc(const Table *t)
{
    (void)t;
    return 0;
}
#endif

/* A string at x->p (its opening quote): validated, its decoded characters counted per group into cnt, and
 * into *extra the characters orjson's re-serialisation adds (escapes beyond one character, not the quotes).
 * *span the raw text between the quotes, *escaped whether it holds a backslash.
 *
 * 32 bytes at a time where SSE2 is there. A block of ASCII without a byte a string stops at ('"', '\\', a
 * control) is counted whole. Any other block is classed by compares (ASCII, continuation bytes, leads of
 * 2, 3 and 4 bytes, stops) and its UTF-8 up to its first stop checked at once: each lead followed by as
 * many continuation bytes as it needs, no other continuation byte, the block's first ones those the last
 * block's last character still needed (a character may run from one block into the next: the bytes it
 * still needs are carried). ASCII characters are counted from the masks, each other character's group read
 * from the pair table (a block of two-byte characters counted at once when the table gives all of them one
 * group). A block whose check fails, or with a SLOW pair, is read character by character below, which
 * defers where the text is not valid, as are the line's last 32 bytes. The blocks move on by 32 bytes
 * whatever they hold, up to a stop: where the next block starts does not wait for this one's masks. */
static int
string_read(P *x, int64_t cnt[3], int64_t *extra, Span *span, int *escaped)
{
    const uint8_t *p = x->p + 1, *end = x->end, *until;
    const uint8_t *g = x->group;
    int64_t k[3] = {0, 0, 0}, ex = 0;
    int esc = 0;
    const uint8_t *start = p;
    uint32_t cp;
blocks:
#if defined(CCLINE_SSE2)
    {
        const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x20);
        const __m128i below_lead = _mm_set1_epi8((char)0xC0), below_e0 = _mm_set1_epi8((char)0xDF),
                      below_f0 = _mm_set1_epi8((char)0xEF), below_c2 = _mm_set1_epi8((char)0xC2);
        const uint8_t *pair = x->pair;
        const uint64_t two = x->two; /* INC of every two-byte character, when they are all of one group */
        uint64_t lanes = 0;          /* the characters of each group, in INC's lanes, flushed into k */
        int n = 0; /* blocks added to lanes since the last flush: BLOCKS of at most 33 characters fit in 16 bits */
        uint32_t carry = 0;          /* the continuation bytes the last block's last character still needs */
#define MASK(cmp) ((uint32_t)_mm_movemask_epi8(cmp(v0)) | ((uint32_t)_mm_movemask_epi8(cmp(v1)) << 16))
#define HIGH(v) (v)
#define CONT(v) _mm_cmplt_epi8(v, below_lead)
#define L3(v) _mm_cmpgt_epi8(v, below_e0)
#define L4(v) _mm_cmpgt_epi8(v, below_f0)
#define C01(v) _mm_cmplt_epi8(v, below_c2)
#define BLOCKS 1985
#define FLUSH() (k[0] += (int64_t)(lanes & 0xFFFF), k[1] += (int64_t)((lanes >> 16) & 0xFFFF), \
                 k[2] += (int64_t)((lanes >> 32) & 0xFFFF), lanes = 0, n = 0)
    probe: /* at the start and after an escape: most keys, ids and runs between escapes are short ASCII */
        if (end - p > 32) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)), _mm_cmplt_epi8(v, low)));
            if ((m & (0 - m) & ~(unsigned)_mm_movemask_epi8(v)) != 0) { /* ASCII up to a stop */
                lanes += (unsigned)__builtin_ctz(m);
                p += __builtin_ctz(m);
                goto stop;
            }
        }
        /* a lead at the block's last byte has its pair read from the byte after the block: 33 bytes */
        while (end - p > 32) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)p), v1 = _mm_loadu_si128((const __m128i *)(p + 16));
            /* signed: bytes >= 0x80 are below 0x20 too, so this finds stops and non-ASCII */
            __m128i s0 = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, quote), _mm_cmpeq_epi8(v0, slash)),
                                      _mm_cmplt_epi8(v0, low));
            __m128i s1 = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v1, quote), _mm_cmpeq_epi8(v1, slash)),
                                      _mm_cmplt_epi8(v1, low));
            if ((_mm_movemask_epi8(_mm_or_si128(s0, s1)) | carry) == 0) {
                lanes += 32;
                p += 32;
                if (++n == BLOCKS) {
                    FLUSH();
                }
                continue;
            }
            uint32_t high = MASK(HIGH); /* bytes >= 0x80 */
            uint32_t stops = ((uint32_t)_mm_movemask_epi8(s0) | ((uint32_t)_mm_movemask_epi8(s1) << 16)) & ~high;
            unsigned first = 32;
            uint32_t in = 0xFFFFFFFF; /* the bytes before the first stop */
            if (stops != 0) {
                first = (unsigned)__builtin_ctz(stops);
                in = ((uint32_t)1 << first) - 1;
                if (((high & in) | carry) == 0) {
                    /* ASCII up to the stop; escapes like \n and \" taken here, and the ASCII after them up to the
                     * next stop, from this block's masks (tool results of code hold one every few bytes) */
                    unsigned at = 0;
                    for (;;) {
                        lanes += first - at;
                        unsigned e = ESCAPES[p[first + 1]]; /* p[32] is the line's, as above */
                        if (p[first] != '\\' || e == 0) {
                            p += first;
                            goto stop; /* the end, a control character, or a \u escape */
                        }
                        esc = 1;
                        lanes += 1;
                        ex += e - 1;
                        at = first + 2;
                        if (at >= 32) {
                            break;
                        }
                        uint32_t rest = stops & ((uint32_t)0xFFFFFFFF << at);
                        first = rest ? (unsigned)__builtin_ctz(rest) : 32;
                        if ((high & (rest ? (rest & (0 - rest)) - 1 : 0xFFFFFFFF) & ((uint32_t)0xFFFFFFFF << at)) != 0) {
                            break; /* a byte >= 0x80 before the next stop: the blocks go on from it */
                        }
                        if (first == 32) {
                            lanes += 32 - at;
                            at = 32;
                            break;
                        }
                    }
                    p += at;
                    if (++n == BLOCKS) {
                        FLUSH();
                    }
                    continue;
                }
            }
            /* signed compares: 80-BF are below C0; E0-FF above DF and F0-FF above EF, as ASCII is */
            uint32_t cont = MASK(CONT) & in, leads = high & ~cont & in;
            uint32_t l3 = MASK(L3) & high & in, l4 = MASK(L4) & high & in;
            uint64_t want = ((uint64_t)leads << 1) | ((uint64_t)l3 << 2) | ((uint64_t)l4 << 3) | carry;
            uint32_t next = (uint32_t)(want >> 32); /* the carry after this block */
            /* up to a stop no character may run past it: its bit is not in cont, so a want of it fails */
            if (want != ((uint64_t)cont | ((uint64_t)next << 32))) {
                break; /* a continuation byte missing or one too many: character by character */
            }
            /* less each character's bytes: the ASCII ones end in lane 0 */
            uint64_t block = first - POP8[carry] + POP8[next];
            if (l3 == 0 && two != 0 && (MASK(C01) & leads) == 0) {
                /* two-byte characters only (no C0, C1), all of one group */
                block += (uint64_t)(POP8[leads & 0xFF] + POP8[(leads >> 8) & 0xFF] + POP8[(leads >> 16) & 0xFF] +
                                    POP8[leads >> 24]) *
                         two;
            }
            else {
                for (uint64_t m = leads; m != 0; m &= m - 1) {
                    uint16_t w; /* a lead and the byte after it, little-endian as x86 is */
                    memcpy(&w, p + __builtin_ctzll(m), 2);
                    block += INC[pair[w & 0x3F3F]];
                }
                if (block >> 48) {
                    break; /* a character the pair does not tell the group of, or not valid */
                }
            }
            lanes += block;
            carry = next;
            p += first;
            if (first == 32) {
                if (++n == BLOCKS) {
                    FLUSH();
                }
                continue;
            }
        stop:
            if (++n == BLOCKS) {
                FLUSH();
            }
            if (*p == '"') {
                FLUSH();
                goto closed;
            }
            if (*p != '\\') {
                return DEFER; /* a control character in a string */
            }
            esc = 1;
            if (escape(&p, end, g, k, &ex)) {
                return DEFER;
            }
            goto probe;
        }
        FLUSH();
        /* the bytes the last character counted still needs, for the loop below to begin at a character */
        for (; carry != 0; carry >>= 1, p++) {
            if (p == end || (*p & 0xC0) != 0x80) {
                return DEFER;
            }
        }
#undef MASK
#undef HIGH
#undef CONT
#undef L3
#undef L4
#undef C01
#undef FLUSH
#undef BLOCKS
    }
    until = end - p > 32 ? p + 32 : end;
#else
    until = end;
#endif
    /* Character by character: the line's last bytes, and any block the blocks above leave. */
    while (p < until) {
        uint8_t b = *p;
        if (b < 0x80) {
            if (b >= 0x20 && b != '"' && b != '\\') {
                k[0]++;
                p++;
                continue;
            }
            if (b == '"') {
                goto closed;
            }
            if (b < 0x20) {
                return DEFER; /* a control character in a string */
            }
            esc = 1;
            if (escape(&p, end, g, k, &ex)) {
                return DEFER;
            }
            continue;
        }
        else if (b >= 0xC2 && b <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) {
                return DEFER;
            }
            cp = ((uint32_t)(b & 0x1F) << 6) | (p[1] & 0x3F);
            p += 2;
        }
        else if (b >= 0xE0 && b <= 0xEF) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) {
                return DEFER;
            }
            if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] > 0x9F)) {
                return DEFER; /* overlong, or a surrogate */
            }
            cp = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
            p += 3;
        }
        else if (b >= 0xF0 && b <= 0xF4) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) {
                return DEFER;
            }
            if ((b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] > 0x8F)) {
                return DEFER; /* overlong, or past U+10FFFF */
            }
            cp = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) | ((uint32_t)(p[2] & 0x3F) << 6) |
                 (p[3] & 0x3F);
            p += 4;
        }
        else {
            return DEFER; /* not a lead byte of UTF-8 */
        }
        k[g[cp]]++;
    }
    if (p < end) {
        goto blocks;
    }
    return DEFER; /* the line ends inside the string */
closed:
    span->p = start;
    span->n = p - start;
    *escaped = esc;
    cnt[0] += k[0], cnt[1] += k[1], cnt[2] += k[2];
    *extra += ex;
    x->p = p + 1;
    return 0;
}

/* string_read() of a string at x->p, the common short one (ASCII up to its closing quote within 64 bytes, no
 * escape: keys, ids, types, uuids, timestamps; 935,033 of the 942,858 strings of 40 of the bench folder's
 * sessions) taken here without a call. */
static inline int
string(P *x, int64_t cnt[3], int64_t *extra, Span *span, int *escaped)
{
#if defined(CCLINE_SSE2)
    const uint8_t *p = x->p + 1;
    for (Py_ssize_t at = 0; at < 64 && x->end - p - at >= 16; at += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + at));
        unsigned quote = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        /* signed: bytes >= 0x80 are below 0x20 too */
        unsigned other = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')), _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))));
        if ((quote | other) == 0) {
            continue;
        }
        if (quote != 0 && (other & ((quote & (0 - quote)) - 1)) == 0) {
            Py_ssize_t n = at + __builtin_ctz(quote);
            cnt[0] += n;
            span->p = p;
            span->n = n;
            *escaped = 0;
            x->p = p + n + 1;
            return 0;
        }
        break;
    }
#endif
    return string_read(x, cnt, extra, span, escaped);
}

/* A number at x->p: validated as orjson reads it. *is_int for an integer (its value in *value when it has
 * at most MAX_DIGITS digits; more: defer), else a float (defer where its value could overflow). *len its
 * text's length. "-0" defers: orjson reads it as the int 0 and writes it "0". */
static int
number(P *x, int *is_int, int64_t *value, Py_ssize_t *len)
{
    const uint8_t *p = x->p, *end = x->end, *start = p;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9') {
        return DEFER;
    }
    const uint8_t *digits = p;
    if (*p == '0') {
        p++;
    }
    else {
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    Py_ssize_t nd = p - digits;
    if (nd > MAX_DIGITS) {
        return DEFER;
    }
    int frac = 0;
    if (p < end && *p == '.') {
        frac = 1;
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            return DEFER;
        }
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        frac = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        const uint8_t *e = p;
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == e || p - e > 2) {
            return DEFER; /* no exponent digits, or an exponent that might overflow */
        }
    }
    if (p < end && (*p == '0' || (*p >= '1' && *p <= '9'))) {
        return DEFER; /* a leading zero: "01" */
    }
    *is_int = !frac;
    if (!frac) {
        int64_t v = 0;
        for (const uint8_t *q = digits; q < digits + nd; q++) {
            v = v * 10 + (*q - '0');
        }
        if (neg && v == 0) {
            return DEFER;
        }
        *value = neg ? -v : v;
    }
    *len = p - start;
    x->p = p;
    return 0;
}

static int
literal(P *x, const char *word, Py_ssize_t n)
{
    if (x->end - x->p < n || memcmp(x->p, word, (size_t)n) != 0) {
        return DEFER;
    }
    x->p += n;
    return 0;
}

/* Any value at x->p, validated and passed over. */
static int
skip(P *x)
{
    int64_t cnt[3] = {0, 0, 0}, extra = 0;
    Span span;
    int escaped, is_int;
    int64_t v;
    Py_ssize_t len;
    if (x->p >= x->end) {
        return DEFER;
    }
    switch (*x->p) {
    case '"':
        return string(x, cnt, &extra, &span, &escaped);
    case '{':
    case '[': {
        uint8_t close = *x->p == '{' ? '}' : ']';
        int object = close == '}';
        if (++x->depth > MAX_NESTING) {
            return DEFER;
        }
        x->p++;
        ws(x);
        if (x->p < x->end && *x->p == close) {
            x->p++;
            x->depth--;
            return 0;
        }
        for (;;) {
            if (object) {
                if (x->p >= x->end || *x->p != '"' || string(x, cnt, &extra, &span, &escaped)) {
                    return DEFER;
                }
                ws(x);
                if (x->p >= x->end || *x->p != ':') {
                    return DEFER;
                }
                x->p++;
                ws(x);
            }
            if (skip(x)) {
                return DEFER;
            }
            ws(x);
            if (x->p >= x->end) {
                return DEFER;
            }
            if (*x->p == ',') {
                x->p++;
                ws(x);
                continue;
            }
            if (*x->p == close) {
                x->p++;
                x->depth--;
                return 0;
            }
            return DEFER;
        }
    }
    case 't':
        return literal(x, "true", 4);
    case 'f':
        return literal(x, "false", 5);
    case 'n':
        return literal(x, "null", 4);
    default:
        return number(x, &is_int, &v, &len);
    }
}

/* Any value at x->p, its characters as orjson.dumps writes it again added per group to cnt. */
static int
serial(P *x, int64_t cnt[3])
{
    if (x->p >= x->end) {
        return DEFER;
    }
    switch (*x->p) {
    case '"': {
        Span span;
        int escaped;
        int64_t extra = 0;
        if (string(x, cnt, &extra, &span, &escaped)) {
            return DEFER;
        }
        cnt[0] += extra + 2;
        return 0;
    }
    case '{':
    case '[': {
        uint8_t close = *x->p == '{' ? '}' : ']';
        int object = close == '}';
        Scanner *s = x->s;
        Py_ssize_t base = s->nkeys;
        if (++x->depth > MAX_NESTING) {
            return DEFER;
        }
        x->p++;
        cnt[0] += 2;
        ws(x);
        if (x->p < x->end && *x->p == close) {
            x->p++;
            x->depth--;
            return 0;
        }
        for (;;) {
            if (object) {
                Span key;
                int escaped;
                int64_t extra = 0;
                if (x->p >= x->end || *x->p != '"' || string(x, cnt, &extra, &key, &escaped) || escaped) {
                    return DEFER; /* an escaped key might equal another one */
                }
                cnt[0] += 3; /* the quotes and the colon */
                if (s->nkeys - base >= MAX_KEYS || s->nkeys >= MAX_KEYS * 4) {
                    return DEFER;
                }
                for (Py_ssize_t k = base; k < s->nkeys; k++) {
                    if (s->keys[k].n == key.n && memcmp(s->keys[k].p, key.p, (size_t)key.n) == 0) {
                        return DEFER; /* a duplicate key: the dict keeps its first place and last value */
                    }
                }
                s->keys[s->nkeys++] = key;
                ws(x);
                if (x->p >= x->end || *x->p != ':') {
                    return DEFER;
                }
                x->p++;
                ws(x);
            }
            if (serial(x, cnt)) {
                return DEFER;
            }
            ws(x);
            if (x->p >= x->end) {
                return DEFER;
            }
            if (*x->p == ',') {
                x->p++;
                cnt[0] += 1;
                ws(x);
                continue;
            }
            if (*x->p == close) {
                x->p++;
                x->depth--;
                s->nkeys = base;
                return 0;
            }
            return DEFER;
        }
    }
    case 't':
        cnt[0] += 4;
        return literal(x, "true", 4);
    case 'f':
        cnt[0] += 5;
        return literal(x, "false", 5);
    case 'n':
        cnt[0] += 4;
        return literal(x, "null", 4);
    default: {
        int is_int;
        int64_t v;
        Py_ssize_t len;
        if (number(x, &is_int, &v, &len) || !is_int) {
            return DEFER; /* a float: orjson writes its shortest form, not the text */
        }
        cnt[0] += len;
        return 0;
    }
    }
}

/* The members of an object at x->p: each key (no escapes: a key that might be a read one) handed to the
 * member callback with the parser at its value. */
typedef int (*member_fn)(P *x, const uint8_t *key, Py_ssize_t n, void *state);

static int
object(P *x, member_fn member, void *state)
{
    if (x->p >= x->end || *x->p != '{' || ++x->depth > MAX_NESTING) {
        return DEFER;
    }
    x->p++;
    ws(x);
    if (x->p < x->end && *x->p == '}') {
        x->p++;
        x->depth--;
        return 0;
    }
    for (;;) {
        int64_t cnt[3] = {0, 0, 0}, extra = 0;
        Span key;
        int escaped;
        if (x->p >= x->end || *x->p != '"' || string(x, cnt, &extra, &key, &escaped) || escaped) {
            return DEFER;
        }
        ws(x);
        if (x->p >= x->end || *x->p != ':') {
            return DEFER;
        }
        x->p++;
        ws(x);
        int r = member(x, key.p, key.n, state);
        if (r) {
            return r; /* DEFER, or -2 with an exception set */
        }
        ws(x);
        if (x->p >= x->end) {
            return DEFER;
        }
        if (*x->p == ',') {
            x->p++;
            ws(x);
            continue;
        }
        if (*x->p == '}') {
            x->p++;
            x->depth--;
            return 0;
        }
        return DEFER;
    }
}

#define KEY(s) (n == (Py_ssize_t)(sizeof(s) - 1) && memcmp(key, s, sizeof(s) - 1) == 0)

/* A value that is read as a str when it is one: *is_str, and its raw text (no escapes, else defer). */
typedef struct {
    int seen, is_str;
    Span span;
} StrSlot;

static int
str_slot(P *x, StrSlot *slot)
{
    if (slot->seen++) {
        return DEFER; /* a duplicate of a key read: orjson keeps the last */
    }
    if (x->p < x->end && *x->p == '"') {
        int64_t cnt[3] = {0, 0, 0}, extra = 0;
        int escaped;
        if (string(x, cnt, &extra, &slot->span, &escaped) || escaped) {
            return DEFER;
        }
        slot->is_str = 1;
        return 0;
    }
    return skip(x);
}

/* A value whose characters are counted when it is a str: *is_str, its counts. */
typedef struct {
    int seen, is_str;
    int64_t cnt[3];
    Py_ssize_t n; /* raw length: 0 for "" */
} TextSlot;

static int
text_slot(P *x, TextSlot *slot)
{
    if (slot->seen++) {
        return DEFER;
    }
    if (x->p < x->end && *x->p == '"') {
        int64_t extra = 0;
        int escaped;
        Span span;
        if (string(x, slot->cnt, &extra, &span, &escaped)) {
            return DEFER;
        }
        slot->is_str = 1;
        slot->n = span.n;
        return 0;
    }
    return skip(x);
}

static inline int
span_is(const Span *s, const char *word)
{
    size_t n = strlen(word);
    return (size_t)s->n == n && memcmp(s->p, word, n) == 0;
}

/* usage: the four ints (0 where not an int) */
typedef struct {
    int seen[4];
    int64_t v[4];
} Usage;

static int
usage_member(P *x, const uint8_t *key, Py_ssize_t n, void *state)
{
    Usage *u = state;
    int i;
    if (KEY("input_tokens")) {
        i = 0;
    }
    else if (KEY("cache_creation_input_tokens")) {
        i = 1;
    }
    else if (KEY("cache_read_input_tokens")) {
        i = 2;
    }
    else if (KEY("output_tokens")) {
        i = 3;
    }
    else {
        return skip(x);
    }
    if (u->seen[i]++) {
        return DEFER;
    }
    if (x->p < x->end && (*x->p == '-' || (*x->p >= '0' && *x->p <= '9'))) {
        int is_int;
        int64_t v = 0;
        Py_ssize_t len;
        if (number(x, &is_int, &v, &len)) {
            return DEFER;
        }
        u->v[i] = is_int ? v : 0;
        return 0;
    }
    return skip(x);
}

/* ceil((a*fa + c*fc + o*fo) / fden): the floor rule's tokens of a text (no overheads), as Estimator.block
 * gives them under size.FLOOR_RULE; capped far below overflow (a count past it is no real line's). */
static int64_t
floor_of(const Scanner *s, const int64_t cnt[3])
{
    __int128 t = (__int128)cnt[0] * s->fa + (__int128)cnt[1] * s->fc + (__int128)cnt[2] * s->fo;
    t = (t + s->fden - 1) / s->fden;
    return t > INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)t;
}

/* a tool_result's content part: {"type": "text", "text": ...} */
typedef struct {
    StrSlot type;
    TextSlot text;
} Part;

static int
part_member(P *x, const uint8_t *key, Py_ssize_t n, void *state)
{
    Part *part = state;
    if (KEY("type")) {
        return str_slot(x, &part->type);
    }
    if (KEY("text")) {
        return text_slot(x, &part->text);
    }
    return skip(x);
}

/* a block's "content" (tool_result): a str, or a list of text parts */
typedef struct {
    int seen, kind; /* 0 absent or another type, 1 str, 2 a list of text parts, 3 a list of something else */
    int64_t cnt[3];
    Py_ssize_t n, parts;
    int64_t floor; /* the floor of its text, part by part */
} Inner;

static int
inner_slot(P *x, Inner *in)
{
    if (in->seen++) {
        return DEFER;
    }
    if (x->p >= x->end) {
        return DEFER;
    }
    if (*x->p == '"') {
        int64_t extra = 0;
        int escaped;
        Span span;
        if (string(x, in->cnt, &extra, &span, &escaped)) {
            return DEFER;
        }
        in->kind = 1;
        in->n = span.n;
        in->floor = floor_of(x->s, in->cnt);
        return 0;
    }
    if (*x->p != '[') {
        return skip(x);
    }
    if (++x->depth > MAX_NESTING) {
        return DEFER;
    }
    in->kind = 2;
    x->p++;
    ws(x);
    if (x->p < x->end && *x->p == ']') {
        x->p++;
        x->depth--;
        return 0;
    }
    for (;;) {
        if (x->p < x->end && *x->p == '{') {
            Part part;
            memset(&part, 0, sizeof part);
            if (object(x, part_member, &part)) {
                return DEFER;
            }
            if (part.type.is_str && span_is(&part.type.span, "text") && part.text.is_str) {
                in->cnt[0] += part.text.cnt[0], in->cnt[1] += part.text.cnt[1], in->cnt[2] += part.text.cnt[2];
                in->floor += floor_of(x->s, part.text.cnt);
                in->parts++;
            }
            else {
                in->kind = 3;
            }
        }
        else {
            if (skip(x)) {
                return DEFER;
            }
            in->kind = 3;
        }
        ws(x);
        if (x->p >= x->end) {
            return DEFER;
        }
        if (*x->p == ',') {
            x->p++;
            ws(x);
            continue;
        }
        if (*x->p == ']') {
            x->p++;
            x->depth--;
            return 0;
        }
        return DEFER;
    }
}

typedef struct {
    StrSlot type, id, name, tool_use_id;
    TextSlot text, thinking;
    int input_seen, input_ok;
    int64_t input[3];
    Inner inner;
} Block;

static int
block_member(P *x, const uint8_t *key, Py_ssize_t n, void *state)
{
    Block *b = state;
    switch (n) {
    case 2:
        if (KEY("id")) {
            return str_slot(x, &b->id);
        }
        break;
    case 4:
        if (KEY("type")) {
            return str_slot(x, &b->type);
        }
        if (KEY("text")) {
            return text_slot(x, &b->text);
        }
        if (KEY("name")) {
            return str_slot(x, &b->name);
        }
        break;
    case 5:
        if (KEY("input")) {
            if (b->input_seen++) {
                return DEFER;
            }
            x->s->nkeys = 0;
            return serial(x, b->input);
        }
        break;
    case 7:
        if (KEY("content")) {
            return inner_slot(x, &b->inner);
        }
        break;
    case 8:
        if (KEY("thinking")) {
            return text_slot(x, &b->thinking);
        }
        break;
    case 11:
        if (KEY("tool_use_id")) {
            return str_slot(x, &b->tool_use_id);
        }
        break;
    }
    return skip(x);
}

/* The message's content summed: what ccfold._blocks gives, whatever the line's role (the role may come
 * later in the line); bad for a shape _blocks refuses. */
typedef struct {
    int seen, bad, results_shape, has_results;
    int64_t a, c, o, fixed;
    int64_t add[KINDS];
    uint8_t present[KINDS];
    PyObject *special; /* a list of (kind, tokens, id, name), or NULL for none */
    int64_t floor;     /* the floor of its blocks' text, block by block (ccfold._floor) */
    PyObject *parts;   /* a list of (a, c, o, fixed, floor) per tool result, in special's order, or NULL */
} Content;

/* ceil((a*wa + c*wc + o*wo) / den) + fixed, or DEFER if it leaves 64 bits. */
static int
tokens_of(const Scanner *s, const int64_t cnt[3], int64_t fixed, int64_t *out)
{
    __int128 t = (__int128)cnt[0] * s->wa + (__int128)cnt[1] * s->wc + (__int128)cnt[2] * s->wo;
    t = (t + s->den - 1) / s->den + fixed;
    if (t > INT64_MAX / 4) {
        return DEFER;
    }
    *out = (int64_t)t;
    return 0;
}

/* A tuple of n new references, taken over; NULL (and all of them released) if any is NULL or on a memory
 * error. Py_BuildValue parses its format string for every tuple: a third of the records' cost. */
static PyObject *
pack(Py_ssize_t n, ...)
{
    PyObject *items[16], *tuple = NULL;
    int ok = n <= 16;
    va_list args;
    va_start(args, n);
    for (Py_ssize_t i = 0; i < n && i < 16; i++) {
        items[i] = va_arg(args, PyObject *);
        ok &= items[i] != NULL;
    }
    va_end(args);
    if (ok && (tuple = PyTuple_New(n)) != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyTuple_SET_ITEM(tuple, i, items[i]);
        }
        return tuple;
    }
    for (Py_ssize_t i = 0; i < n && i < 16; i++) {
        Py_XDECREF(items[i]);
    }
    return NULL;
}

#define INT(v) PyLong_FromLongLong((long long)(v))

static PyObject *
decode(const Span *s)
{
    return PyUnicode_DecodeUTF8((const char *)s->p, s->n, NULL);
}

/* One block summed into the content, as _blocks sums it. -1 with an exception set on a memory error. */
static int
add_block(Scanner *s, Content *ct, Block *b)
{
    int64_t cnt[3] = {0, 0, 0}, fixed = s->bo, tokens;
    int kind;
    if (!b->type.is_str) {
        ct->bad = 1;
        return 0;
    }
    const Span *t = &b->type.span;
    int result = span_is(t, "tool_result");
    if (!result) {
        ct->results_shape = 0;
    }
    if (span_is(t, "text") || span_is(t, "thinking")) {
        TextSlot *text = t->n == 4 ? &b->text : &b->thinking;
        if (!text->is_str) {
            ct->bad = 1;
            return 0;
        }
        memcpy(cnt, text->cnt, sizeof cnt);
        kind = t->n == 4 ? K_TEXT : K_THINKING;
    }
    else if (span_is(t, "tool_use")) {
        if (!b->id.is_str || (b->name.seen && !b->name.is_str)) {
            ct->bad = 1;
            return 0;
        }
        if (b->name.seen) {
            int64_t extra = 0;
            int escaped;
            Span span;
            P y = {b->name.span.p - 1, b->name.span.p + b->name.span.n + 1, s->table->group, s->table->pair, two_inc(s->table), 0, s};
            if (string(&y, cnt, &extra, &span, &escaped)) {
                return DEFER;
            }
        }
        if (b->input_seen) {
            cnt[0] += b->input[0], cnt[1] += b->input[1], cnt[2] += b->input[2];
        }
        else {
            cnt[0] += 2; /* {} */
        }
        kind = K_CALL;
    }
    else if (result) {
        ct->has_results = 1;
        if (!b->tool_use_id.is_str) {
            ct->bad = 1;
            return 0;
        }
        if (!b->inner.seen || (b->inner.kind == 1 && b->inner.n == 0)) {
            /* "" */
        }
        else if (b->inner.kind == 1) {
            memcpy(cnt, b->inner.cnt, sizeof cnt);
            fixed += s->bo;
        }
        else if (b->inner.kind == 2) {
            memcpy(cnt, b->inner.cnt, sizeof cnt);
            fixed += s->bo * b->inner.parts;
        }
        else {
            ct->bad = 1;
            return 0;
        }
        kind = K_RESULT;
    }
    else {
        ct->bad = 1;
        return 0;
    }
    if (tokens_of(s, cnt, fixed, &tokens)) {
        return DEFER;
    }
    int64_t floor = kind == K_RESULT ? (b->inner.kind == 1 || b->inner.kind == 2 ? b->inner.floor : 0) : floor_of(s, cnt);
    ct->floor += floor;
    ct->add[kind] += tokens;
    ct->present[kind] = 1;
    ct->a += cnt[0], ct->c += cnt[1], ct->o += cnt[2], ct->fixed += fixed;
    if (kind == K_CALL || kind == K_RESULT) {
        if (ct->special == NULL && (ct->special = PyList_New(0)) == NULL) {
            return -2;
        }
        PyObject *id = decode(kind == K_CALL ? &b->id.span : &b->tool_use_id.span);
        PyObject *name = kind == K_RESULT ? Py_NewRef(S_empty) : b->name.seen ? decode(&b->name.span) : Py_NewRef(S_empty);
        PyObject *item = pack(4, Py_NewRef(kind == K_CALL ? S_call : S_result), INT(tokens), id, name);
        if (item == NULL || PyList_Append(ct->special, item) < 0) {
            Py_XDECREF(item);
            return -2;
        }
        Py_DECREF(item);
        if (kind == K_RESULT) {
            if (ct->parts == NULL && (ct->parts = PyList_New(0)) == NULL) {
                return -2;
            }
            item = pack(5, INT(cnt[0]), INT(cnt[1]), INT(cnt[2]), INT(fixed), INT(floor));
            if (item == NULL || PyList_Append(ct->parts, item) < 0) {
                Py_XDECREF(item);
                return -2;
            }
            Py_DECREF(item);
        }
    }
    return 0;
}

static int
content_slot(P *x, Content *ct)
{
    if (ct->seen++) {
        return DEFER;
    }
    if (x->p >= x->end) {
        return DEFER;
    }
    Scanner *s = x->s;
    if (*x->p == '"') {
        int64_t cnt[3] = {0, 0, 0}, extra = 0, tokens;
        int escaped;
        Span span;
        if (string(x, cnt, &extra, &span, &escaped)) {
            return DEFER;
        }
        if (span.n == 0) {
            ct->bad = 1; /* an empty message */
            return 0;
        }
        if (tokens_of(s, cnt, s->bo, &tokens)) {
            return DEFER;
        }
        ct->a = cnt[0], ct->c = cnt[1], ct->o = cnt[2], ct->fixed = s->bo;
        ct->floor = floor_of(s, cnt);
        ct->add[K_TEXT] = tokens;
        ct->present[K_TEXT] = 1;
        return 0;
    }
    if (*x->p != '[') {
        ct->bad = 1;
        return skip(x);
    }
    if (++x->depth > MAX_NESTING) {
        return DEFER;
    }
    x->p++;
    ws(x);
    if (x->p < x->end && *x->p == ']') {
        x->p++;
        x->depth--;
        ct->bad = 1; /* an empty message */
        return 0;
    }
    ct->results_shape = 1;
    for (;;) {
        if (x->p < x->end && *x->p == '{') {
            Block b;
            memset(&b, 0, sizeof b);
            int r = object(x, block_member, &b);
            if (r) {
                return r;
            }
            if (!ct->bad) {
                int r = add_block(s, ct, &b);
                if (r) {
                    return r;
                }
            }
        }
        else {
            if (skip(x)) {
                return DEFER;
            }
            ct->bad = 1;
        }
        ws(x);
        if (x->p >= x->end) {
            return DEFER;
        }
        if (*x->p == ',') {
            x->p++;
            ws(x);
            continue;
        }
        if (*x->p == ']') {
            x->p++;
            x->depth--;
            return 0;
        }
        return DEFER;
    }
}

typedef struct {
    StrSlot id;
    int usage_seen, usage_dict;
    Usage usage;
    Content content;
} Message;

static int
message_member(P *x, const uint8_t *key, Py_ssize_t n, void *state)
{
    Message *m = state;
    if (KEY("id")) {
        return str_slot(x, &m->id);
    }
    if (KEY("usage")) {
        if (m->usage_seen++) {
            return DEFER;
        }
        if (x->p < x->end && *x->p == '{') {
            m->usage_dict = 1;
            return object(x, usage_member, &m->usage);
        }
        return skip(x);
    }
    if (KEY("content")) {
        return content_slot(x, &m->content);
    }
    return skip(x);
}

typedef struct {
    StrSlot type, uuid, parent, subtype, agent;
    int side_seen, side;
    int message_seen, message_dict;
    Message message;
} Line;

static int
line_member(P *x, const uint8_t *key, Py_ssize_t n, void *state)
{
    Line *l = state;
    switch (n) {
    case 4:
        if (KEY("type")) {
            return str_slot(x, &l->type);
        }
        if (KEY("uuid")) {
            return str_slot(x, &l->uuid);
        }
        break;
    case 7:
        if (KEY("message")) {
            if (l->message_seen++) {
                return DEFER;
            }
            if (x->p < x->end && *x->p == '{') {
                l->message_dict = 1;
                return object(x, message_member, &l->message);
            }
            return skip(x);
        }
        if (KEY("subtype")) {
            return str_slot(x, &l->subtype);
        }
        if (KEY("agentId")) {
            return str_slot(x, &l->agent);
        }
        break;
    case 10:
        if (KEY("parentUuid")) {
            return str_slot(x, &l->parent);
        }
        break;
    case 11:
        if (KEY("isSidechain")) {
            if (l->side_seen++) {
                return DEFER;
            }
            if (x->p < x->end && *x->p == 't') {
                l->side = 1;
                return literal(x, "true", 4);
            }
            return skip(x);
        }
        break;
    }
    return skip(x);
}

static PyObject *
str_or_none(const StrSlot *slot)
{
    return slot->is_str ? decode(&slot->span) : Py_NewRef(Py_None);
}

/* The record of the line data[0:size] (see ccfold._record), or None for the Python path to read it. */
static PyObject *
scan_line(Scanner *self, const uint8_t *data, Py_ssize_t size)
{
    P x = {data, data + size, self->table->group, self->table->pair, two_inc(self->table), 0, self};
    Line l;
    memset(&l, 0, sizeof l);
    PyObject *result = NULL;
    ws(&x);
    int r = object(&x, line_member, &l);
    if (r == 0) {
        ws(&x);
        if (x.p != x.end) {
            r = DEFER;
        }
    }
    Content *ct = &l.message.content;
    if (r == -2) {
        goto done; /* an exception */
    }
    if (r) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int user = l.type.is_str && span_is(&l.type.span, "user");
    int assistant = l.type.is_str && span_is(&l.type.span, "assistant");
    if (!user && !assistant) {
        PyObject *kind;
        if (l.type.is_str && span_is(&l.type.span, "system") && l.subtype.is_str &&
            span_is(&l.subtype.span, "compact_boundary")) {
            result = Py_NewRef(Py_None); /* a compaction: the Python path words the refusal */
            goto done;
        }
        if (!l.type.is_str || l.type.span.n == 0) {
            kind = Py_NewRef(S_unknown);
        }
        else if ((kind = decode(&l.type.span)) == NULL) {
            goto done;
        }
        PyObject *uuid = str_or_none(&l.uuid), *parent = uuid ? str_or_none(&l.parent) : NULL;
        result = pack(16, kind, uuid, parent, Py_NewRef(l.side ? Py_True : Py_False), Py_NewRef(Py_None),
                      Py_NewRef(Py_None), Py_NewRef(Py_None), INT(0), INT(0), INT(0), INT(0), Py_NewRef(Py_None),
                      Py_NewRef(Py_False), Py_NewRef(Py_False), INT(0), Py_NewRef(Py_None));
        goto done;
    }
    if (!l.message_dict || !l.uuid.is_str || !ct->seen || ct->bad || (assistant && ct->has_results)) {
        result = Py_NewRef(Py_None); /* a shape the fold refuses: the Python path's to find */
        goto done;
    }
    for (int k = 0; k < KINDS; k++) {
        if (ct->present[k] && ct->add[k] > INT64_MAX / 4 - self->sums[k]) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    PyObject *uuid = decode(&l.uuid.span), *parent = str_or_none(&l.parent);
    PyObject *agent = l.agent.is_str ? decode(&l.agent.span) : Py_NewRef(S_empty);
    PyObject *message_id = str_or_none(&l.message.id);
    const int64_t *v = l.message.usage.v;
    PyObject *usage = l.message.usage_dict ? pack(4, INT(v[0]), INT(v[1]), INT(v[2]), INT(v[3])) : Py_NewRef(Py_None);
    result = pack(16, Py_NewRef(user ? S_user : S_assistant), uuid, parent, Py_NewRef(l.side ? Py_True : Py_False),
                  agent, message_id, usage, INT(ct->a), INT(ct->c), INT(ct->o), INT(ct->fixed),
                  Py_NewRef(ct->special ? ct->special : S_empty_tuple),
                  Py_NewRef(user && ct->results_shape ? Py_True : Py_False),
                  Py_NewRef(user && ct->has_results ? Py_True : Py_False), INT(ct->floor),
                  Py_NewRef(ct->parts ? ct->parts : S_empty_tuple));
    if (result != NULL && self->line > 0) { /* scan_lines: the line's sums kept for kinds_of */
        if (self->nlog == self->caplog) {
            Py_ssize_t cap = self->caplog ? self->caplog * 2 : 1024;
            LineKinds *grown = PyMem_Realloc(self->log, sizeof(LineKinds) * (size_t)cap);
            if (grown == NULL) {
                Py_CLEAR(result);
                PyErr_NoMemory();
                goto done;
            }
            self->log = grown, self->caplog = cap;
        }
        LineKinds *entry = &self->log[self->nlog++];
        entry->line = self->line;
        entry->present = 0;
        for (int k = 0; k < KINDS; k++) {
            entry->add[k] = ct->present[k] ? ct->add[k] : 0;
            entry->present |= (uint8_t)(ct->present[k] ? 1u << k : 0u);
        }
    }
    if (result != NULL) {
        for (int k = 0; k < KINDS; k++) {
            if (ct->present[k]) {
                self->sums[k] += ct->add[k];
                self->present[k] = 1;
            }
        }
    }
done:
    Py_XDECREF(ct->special);
    Py_XDECREF(ct->parts);
    return result;
}

/* scan(line) -> the line's record (see ccfold._record), or None for the Python path to read it. */
static PyObject *
Scanner_scan(Scanner *self, PyObject *raw)
{
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    if (self->table == NULL) {
        PyErr_SetString(PyExc_ValueError, "an unbuilt scanner");
        return NULL;
    }
    int64_t line = self->line;
    self->line = 0; /* not a line of scan_lines: not kept for kinds_of */
    PyObject *result = scan_line(self, (const uint8_t *)PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
    self->line = line;
    return result;
}

/* scan_lines(data, final) -> (items, used): each whole line of data (up to and with its b"\n"; with
 * final, the rest after the last one too, when there is a rest) as its record, or as its bytes where
 * scan() would give None; used, the bytes of data they take (the rest is the start of the next line). */
static PyObject *
Scanner_scan_lines(Scanner *self, PyObject *args)
{
    Py_buffer view;
    int final;
    if (!PyArg_ParseTuple(args, "y*p", &view, &final)) {
        return NULL;
    }
    if (self->table == NULL) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "an unbuilt scanner");
        return NULL;
    }
    const uint8_t *data = view.buf, *end = data + view.len, *p = data;
    PyObject *items = PyList_New(0);
    while (items != NULL && p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL && !final) {
            break;
        }
        const uint8_t *stop = nl == NULL ? end : nl + 1;
        self->line++;
        PyObject *item = scan_line(self, p, stop - p);
        if (item == Py_None) {
            Py_DECREF(item);
            item = PyBytes_FromStringAndSize((const char *)p, stop - p);
        }
        if (item == NULL || PyList_Append(items, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(items);
            break;
        }
        Py_DECREF(item);
        p = stop;
    }
    Py_ssize_t used = p - data;
    PyBuffer_Release(&view);
    if (items == NULL) {
        return NULL;
    }
    return Py_BuildValue("(Nn)", items, used);
}

/* kinds() -> [(kind, tokens)] the tokens added per block kind by the lines scanned, kinds met only. */
static PyObject *
Scanner_kinds(Scanner *self, PyObject *unused)
{
    (void)unused;
    PyObject *out = PyList_New(0);
    for (int k = 0; out != NULL && k < KINDS; k++) {
        if (self->present[k]) {
            PyObject *item = Py_BuildValue("(sL)", KIND_NAMES[k], (long long)self->sums[k]);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(item);
        }
    }
    return out;
}

/* kinds_of(lines) -> [(kind, tokens)] the tokens per block kind of the message lines among lines (numbers
 * from 1, as scan_lines counts the lines it is given) that scan_lines gave records for, kinds met only; lines
 * it left to Python (or did not read) count nothing. */
static PyObject *
Scanner_kinds_of(Scanner *self, PyObject *lines)
{
    PyObject *it = PyObject_GetIter(lines);
    if (it == NULL) {
        return NULL;
    }
    int64_t sums[KINDS] = {0};
    uint8_t present = 0;
    PyObject *number;
    while ((number = PyIter_Next(it)) != NULL) {
        long long n = PyLong_AsLongLong(number);
        Py_DECREF(number);
        if (n == -1 && PyErr_Occurred()) {
            Py_DECREF(it);
            return NULL;
        }
        Py_ssize_t lo = 0, hi = self->nlog; /* the log is in line order */
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (self->log[mid].line < n) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        if (lo < self->nlog && self->log[lo].line == n) {
            const LineKinds *entry = &self->log[lo];
            for (int k = 0; k < KINDS; k++) {
                sums[k] += entry->add[k]; /* each line's under INT64_MAX / 4, the sums as kinds() keeps them */
            }
            present |= entry->present;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *out = PyList_New(0);
    for (int k = 0; out != NULL && k < KINDS; k++) {
        if (present & (1u << k)) {
            PyObject *item = Py_BuildValue("(sL)", KIND_NAMES[k], (long long)sums[k]);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(item);
        }
    }
    return out;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O, "scan(line) -> the line's record, or None"},
    {"scan_lines", (PyCFunction)Scanner_scan_lines, METH_VARARGS,
     "scan_lines(data, final) -> (records or the bytes of lines left to Python, bytes used)"},
    {"kinds", (PyCFunction)Scanner_kinds, METH_NOARGS, "kinds() -> [(kind, tokens)] added by the scanned lines"},
    {"kinds_of", (PyCFunction)Scanner_kinds_of, METH_O,
     "kinds_of(lines) -> [(kind, tokens)] of those lines (numbered from 1) that scan_lines read"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "windowfit.fitting._ccline.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(table, wa, wc, wo, denominator, block_overhead): one fold's reader of Claude Code lines.",
    .tp_methods = Scanner_methods,
    .tp_init = (initproc)Scanner_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "windowfit.fitting._ccline",
    .m_doc = "Claude Code JSON Lines lines scanned in C for the fold of fitting/ccfold.py.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__ccline(void)
{
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&ScannerType) < 0) {
        return NULL;
    }
    S_user = PyUnicode_InternFromString("user");
    S_assistant = PyUnicode_InternFromString("assistant");
    S_unknown = PyUnicode_InternFromString("unknown");
    S_empty = PyUnicode_InternFromString("");
    S_call = PyUnicode_InternFromString("tool_call");
    S_result = PyUnicode_InternFromString("tool_result");
    S_empty_tuple = PyTuple_New(0);
    if (!S_user || !S_assistant || !S_unknown || !S_empty || !S_call || !S_result || !S_empty_tuple) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&TableType);
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Table", (PyObject *)&TableType) < 0 ||
        PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
