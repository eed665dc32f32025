/*
 * codec.c: postings in blocks of 128, binary packing with a width per block (the format:
 * engine/codec.py, whose numpy code is the specification; Lemire and Boytsov, "Decoding billions of
 * integers per second through vectorization", SPE 2015: a full block in SIMD-BP128's vertical layout,
 * a term's shorter last block packed value after value).
 *
 * A full block is unpacked four values at a time with GCC/Clang vector types (SSE2 on x86-64, NEON
 * on aarch64), one routine per width with its shifts as constants; a short block value by value from
 * 64-bit little-endian reads (the data's PAD zero bytes make a read past the last block safe).
 *
 * Python API (buffer protocol):
 *   block_layout(offsets, term_starts, doc_nums, tfs, doc_lengths, positions, last_docs, max_tf, min_length, threads=1)
 *   write_blocks(offsets, term_starts, doc_nums, tfs, positions, data, threads=1)
 *   decode_postings(offsets, term_starts, last_docs, positions, data, lo, hi, docs, tfs)
 */
#include "codec.h"

#include <pthread.h>
#include <string.h>

typedef uint32_t u32x4 __attribute__((vector_size(16)));

static inline u32x4 load4(const uint8_t *p)
{
    u32x4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(uint32_t *p, u32x4 v) { memcpy(p, &v, sizeof v); }

static inline uint64_t load8(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ------------------------------------------------------------------------------------------ */
/* unpacking                                                                                  */

/* A full block of width W (0..32): 32 rows of 4 lanes; row r's bits start at bit r * W of each
 * lane's stream of 32-bit words, whose word w lies at byte 16 * w + 4 * lane. */
#define UNPACK_FULL(W)                                                                          \
    static void unpack_full_##W(const uint8_t *in, uint32_t *out)                              \
    {                                                                                           \
        _Pragma("GCC unroll 32") for (int r = 0; r < 32; r++)                                  \
        {                                                                                       \
            const int bit = r * (W), w = bit / 32, s = bit % 32;                                \
            u32x4 v = load4(in + 16 * w) >> (unsigned)s;                                        \
            if (s + (W) > 32)                                                                   \
                v |= load4(in + 16 * (w + 1)) << (unsigned)(32 - s);                            \
            if ((W) < 32)                                                                       \
                v &= (u32x4){0, 0, 0, 0} + (uint32_t)((UINT64_C(1) << ((W) & 31)) - 1);         \
            store4(out + 4 * r, v);                                                             \
        }                                                                                       \
    }

static void unpack_full_0(const uint8_t *in, uint32_t *out)
{
    (void)in;
    memset(out, 0, BLOCK * sizeof *out);
}

UNPACK_FULL(1) UNPACK_FULL(2) UNPACK_FULL(3) UNPACK_FULL(4) UNPACK_FULL(5) UNPACK_FULL(6) UNPACK_FULL(7)
UNPACK_FULL(8) UNPACK_FULL(9) UNPACK_FULL(10) UNPACK_FULL(11) UNPACK_FULL(12) UNPACK_FULL(13) UNPACK_FULL(14)
UNPACK_FULL(15) UNPACK_FULL(16) UNPACK_FULL(17) UNPACK_FULL(18) UNPACK_FULL(19) UNPACK_FULL(20) UNPACK_FULL(21)
UNPACK_FULL(22) UNPACK_FULL(23) UNPACK_FULL(24) UNPACK_FULL(25) UNPACK_FULL(26) UNPACK_FULL(27) UNPACK_FULL(28)
UNPACK_FULL(29) UNPACK_FULL(30) UNPACK_FULL(31)

static void unpack_full_32(const uint8_t *in, uint32_t *out)
{
    memcpy(out, in, BLOCK * sizeof *out); /* row r's lane l is word r of lane l: byte 16 r + 4 l */
}


/* A full block's gaps of width W (at most 24) unpacked straight into documents: row r's four gaps
 * plus one, summed within the row in two lane shifts, plus the document before them (d). Returns the
 * last document. */
#define UNPACK_DOCS(W)                                                                          \
    static uint32_t unpack_docs_##W(const uint8_t *in, uint32_t *out, uint32_t d)             \
    {                                                                                           \
        const u32x4 one = {1, 1, 1, 1}, zero = {0, 0, 0, 0};                                    \
        u32x4 carry = zero + d;                                                                 \
        _Pragma("GCC unroll 32") for (int r = 0; r < 32; r++)                                  \
        {                                                                                       \
            const int bit = r * (W), w = bit / 32, s = bit % 32;                                \
            u32x4 v = load4(in + 16 * w) >> (unsigned)s;                                        \
            if (s + (W) > 32)                                                                   \
                v |= load4(in + 16 * (w + 1)) << (unsigned)(32 - s);                            \
            v &= zero + (uint32_t)((UINT64_C(1) << (W)) - 1);                                   \
            v += one;                                                                           \
            v += __builtin_shufflevector(zero, v, 0, 4, 5, 6);                                  \
            v += __builtin_shufflevector(zero, v, 0, 1, 4, 5);                                  \
            v += carry;                                                                         \
            store4(out + 4 * r, v);                                                             \
            carry = __builtin_shufflevector(v, v, 3, 3, 3, 3);                                  \
        }                                                                                       \
        return out[BLOCK - 1];                                                                  \
    }

static uint32_t unpack_docs_0(const uint8_t *in, uint32_t *out, uint32_t d)
{
    (void)in;
    for (int i = 0; i < BLOCK; i++)
        out[i] = d + (uint32_t)i + 1;
    return out[BLOCK - 1];
}

UNPACK_DOCS(1) UNPACK_DOCS(2) UNPACK_DOCS(3) UNPACK_DOCS(4) UNPACK_DOCS(5) UNPACK_DOCS(6) UNPACK_DOCS(7)
UNPACK_DOCS(8) UNPACK_DOCS(9) UNPACK_DOCS(10) UNPACK_DOCS(11) UNPACK_DOCS(12) UNPACK_DOCS(13) UNPACK_DOCS(14)
UNPACK_DOCS(15) UNPACK_DOCS(16) UNPACK_DOCS(17) UNPACK_DOCS(18) UNPACK_DOCS(19) UNPACK_DOCS(20) UNPACK_DOCS(21)
UNPACK_DOCS(22) UNPACK_DOCS(23) UNPACK_DOCS(24)

const UnpackDocs UNPACK_DOCS_BY_WIDTH[25] = {
    unpack_docs_0, unpack_docs_1, unpack_docs_2, unpack_docs_3, unpack_docs_4, unpack_docs_5, unpack_docs_6,
    unpack_docs_7, unpack_docs_8, unpack_docs_9, unpack_docs_10, unpack_docs_11, unpack_docs_12, unpack_docs_13,
    unpack_docs_14, unpack_docs_15, unpack_docs_16, unpack_docs_17, unpack_docs_18, unpack_docs_19, unpack_docs_20,
    unpack_docs_21, unpack_docs_22, unpack_docs_23, unpack_docs_24,
};

const UnpackFull UNPACK_FULL_BY_WIDTH[33] = {
    unpack_full_0, unpack_full_1, unpack_full_2, unpack_full_3, unpack_full_4, unpack_full_5, unpack_full_6,
    unpack_full_7, unpack_full_8, unpack_full_9, unpack_full_10, unpack_full_11, unpack_full_12, unpack_full_13,
    unpack_full_14, unpack_full_15, unpack_full_16, unpack_full_17, unpack_full_18, unpack_full_19, unpack_full_20,
    unpack_full_21, unpack_full_22, unpack_full_23, unpack_full_24, unpack_full_25, unpack_full_26, unpack_full_27,
    unpack_full_28, unpack_full_29, unpack_full_30, unpack_full_31, unpack_full_32,
};

/* A short block: value i at bit i * width of one little-endian stream (at most 32 + 7 bits a read). */
void unpack_short(const uint8_t *in, int width, int n, uint32_t *out)
{
    if (width == 0) {
        memset(out, 0, (size_t)n * sizeof *out);
        return;
    }
    const uint64_t mask = (UINT64_C(1) << width) - 1;
    for (int i = 0; i < n; i++) {
        const int64_t bit = (int64_t)i * width;
        out[i] = (uint32_t)((load8(in + bit / 8) >> (bit % 8)) & mask);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* decoding a block (codec.h)                                                                 */

int decode_docs_rest(const BlockSet *bs, int n, int gw, int64_t at, int64_t base, int64_t last, uint32_t *docs)
{
    unpack(bs->data + at, gw, n, docs);
    if (gw <= 24) {
        /* base + n gaps of at most 2**24 - 1, plus n: below 2**31 + 2**31, no wrap in 32 bits; the
         * documents increase, so the last one equal to `last` keeps them all in [base, last] */
        uint32_t d = (uint32_t)base - 1; /* the document before the block: every gap adds one more */
        for (int i = 0; i < n; i++) {
            d += docs[i] + 1;
            docs[i] = d;
        }
        return d == (uint32_t)last ? 0 : -1;
    }
    int64_t d = base + docs[0];
    docs[0] = (uint32_t)(d <= last ? d : 0);
    for (int i = 1; i < n && d <= last; i++) {
        d += (int64_t)docs[i] + 1;
        docs[i] = (uint32_t)d;
    }
    return d == last ? 0 : -1;
}

int block_set(BlockSet *bs, const Arg *last_docs, const Arg *positions, const Arg *data, int64_t n_docs)
{
    const char *problem = NULL;
    if (positions->n != last_docs->n + 1)
        problem = "positions must hold one more entry than last_docs";
    else if (data->n < PAD)
        problem = "data is shorter than its padding";
    if (refuse(problem) < 0)
        return -1;
    *bs = (BlockSet){last_docs->view.buf, positions->view.buf, data->view.buf, last_docs->n, data->n, n_docs};
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* encoding                                                                                   */

static inline int width_of(uint32_t x) { return x ? 32 - __builtin_clz(x) : 0; }

static void pack_full(const uint32_t *values, int width, uint8_t *out)
{
    if (width == 0)
        return;
    for (int r = 0; r < 32; r++) {
        const int bit = r * width, w = bit / 32, s = bit % 32;
        for (int l = 0; l < LANES; l++) {
            const uint64_t v = (uint64_t)values[LANES * r + l] << s;
            uint32_t word;
            memcpy(&word, out + 16 * w + 4 * l, 4);
            word |= (uint32_t)v;
            memcpy(out + 16 * w + 4 * l, &word, 4);
            if (s + width > 32) {
                memcpy(&word, out + 16 * (w + 1) + 4 * l, 4);
                word |= (uint32_t)(v >> 32);
                memcpy(out + 16 * (w + 1) + 4 * l, &word, 4);
            }
        }
    }
}

static void pack_short(const uint32_t *values, int width, int n, uint8_t *out)
{
    for (int i = 0; i < n && width > 0; i++) {
        const int64_t bit = (int64_t)i * width;
        const uint64_t v = (uint64_t)values[i] << (bit % 8);
        for (int k = 0; k < 5 && (v >> (8 * k)) != 0; k++)
            out[bit / 8 + k] |= (uint8_t)(v >> (8 * k));
    }
}

typedef struct {
    int64_t term;    /* its term */
    int64_t first;   /* its first posting */
    int n;           /* postings */
} BlockSpan;

/* the values of block `span` (gaps and frequencies less one) and their widths */
static void block_values(const BlockSpan *span, const int64_t *offsets, const int32_t *doc_nums, const int32_t *tfs,
                         uint32_t *gaps, uint32_t *freqs, int *gap_width, int *tf_width)
{
    uint32_t gap_max = 0, tf_max = 0;
    int64_t previous = span->first == offsets[span->term] ? -1 : doc_nums[span->first - 1];
    for (int i = 0; i < span->n; i++) {
        const int64_t d = doc_nums[span->first + i];
        gaps[i] = (uint32_t)(d - previous - 1);
        freqs[i] = (uint32_t)tfs[span->first + i] - 1;
        gap_max |= gaps[i];
        tf_max |= freqs[i];
        previous = d;
    }
    *gap_width = width_of(gap_max);
    *tf_width = width_of(tf_max);
}

enum { L_OFFSETS, L_STARTS, L_DOC_NUMS, L_TFS, L_LENGTHS, L_POSITIONS, L_LAST_DOCS, L_MAX_TF, L_MIN_LENGTH, L_ARGS };

/* Checks of the postings of terms t0:t1 an encoder reads (after check_layout): documents ascending within
 * each term and in [0, n_docs); frequencies >= 1. NULL, or what is wrong (runs without the GIL). */
static const char *check_terms(const int64_t *offsets, int64_t t0, int64_t t1, const int32_t *doc_nums,
                               const int32_t *tfs, int64_t n_docs)
{
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t p = offsets[t]; p < offsets[t + 1]; p++) {
            if (doc_nums[p] < 0 || doc_nums[p] >= n_docs || (p > offsets[t] && doc_nums[p] <= doc_nums[p - 1]))
                return "documents must be ascending within a term and below the number of documents";
            if (tfs[p] < 1)
                return "frequencies must be at least 1";
        }
    }
    return NULL;
}

/* Checks of what an encoder reads before any posting: offsets from 0, non-decreasing, to the postings'
 * count; term_starts the cumulative ceil(df / BLOCK) (so every term's blocks are in place before the
 * terms are shared out among threads). NULL, or what is wrong. */
static const char *check_layout(const int64_t *offsets, int64_t n_terms, const int64_t *starts, int64_t n_starts,
                                int64_t n_postings)
{
    if (n_terms < 0)
        return "offsets is empty";
    if (n_starts != n_terms + 1)
        return "term_starts must hold one entry more than the terms";
    if (offsets[0] != 0 || offsets[n_terms] != n_postings || starts[0] != 0)
        return "offsets must run from 0 to the number of postings";
    for (int64_t t = 0; t < n_terms; t++) {
        const int64_t df = offsets[t + 1] - offsets[t];
        if (df < 0)
            return "offsets must be non-decreasing";
        if (starts[t + 1] - starts[t] != (df + BLOCK - 1) / BLOCK)
            return "term_starts disagree with offsets";
    }
    return NULL;
}

/* block j of term t (j in term_starts[t]:term_starts[t + 1]) */
static inline BlockSpan span_of(const int64_t *offsets, const int64_t *starts, int64_t t, int64_t j)
{
    const int64_t first = offsets[t] + (j - starts[t]) * BLOCK, left = offsets[t + 1] - first;
    return (BlockSpan){t, first, (int)(left < BLOCK ? left : BLOCK)};
}

/* ------------------------------------------------------------------------------------------ */
/* encoding on threads: the terms in parts of about equal postings                            */

#define MAX_THREADS 64

typedef struct Encoding Encoding;

typedef struct {
    Encoding *job;
    int64_t t0, t1;     /* its terms */
    const char *problem;
    pthread_t thread;
    int started;
} EncodingPart;

struct Encoding {
    const int64_t *offsets, *starts;
    const int32_t *doc_nums, *tfs, *lengths;
    int64_t n_docs;
    /* block_layout's outputs (positions: each block's size until the sums) or write_blocks' inputs */
    int64_t *sizes;
    const int64_t *positions;
    int32_t *last_docs;
    int64_t *max_tf, *min_length;
    uint8_t *data;
    void (*work)(EncodingPart *);
    EncodingPart parts[MAX_THREADS];
    int n_parts;
};

static void *encoding_thread(void *arg)
{
    EncodingPart *part = arg;
    part->job->work(part);
    return NULL;
}

/* Run job->work on every part, parts 1.. on threads and part 0 here (any part whose thread could not
 * be started after it: the result is the same); returns the problem of the first part that has one. */
static const char *run_encoding(Encoding *job, int64_t n_terms, int threads)
{
    const int64_t total = job->offsets[n_terms];
    job->n_parts = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    int64_t t = 0;
    for (int c = 0; c < job->n_parts; c++) { /* part c ends at the first term past (c + 1) / n of the postings */
        const int64_t goal = total / job->n_parts * (c + 1);
        int64_t t1 = t;
        while (t1 < n_terms && (c + 1 == job->n_parts || job->offsets[t1] < goal))
            t1++;
        job->parts[c] = (EncodingPart){job, t, t1, NULL, 0, 0};
        t = t1;
    }
    for (int c = 1; c < job->n_parts; c++)
        job->parts[c].started = pthread_create(&job->parts[c].thread, NULL, encoding_thread, &job->parts[c]) == 0;
    job->work(&job->parts[0]);
    for (int c = 1; c < job->n_parts; c++) {
        if (job->parts[c].started)
            pthread_join(job->parts[c].thread, NULL);
        else
            job->work(&job->parts[c]);
    }
    for (int c = 0; c < job->n_parts; c++)
        if (job->parts[c].problem != NULL)
            return job->parts[c].problem;
    return NULL;
}

/* block_layout of a part's terms: each block's size (in job->sizes, summed later), last document,
 * largest frequency, smallest document length. */
static void layout_part(EncodingPart *part)
{
    const Encoding *job = part->job;
    part->problem = check_terms(job->offsets, part->t0, part->t1, job->doc_nums, job->tfs, job->n_docs);
    if (part->problem != NULL)
        return;
    uint32_t gaps[BLOCK], freqs[BLOCK];
    for (int64_t t = part->t0; t < part->t1; t++)
    for (int64_t j = job->starts[t]; j < job->starts[t + 1]; j++) {
        const BlockSpan span = span_of(job->offsets, job->starts, t, j);
        int gw, tw;
        block_values(&span, job->offsets, job->doc_nums, job->tfs, gaps, freqs, &gw, &tw);
        job->sizes[j] = HEADER + section_bytes(span.n, gw) + section_bytes(span.n, tw);
        int64_t tf_max = 0, length_min = INT64_MAX;
        for (int i = 0; i < span.n; i++) {
            const int64_t tf = job->tfs[span.first + i], length = job->lengths[job->doc_nums[span.first + i]];
            tf_max = tf > tf_max ? tf : tf_max;
            length_min = length < length_min ? length : length_min;
        }
        job->last_docs[j] = job->doc_nums[span.first + span.n - 1];
        job->max_tf[j] = tf_max;
        job->min_length[j] = length_min;
    }
}

/* write_blocks of a part's terms: each block checked against its place in the layout, then packed. */
static void write_part(EncodingPart *part)
{
    const Encoding *job = part->job;
    part->problem = check_terms(job->offsets, part->t0, part->t1, job->doc_nums, job->tfs, INT32_MAX);
    uint32_t gaps[BLOCK], freqs[BLOCK];
    for (int64_t t = part->t0; part->problem == NULL && t < part->t1; t++)
    for (int64_t j = job->starts[t]; j < job->starts[t + 1]; j++) {
        const BlockSpan span = span_of(job->offsets, job->starts, t, j);
        int gw, tw;
        block_values(&span, job->offsets, job->doc_nums, job->tfs, gaps, freqs, &gw, &tw);
        const int64_t size = HEADER + section_bytes(span.n, gw) + section_bytes(span.n, tw);
        if (job->positions[j + 1] - job->positions[j] != size) {
            part->problem = "positions and data disagree with the blocks";
            break;
        }
        uint8_t *out = job->data + job->positions[j];
        memset(out, 0, (size_t)size);
        out[0] = (uint8_t)gw;
        out[1] = (uint8_t)tw;
        if (span.n == BLOCK) {
            pack_full(gaps, gw, out + HEADER);
            pack_full(freqs, tw, out + HEADER + section_bytes(BLOCK, gw));
        } else {
            pack_short(gaps, gw, span.n, out + HEADER);
            pack_short(freqs, tw, span.n, out + HEADER + section_bytes(span.n, gw));
        }
    }
}

static PyObject *py_block_layout(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "term_starts", "doc_nums", "tfs", "doc_lengths", "positions", "last_docs",
                             "max_tf", "min_length", "threads", NULL};
    Arg a[L_ARGS] = {
        [L_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [L_STARTS] = IN("term_starts", SIGNED, SIZE_8),
        [L_DOC_NUMS] = IN("doc_nums", SIGNED, SIZE_4),
        [L_TFS] = IN("tfs", SIGNED, SIZE_4),
        [L_LENGTHS] = IN("doc_lengths", SIGNED, SIZE_4),
        [L_POSITIONS] = OUT("positions", SIGNED, SIZE_8),
        [L_LAST_DOCS] = OUT("last_docs", SIGNED, SIZE_4),
        [L_MAX_TF] = OUT("max_tf", SIGNED, SIZE_8),
        [L_MIN_LENGTH] = OUT("min_length", SIGNED, SIZE_8),
    };
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOOOOO|i:block_layout", kwlist, &a[L_OFFSETS].obj,
                                     &a[L_STARTS].obj, &a[L_DOC_NUMS].obj, &a[L_TFS].obj, &a[L_LENGTHS].obj,
                                     &a[L_POSITIONS].obj, &a[L_LAST_DOCS].obj, &a[L_MAX_TF].obj, &a[L_MIN_LENGTH].obj,
                                     &threads))
        return NULL;
    if (acquire_args(a, L_ARGS) < 0)
        return NULL;
    const int64_t *offsets = BUF(a, L_OFFSETS, const int64_t), *starts = BUF(a, L_STARTS, const int64_t);
    const int64_t n_terms = a[L_OFFSETS].n - 1, n_blocks = a[L_LAST_DOCS].n;
    if (a[L_TFS].n != a[L_DOC_NUMS].n) {
        release_args(a, L_ARGS);
        PyErr_SetString(PyExc_ValueError, "doc_nums and tfs differ in length");
        return NULL;
    }
    int64_t *positions = BUF(a, L_POSITIONS, int64_t);
    Encoding job = {.offsets = offsets, .starts = starts, .doc_nums = BUF(a, L_DOC_NUMS, const int32_t),
                    .tfs = BUF(a, L_TFS, const int32_t), .lengths = BUF(a, L_LENGTHS, const int32_t),
                    .n_docs = a[L_LENGTHS].n, .sizes = positions, .last_docs = BUF(a, L_LAST_DOCS, int32_t),
                    .max_tf = BUF(a, L_MAX_TF, int64_t), .min_length = BUF(a, L_MIN_LENGTH, int64_t),
                    .work = layout_part};
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = check_layout(offsets, n_terms, starts, a[L_STARTS].n, a[L_DOC_NUMS].n);
    if (problem == NULL && (starts[n_terms] != n_blocks || a[L_POSITIONS].n != n_blocks + 1
                            || a[L_MAX_TF].n != n_blocks || a[L_MIN_LENGTH].n != n_blocks))
        problem = "the block arrays must hold one entry a block (positions one more)";
    if (problem == NULL)
        problem = run_encoding(&job, n_terms, threads);
    if (problem == NULL) { /* the sizes summed into the starts */
        int64_t at = 0;
        for (int64_t j = 0; j < n_blocks; j++) {
            const int64_t size = positions[j];
            positions[j] = at;
            at += size;
        }
        positions[n_blocks] = at;
    }
    Py_END_ALLOW_THREADS
    release_args(a, L_ARGS);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_RETURN_NONE;
}

enum { W_OFFSETS, W_STARTS, W_DOC_NUMS, W_TFS, W_POSITIONS, W_DATA, W_ARGS };

static PyObject *py_write_blocks(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "term_starts", "doc_nums", "tfs", "positions", "data", "threads", NULL};
    Arg a[W_ARGS] = {
        [W_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [W_STARTS] = IN("term_starts", SIGNED, SIZE_8),
        [W_DOC_NUMS] = IN("doc_nums", SIGNED, SIZE_4),
        [W_TFS] = IN("tfs", SIGNED, SIZE_4),
        [W_POSITIONS] = IN("positions", SIGNED, SIZE_8),
        [W_DATA] = OUT("data", UNSIGNED, SIZE_1),
    };
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOO|i:write_blocks", kwlist, &a[W_OFFSETS].obj,
                                     &a[W_STARTS].obj, &a[W_DOC_NUMS].obj, &a[W_TFS].obj, &a[W_POSITIONS].obj,
                                     &a[W_DATA].obj, &threads))
        return NULL;
    if (acquire_args(a, W_ARGS) < 0)
        return NULL;
    const int64_t *offsets = BUF(a, W_OFFSETS, const int64_t), *starts = BUF(a, W_STARTS, const int64_t);
    const int64_t *positions = BUF(a, W_POSITIONS, const int64_t);
    uint8_t *data = BUF(a, W_DATA, uint8_t);
    const int64_t n_terms = a[W_OFFSETS].n - 1;
    if (a[W_TFS].n != a[W_DOC_NUMS].n) {
        release_args(a, W_ARGS);
        PyErr_SetString(PyExc_ValueError, "doc_nums and tfs differ in length");
        return NULL;
    }
    Encoding job = {.offsets = offsets, .starts = starts, .doc_nums = BUF(a, W_DOC_NUMS, const int32_t),
                    .tfs = BUF(a, W_TFS, const int32_t), .positions = positions, .data = data, .work = write_part};
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = check_layout(offsets, n_terms, starts, a[W_STARTS].n, a[W_DOC_NUMS].n);
    /* the layout block_layout gave: each block exactly as long as its widths make it (write_part) */
    const int64_t n_blocks = problem == NULL ? starts[n_terms] : 0;
    if (problem == NULL && (a[W_POSITIONS].n != n_blocks + 1 || positions[0] != 0
                            || a[W_DATA].n != positions[n_blocks] + PAD))
        problem = "positions and data disagree with the blocks";
    if (problem == NULL) {
        for (int64_t j = 0; j < n_blocks && problem == NULL; j++) /* ascending: the parts write apart */
            if (positions[j + 1] < positions[j])
                problem = "positions and data disagree with the blocks";
    }
    if (problem == NULL)
        problem = run_encoding(&job, n_terms, threads);
    if (problem == NULL)
        memset(data + positions[n_blocks], 0, PAD);
    Py_END_ALLOW_THREADS
    release_args(a, W_ARGS);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_RETURN_NONE;
}

enum { D_OFFSETS, D_STARTS, D_LAST_DOCS, D_POSITIONS, D_DATA, D_DOCS, D_TFS, D_ARGS };

static PyObject *py_decode_postings(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "term_starts", "last_docs", "positions", "data", "lo", "hi", "docs", "tfs",
                             NULL};
    Arg a[D_ARGS] = {
        [D_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [D_STARTS] = IN("term_starts", SIGNED, SIZE_8),
        [D_LAST_DOCS] = IN("last_docs", SIGNED, SIZE_4),
        [D_POSITIONS] = IN("positions", SIGNED, SIZE_8),
        [D_DATA] = IN("data", UNSIGNED, SIZE_1),
        [D_DOCS] = OUT("docs", SIGNED, SIZE_4),
        [D_TFS] = OUT("tfs", SIGNED, SIZE_4),
    };
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOnnOO:decode_postings", kwlist, &a[D_OFFSETS].obj,
                                     &a[D_STARTS].obj, &a[D_LAST_DOCS].obj, &a[D_POSITIONS].obj, &a[D_DATA].obj, &lo,
                                     &hi, &a[D_DOCS].obj, &a[D_TFS].obj))
        return NULL;
    if (acquire_args(a, D_ARGS) < 0)
        return NULL;
    const int64_t *offsets = BUF(a, D_OFFSETS, const int64_t), *starts = BUF(a, D_STARTS, const int64_t);
    const int64_t n_terms = a[D_OFFSETS].n - 1;
    const char *problem = NULL;
    BlockSet bs;
    if (block_set(&bs, &a[D_LAST_DOCS], &a[D_POSITIONS], &a[D_DATA], INT32_MAX) < 0) {
        release_args(a, D_ARGS);
        return NULL;
    }
    if (n_terms < 0 || a[D_STARTS].n != n_terms + 1)
        problem = "offsets and term_starts must hold one entry more than the terms";
    else if (lo < 0 || hi < lo || hi > offsets[n_terms] || a[D_DOCS].n < hi - lo || a[D_TFS].n < hi - lo)
        problem = "lo:hi is out of range, or docs or tfs too short";
    int64_t t = 0; /* the term holding posting lo: the last one starting at or before it */
    if (problem == NULL) {
        int64_t left = 0, right = n_terms;
        while (left < right) {
            const int64_t mid = left + (right - left) / 2;
            if (offsets[mid + 1] <= lo)
                left = mid + 1;
            else
                right = mid;
        }
        t = left;
    }
    int32_t *docs = BUF(a, D_DOCS, int32_t), *tfs = BUF(a, D_TFS, int32_t);
    int failed = problem != NULL;
    Py_BEGIN_ALLOW_THREADS
    uint32_t block_docs[BLOCK], block_tfs[BLOCK];
    for (int64_t p = lo; !failed && p < hi; t++) {
        if (t >= n_terms || offsets[t + 1] < offsets[t] || starts[t + 1] < starts[t]
            || starts[t + 1] - starts[t] != (offsets[t + 1] - offsets[t] + BLOCK - 1) / BLOCK) {
            failed = 1;
            break;
        }
        if (offsets[t + 1] <= p)
            continue;
        int64_t k = (p - offsets[t]) / BLOCK; /* the block of the term holding p */
        while (p < hi && p < offsets[t + 1]) {
            const int64_t j = starts[t] + k, first = offsets[t] + k * BLOCK;
            const int64_t left = offsets[t + 1] - first;
            const int n = (int)(left < BLOCK ? left : BLOCK);
            const int64_t base = k == 0 ? 0 : (int64_t)bs.last_docs[j - 1] + 1;
            int width;
            int64_t tf_at;
            if (decode_docs(&bs, j, n, base, block_docs, &width, &tf_at) < 0) {
                failed = 1;
                break;
            }
            decode_freqs_at(&bs, tf_at, n, width, block_tfs);
            for (int i = (int)(p - first); i < n && first + i < hi; i++, p++) {
                docs[p - lo] = (int32_t)block_docs[i];
                tfs[p - lo] = (int32_t)(block_tfs[i] + 1);
            }
            k++;
        }
    }
    Py_END_ALLOW_THREADS
    release_args(a, D_ARGS);
    if (failed) {
        PyErr_SetString(PyExc_ValueError, problem != NULL ? problem : "damaged postings blocks");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */

#define METHOD(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_VARARGS | METH_KEYWORDS, doc}

PyMethodDef core_codec_methods[] = {
    METHOD(block_layout, "block_layout(offsets, term_starts, doc_nums, tfs, doc_lengths, positions, last_docs, max_tf, "
                         "min_length, threads=1) -> None\n\nEvery block's start in the data (positions, one more: the "
                         "end), last document, largest frequency and smallest document length."),
    METHOD(write_blocks, "write_blocks(offsets, term_starts, doc_nums, tfs, positions, data, threads=1) -> None\n\nThe "
                         "blocks packed into data (positions from block_layout; data their length plus the padding)."),
    METHOD(decode_postings, "decode_postings(offsets, term_starts, last_docs, positions, data, lo, hi, docs, tfs) -> "
                            "None\n\nThe documents and frequencies of postings lo:hi (only the blocks holding them); "
                            "ValueError for a damaged block."),
    {NULL, NULL, 0, NULL},
};
