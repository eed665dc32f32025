/*
 * What the two searches share (search.c: term-at-a-time MaxScore over a per-document accumulator;
 * blockmax.c: block-max MaxScore over windows of documents): the index a search reads, a query's terms, the
 * weight of a posting, a block read into a buffer, the tie rule, the top-k heap.
 *
 * A posting's weight is scale[t] * entry + 0.0 (the + 0.0 turns a -0.0 product into 0.0), entry being
 * its (tf, document length) pair's entry of the table (retrieval.PreparedWeights): through `grid` for
 * frequencies up to 2**grid_shift (grid[(length_rank[d] << grid_shift) + tf - 1]: with 16-bit ranks the
 * grid has 2**16 rows, so that any rank is in it, and a block whose frequencies fit is read with no
 * check and no branch), else by a binary search of the pair's key tf * n_lengths + rank among `keys`
 * (the pairs' keys, ascending: a pair's code is its position); with BM25F the table holds every
 * posting's weight (per_posting, scale 1.0). A block's weights are at most
 * scale[t] * bound_table[bound_codes[j]] + 0.0 (scale >= 0).
 *
 * Values read from arrays index other arrays only after a check or a clamp: hostile arrays give
 * wrong numbers or an error, never an access out of bounds.
 */
#ifndef BM25LAB_SEARCH_H
#define BM25LAB_SEARCH_H

#include "codec.h"

#include <math.h>
#include <string.h>

#define MARGIN 1e-9         /* relative margin of every pruning bound: far above float64 rounding */
#define NOMEM (-2)          /* an allocation failed (everything allocated is freed, work arrays restored) */
#define DAMAGED (-3)        /* a block could not be read (the work arrays are restored) */

/* the rank of each document's id (the tie rule: a higher rank wins a tie): int32 or int64 */
typedef struct {
    const void *p;
    int wide;
} Ranks;

typedef struct {
    BlockSet blocks;
    const int64_t *offsets;      /* term t's postings: offsets[t]:offsets[t + 1] */
    const int64_t *term_starts;  /* term t's blocks: term_starts[t]:term_starts[t + 1] */
    int64_t n_terms;
    const void *length_rank;     /* per document: the rank of its length among the distinct lengths */
    int rank_wide;               /* length_rank: uint32 (else uint16) */
    Ranks id_rank;
    /* weights */
    const double *table;
    int64_t table_len;
    int per_posting;             /* table holds every posting's weight (BM25F) */
    const double *grid;
    int grid_shift;              /* grid: (rank << grid_shift) + tf - 1 */
    int64_t n_lengths;           /* >= 1 */
    const int64_t *keys;
    int64_t n_keys;              /* at most table_len */
    const void *bound_codes;
    int bound_wide;              /* bound_codes: uint32 (else uint16) */
    const double *bound_table;
    int64_t n_bounds;            /* bound_table's entries (>= 1) */
    const uint8_t *mask;         /* NULL, or 0 for each document left out (a filter's) */
} Index;

/* One term of a query. */
typedef struct {
    int64_t p0, p1;     /* its postings */
    int64_t b0, b1;     /* its blocks */
    double mult;        /* its weight in the query (how often it is in it, or with k3 its saturation) */
    double upper;       /* the canonical order's key: its largest weight (>= 0) x mult, the collection's */
    double bound;       /* a bound of its weights x mult in this index (pruning) */
    double scale;       /* its idf (1.0 with a per-posting table) */
} Term;

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                              */

static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Python's (and numpy's) min/max of two floats: the first argument unless the second is strictly
 * lower/higher. */
static inline double py_min(double a, double b) { return b < a ? b : a; }
static inline double py_max(double a, double b) { return b > a ? b : a; }

static inline int64_t rank_of(Ranks r, uint64_t d)
{
    return r.wide ? ((const int64_t *)r.p)[d] : (int64_t)((const int32_t *)r.p)[d];
}

/* Whether (score a, id rank a) ranks below (score b, id rank b): lower score, or tied and lower id. */
ALWAYS_INLINE int worse(double sa, int64_t ra, double sb, int64_t rb)
{
    return sa < sb || (sa == sb && ra < rb);
}

/* Restore the min-heap (worst at the root) below position i. */
static inline void sift_down(double *hs, int64_t *hr, int64_t *hd, int64_t n, int64_t i)
{
    for (;;) {
        const int64_t left = 2 * i + 1;
        if (left >= n)
            return;
        int64_t child = left;
        if (left + 1 < n && worse(hs[left + 1], hr[left + 1], hs[left], hr[left]))
            child = left + 1;
        if (!worse(hs[child], hr[child], hs[i], hr[i]))
            return;
        const double ts = hs[i]; hs[i] = hs[child]; hs[child] = ts;
        const int64_t tr = hr[i]; hr[i] = hr[child]; hr[child] = tr;
        const int64_t td = hd[i]; hd[i] = hd[child]; hd[child] = td;
        i = child;
    }
}

/* Restore the min-heap above position j (a new entry). */
static inline void sift_up(double *hs, int64_t *hr, int64_t *hd, int64_t j)
{
    while (j > 0) {
        const int64_t parent = (j - 1) / 2;
        if (!worse(hs[j], hr[j], hs[parent], hr[parent]))
            break;
        const double ts = hs[j]; hs[j] = hs[parent]; hs[parent] = ts;
        const int64_t tr = hr[j]; hr[j] = hr[parent]; hr[parent] = tr;
        const int64_t td = hd[j]; hd[j] = hd[parent]; hd[parent] = td;
        j = parent;
    }
}

/* Empty a heap of n into the output, best first; returns n. */
static inline int64_t heap_out(double *hs, int64_t *hr, int64_t *hd, int64_t n, int64_t *out_docs,
                               double *out_scores)
{
    const int64_t count = n;
    while (n > 0) {
        out_docs[n - 1] = hd[0];
        out_scores[n - 1] = hs[0];
        n--;
        hs[0] = hs[n];
        hr[0] = hr[n];
        hd[0] = hd[n];
        sift_down(hs, hr, hd, n, 0);
    }
    return count;
}

/* What a posting of document d adds to its sum: its weight w, or -0.0 when the mask leaves d out
 * (-0.0 + -0.0 is -0.0: the sum stays "no posting added", and the document is never listed, scored or
 * selected). Chosen by bits, not by a branch: a random mask would mispredict half the postings. mask
 * is a NULL constant where this is inlined into the unmasked searches. */
ALWAYS_INLINE double masked_weight(const uint8_t *mask, uint32_t d, double w)
{
    if (mask == NULL)
        return w;
    const int64_t keep = -(int64_t)(mask[d] != 0); /* all ones, or 0 */
    int64_t bits;
    memcpy(&bits, &w, sizeof bits);
    bits = (bits & keep) | (INT64_MIN & ~keep);
    double out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* weights                                                                                    */

/* The table entry of the pair with key `key` (its code: the key's position among keys). */
static inline double entry_of_key(const Index *ix, uint64_t key)
{
    int64_t lo = 0, hi = ix->n_keys;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if ((uint64_t)ix->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ix->n_keys ? ix->table[lo < ix->n_keys ? lo : ix->n_keys - 1] : 0.0;
}

/* The table entry of a posting of frequency v + 1 in document d (p: the posting's place, for BM25F). */
ALWAYS_INLINE double entry_of(const Index *ix, uint32_t v, uint32_t d, int64_t p)
{
    if (ix->per_posting)
        return ix->table[p];
    uint64_t rank = ix->rank_wide ? ((const uint32_t *)ix->length_rank)[d] : ((const uint16_t *)ix->length_rank)[d];
    if (ix->rank_wide) /* 16-bit ranks index the grid's 2**16 rows as they are */
        rank = rank < (uint64_t)ix->n_lengths ? rank : (uint64_t)ix->n_lengths - 1;
    if ((v >> ix->grid_shift) == 0)
        return ix->grid[(rank << ix->grid_shift) + v];
    rank = rank < (uint64_t)ix->n_lengths ? rank : (uint64_t)ix->n_lengths - 1;
    return entry_of_key(ix, ((uint64_t)v + 1) * (uint64_t)ix->n_lengths + rank);
}

/* A bound of block j's weights (times mult), its term's scale >= 0. */
static inline double block_bound(const Index *ix, const Term *term, int64_t j)
{
    uint64_t code = ix->bound_wide ? ((const uint32_t *)ix->bound_codes)[j] : ((const uint16_t *)ix->bound_codes)[j];
    code = code < (uint64_t)ix->n_bounds ? code : (uint64_t)ix->n_bounds - 1;
    const double w = term->scale * ix->bound_table[code] + 0.0;
    return term->mult == 1.0 ? w : w * term->mult;
}

/* ------------------------------------------------------------------------------------------ */
/* a block in a buffer                                                                        */

typedef struct {
    int64_t j;          /* the block held (-1: none) */
    int n;              /* its postings */
    int have_tfs;       /* tfs decoded */
    int tf_width;       /* ... their width */
    int64_t tf_at;      /* ... where they are (load_block checked the block's header for them too) */
    int64_t blocks_read, postings_read; /* what load_block read into it (added to the thread's counts below
                                           after each query: a thread-local variable of a shared library is
                                           a call to __tls_get_addr each time) */
    uint32_t docs[BLOCK];
    uint32_t tfs[BLOCK]; /* frequencies less one */
} BlockBuf;

/* The first block in j:b1 whose last document is >= d (b1 if none): an exponential then a binary
 * search over the blocks' last documents, cheap when successive targets are close. */
static inline int64_t block_of(const int32_t *last_docs, int64_t j, int64_t b1, int64_t d)
{
    if (j >= b1 || last_docs[j] >= d)
        return j;
    int64_t step = 1;
    while (j + step < b1 && last_docs[j + step] < d)
        step *= 2;
    int64_t lo = j + step / 2, hi = min_i64(j + step, b1); /* last_docs[lo] < d; hi: b1 or >= d */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (last_docs[mid] < d)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The postings of block j of `term` (its k-th); j >= term->b0. */
static inline int block_size(const Term *term, int64_t j)
{
    const int64_t left = term->p1 - (term->p0 + (j - term->b0) * BLOCK);
    return (int)(left < BLOCK ? left : BLOCK);
}

/* What the searches of this thread read (batch_top_k's counts): blocks and their postings. */
extern _Thread_local int64_t blocks_read, postings_read;

/* Read block j of `term`'s documents into buf (its frequencies when first asked); 0, or -1 when the
 * block is damaged (or its term's blocks disagree with its postings: then buf->n is 0). */
static inline int load_block(const Index *ix, const Term *term, int64_t j, BlockBuf *buf)
{
    buf->j = j;
    buf->have_tfs = 0;
    buf->n = 0;
    const int n = block_size(term, j);
    const int64_t base = j == term->b0 ? 0 : (int64_t)ix->blocks.last_docs[j - 1] + 1;
    if (n < 1 || decode_docs(&ix->blocks, j, n, base, buf->docs, &buf->tf_width, &buf->tf_at) < 0)
        return -1;
    buf->n = n;
    buf->blocks_read++;
    buf->postings_read += n;
    return 0;
}

/* The weight (times mult) of posting i of the block in buf (its frequencies decoded when first asked). */
ALWAYS_INLINE double weight_at(const Index *ix, const Term *term, BlockBuf *buf, int i)
{
    const int64_t p = term->p0 + (buf->j - term->b0) * BLOCK + i;
    double entry;
    if (ix->per_posting) {
        entry = ix->table[p];
    } else {
        if (!buf->have_tfs) {
            decode_freqs_at(&ix->blocks, buf->tf_at, buf->n, buf->tf_width, buf->tfs);
            buf->have_tfs = 1;
        }
        entry = entry_of(ix, buf->tfs[i], buf->docs[i], p);
    }
    const double w = term->scale * entry + 0.0;
    return term->mult == 1.0 ? w : w * term->mult;
}

/* weight_at for a posting alone in its block, or nearly: its frequency is read by itself unless the
 * block's are decoded already (skipping to a few documents, most blocks are read for one). */
ALWAYS_INLINE double weight_of_one(const Index *ix, const Term *term, const BlockBuf *buf, int i)
{
    const int64_t p = term->p0 + (buf->j - term->b0) * BLOCK + i;
    double entry;
    if (ix->per_posting) {
        entry = ix->table[p];
    } else {
        const uint32_t tf = buf->have_tfs ? buf->tfs[i]
                                          : unpack_one(ix->blocks.data + buf->tf_at, buf->tf_width, buf->n, i);
        entry = entry_of(ix, tf, buf->docs[i], p);
    }
    const double w = term->scale * entry + 0.0;
    return term->mult == 1.0 ? w : w * term->mult;
}

/* Decode the frequencies of the block in buf (once): 1 when every posting's entry is in the grid with
 * no check (grid_weight), else 0. */
static inline int read_freqs(const Index *ix, BlockBuf *buf)
{
    if (ix->per_posting)
        return 0;
    if (!buf->have_tfs) {
        decode_freqs_at(&ix->blocks, buf->tf_at, buf->n, buf->tf_width, buf->tfs);
        buf->have_tfs = 1;
    }
    return buf->tf_width <= ix->grid_shift && !ix->rank_wide;
}

/* The weight (times mult) of posting i of a block read_freqs found all in the grid. */
ALWAYS_INLINE double grid_weight(const Index *ix, const BlockBuf *buf, int i, double scale, double mult)
{
    const uint16_t *ranks = ix->length_rank;
    const double w = scale * ix->grid[((uint32_t)ranks[buf->docs[i]] << ix->grid_shift) + buf->tfs[i]] + 0.0;
    return mult == 1.0 ? w : w * mult;
}

/* The canonical order of a query's terms (retrieval.term_order): by upper descending, stably. */
void term_order(const Term *terms, int64_t m, int64_t *order, int64_t *tmp);

/* blockmax.c: exact top-k of one query by block-max MaxScore over windows of documents (see there);
 * returns the count, NOMEM or DAMAGED. */
int64_t windowed_top_k(const Index *ix, const Term *terms, int64_t m, double cnst, int64_t k, int prune,
                   double *hs, int64_t *hr, int64_t *hd, int64_t *out_docs, double *out_scores);

#endif
