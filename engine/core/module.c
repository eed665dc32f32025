/*
 * bm25lab.engine.core._core: every hot loop of bm25lab, compiled ahead of time, in one extension.
 *
 * The ground floor: the entry points take arrays (through the buffer protocol) and plain numbers,
 * and know nothing of the engine. The Python code above prepares their arguments; the numpy/Python
 * code beside each one is its specification, and the tests prove the two equal bit for bit.
 *
 * One file per job, each with its table of entry points:
 *   search.c   exact top-k of a query or a batch; each term's extreme weights   core_search_methods
 *   build.c    token strings to term ids (Vocabulary), triples, laying postings out by term,
 *              the postings' pair codes, code point order                  core_build_methods
 *   cut.c      jieba's precise cut (a trie of its dictionary, route, HMM) and
 *              auto's split of mixed text                                  core_cut_methods
 *   runreader.c  the TREC run and qrels readers: rows, scores, ids, the tie
 *              rule's order                                             core_runreader_methods
 *   strings.c  string columns: taking rows, comparing rows                 core_strings_methods
 *   args.c     taking array arguments (core.h)
 *
 * Build with -ffp-contract=off and never -ffast-math: float64 results must be the specification's.
 */
#include "core.h"

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_core",
    .m_doc = "bm25lab's compiled core: search, building, jieba's cut and the TREC run reader in C.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *module = PyModule_Create(&core_module);
    if (module == NULL)
        return NULL;
    PyMethodDef *tables[] = {core_search_methods, core_build_methods, core_cut_methods, core_runreader_methods,
                            core_strings_methods};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (PyModule_AddFunctions(module, tables[i]) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    if (core_build_init(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
