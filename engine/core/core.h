/*
 * The compiled core of bm25lab: what every C file of it shares (see module.c for the files and their jobs).
 *
 * Arguments come in through the buffer protocol (no numpy headers): an entry point lists its array
 * arguments as IN/OUT entries of an Arg table, takes them with acquire_args (kind, item size,
 * C-contiguity, alignment, writability checked; a TypeError or ValueError naming the argument
 * otherwise) and gives them back with release_args.
 */
#ifndef BM25LAB_CORE_H
#define BM25LAB_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------------------------------------ */
/* Python arguments                                                                           */

enum { SIGNED = 'i', UNSIGNED = 'u', FLOAT = 'f' };

/* accepted item sizes of an argument, a bit per size (1 << itemsize) */
enum { SIZE_1 = 1 << 1, SIZE_2 = 1 << 2, SIZE_4 = 1 << 4, SIZE_8 = 1 << 8 };

typedef struct {
    const char *name;
    PyObject *obj;
    char kind;            /* SIGNED, UNSIGNED, FLOAT */
    int sizes;            /* accepted item sizes, a bit per size (1 << itemsize) */
    int writable;
    Py_buffer view;
    Py_ssize_t n;         /* elements */
} Arg;

/* an argument read (IN) or written (OUT), as the buffer protocol gives it */
#define IN(name, kind, sizes) {name, NULL, kind, sizes, 0, {0}, 0}
#define OUT(name, kind, sizes) {name, NULL, kind, sizes, 1, {0}, 0}

int acquire_args(Arg *args, int n);
void release_args(Arg *args, int n);
/* A ValueError saying problem and -1 when problem is set (a check failed), else 0. */
int refuse(const char *problem);

#define BUF(args, i, type) ((type *)(args)[i].view.buf)

/* ------------------------------------------------------------------------------------------ */
/* each job's entry points (module.c adds them to the module)                                 */

extern PyMethodDef core_search_methods[];
extern PyMethodDef core_build_methods[];
extern PyMethodDef core_codec_methods[];
int core_build_init(PyObject *module); /* adds the Vocabulary type */
extern PyMethodDef core_cut_methods[];
extern PyMethodDef core_runreader_methods[];
extern PyMethodDef core_strings_methods[];

#endif
