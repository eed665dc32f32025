/* Taking array arguments through the buffer protocol (see core.h). */
#include "core.h"

#include <string.h>

/* The kind of a one-item struct format in native byte order ('?' for anything else). */
static char format_kind(const char *fmt)
{
    if (fmt == NULL)
        return UNSIGNED; /* "B" */
#if PY_LITTLE_ENDIAN
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
#else
    if (*fmt == '@' || *fmt == '=' || *fmt == '>' || *fmt == '!')
#endif
        fmt++;
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return '?';
    if (strchr("bhilqn", fmt[0]))
        return SIGNED;
    if (strchr("BHILQN", fmt[0]))
        return UNSIGNED;
    if (fmt[0] == 'd')
        return FLOAT;
    return '?';
}

void release_args(Arg *args, int n)
{
    for (int i = n - 1; i >= 0; i--)
        PyBuffer_Release(&args[i].view);
}

int refuse(const char *problem)
{
    if (problem == NULL)
        return 0;
    PyErr_SetString(PyExc_ValueError, problem);
    return -1;
}

/* what an argument must be, for the errors */
static const char *kind_name(char kind, int sizes)
{
    if (kind == FLOAT)
        return "float64";
    switch (sizes) {
    case SIZE_1: return kind == SIGNED ? "int8" : "uint8";
    case SIZE_4: return kind == SIGNED ? "int32" : "uint32";
    case SIZE_8: return kind == SIGNED ? "int64" : "uint64";
    case SIZE_2 | SIZE_4: return kind == SIGNED ? "int16 or int32" : "uint16 or uint32";
    case SIZE_4 | SIZE_8: return kind == SIGNED ? "int32 or int64" : "uint32 or uint64";
    default: return "?";
    }
}

/* Get every argument's buffer (C-contiguous, the kind and item size expected, writable if asked);
 * on failure, raise TypeError naming the argument, release those taken and return -1. */
int acquire_args(Arg *args, int n)
{
    for (int i = 0; i < n; i++) {
        Arg *a = &args[i];
        const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (a->writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(a->obj, &a->view, flags) < 0) {
            release_args(args, i);
            PyErr_Format(PyExc_TypeError, "%s: expected a%s C-contiguous array of %s", a->name,
                         a->writable ? " writable" : "", kind_name(a->kind, a->sizes));
            return -1;
        }
        const Py_ssize_t size = a->view.itemsize;
        if (format_kind(a->view.format) != a->kind || size <= 0 || size > 8 || !(a->sizes & (1 << size))) {
            release_args(args, i + 1);
            PyErr_Format(PyExc_TypeError, "%s: expected an array of %s, got format '%s'", a->name,
                         kind_name(a->kind, a->sizes), a->view.format ? a->view.format : "B");
            return -1;
        }
        if ((uintptr_t)a->view.buf % (uintptr_t)size) {
            release_args(args, i + 1);
            PyErr_Format(PyExc_ValueError, "%s: the array is not aligned", a->name);
            return -1;
        }
        a->n = a->view.len / size;
    }
    return 0;
}
