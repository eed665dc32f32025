/*
 * strings.c: string columns (take_strings, same_strings), the steps the evaluation takes on document ids.
 *
 * A string column is pyarrow's layout of a string array, in two arrays: offsets (int32 or int64, n + 1 of
 * them, non-decreasing, within the bytes) and bytes (uint8): string i is bytes[offsets[i]:offsets[i + 1]].
 * bm25lab.engine.columns.Strings holds one; its numpy methods are the specification of these kernels.
 *
 *   take_strings(offsets, data, rows, out_offsets, out_data) -> bytes written
 *       the strings of rows (int64, each in 0..n-1), in that order, as a new column: out_offsets (int32 or
 *       int64, len(rows) + 1, from 0) and out_data (room for their bytes at least).
 *   same_strings(offsets, data, rows, other_offsets, other_data, other_rows, out) -> None
 *       out[i] (uint8) = 1 when string rows[i] of the first column equals string other_rows[i] of the
 *       second (same bytes), else 0.
 *
 * The caller's arrays are not trusted: offsets that decrease or leave the bytes, a row out of range, outputs
 * too small or of other lengths are a ValueError before anything is read or written. The GIL is released
 * while the bytes are copied or compared.
 */
#include "core.h"

#include <string.h>

/* one column as the kernels read it */
typedef struct {
    const int32_t *offsets32; /* one of the two */
    const int64_t *offsets64;
    Py_ssize_t n;             /* strings */
    const uint8_t *bytes;
    Py_ssize_t n_bytes;
} Column;

ALWAYS_INLINE int64_t offset_at(const Column *c, Py_ssize_t i)
{
    return c->offsets32 ? c->offsets32[i] : c->offsets64[i];
}

/* a column of the arguments offsets (i) and bytes (i + 1); NULL, or what is wrong with them */
static const char *take_column(const Arg *a, int i, Column *c)
{
    if (a[i].n < 1)
        return "offsets must hold one offset at least (n + 1 for n strings)";
    const int wide = a[i].view.itemsize == 8;
    c->offsets32 = wide ? NULL : BUF(a, i, const int32_t);
    c->offsets64 = wide ? BUF(a, i, const int64_t) : NULL;
    c->n = a[i].n - 1;
    c->bytes = BUF(a, i + 1, const uint8_t);
    c->n_bytes = a[i + 1].n;
    if (offset_at(c, 0) < 0 || offset_at(c, c->n) > c->n_bytes)
        return "offsets must lie within the bytes";
    for (Py_ssize_t k = 0; k < c->n; k++)
        if (offset_at(c, k + 1) < offset_at(c, k))
            return "offsets must be non-decreasing";
    return NULL;
}

/* NULL when every row lies in 0 .. n - 1, else what is wrong */
static const char *check_rows(const int64_t *rows, Py_ssize_t m, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < m; k++)
        if (rows[k] < 0 || rows[k] >= n)
            return "rows must lie in 0 .. len(offsets) - 2";
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* take_strings                                                                               */

enum { T_OFFSETS, T_DATA, T_ROWS, T_OUT_OFFSETS, T_OUT_DATA, T_ARGS };

/* the out_offsets of the taken strings (from 0) and their bytes' total, or -1 when it overflows int32 offsets */
static int64_t taken_offsets(const Column *c, const int64_t *rows, Py_ssize_t m, int32_t *out32, int64_t *out64)
{
    int64_t total = 0;
    if (out32)
        out32[0] = 0;
    else
        out64[0] = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        total += offset_at(c, rows[k] + 1) - offset_at(c, rows[k]);
        if (out32) {
            if (total > INT32_MAX)
                return -1;
            out32[k + 1] = (int32_t)total;
        } else {
            out64[k + 1] = total;
        }
    }
    return total;
}

static void copy_taken(const Column *c, const int64_t *rows, Py_ssize_t m, uint8_t *out)
{
    int64_t at = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        const int64_t start = offset_at(c, rows[k]), length = offset_at(c, rows[k] + 1) - start;
        memcpy(out + at, c->bytes + start, (size_t)length);
        at += length;
    }
}

static PyObject *py_take_strings(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "data", "rows", "out_offsets", "out_data", NULL};
    Arg a[T_ARGS] = {
        [T_OFFSETS] = IN("offsets", SIGNED, SIZE_4 | SIZE_8),
        [T_DATA] = IN("data", UNSIGNED, SIZE_1),
        [T_ROWS] = IN("rows", SIGNED, SIZE_8),
        [T_OUT_OFFSETS] = OUT("out_offsets", SIGNED, SIZE_4 | SIZE_8),
        [T_OUT_DATA] = OUT("out_data", UNSIGNED, SIZE_1),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOO:take_strings", kwlist, &a[T_OFFSETS].obj,
                                     &a[T_DATA].obj, &a[T_ROWS].obj, &a[T_OUT_OFFSETS].obj, &a[T_OUT_DATA].obj))
        return NULL;
    if (acquire_args(a, T_ARGS) < 0)
        return NULL;
    Column c;
    const Py_ssize_t m = a[T_ROWS].n;
    const int64_t *rows = BUF(a, T_ROWS, const int64_t);
    const char *problem = take_column(a, T_OFFSETS, &c);
    if (problem == NULL)
        problem = check_rows(rows, m, c.n);
    if (problem == NULL && a[T_OUT_OFFSETS].n != m + 1)
        problem = "out_offsets must have one offset more than rows";
    int64_t total = 0;
    if (problem == NULL) {
        const int wide = a[T_OUT_OFFSETS].view.itemsize == 8;
        total = taken_offsets(&c, rows, m, wide ? NULL : BUF(a, T_OUT_OFFSETS, int32_t),
                              wide ? BUF(a, T_OUT_OFFSETS, int64_t) : NULL);
        if (total < 0)
            problem = "the strings' bytes reach 2**31: out_offsets must be int64";
        else if (total > a[T_OUT_DATA].n)
            problem = "out_data must have room for the strings' bytes";
    }
    if (problem != NULL) {
        release_args(a, T_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    copy_taken(&c, rows, m, BUF(a, T_OUT_DATA, uint8_t));
    Py_END_ALLOW_THREADS
    release_args(a, T_ARGS);
    return PyLong_FromLongLong(total);
}

/* ------------------------------------------------------------------------------------------ */
/* same_strings                                                                               */

enum { S_OFFSETS, S_DATA, S_ROWS, S_OTHER_OFFSETS, S_OTHER_DATA, S_OTHER_ROWS, S_OUT, S_ARGS };

static void compare_rows(const Column *a, const int64_t *a_rows, const Column *b, const int64_t *b_rows,
                         Py_ssize_t m, uint8_t *out)
{
    for (Py_ssize_t k = 0; k < m; k++) {
        const int64_t x = offset_at(a, a_rows[k]), x_len = offset_at(a, a_rows[k] + 1) - x;
        const int64_t y = offset_at(b, b_rows[k]), y_len = offset_at(b, b_rows[k] + 1) - y;
        out[k] = x_len == y_len && memcmp(a->bytes + x, b->bytes + y, (size_t)x_len) == 0;
    }
}

static PyObject *py_same_strings(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "data", "rows", "other_offsets", "other_data", "other_rows", "out", NULL};
    Arg a[S_ARGS] = {
        [S_OFFSETS] = IN("offsets", SIGNED, SIZE_4 | SIZE_8),
        [S_DATA] = IN("data", UNSIGNED, SIZE_1),
        [S_ROWS] = IN("rows", SIGNED, SIZE_8),
        [S_OTHER_OFFSETS] = IN("other_offsets", SIGNED, SIZE_4 | SIZE_8),
        [S_OTHER_DATA] = IN("other_data", UNSIGNED, SIZE_1),
        [S_OTHER_ROWS] = IN("other_rows", SIGNED, SIZE_8),
        [S_OUT] = OUT("out", UNSIGNED, SIZE_1),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOOO:same_strings", kwlist, &a[S_OFFSETS].obj,
                                     &a[S_DATA].obj, &a[S_ROWS].obj, &a[S_OTHER_OFFSETS].obj, &a[S_OTHER_DATA].obj,
                                     &a[S_OTHER_ROWS].obj, &a[S_OUT].obj))
        return NULL;
    if (acquire_args(a, S_ARGS) < 0)
        return NULL;
    Column first, second;
    const Py_ssize_t m = a[S_ROWS].n;
    const char *problem = take_column(a, S_OFFSETS, &first);
    if (problem == NULL)
        problem = take_column(a, S_OTHER_OFFSETS, &second);
    if (problem == NULL && (a[S_OTHER_ROWS].n != m || a[S_OUT].n != m))
        problem = "rows, other_rows and out must have one length";
    if (problem == NULL)
        problem = check_rows(BUF(a, S_ROWS, const int64_t), m, first.n);
    if (problem == NULL)
        problem = check_rows(BUF(a, S_OTHER_ROWS, const int64_t), m, second.n);
    if (problem != NULL) {
        release_args(a, S_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    compare_rows(&first, BUF(a, S_ROWS, const int64_t), &second, BUF(a, S_OTHER_ROWS, const int64_t), m,
                 BUF(a, S_OUT, uint8_t));
    Py_END_ALLOW_THREADS
    release_args(a, S_ARGS);
    Py_RETURN_NONE;
}

PyMethodDef core_strings_methods[] = {
    {"take_strings", (PyCFunction)(void (*)(void))py_take_strings, METH_VARARGS | METH_KEYWORDS,
     "take_strings(offsets, data, rows, out_offsets, out_data) -> int\n\n"
     "The strings data[offsets[r]:offsets[r + 1]] of rows r (int64) in that order, as out_offsets (from 0; int32 "
     "or int64) and out_data; returns the bytes written."},
    {"same_strings", (PyCFunction)(void (*)(void))py_same_strings, METH_VARARGS | METH_KEYWORDS,
     "same_strings(offsets, data, rows, other_offsets, other_data, other_rows, out) -> None\n\n"
     "out[i] = 1 when string rows[i] of the first column has the bytes of string other_rows[i] of the second."},
    {NULL, NULL, 0, NULL},
};
