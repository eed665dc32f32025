/*
 * build.c: building an index. Token strings to term ids (a vocabulary kept in a hash table), a
 * chunk's term ids to (term, document, tf) triples, the whitespace analysis of raw texts straight to
 * triples, the triples laid out by term, the postings' (tf, length) pairs numbered, and strings put in
 * code point order.
 *
 * The specification is the numpy backend (bm25lab.engine.backends.numpy_backend, postings.lay_out,
 * retrieval.NumpyPairCoder, selection.code_point_order): the tests compare every entry point with it.
 * There is no floating point here.
 *
 * Entry points (arrays through the buffer protocol; outputs allocated by the caller, sized as stated):
 *   Vocabulary()                          a growing map from UTF-8 byte strings to term ids 0, 1, 2, ...
 *     .encode(text, ends, ids, insert)    the id of each token: the pieces of text between single
 *                                         spaces, or text[ends[i-1]:ends[i]] when ends is not empty;
 *                                         a new term gets the next id with insert, else -1
 *     .merge(text, hashes, starts, lengths, ids)   a split_texts chunk's terms, in its order
 *     .order(out)                         the ids in the code point order of the terms (int64, len(self))
 *     .joined(order, out) -> separator   the terms of order, one after another, separated by a byte
 *                                         none of them holds (-1: every ASCII byte is held)
 *     .spans(starts, lengths) / .data(out) / .bytes_used   each term's bytes, for decoding
 *   count_pieces(text) -> int             how many pieces single spaces cut text into
 *   group_query_terms(ids, lengths, q_ptr, terms, counts) -> n      (terms, counts: len(ids) long)
 *   group_by_term(terms, lengths, first_doc, num_terms, out_terms, out_docs, out_tfs) -> pairs
 *   split_texts(text, bounds, first_doc, out_terms, out_docs, out_tfs, doc_lengths, hashes, starts,
 *               lengths) -> (pairs, distinct)                   (the pair and term arrays: n // 2 + 2)
 *   count_terms(terms, new_id, counts) / scatter_by_term(terms, values, new_id, free, out)
 *   mark_pairs(doc_nums, tfs, length_rank, n_lengths, used)
 *   sort_terms(starts, lengths, data, order)                       the strings' code point order
 *
 * Every index read from an argument is checked against the array it indexes: a wrong argument is a
 * ValueError, never a read or write out of bounds.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* hashing: FNV-1a over the UTF-8 bytes, then splitmix64's finaliser (FNV's low bits, the table's
 * slots, are weak for short keys)                                                            */

#define FNV_OFFSET UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)

static inline uint64_t mixed(uint64_t h)
{
    h = (h ^ (h >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94D049BB133111EB);
    return h ^ (h >> 31);
}

static inline uint64_t hash_bytes(const uint8_t *p, int64_t n)
{
    uint64_t h = FNV_OFFSET;
    for (int64_t j = 0; j < n; j++)
        h = (h ^ p[j]) * FNV_PRIME;
    return mixed(h);
}

/* malloc of n elements, never NULL for n == 0 unless memory is out */
static void *alloc_n(int64_t n, size_t size)
{
    return malloc((size_t)(n > 0 ? n : 1) * size);
}

/* ------------------------------------------------------------------------------------------ */
/* a stable order of indices by 64-bit keys (merge sort), and the code point order of strings   */

/* Sort idx[0:n] stably by keys[idx]: tmp holds n indices. */
static void sort_by_key(int64_t *idx, const uint64_t *keys, int64_t n, int64_t *tmp)
{
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            const int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = keys[idx[b]] < keys[idx[a]] ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* The next 8 bytes of string e from depth on, big-endian, missing bytes as 0. */
static inline uint64_t key8(const int64_t *starts, const int64_t *lengths, const uint8_t *data, int64_t e,
                            int64_t depth)
{
    uint64_t key = 0;
    const int64_t m = lengths[e] - depth;
    const uint8_t *p = data + starts[e] + depth;
    for (int j = 0; j < 8; j++)
        key = (key << 8) | (j < m ? p[j] : 0);
    return key;
}

typedef struct {
    int64_t lo, hi, depth;
} Run;

/* order[0:n]: the strings (bytes data[starts[e]:starts[e] + lengths[e]]) in byte order, which is the
 * code point order of their UTF-8, equal strings in index order. By 8 bytes at a time: each run of
 * strings equal so far is sorted again by its next 8 bytes; a run whose strings all end within those
 * bytes (they differ only by trailing zero bytes then) is sorted by length. 0, or -1 out of memory. */
static int code_point_sort(const int64_t *starts, const int64_t *lengths, const uint8_t *data, int64_t n,
                           int64_t *order)
{
    uint64_t *keys = alloc_n(n, sizeof *keys), *key_of = alloc_n(n, sizeof *key_of);
    int64_t *tmp = alloc_n(n, sizeof *tmp);
    int64_t cap = 64, top = 0;
    Run *runs = malloc((size_t)cap * sizeof *runs);
    if (keys == NULL || key_of == NULL || tmp == NULL || runs == NULL) {
        free(keys), free(key_of), free(tmp), free(runs);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    if (n > 1)
        runs[top++] = (Run){0, n, 0};
    int status = 0;
    while (top > 0) {
        const Run r = runs[--top];
        for (int64_t i = r.lo; i < r.hi; i++)
            key_of[order[i]] = key8(starts, lengths, data, order[i], r.depth);
        sort_by_key(order + r.lo, key_of, r.hi - r.lo, tmp);
        for (int64_t i = r.lo; i < r.hi; i++)
            keys[i] = key_of[order[i]];
        for (int64_t i = r.lo, j; i < r.hi; i = j) {
            for (j = i + 1; j < r.hi && keys[j] == keys[i]; j++)
                ;
            if (j - i < 2)
                continue;
            int64_t longest = 0;
            for (int64_t x = i; x < j; x++)
                longest = lengths[order[x]] > longest ? lengths[order[x]] : longest;
            if (longest <= r.depth + 8) {
                for (int64_t x = i; x < j; x++)
                    key_of[order[x]] = (uint64_t)lengths[order[x]];
                sort_by_key(order + i, key_of, j - i, tmp);
                continue;
            }
            if (top == cap) {
                Run *grown = realloc(runs, (size_t)(2 * cap) * sizeof *runs);
                if (grown == NULL) {
                    status = -1;
                    top = 0;
                    break;
                }
                runs = grown;
                cap *= 2;
            }
            runs[top++] = (Run){i, j, r.depth + 8};
        }
    }
    free(keys), free(key_of), free(tmp), free(runs);
    return status;
}

/* Whether strings starts/lengths lie within data (n_data bytes). */
static int spans_fit(const int64_t *starts, const int64_t *lengths, int64_t n, int64_t n_data)
{
    for (int64_t e = 0; e < n; e++)
        if (starts[e] < 0 || lengths[e] < 0 || starts[e] > n_data || lengths[e] > n_data - starts[e])
            return 0;
    return 1;
}

enum { ST_STARTS, ST_LENGTHS, ST_DATA, ST_ORDER, ST_ARGS };

static PyObject *py_sort_terms(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"starts", "lengths", "data", "order", NULL};
    Arg a[ST_ARGS] = {
        [ST_STARTS] = IN("starts", SIGNED, SIZE_8),
        [ST_LENGTHS] = IN("lengths", SIGNED, SIZE_8),
        [ST_DATA] = IN("data", UNSIGNED, SIZE_1),
        [ST_ORDER] = OUT("order", SIGNED, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOO:sort_terms", kwlist, &a[ST_STARTS].obj,
                                     &a[ST_LENGTHS].obj, &a[ST_DATA].obj, &a[ST_ORDER].obj))
        return NULL;
    if (acquire_args(a, ST_ARGS) < 0)
        return NULL;
    const int64_t n = a[ST_ORDER].n;
    const char *problem = NULL;
    if (a[ST_STARTS].n != n || a[ST_LENGTHS].n != n)
        problem = "starts, lengths and order differ in length";
    else if (!spans_fit(BUF(a, ST_STARTS, int64_t), BUF(a, ST_LENGTHS, int64_t), n, a[ST_DATA].n))
        problem = "a string lies outside data";
    if (problem != NULL) {
        release_args(a, ST_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = code_point_sort(BUF(a, ST_STARTS, int64_t), BUF(a, ST_LENGTHS, int64_t), BUF(a, ST_DATA, uint8_t), n,
                             BUF(a, ST_ORDER, int64_t));
    Py_END_ALLOW_THREADS
    release_args(a, ST_ARGS);
    if (status < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* the vocabulary                                                                             */

typedef struct {
    PyObject_HEAD
    int32_t *table;   /* open addressing by hash: term id, -1 empty; at most half full */
    int64_t cap;      /* slots, a power of 2 */
    uint64_t *hashes; /* per term */
    int64_t *starts;  /* per term: its bytes in data */
    int64_t *lengths;
    int64_t terms_cap;
    uint8_t *data;
    int64_t data_cap;
    int64_t distinct; /* terms */
    int64_t used;     /* bytes of data */
} Vocabulary;

/* Put every term in a table of cap slots (a power of 2). */
static int32_t *rehashed(const uint64_t *hashes, int64_t distinct, int64_t cap)
{
    int32_t *table = malloc((size_t)cap * sizeof *table);
    if (table == NULL)
        return NULL;
    memset(table, 0xff, (size_t)cap * sizeof *table);
    for (int64_t e = 0; e < distinct; e++) {
        uint64_t slot = hashes[e] & (uint64_t)(cap - 1);
        while (table[slot] >= 0)
            slot = (slot + 1) & (uint64_t)(cap - 1);
        table[slot] = (int32_t)e;
    }
    return table;
}

/* Room for one more term of length bytes: 0, or -1 out of memory. */
static int make_room(Vocabulary *v, int64_t length)
{
    if (v->distinct == v->terms_cap) {
        const int64_t cap = 2 * v->terms_cap;
        uint64_t *h = realloc(v->hashes, (size_t)cap * sizeof *h);
        if (h == NULL)
            return -1;
        v->hashes = h;
        int64_t *s = realloc(v->starts, (size_t)cap * sizeof *s);
        if (s == NULL)
            return -1;
        v->starts = s;
        int64_t *l = realloc(v->lengths, (size_t)cap * sizeof *l);
        if (l == NULL)
            return -1;
        v->lengths = l;
        v->terms_cap = cap;
    }
    if (v->used + length > v->data_cap) {
        int64_t cap = 2 * v->data_cap;
        if (cap < v->used + length)
            cap = v->used + length;
        uint8_t *d = realloc(v->data, (size_t)cap);
        if (d == NULL)
            return -1;
        v->data = d;
        v->data_cap = cap;
    }
    if (2 * (v->distinct + 1) > v->cap) {
        if (v->cap > INT64_MAX / 4 || v->distinct >= INT32_MAX)
            return -1;
        int32_t *table = rehashed(v->hashes, v->distinct, 2 * v->cap);
        if (table == NULL)
            return -1;
        free(v->table);
        v->table = table;
        v->cap *= 2;
    }
    return 0;
}

/* The id of the term text[0:length] (hash h); a new term takes the next id with insert, else -1.
 * -2: out of memory. */
static int64_t term_id(Vocabulary *v, const uint8_t *text, int64_t length, uint64_t h, int insert)
{
    uint64_t slot = h & (uint64_t)(v->cap - 1);
    for (;;) {
        const int32_t e = v->table[slot];
        if (e < 0)
            break;
        if (v->hashes[e] == h && v->lengths[e] == length && memcmp(v->data + v->starts[e], text, (size_t)length) == 0)
            return e;
        slot = (slot + 1) & (uint64_t)(v->cap - 1);
    }
    if (!insert)
        return -1;
    if (make_room(v, length) < 0)
        return -2;
    const int64_t e = v->distinct++;
    memcpy(v->data + v->used, text, (size_t)length);
    v->starts[e] = v->used;
    v->lengths[e] = length;
    v->hashes[e] = h;
    v->used += length;
    slot = h & (uint64_t)(v->cap - 1);
    while (v->table[slot] >= 0)
        slot = (slot + 1) & (uint64_t)(v->cap - 1);
    v->table[slot] = (int32_t)e;
    return e;
}

static void vocabulary_dealloc(Vocabulary *v)
{
    free(v->table), free(v->hashes), free(v->starts), free(v->lengths), free(v->data);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static PyObject *vocabulary_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":Vocabulary", kwlist))
        return NULL;
    Vocabulary *v = (Vocabulary *)type->tp_alloc(type, 0);
    if (v == NULL)
        return NULL;
    v->cap = 1 << 12;
    v->terms_cap = 1 << 11;
    v->data_cap = 1 << 14;
    v->table = malloc((size_t)v->cap * sizeof *v->table);
    v->hashes = malloc((size_t)v->terms_cap * sizeof *v->hashes);
    v->starts = malloc((size_t)v->terms_cap * sizeof *v->starts);
    v->lengths = malloc((size_t)v->terms_cap * sizeof *v->lengths);
    v->data = malloc((size_t)v->data_cap);
    if (v->table == NULL || v->hashes == NULL || v->starts == NULL || v->lengths == NULL || v->data == NULL) {
        Py_DECREF(v);
        return PyErr_NoMemory();
    }
    memset(v->table, 0xff, (size_t)v->cap * sizeof *v->table);
    return (PyObject *)v;
}

static Py_ssize_t vocabulary_len(Vocabulary *v)
{
    return (Py_ssize_t)v->distinct;
}

enum { EN_TEXT, EN_ENDS, EN_IDS, EN_ARGS };

/* The vocabulary's methods keep the GIL: one thread at a time changes or reads it. */
static PyObject *vocabulary_encode(Vocabulary *v, PyObject *pyargs, PyObject *kwargs)
{
    static char *kwlist[] = {"text", "ends", "ids", "insert", NULL};
    Arg a[EN_ARGS] = {
        [EN_TEXT] = IN("text", UNSIGNED, SIZE_1),
        [EN_ENDS] = IN("ends", SIGNED, SIZE_8),
        [EN_IDS] = OUT("ids", SIGNED, SIZE_4),
    };
    int insert;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOp:encode", kwlist, &a[EN_TEXT].obj, &a[EN_ENDS].obj,
                                     &a[EN_IDS].obj, &insert))
        return NULL;
    if (acquire_args(a, EN_ARGS) < 0)
        return NULL;
    const uint8_t *text = BUF(a, EN_TEXT, uint8_t);
    const int64_t *ends = BUF(a, EN_ENDS, int64_t);
    int32_t *ids = BUF(a, EN_IDS, int32_t);
    const int64_t n = a[EN_IDS].n, n_text = a[EN_TEXT].n;
    const int by_space = a[EN_ENDS].n == 0;
    const char *problem = NULL;
    if (!by_space && a[EN_ENDS].n != n)
        problem = "ends must be empty or as long as ids";
    for (int64_t t = 0; problem == NULL && !by_space && t < n; t++)
        if (ends[t] < (t ? ends[t - 1] : 0) || ends[t] > n_text)
            problem = "ends must be non-decreasing and within text";
    if (problem == NULL && by_space && n > 0) { /* (checked first: nothing is added unless all can be) */
        int64_t pieces = 1;
        for (int64_t i = 0; i < n_text; i++)
            pieces += text[i] == ' ';
        if (pieces < n)
            problem = "text has fewer pieces than ids";
    }
    int64_t a_pos = 0, b_pos = -1, status = 0;
    for (int64_t t = 0; problem == NULL && t < n; t++) {
        if (by_space) {
            a_pos = b_pos + 1;
            b_pos = a_pos;
            while (b_pos < n_text && text[b_pos] != ' ')
                b_pos++;
        } else {
            a_pos = t ? ends[t - 1] : 0;
            b_pos = ends[t];
        }
        const int64_t length = b_pos - a_pos;
        status = term_id(v, text + a_pos, length, hash_bytes(text + a_pos, length), insert);
        if (status == -2)
            break;
        ids[t] = (int32_t)status;
    }
    release_args(a, EN_ARGS);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    if (status == -2)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

enum { MG_TEXT, MG_HASHES, MG_STARTS, MG_LENGTHS, MG_IDS, MG_ARGS };

static PyObject *vocabulary_merge(Vocabulary *v, PyObject *pyargs, PyObject *kwargs)
{
    static char *kwlist[] = {"text", "hashes", "starts", "lengths", "ids", NULL};
    Arg a[MG_ARGS] = {
        [MG_TEXT] = IN("text", UNSIGNED, SIZE_1),
        [MG_HASHES] = IN("hashes", UNSIGNED, SIZE_8),
        [MG_STARTS] = IN("starts", SIGNED, SIZE_8),
        [MG_LENGTHS] = IN("lengths", SIGNED, SIZE_8),
        [MG_IDS] = OUT("ids", SIGNED, SIZE_4),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOO:merge", kwlist, &a[MG_TEXT].obj, &a[MG_HASHES].obj,
                                     &a[MG_STARTS].obj, &a[MG_LENGTHS].obj, &a[MG_IDS].obj))
        return NULL;
    if (acquire_args(a, MG_ARGS) < 0)
        return NULL;
    const int64_t n = a[MG_IDS].n;
    const uint8_t *text = BUF(a, MG_TEXT, uint8_t);
    const uint64_t *hashes = BUF(a, MG_HASHES, uint64_t);
    const int64_t *starts = BUF(a, MG_STARTS, int64_t), *lengths = BUF(a, MG_LENGTHS, int64_t);
    int32_t *ids = BUF(a, MG_IDS, int32_t);
    const char *problem = NULL;
    if (a[MG_HASHES].n != n || a[MG_STARTS].n != n || a[MG_LENGTHS].n != n)
        problem = "hashes, starts, lengths and ids differ in length";
    else if (!spans_fit(starts, lengths, n, a[MG_TEXT].n))
        problem = "a term lies outside text";
    for (int64_t t = 0; problem == NULL && t < n; t++)
        if (hashes[t] != hash_bytes(text + starts[t], lengths[t]))
            problem = "a hash is not its term's";
    int64_t status = 0;
    for (int64_t t = 0; problem == NULL && t < n; t++) {
        status = term_id(v, text + starts[t], lengths[t], hashes[t], 1);
        if (status == -2)
            break;
        ids[t] = (int32_t)status;
    }
    release_args(a, MG_ARGS);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    if (status == -2)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *vocabulary_order(Vocabulary *v, PyObject *pyargs, PyObject *kwargs)
{
    static char *kwlist[] = {"out", NULL};
    Arg a[1] = {OUT("out", SIGNED, SIZE_8)};
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "O:order", kwlist, &a[0].obj))
        return NULL;
    if (acquire_args(a, 1) < 0)
        return NULL;
    if (a[0].n != v->distinct) {
        release_args(a, 1);
        PyErr_SetString(PyExc_ValueError, "out must hold one id per term");
        return NULL;
    }
    const int status = code_point_sort(v->starts, v->lengths, v->data, v->distinct, BUF(a, 0, int64_t));
    release_args(a, 1);
    if (status < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

enum { JN_ORDER, JN_OUT, JN_ARGS };

static PyObject *vocabulary_joined(Vocabulary *v, PyObject *pyargs, PyObject *kwargs)
{
    static char *kwlist[] = {"order", "out", NULL};
    Arg a[JN_ARGS] = {
        [JN_ORDER] = IN("order", SIGNED, SIZE_8),
        [JN_OUT] = OUT("out", UNSIGNED, SIZE_1),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OO:joined", kwlist, &a[JN_ORDER].obj, &a[JN_OUT].obj))
        return NULL;
    if (acquire_args(a, JN_ARGS) < 0)
        return NULL;
    const int64_t n = a[JN_ORDER].n, *order = BUF(a, JN_ORDER, int64_t);
    const char *problem = NULL;
    int64_t size = n > 1 ? n - 1 : 0;
    for (int64_t i = 0; problem == NULL && i < n; i++) {
        if (order[i] < 0 || order[i] >= v->distinct)
            problem = "a term id is out of range";
        else
            size += v->lengths[order[i]];
    }
    if (problem == NULL && a[JN_OUT].n < size)
        problem = "out is too small for the terms and their separators";
    if (problem != NULL) {
        release_args(a, JN_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    uint8_t present[128] = {0};
    for (int64_t i = 0; i < v->used; i++)
        if (v->data[i] < 128)
            present[v->data[i]] = 1;
    int separator = -1;
    for (int c = 0; c < 128; c++)
        if (!present[(c + 10) % 128]) { /* newline first */
            separator = (c + 10) % 128;
            break;
        }
    uint8_t *out = BUF(a, JN_OUT, uint8_t);
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i)
            out[p++] = (uint8_t)separator;
        memcpy(out + p, v->data + v->starts[order[i]], (size_t)v->lengths[order[i]]);
        p += v->lengths[order[i]];
    }
    release_args(a, JN_ARGS);
    return PyLong_FromLong(separator);
}

enum { SP_STARTS, SP_LENGTHS, SP_ARGS };

static PyObject *vocabulary_spans(Vocabulary *v, PyObject *pyargs, PyObject *kwargs)
{
    static char *kwlist[] = {"starts", "lengths", NULL};
    Arg a[SP_ARGS] = {
        [SP_STARTS] = OUT("starts", SIGNED, SIZE_8),
        [SP_LENGTHS] = OUT("lengths", SIGNED, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OO:spans", kwlist, &a[SP_STARTS].obj, &a[SP_LENGTHS].obj))
        return NULL;
    if (acquire_args(a, SP_ARGS) < 0)
        return NULL;
    if (a[SP_STARTS].n != v->distinct || a[SP_LENGTHS].n != v->distinct) {
        release_args(a, SP_ARGS);
        PyErr_SetString(PyExc_ValueError, "starts and lengths must hold one entry per term");
        return NULL;
    }
    memcpy(BUF(a, SP_STARTS, int64_t), v->starts, (size_t)v->distinct * sizeof *v->starts);
    memcpy(BUF(a, SP_LENGTHS, int64_t), v->lengths, (size_t)v->distinct * sizeof *v->lengths);
    release_args(a, SP_ARGS);
    Py_RETURN_NONE;
}

static PyObject *vocabulary_data(Vocabulary *v, PyObject *unused)
{
    (void)unused;
    return PyBytes_FromStringAndSize((const char *)v->data, (Py_ssize_t)v->used);
}

static PyMethodDef vocabulary_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))vocabulary_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(text, ends, ids, insert) -> None\n\nThe id of each token of text (uint8): the pieces between single "
     "spaces, or text[ends[i-1]:ends[i]] when ends (int64) is not empty; written to ids (int32). A new term "
     "takes the next id with insert, else gets -1."},
    {"merge", (PyCFunction)(void (*)(void))vocabulary_merge, METH_VARARGS | METH_KEYWORDS,
     "merge(text, hashes, starts, lengths, ids) -> None\n\nThe id of each of a split_texts chunk's terms, in its "
     "order, new terms added."},
    {"order", (PyCFunction)(void (*)(void))vocabulary_order, METH_VARARGS | METH_KEYWORDS,
     "order(out) -> None\n\nThe term ids in the code point order of the terms (out: int64, one per term)."},
    {"joined", (PyCFunction)(void (*)(void))vocabulary_joined, METH_VARARGS | METH_KEYWORDS,
     "joined(order, out) -> int\n\nThe bytes of the terms of order one after another with a separator between "
     "two: newline, or the next ASCII byte no term holds; returns it (-1: every ASCII byte is held)."},
    {"spans", (PyCFunction)(void (*)(void))vocabulary_spans, METH_VARARGS | METH_KEYWORDS,
     "spans(starts, lengths) -> None\n\nWhere each term's bytes are in data()."},
    {"data", (PyCFunction)vocabulary_data, METH_NOARGS, "data() -> bytes\n\nEvery term's bytes, end to end."},
    {NULL, NULL, 0, NULL},
};

static PyObject *vocabulary_bytes_used(Vocabulary *v, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(v->used);
}

static PyGetSetDef vocabulary_getset[] = {
    {"bytes_used", (getter)vocabulary_bytes_used, NULL, "bytes of all terms", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods vocabulary_sequence = {.sq_length = (lenfunc)vocabulary_len};

PyTypeObject CoreVocabularyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bm25lab.engine.core._core.Vocabulary",
    .tp_basicsize = sizeof(Vocabulary),
    .tp_dealloc = (destructor)vocabulary_dealloc,
    .tp_as_sequence = &vocabulary_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Vocabulary()\n\nA growing map from UTF-8 byte strings to term ids 0, 1, 2, ... in the order "
              "they are first met.",
    .tp_methods = vocabulary_methods,
    .tp_getset = vocabulary_getset,
    .tp_new = vocabulary_new,
};

/* ------------------------------------------------------------------------------------------ */
/* count_pieces, group_query_terms                                                           */

static PyObject *py_count_pieces(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"text", NULL};
    Arg a[1] = {IN("text", UNSIGNED, SIZE_1)};
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "O:count_pieces", kwlist, &a[0].obj))
        return NULL;
    if (acquire_args(a, 1) < 0)
        return NULL;
    const uint8_t *text = BUF(a, 0, uint8_t);
    int64_t pieces = 1;
    for (int64_t i = 0; i < a[0].n; i++)
        pieces += text[i] == ' ';
    release_args(a, 1);
    return PyLong_FromLongLong(pieces);
}

static int compare_i64(const void *x, const void *y)
{
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

enum { GQ_IDS, GQ_LENGTHS, GQ_Q_PTR, GQ_TERMS, GQ_COUNTS, GQ_ARGS };

static PyObject *py_group_query_terms(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"ids", "lengths", "q_ptr", "terms", "counts", NULL};
    Arg a[GQ_ARGS] = {
        [GQ_IDS] = IN("ids", SIGNED, SIZE_4 | SIZE_8),
        [GQ_LENGTHS] = IN("lengths", SIGNED, SIZE_8),
        [GQ_Q_PTR] = OUT("q_ptr", SIGNED, SIZE_8),
        [GQ_TERMS] = OUT("terms", SIGNED, SIZE_8),
        [GQ_COUNTS] = OUT("counts", FLOAT, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOO:group_query_terms", kwlist, &a[GQ_IDS].obj,
                                     &a[GQ_LENGTHS].obj, &a[GQ_Q_PTR].obj, &a[GQ_TERMS].obj, &a[GQ_COUNTS].obj))
        return NULL;
    if (acquire_args(a, GQ_ARGS) < 0)
        return NULL;
    const int64_t nq = a[GQ_LENGTHS].n, n_ids = a[GQ_IDS].n, *lengths = BUF(a, GQ_LENGTHS, int64_t);
    const int wide = a[GQ_IDS].view.itemsize == 8;
    const char *problem = NULL;
    int64_t total = 0, longest = 0;
    for (int64_t q = 0; problem == NULL && q < nq; q++) {
        if (lengths[q] < 0 || lengths[q] > n_ids - total)
            problem = "lengths must be non-negative and add up to at most len(ids)";
        else {
            total += lengths[q];
            longest = lengths[q] > longest ? lengths[q] : longest;
        }
    }
    if (problem == NULL && (a[GQ_Q_PTR].n < nq + 1 || a[GQ_TERMS].n < total || a[GQ_COUNTS].n < total))
        problem = "q_ptr must hold len(lengths) + 1, terms and counts sum(lengths)";
    int64_t *buf = problem == NULL ? alloc_n(longest, sizeof *buf) : NULL;
    if (problem != NULL || buf == NULL) {
        release_args(a, GQ_ARGS);
        if (problem != NULL)
            PyErr_SetString(PyExc_ValueError, problem);
        return problem != NULL ? NULL : PyErr_NoMemory();
    }
    int64_t *q_ptr = BUF(a, GQ_Q_PTR, int64_t), *terms = BUF(a, GQ_TERMS, int64_t);
    double *counts = BUF(a, GQ_COUNTS, double);
    int64_t pos = 0, out = 0;
    q_ptr[0] = 0;
    for (int64_t q = 0; q < nq; q++) {
        int64_t m = 0;
        for (int64_t i = pos; i < pos + lengths[q]; i++) {
            const int64_t id = wide ? BUF(a, GQ_IDS, int64_t)[i] : BUF(a, GQ_IDS, int32_t)[i];
            if (id >= 0)
                buf[m++] = id;
        }
        pos += lengths[q];
        qsort(buf, (size_t)m, sizeof *buf, compare_i64);
        for (int64_t i = 0, j; i < m; i = j) {
            for (j = i + 1; j < m && buf[j] == buf[i]; j++)
                ;
            terms[out] = buf[i];
            counts[out] = (double)(j - i);
            out++;
        }
        q_ptr[q + 1] = out;
    }
    free(buf);
    release_args(a, GQ_ARGS);
    return PyLong_FromLongLong(out);
}

/* ------------------------------------------------------------------------------------------ */
/* group_by_term                                                                              */

/* Place pairs (term, document, tf) by term with a counting sort: starts[t + 1] holds term t's pairs on
 * entry; out_* receive them, each term's together, in the pairs' order. */
static void place_by_term(const int32_t *pair_terms, const int32_t *pair_docs, const int32_t *pair_tfs,
                          int64_t pairs, int64_t *starts, int64_t num_terms, int32_t *out_terms, int32_t *out_docs,
                          int32_t *out_tfs)
{
    for (int64_t t = 0; t < num_terms; t++)
        starts[t + 1] += starts[t];
    for (int64_t p = 0; p < pairs; p++) {
        const int64_t slot = starts[pair_terms[p]]++;
        out_terms[slot] = pair_terms[p];
        out_docs[slot] = pair_docs[p];
        out_tfs[slot] = pair_tfs[p];
    }
}

enum { GT_TERMS, GT_LENGTHS, GT_OUT_TERMS, GT_OUT_DOCS, GT_OUT_TFS, GT_ARGS };

static PyObject *py_group_by_term(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"terms", "lengths", "first_doc", "num_terms", "out_terms", "out_docs", "out_tfs", NULL};
    Arg a[GT_ARGS] = {
        [GT_TERMS] = IN("terms", SIGNED, SIZE_4 | SIZE_8),
        [GT_LENGTHS] = IN("lengths", SIGNED, SIZE_4),
        [GT_OUT_TERMS] = OUT("out_terms", SIGNED, SIZE_4),
        [GT_OUT_DOCS] = OUT("out_docs", SIGNED, SIZE_4),
        [GT_OUT_TFS] = OUT("out_tfs", SIGNED, SIZE_4),
    };
    Py_ssize_t first_doc, num_terms;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOnnOOO:group_by_term", kwlist, &a[GT_TERMS].obj,
                                     &a[GT_LENGTHS].obj, &first_doc, &num_terms, &a[GT_OUT_TERMS].obj,
                                     &a[GT_OUT_DOCS].obj, &a[GT_OUT_TFS].obj))
        return NULL;
    if (acquire_args(a, GT_ARGS) < 0)
        return NULL;
    const int64_t n = a[GT_TERMS].n, n_docs = a[GT_LENGTHS].n;
    const int32_t *lengths = BUF(a, GT_LENGTHS, int32_t);
    const int wide = a[GT_TERMS].view.itemsize == 8;
    const char *problem = NULL;
    int64_t total = 0;
    for (int64_t d = 0; problem == NULL && d < n_docs; d++) {
        if (lengths[d] < 0 || lengths[d] > n - total)
            problem = "lengths must be non-negative and add up to len(terms)";
        else
            total += lengths[d];
    }
    if (problem == NULL && total != n)
        problem = "lengths must be non-negative and add up to len(terms)";
    else if (num_terms < 0 || num_terms > INT32_MAX || first_doc < 0 || first_doc > INT32_MAX - n_docs)
        problem = "num_terms and the document numbers must fit in int32";
    else if (a[GT_OUT_TERMS].n < n || a[GT_OUT_DOCS].n < n || a[GT_OUT_TFS].n < n)
        problem = "the outputs must hold len(terms) entries";
    for (int64_t t = 0; problem == NULL && t < n; t++) {
        const int64_t term = wide ? BUF(a, GT_TERMS, int64_t)[t] : BUF(a, GT_TERMS, int32_t)[t];
        if (term < 0 || term >= num_terms)
            problem = "a term id is out of range";
    }
    if (problem != NULL) {
        release_args(a, GT_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    int32_t *pair_terms = alloc_n(n, sizeof *pair_terms), *pair_docs = alloc_n(n, sizeof *pair_docs);
    int32_t *pair_tfs = alloc_n(n, sizeof *pair_tfs);
    int64_t *starts = calloc((size_t)num_terms + 1, sizeof *starts), *last = alloc_n(num_terms, sizeof *last);
    int64_t *at = alloc_n(num_terms, sizeof *at);
    int64_t pairs = -1;
    if (pair_terms != NULL && pair_docs != NULL && pair_tfs != NULL && starts != NULL && last != NULL && at != NULL) {
        Py_BEGIN_ALLOW_THREADS
        for (int64_t t = 0; t < num_terms; t++)
            last[t] = -1;
        pairs = 0;
        int64_t t = 0;
        for (int64_t d = 0; d < n_docs; d++) {
            for (int32_t i = 0; i < lengths[d]; i++, t++) {
                const int64_t term = wide ? BUF(a, GT_TERMS, int64_t)[t] : BUF(a, GT_TERMS, int32_t)[t];
                if (last[term] != d) {
                    last[term] = d;
                    at[term] = pairs;
                    pair_terms[pairs] = (int32_t)term;
                    pair_docs[pairs] = (int32_t)(first_doc + d);
                    pair_tfs[pairs] = 0;
                    starts[term + 1]++;
                    pairs++;
                }
                pair_tfs[at[term]]++;
            }
        }
        place_by_term(pair_terms, pair_docs, pair_tfs, pairs, starts, num_terms, BUF(a, GT_OUT_TERMS, int32_t),
                      BUF(a, GT_OUT_DOCS, int32_t), BUF(a, GT_OUT_TFS, int32_t));
        Py_END_ALLOW_THREADS
    }
    free(pair_terms), free(pair_docs), free(pair_tfs), free(starts), free(last), free(at);
    release_args(a, GT_ARGS);
    if (pairs < 0)
        return PyErr_NoMemory();
    return PyLong_FromLongLong(pairs);
}

/* ------------------------------------------------------------------------------------------ */
/* split_texts: the whitespace analysis of raw texts, straight to triples                      */

/* What each byte is to the whitespace analysis: 1 an ASCII whitespace byte of str.split() (\t \n \v \f
 * \r, \x1c-\x1f, the space), 2 an ASCII letter or digit or any byte of a non-ASCII character (such
 * texts come analysed already: every piece is a term), 0 anything else. */
static uint8_t byte_class[256];

static void init_byte_classes(void)
{
    static const uint8_t space[] = {9, 10, 11, 12, 13, 28, 29, 30, 31, 32};
    for (size_t i = 0; i < sizeof space; i++)
        byte_class[space[i]] = 1;
    for (int c = '0'; c <= '9'; c++)
        byte_class[c] = 2;
    for (int c = 'A'; c <= 'Z'; c++)
        byte_class[c] = 2;
    for (int c = 'a'; c <= 'z'; c++)
        byte_class[c] = 2;
    for (int c = 128; c < 256; c++)
        byte_class[c] = 2;
}

typedef struct {
    int32_t *terms, *docs, *tfs, *doc_lengths;
    uint64_t *hashes;
    int64_t *starts, *lengths;
} SplitOut;

/* Returns pairs (and *distinct), or -1 out of memory. */
static int64_t split_texts(const uint8_t *text, int64_t n, const int64_t *bounds, int64_t n_docs, int64_t first_doc,
                           SplitOut o, int64_t *distinct_out)
{
    const int64_t size = n / 2 + 2; /* at most this many tokens, so terms and pairs */
    int64_t cap = 1 << 12;
    int32_t *table = malloc((size_t)cap * sizeof *table);
    int64_t *last = alloc_n(size, sizeof *last), *at = alloc_n(size, sizeof *at);
    int32_t *pair_terms = alloc_n(size, sizeof *pair_terms), *pair_docs = alloc_n(size, sizeof *pair_docs);
    int32_t *pair_tfs = alloc_n(size, sizeof *pair_tfs);
    int64_t *slots = NULL;
    int64_t pairs = -1, distinct = 0;
    if (table == NULL || last == NULL || at == NULL || pair_terms == NULL || pair_docs == NULL || pair_tfs == NULL)
        goto done;
    memset(table, 0xff, (size_t)cap * sizeof *table);
    pairs = 0;
    for (int64_t d = 0; d < n_docs; d++) {
        int64_t i = bounds[d];
        const int64_t end = bounds[d + 1] < n ? bounds[d + 1] : n;
        int32_t tokens = 0;
        while (i < end) {
            while (i < end && byte_class[text[i]] == 1)
                i++;
            const int64_t start = i;
            int kinds = 0;
            uint64_t h = FNV_OFFSET;
            while (i < end) {
                const uint8_t c = text[i];
                const int kind = byte_class[c];
                if (kind == 1)
                    break;
                kinds |= kind;
                h = (h ^ c) * FNV_PRIME;
                i++;
            }
            if (kinds == 0) /* no letter or digit: not a term */
                continue;
            const int64_t length = i - start;
            h = mixed(h);
            uint64_t slot = h & (uint64_t)(cap - 1);
            int64_t e;
            for (;;) {
                e = table[slot];
                if (e < 0) {
                    e = distinct++;
                    o.hashes[e] = h;
                    o.starts[e] = start;
                    o.lengths[e] = length;
                    last[e] = -1;
                    table[slot] = (int32_t)e;
                    if (2 * distinct > cap) {
                        int32_t *grown = rehashed(o.hashes, distinct, 2 * cap);
                        if (grown == NULL) {
                            pairs = -1;
                            goto done;
                        }
                        free(table);
                        table = grown;
                        cap *= 2;
                    }
                    break;
                }
                if (o.hashes[e] == h && o.lengths[e] == length &&
                    memcmp(text + o.starts[e], text + start, (size_t)length) == 0)
                    break;
                slot = (slot + 1) & (uint64_t)(cap - 1);
            }
            if (last[e] != d) {
                last[e] = d;
                at[e] = pairs;
                pair_terms[pairs] = (int32_t)e;
                pair_docs[pairs] = (int32_t)(first_doc + d);
                pair_tfs[pairs] = 0;
                pairs++;
            }
            pair_tfs[at[e]]++;
            tokens++;
        }
        o.doc_lengths[d] = tokens;
    }
    slots = calloc((size_t)distinct + 1, sizeof *slots);
    if (slots == NULL) {
        pairs = -1;
        goto done;
    }
    for (int64_t p = 0; p < pairs; p++)
        slots[pair_terms[p] + 1]++;
    place_by_term(pair_terms, pair_docs, pair_tfs, pairs, slots, distinct, o.terms, o.docs, o.tfs);
done:
    free(table), free(last), free(at), free(pair_terms), free(pair_docs), free(pair_tfs), free(slots);
    *distinct_out = distinct;
    return pairs;
}

enum { SX_TEXT, SX_BOUNDS, SX_TERMS, SX_DOCS, SX_TFS, SX_DOC_LENGTHS, SX_HASHES, SX_STARTS, SX_LENGTHS, SX_ARGS };

static PyObject *py_split_texts(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"text", "bounds", "first_doc", "out_terms", "out_docs", "out_tfs", "doc_lengths",
                             "hashes", "starts", "lengths", NULL};
    Arg a[SX_ARGS] = {
        [SX_TEXT] = IN("text", UNSIGNED, SIZE_1),
        [SX_BOUNDS] = IN("bounds", SIGNED, SIZE_8),
        [SX_TERMS] = OUT("out_terms", SIGNED, SIZE_4),
        [SX_DOCS] = OUT("out_docs", SIGNED, SIZE_4),
        [SX_TFS] = OUT("out_tfs", SIGNED, SIZE_4),
        [SX_DOC_LENGTHS] = OUT("doc_lengths", SIGNED, SIZE_4),
        [SX_HASHES] = OUT("hashes", UNSIGNED, SIZE_8),
        [SX_STARTS] = OUT("starts", SIGNED, SIZE_8),
        [SX_LENGTHS] = OUT("lengths", SIGNED, SIZE_8),
    };
    Py_ssize_t first_doc;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOnOOOOOOO:split_texts", kwlist, &a[SX_TEXT].obj,
                                     &a[SX_BOUNDS].obj, &first_doc, &a[SX_TERMS].obj, &a[SX_DOCS].obj,
                                     &a[SX_TFS].obj, &a[SX_DOC_LENGTHS].obj, &a[SX_HASHES].obj, &a[SX_STARTS].obj,
                                     &a[SX_LENGTHS].obj))
        return NULL;
    if (acquire_args(a, SX_ARGS) < 0)
        return NULL;
    const int64_t n = a[SX_TEXT].n, n_docs = a[SX_BOUNDS].n - 1, size = n / 2 + 2;
    const int64_t *bounds = BUF(a, SX_BOUNDS, int64_t);
    const char *problem = NULL;
    if (n_docs < 0)
        problem = "bounds is empty";
    else if (first_doc < 0 || first_doc > INT32_MAX - n_docs)
        problem = "the document numbers must fit in int32";
    else if (a[SX_DOC_LENGTHS].n < n_docs)
        problem = "doc_lengths must hold one entry per document";
    else if (a[SX_TERMS].n < size || a[SX_DOCS].n < size || a[SX_TFS].n < size || a[SX_HASHES].n < size ||
             a[SX_STARTS].n < size || a[SX_LENGTHS].n < size)
        problem = "the pair and term outputs must hold len(text) // 2 + 2 entries";
    for (int64_t d = 0; problem == NULL && d <= n_docs; d++)
        if (bounds[d] < (d ? bounds[d - 1] : 0))
            problem = "bounds must be non-negative and non-decreasing";
    if (problem != NULL) {
        release_args(a, SX_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    const SplitOut o = {BUF(a, SX_TERMS, int32_t), BUF(a, SX_DOCS, int32_t), BUF(a, SX_TFS, int32_t),
                        BUF(a, SX_DOC_LENGTHS, int32_t), BUF(a, SX_HASHES, uint64_t), BUF(a, SX_STARTS, int64_t),
                        BUF(a, SX_LENGTHS, int64_t)};
    int64_t pairs, distinct;
    Py_BEGIN_ALLOW_THREADS
    pairs = split_texts(BUF(a, SX_TEXT, uint8_t), n, bounds, n_docs, first_doc, o, &distinct);
    Py_END_ALLOW_THREADS
    release_args(a, SX_ARGS);
    if (pairs < 0)
        return PyErr_NoMemory();
    return Py_BuildValue("(LL)", (long long)pairs, (long long)distinct);
}

/* ------------------------------------------------------------------------------------------ */
/* laying the triples out by term                                                             */

enum { CT_TERMS, CT_NEW_ID, CT_COUNTS, CT_ARGS };

/* Whether every terms[p] indexes new_id and new_id's values index [0, n_slots). */
static int ids_fit(const int32_t *terms, int64_t n, const int64_t *new_id, int64_t n_ids, int64_t n_slots)
{
    for (int64_t t = 0; t < n_ids; t++)
        if (new_id[t] < 0 || new_id[t] >= n_slots)
            return 0;
    for (int64_t p = 0; p < n; p++)
        if (terms[p] < 0 || terms[p] >= n_ids)
            return 0;
    return 1;
}

static PyObject *py_count_terms(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"terms", "new_id", "counts", NULL};
    Arg a[CT_ARGS] = {
        [CT_TERMS] = IN("terms", SIGNED, SIZE_4),
        [CT_NEW_ID] = IN("new_id", SIGNED, SIZE_8),
        [CT_COUNTS] = OUT("counts", SIGNED, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOO:count_terms", kwlist, &a[CT_TERMS].obj, &a[CT_NEW_ID].obj,
                                     &a[CT_COUNTS].obj))
        return NULL;
    if (acquire_args(a, CT_ARGS) < 0)
        return NULL;
    const int32_t *terms = BUF(a, CT_TERMS, int32_t);
    const int64_t *new_id = BUF(a, CT_NEW_ID, int64_t);
    int64_t *counts = BUF(a, CT_COUNTS, int64_t);
    const int64_t n = a[CT_TERMS].n;
    if (!ids_fit(terms, n, new_id, a[CT_NEW_ID].n, a[CT_COUNTS].n - 1)) {
        release_args(a, CT_ARGS);
        PyErr_SetString(PyExc_ValueError, "a term id is out of range of new_id, or a new id of counts");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t p = 0; p < n; p++)
        counts[new_id[terms[p]] + 1]++;
    Py_END_ALLOW_THREADS
    release_args(a, CT_ARGS);
    Py_RETURN_NONE;
}

enum { SC_TERMS, SC_VALUES, SC_NEW_ID, SC_FREE, SC_OUT, SC_ARGS };

static PyObject *py_scatter_by_term(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"terms", "values", "new_id", "free", "out", NULL};
    Arg a[SC_ARGS] = {
        [SC_TERMS] = IN("terms", SIGNED, SIZE_4),
        [SC_VALUES] = IN("values", SIGNED, SIZE_4),
        [SC_NEW_ID] = IN("new_id", SIGNED, SIZE_8),
        [SC_FREE] = OUT("free", SIGNED, SIZE_8),
        [SC_OUT] = OUT("out", SIGNED, SIZE_4),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOO:scatter_by_term", kwlist, &a[SC_TERMS].obj,
                                     &a[SC_VALUES].obj, &a[SC_NEW_ID].obj, &a[SC_FREE].obj, &a[SC_OUT].obj))
        return NULL;
    if (acquire_args(a, SC_ARGS) < 0)
        return NULL;
    const int32_t *terms = BUF(a, SC_TERMS, int32_t), *values = BUF(a, SC_VALUES, int32_t);
    const int64_t *new_id = BUF(a, SC_NEW_ID, int64_t);
    int64_t *free_at = BUF(a, SC_FREE, int64_t);
    int32_t *out = BUF(a, SC_OUT, int32_t);
    const int64_t n = a[SC_TERMS].n, n_out = a[SC_OUT].n;
    const char *problem = NULL;
    if (a[SC_VALUES].n != n)
        problem = "terms and values differ in length";
    else if (!ids_fit(terms, n, new_id, a[SC_NEW_ID].n, a[SC_FREE].n))
        problem = "a term id is out of range of new_id, or a new id of free";
    int64_t status = 0;
    if (problem == NULL) {
        Py_BEGIN_ALLOW_THREADS
        for (int64_t p = 0; p < n; p++) {
            const int64_t t = new_id[terms[p]];
            if (free_at[t] < 0 || free_at[t] >= n_out) {
                status = -1;
                break;
            }
            out[free_at[t]++] = values[p];
        }
        Py_END_ALLOW_THREADS
        if (status < 0)
            problem = "a free place is outside out";
    }
    release_args(a, SC_ARGS);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* the postings' (tf, length) pairs: key = tf * n_lengths + length_rank[doc]                   */

enum { PC_DOC_NUMS, PC_TFS, PC_LENGTH_RANK, PC_USED, PC_ARGS };

static inline int64_t rank_at(const void *ranks, int wide, int64_t d)
{
    return wide ? ((const uint32_t *)ranks)[d] : ((const uint16_t *)ranks)[d];
}

/* used[key] = 1 for every posting's key, each checked: a document number, tf or key out of range is a
 * ValueError. */
static PyObject *py_mark_pairs(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"doc_nums", "tfs", "length_rank", "n_lengths", "used", NULL};
    Arg a[PC_ARGS] = {
        [PC_DOC_NUMS] = IN("doc_nums", SIGNED, SIZE_4),
        [PC_TFS] = IN("tfs", SIGNED, SIZE_4),
        [PC_LENGTH_RANK] = IN("length_rank", UNSIGNED, SIZE_2 | SIZE_4),
        [PC_USED] = OUT("used", UNSIGNED, SIZE_1),
    };
    Py_ssize_t n_lengths;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOnO:mark_pairs", kwlist, &a[PC_DOC_NUMS].obj, &a[PC_TFS].obj,
                                     &a[PC_LENGTH_RANK].obj, &n_lengths, &a[PC_USED].obj))
        return NULL;
    if (acquire_args(a, PC_ARGS) < 0)
        return NULL;
    const int64_t n = a[PC_DOC_NUMS].n, n_ranks = a[PC_LENGTH_RANK].n, n_keys = a[PC_USED].n;
    const int32_t *doc_nums = BUF(a, PC_DOC_NUMS, int32_t), *tfs = BUF(a, PC_TFS, int32_t);
    const void *ranks = a[PC_LENGTH_RANK].view.buf;
    const int wide = a[PC_LENGTH_RANK].view.itemsize == 4;
    uint8_t *used = BUF(a, PC_USED, uint8_t);
    const char *problem = NULL;
    if (a[PC_TFS].n != n)
        problem = "doc_nums and tfs differ in length";
    else if (n_lengths < 1)
        problem = "n_lengths must be at least 1";
    if (problem != NULL) {
        release_args(a, PC_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t p = 0; p < n; p++) {
        const int32_t d = doc_nums[p], tf = tfs[p];
        if (d < 0 || d >= n_ranks || tf < 0) {
            status = -1;
            break;
        }
        const uint64_t key = (uint64_t)tf * (uint64_t)n_lengths + (uint64_t)rank_at(ranks, wide, d);
        if (key >= (uint64_t)n_keys) {
            status = -1;
            break;
        }
        used[key] = 1;
    }
    Py_END_ALLOW_THREADS
    release_args(a, PC_ARGS);
    if (status < 0) {
        PyErr_SetString(PyExc_ValueError, "a posting's document, tf or pair key is out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */

int core_build_init(PyObject *module)
{
    init_byte_classes();
    if (PyType_Ready(&CoreVocabularyType) < 0)
        return -1;
    Py_INCREF(&CoreVocabularyType);
    if (PyModule_AddObject(module, "Vocabulary", (PyObject *)&CoreVocabularyType) < 0) {
        Py_DECREF(&CoreVocabularyType);
        return -1;
    }
    return 0;
}

#define METHOD(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_VARARGS | METH_KEYWORDS, doc}

PyMethodDef core_build_methods[] = {
    METHOD(count_pieces, "count_pieces(text) -> int\n\nHow many pieces single spaces cut text (uint8) into."),
    METHOD(group_query_terms, "group_query_terms(ids, lengths, q_ptr, terms, counts) -> int\n\nQueries' token ids "
                              "(query q: the next lengths[q] of ids; -1 unknown) as a term batch: each query's "
                              "distinct known ids ascending and how often each occurs; returns len(terms) used."),
    METHOD(group_by_term, "group_by_term(terms, lengths, first_doc, num_terms, out_terms, out_docs, out_tfs) -> int"
                          "\n\n(term, document, tf) triples of consecutive documents' term ids, each term's "
                          "together, documents ascending; returns how many."),
    METHOD(split_texts, "split_texts(text, bounds, first_doc, out_terms, out_docs, out_tfs, doc_lengths, hashes, "
                        "starts, lengths) -> (pairs, distinct)\n\nThe whitespace analysis of documents "
                        "text[bounds[d]:bounds[d+1]] to triples over the chunk's own terms."),
    METHOD(count_terms, "count_terms(terms, new_id, counts) -> None\n\ncounts[new_id[t] + 1] += 1 for each t of terms."),
    METHOD(scatter_by_term, "scatter_by_term(terms, values, new_id, free, out) -> None\n\nEach value to out at the "
                            "next free place of its term."),
    METHOD(mark_pairs, "mark_pairs(doc_nums, tfs, length_rank, n_lengths, used) -> None\n\nused[key] = 1 for every "
                       "posting's key tf * n_lengths + length_rank[doc]."),
    METHOD(sort_terms, "sort_terms(starts, lengths, data, order) -> None\n\nThe strings data[starts[i]:starts[i] + "
                       "lengths[i]] in byte (code point) order, equal ones in index order."),
    {NULL, NULL, 0, NULL},
};
