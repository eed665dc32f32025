/*
 * search.c: exact top-k search of one query or a batch (query_top_k, batch_top_k) and each term's
 * extreme weights (term_extremes).
 *
 * A port, function for function, of the numba kernels: the same algorithm, constants and float64
 * operations in the same order, so documents, score bits, order and counts are identical. See
 * _kernels.py for the full discussion; in short:
 *
 *   Scores are float64 sums of the postings' weights (scale * table[code] + 0.0) in the query's
 *   canonical term order (retrieval.term_order: largest weight first, stable), plus the per-query
 *   constant. Selection is exact top-k, score descending, then id rank descending. Searching prunes
 *   exactly (term-at-a-time MaxScore), re-scoring in full what it keeps. acc[d] is -0.0 while no
 *   posting was added to document d: no sum of prepared weights is -0.0, so the scores also mark the
 *   documents scored.
 *
 * Build with -ffp-contract=off (and never -ffast-math): a fused multiply-add (acc + w * mult,
 * edge - margin * x, ...) rounds once where numba rounds twice and would change score bits.
 *
 *   A document mask (optional, uint8, one per document: a metadata filter) leaves out the documents
 *   whose entry is 0: their postings add -0.0 as they are read (their acc stays "no posting added"),
 *   so they are never scored, listed, counted in a threshold or selected; every bound stays an upper
 *   bound and every threshold a lower bound of the k-th best of the documents that pass, so pruning
 *   stays exact. The others get the very sums they get without a mask (retrieval.Scorer.top with
 *   mask= is the specification).
 *
 * Python API (buffer protocol only, no numpy headers):
 *   batch_top_k(q_ptr, term_ids, counts, offsets, term_upper, term_scale, q_const, doc_nums, codes,
 *               table, id_rank, n_docs, k, prune, n_threads, out_docs, out_scores, out_len,
 *               mask=None) -> None
 *   query_top_k(starts, ends, mult, upper, scale, const, doc_nums, codes, table, id_rank, k, prune,
 *               acc, marks, cand, keep, buf, hs, hr, hd, out_docs, out_scores, mask=None) -> int
 * codes: uint16 or uint32; id_rank: int32 or int64; mask: uint8, at least one entry per document.
 * Both release the GIL while they search.
 */
#include "core.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>



/* ------------------------------------------------------------------------------------------ */
/* constants (same names and values as _kernels.py)                                          */

#define BUCKETS 4096        /* histogram buckets of the floors */
#define SAMPLE 16           /* a dense floor samples every SAMPLE-th document (many documents next to k) */
#define SORT_K 64           /* from this k on, candidates over a floor are sorted rather than heaped */
#define SORT_MAX 8          /* ... while they are at most SORT_MAX times k */
#define ORDER_BUCKETS 2048  /* order_ascending's buckets of equal width */
#define ORDER_FEW 32        /* a bucket of more keys is radix sorted, fewer by insertion */
#define MARGIN 1e-9         /* relative margin of every pruning bound: far above float64 rounding */
#define LOG_SHIFT 45        /* dense histogram bucket: exponent and top 7 mantissa bits (1/128 binade) */
#define LIST_BLOCK 16       /* documents per block of list_and_clear's test */
#define KEPT 1              /* marks[d] while d is one of the documents the remaining terms update */
#define DENSE 8             /* candidates stop being listed past n_docs / DENSE ... */
#define DENSE_LARGE_K 32    /* ... n_docs / DENSE_LARGE_K for k >= SORT_K */
#define GALLOP 64           /* a term gallops to the kept documents when its postings are > GALLOP times them */

#define NO_POSTING INT64_MIN /* -0.0 viewed as int64: acc[d] of a document no posting was added to */
#define SIGN_BIT (UINT64_C(1) << 63)

/* counts returned besides >= 0 */
#define RETRY (-1)          /* dense_top_k: the sampled floor was too high, add the terms again */
#define NOMEM (-2)          /* an allocation failed (everything allocated is freed, acc/marks restored) */

/* ------------------------------------------------------------------------------------------ */
/* the data a search reads, and its per-thread work space                                    */

/* the rank of each document's id (the tie rule: a higher rank wins a tie): int32 or int64 */
typedef struct {
    const void *p;
    int wide;
} Ranks;

typedef struct {
    const int32_t *doc_nums; /* postings' document numbers, ascending per term */
    const void *codes;       /* postings' (tf, length) codes into table: uint16 or uint32 */
    int code_size;           /* 2 or 4 */
    const double *table;
    Ranks id_rank;
    const uint8_t *mask;     /* NULL, or 0 for each document left out (a filter's) */
} Index;

/* Fixed-size histograms and bucket tables; numba allocates them per call, here once per thread. */
typedef struct {
    int64_t counts[BUCKETS];          /* refine_floor, narrow_pairs, dense_floor's total */
    int64_t counts4[4][BUCKETS];      /* dense_floor: 4 interleaved rows (independent increments) */
    int64_t starts[ORDER_BUCKETS + 1];
    int64_t fill[ORDER_BUCKETS + 1];  /* order_ascending */
    int64_t radix_counts[8][256];
    int64_t radix_starts[256];        /* radix_sort */
} Work;

typedef struct {
    double *acc;      /* all -0.0 between searches */
    uint8_t *marks;   /* all 0 between searches */
    int64_t *cand;
    int64_t *keep;
    double *buf;
    double *hs;       /* heap of k: scores, id ranks, documents */
    int64_t *hr;
    int64_t *hd;
    int64_t n_docs;
    Work *work;
} Scratch;

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                              */

static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Python's (and numba's) min/max of two floats: the first argument unless the second is strictly
 * lower/higher. */
static inline double py_min(double a, double b) { return b < a ? b : a; }
static inline double py_max(double a, double b) { return b > a ? b : a; }

static inline int64_t as_bits(double x)
{
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline double as_float(int64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static inline int64_t rank_of(Ranks r, uint64_t d)
{
    return r.wide ? ((const int64_t *)r.p)[d] : (int64_t)((const int32_t *)r.p)[d];
}

/* malloc of n elements that never returns NULL for n == 0 (numba's empty arrays are valid) */
static void *alloc_array(int64_t n, size_t size)
{
    return malloc((size_t)(n > 0 ? n : 1) * size);
}

/* min(int(x), n - 1) for x >= 0 (a bucket index); also defined for inf and NaN (the last bucket),
 * which only an extreme score range (a subnormal width) could give */
static inline int64_t bucket_of(double x, int64_t n)
{
    return x < (double)(n - 1) ? (int64_t)x : n - 1;
}

/* ------------------------------------------------------------------------------------------ */
/* heap                                                                                       */

/* Whether (score a, id rank a) ranks below (score b, id rank b): lower score, or tied and lower id. */
ALWAYS_INLINE int worse(double sa, int64_t ra, double sb, int64_t rb)
{
    return sa < sb || (sa == sb && ra < rb);
}

/* Restore the min-heap (worst at the root) below position i. */
static void sift_down(double *hs, int64_t *hr, int64_t *hd, int64_t n, int64_t i)
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

/* ------------------------------------------------------------------------------------------ */
/* floors of the k-th best score                                                              */

/* The highest bucket at which `above` plus the counts of it and every bucket over it reach k;
 * -1 if they never do. */
static int64_t bucket_reaching(const int64_t *counts, int64_t n_buckets, int64_t above, int64_t k)
{
    int64_t total = above;
    for (int64_t b = n_buckets - 1; b >= 0; b--) {
        total += counts[b];
        if (total >= k)
            return b;
    }
    return -1;
}

/* Raise `floor` (a lower bound of the k-th best score of cand[:nc]) with histograms of the scores
 * in [lo, hi) (which must hold the k-th best): buckets summed from the top, after the documents at
 * or above hi, until they hold k; that bucket's lower edge less a margin is a bound; a crowded
 * bucket is histogrammed again, `rounds` times at most. */
static double refine_floor(const int64_t *cand, int64_t nc, const double *acc, double cnst, int64_t k,
                           double lo, double hi, double floor, int rounds, Work *work)
{
    const int64_t buckets = max_i64(64, min_i64(BUCKETS, nc / 8));
    int64_t *counts = work->counts;
    for (int round = 0; round < rounds; round++) {
        if (!(hi > lo))
            break;
        memset(counts, 0, (size_t)buckets * sizeof *counts);
        int64_t above = 0;
        const double scale = (double)buckets / (hi - lo);
        for (int64_t i = 0; i < nc; i++) {
            const double s = acc[cand[i]] + cnst;
            if (s >= hi)
                above++;
            else if (s >= lo)
                counts[bucket_of((s - lo) * scale, buckets)]++;
        }
        const int64_t b = bucket_reaching(counts, buckets, above, k);
        if (b < 0) /* rounding left documents out of this range: keep the last bound */
            break;
        const double edge = lo + (double)b / scale;
        floor = py_max(floor, edge - MARGIN * (fabs(edge) + fabs(lo) + fabs(hi)));
        if (counts[b] <= max_i64(k / 4, 64))
            break;
        const double next_hi = lo + (double)(b + 1) / scale;
        lo = edge;
        hi = next_hi;
    }
    return floor;
}

/* A lower bound of the k-th best score of cand[:nc] (nc > k), close to it: the scores' range, then
 * refine_floor over it. */
static double floor_of_top_k(const int64_t *cand, int64_t nc, const double *acc, double cnst, int64_t k,
                             Work *work)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < nc; i++) {
        const double s = acc[cand[i]] + cnst;
        lo = py_min(lo, s);
        hi = py_max(hi, s);
    }
    return refine_floor(cand, nc, acc, cnst, k, lo, nextafter(hi, INFINITY), lo, 3, work);
}

/* numba's _floor: floor_of_top_k where it pays (a large k, many more candidates than k), else -inf. */
static double top_k_floor(const int64_t *cand, int64_t nc, const double *acc, double cnst, int64_t k, Work *work)
{
    return k >= SORT_K && nc > SORT_MAX * k ? floor_of_top_k(cand, nc, acc, cnst, k, work) : -INFINITY;
}

/* ------------------------------------------------------------------------------------------ */
/* sorting                                                                                    */

/* payload[:m] ordered by keys[:m] ascending, stably: an LSD radix sort, a byte per pass, passes
 * where every key has the same byte skipped. Both arrays are work space; the result is left in
 * payload. Returns 0, or -1 when out of memory (payload then untouched). */
static int radix_sort(uint64_t *keys, int64_t *payload, int64_t m, Work *work)
{
    int64_t (*counts)[256] = work->radix_counts;
    int64_t *starts = work->radix_starts;
    memset(counts, 0, sizeof work->radix_counts);
    for (int64_t i = 0; i < m; i++) {
        const uint64_t x = keys[i];
        for (int b = 0; b < 8; b++)
            counts[b][(x >> (8 * b)) & 255]++;
    }
    uint64_t *const spare_keys = alloc_array(m, sizeof *spare_keys);
    int64_t *const spare_payload = alloc_array(m, sizeof *spare_payload);
    if (spare_keys == NULL || spare_payload == NULL) {
        free(spare_keys);
        free(spare_payload);
        return -1;
    }
    uint64_t *src_keys = keys, *dst_keys = spare_keys;
    int64_t *src = payload, *dst = spare_payload;
    for (int b = 0; b < 8; b++) {
        /* numba: counts[b].max() == m, i.e. every key has keys[0]'s byte b (passes only permute the
         * keys, so keys[0] is one of them; one look instead of 256) */
        if (m == 0 || counts[b][(keys[0] >> (8 * b)) & 255] == m)
            continue;
        int64_t total = 0;
        for (int v = 0; v < 256; v++) {
            starts[v] = total;
            total += counts[b][v];
        }
        const int shift = 8 * b;
        for (int64_t i = 0; i < m; i++) {
            const uint64_t x = src_keys[i];
            const int64_t p = starts[(x >> shift) & 255]++;
            dst_keys[p] = x;
            dst[p] = src[i];
        }
        uint64_t *tk = src_keys; src_keys = dst_keys; dst_keys = tk;
        int64_t *tp = src; src = dst; dst = tp;
    }
    if (src != payload)
        memcpy(payload, src, (size_t)m * sizeof *payload);
    free(spare_keys);
    free(spare_payload);
    return 0;
}

/* Positions of keys[:m] in ascending order, stably (malloc'ed; NULL when out of memory): a counting
 * pass into ORDER_BUCKETS buckets of equal width between the least and the greatest key, then each
 * bucket by insertion (a crowded one by radix_sort). O(m) whatever the data. */
static int64_t *order_ascending(const uint64_t *keys, int64_t m, Work *work)
{
    int64_t *order = alloc_array(m, sizeof *order);
    if (order == NULL || m <= 0)
        return order;
    uint64_t lo = keys[0], hi = keys[0];
    for (int64_t i = 0; i < m; i++) {
        lo = keys[i] < lo ? keys[i] : lo;
        hi = keys[i] > hi ? keys[i] : hi;
    }
    unsigned shift = 0;
    while (((hi - lo) >> shift) >= ORDER_BUCKETS)
        shift++;
    int64_t *starts = work->starts, *fill = work->fill;
    memset(starts, 0, sizeof work->starts);
    for (int64_t i = 0; i < m; i++)
        starts[((keys[i] - lo) >> shift) + 1]++;
    for (int b = 0; b < ORDER_BUCKETS; b++)
        starts[b + 1] += starts[b];
    memcpy(fill, starts, sizeof work->fill);
    for (int64_t i = 0; i < m; i++)
        order[fill[(keys[i] - lo) >> shift]++] = i;
    for (int b = 0; b < ORDER_BUCKETS; b++) {
        const int64_t a = starts[b], z = starts[b + 1];
        if (z - a > ORDER_FEW) {
            uint64_t *sub = alloc_array(z - a, sizeof *sub);
            if (sub == NULL) {
                free(order);
                return NULL;
            }
            for (int64_t x = a; x < z; x++)
                sub[x - a] = keys[order[x]];
            const int failed = radix_sort(sub, order + a, z - a, work);
            free(sub);
            if (failed) {
                free(order);
                return NULL;
            }
        } else {
            for (int64_t x = a + 1; x < z; x++) {
                const int64_t o = order[x];
                const uint64_t key = keys[o];
                int64_t y = x;
                while (y > a && keys[order[y - 1]] > key) {
                    order[y] = order[y - 1];
                    y--;
                }
                order[y] = o;
            }
        }
    }
    return order;
}

/* Positions of values[:m] in ascending order, stably (malloc'ed; NULL when out of memory), by
 * order_ascending of the float64 bits made order-preserving (negative: all bits flipped; else the
 * sign bit set). */
static int64_t *radix_order(const double *values, int64_t m, Work *work)
{
    uint64_t *keys = alloc_array(m, sizeof *keys);
    if (keys == NULL)
        return NULL;
    for (int64_t i = 0; i < m; i++) {
        const uint64_t x = (uint64_t)as_bits(values[i]);
        keys[i] = x & SIGN_BIT ? ~x : x | SIGN_BIT;
    }
    int64_t *order = order_ascending(keys, m, work);
    free(keys);
    return order;
}

typedef struct {
    int64_t rank;
    int64_t pos;
} RankedPos;

static int by_rank_descending(const void *a, const void *b)
{
    const int64_t ra = ((const RankedPos *)a)->rank, rb = ((const RankedPos *)b)->rank;
    return (ra < rb) - (ra > rb);
}

/* Sort order[lo:hi] by the id rank of its documents, descending (ranks are distinct, so the order
 * is unique and qsort gives numba's argsort's). Returns 0, or -1 when out of memory. */
static int by_rank_desc(int64_t *order, int64_t lo, int64_t hi, const int64_t *docs, Ranks id_rank)
{
    if (hi - lo <= 16) { /* insertion sort: most runs of ties are short */
        for (int64_t x = lo + 1; x < hi; x++) {
            const int64_t o = order[x];
            const int64_t r = rank_of(id_rank, (uint64_t)docs[o]);
            int64_t y = x;
            while (y > lo && rank_of(id_rank, (uint64_t)docs[order[y - 1]]) < r) {
                order[y] = order[y - 1];
                y--;
            }
            order[y] = o;
        }
        return 0;
    }
    RankedPos *run = alloc_array(hi - lo, sizeof *run);
    if (run == NULL)
        return -1;
    for (int64_t x = lo; x < hi; x++) {
        run[x - lo].rank = rank_of(id_rank, (uint64_t)docs[order[x]]);
        run[x - lo].pos = order[x];
    }
    qsort(run, (size_t)(hi - lo), sizeof *run, by_rank_descending);
    for (int64_t x = lo; x < hi; x++)
        order[x] = run[x - lo].pos;
    free(run);
    return 0;
}

/* The best k of docs[:m] (negated scores neg[:m]) into the output rows by sorting: score
 * descending, then runs of equal scores by id rank descending (the heap's tie rule). Runs are
 * found by equal acc[d], as numba does (so with a constant, two different sums that round to the
 * same score are left in candidate order, where the heap orders them by id: kept to be identical).
 * Returns the count or NOMEM. */
static int64_t sorted_best(const int64_t *docs, const double *neg, int64_t m, const double *acc, double cnst,
                           Ranks id_rank, int64_t k, int64_t *out_docs, double *out_scores, Work *work)
{
    int64_t *order = radix_order(neg, m, work);
    if (order == NULL)
        return NOMEM;
    const int64_t n = min_i64(k, m);
    int64_t i = 0;
    while (i < n) {
        int64_t j = i + 1;
        while (j < m && neg[order[j]] == neg[order[i]]) /* equal final scores: acc + cnst may round */
            j++;
        if (j - i > 1 && by_rank_desc(order, i, j, docs, id_rank) < 0) {
            free(order);
            return NOMEM;
        }
        i = j;
    }
    for (i = 0; i < n; i++) {
        const int64_t d = docs[order[i]];
        out_docs[i] = d;
        out_scores[i] = acc[d] + cnst;
    }
    free(order);
    return n;
}

/* ------------------------------------------------------------------------------------------ */
/* selection                                                                                  */

/* select_best with a bounded min-heap keyed by (score, id rank) holding the best k so far; the
 * heap is then emptied worst-first into the output from the back. */
static int64_t heap_select(const int64_t *cand, int64_t nc, const double *acc, double cnst, Ranks id_rank,
                           int64_t k, double floor, double *hs, int64_t *hr, int64_t *hd, int64_t *out_docs,
                           double *out_scores, int dense)
{
    int64_t n = 0;
    double lim = floor; /* max(floor, the worst kept score once k are kept): below it, no need to look at the id */
    for (int64_t i = 0; i < nc; i++) {
        const uint64_t d = dense ? (uint64_t)i : (uint64_t)cand[i];
        const double s = acc[d] + cnst;
        if (s < lim)
            continue;
        if (dense && as_bits(acc[d]) == NO_POSTING)
            continue;
        const int64_t r = rank_of(id_rank, d);
        if (n < k) { /* sift up */
            int64_t j = n;
            hs[j] = s;
            hr[j] = r;
            hd[j] = (int64_t)d;
            n++;
            while (j > 0) {
                const int64_t parent = (j - 1) / 2;
                if (!worse(hs[j], hr[j], hs[parent], hr[parent]))
                    break;
                const double ts = hs[j]; hs[j] = hs[parent]; hs[parent] = ts;
                const int64_t tr = hr[j]; hr[j] = hr[parent]; hr[parent] = tr;
                const int64_t td = hd[j]; hd[j] = hd[parent]; hd[parent] = td;
                j = parent;
            }
            if (n == k)
                lim = py_max(floor, hs[0]);
        } else if (worse(hs[0], hr[0], s, r)) {
            hs[0] = s;
            hr[0] = r;
            hd[0] = (int64_t)d;
            sift_down(hs, hr, hd, n, 0);
            lim = py_max(floor, hs[0]);
        }
    }
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

/* numba's _select: write the best k of cand[:nc] into the output rows, best first; returns how
 * many (or NOMEM). With `dense` the candidates are the documents d < nc with a posting added (one
 * sequential pass). Candidates below `floor` (a lower bound of the k-th score; -inf: none) are
 * passed over. A small k keeps a heap; a large k lists the candidates at or above the floor in dst
 * (may be cand itself) with their negated scores in buf and sorts them, unless they are still
 * more than SORT_MAX * k (then the heap). */
static int64_t select_best(const int64_t *cand, int64_t nc, const double *acc, double cnst, Ranks id_rank,
                           int64_t k, double floor, int64_t *dst, double *buf, double *hs, int64_t *hr,
                           int64_t *hd, int64_t *out_docs, double *out_scores, int dense, Work *work)
{
    if (k < SORT_K)
        return heap_select(cand, nc, acc, cnst, id_rank, k, floor, hs, hr, hd, out_docs, out_scores, dense);
    int64_t m = 0;
    for (int64_t i = 0; i < nc; i++) {
        const uint64_t d = dense ? (uint64_t)i : (uint64_t)cand[i];
        const double s = acc[d] + cnst;
        if (s >= floor && (!dense || as_bits(acc[d]) != NO_POSTING)) {
            dst[m] = (int64_t)d;
            buf[m] = -s;
            m++;
        }
    }
    if (m > SORT_MAX * k)
        return heap_select(dst, m, acc, cnst, id_rank, k, -INFINITY, hs, hr, hd, out_docs, out_scores, 0);
    return sorted_best(dst, buf, m, acc, cnst, id_rank, k, out_docs, out_scores, work);
}

/* The value that would stand at `kth` if a[:n] were sorted ascending (quickselect with a
 * median-of-three pivot, in place). */
static double select_in_place(double *a, int64_t n, int64_t kth)
{
    int64_t lo = 0, hi = n - 1;
    while (hi > lo) {
        const int64_t mid = (lo + hi) / 2;
        double t;
        if (a[mid] < a[lo]) { t = a[mid]; a[mid] = a[lo]; a[lo] = t; }
        if (a[hi] < a[lo]) { t = a[hi]; a[hi] = a[lo]; a[lo] = t; }
        if (a[hi] < a[mid]) { t = a[hi]; a[hi] = a[mid]; a[mid] = t; }
        const double pivot = a[mid];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
                j--;
            }
        }
        if (kth <= j)
            hi = j;
        else if (kth >= i)
            lo = i;
        else
            return a[kth];
    }
    return a[kth];
}

/* The k-th largest of acc[docs[:n]] (n >= k). Taken over the first few candidates only: a
 * subset's k-th largest is never above the whole set's, so it is a cheap lower bound. */
static double kth_largest(const double *acc, const int64_t *docs, int64_t n, int64_t k, double *buf)
{
    for (int64_t i = 0; i < n; i++)
        buf[i] = acc[docs[i]];
    return select_in_place(buf, n, n - k);
}

/* ------------------------------------------------------------------------------------------ */
/* the dense selection (every term added in full)                                             */

/* A floor of the k-th best final score (acc[d] + const; acc >= 0 where scored, top above every
 * acc): the lower edge of the highest bucket of a histogram of the scores' float bits (1/128 of a
 * binade per bucket, 32 binades down from top) that, with the buckets above it, holds k documents
 * (of every stride-th document: about twice its share of k, usually low enough); -inf if none. */
static double dense_floor(const double *acc, int64_t n, double cnst, int64_t k, double top, int64_t stride,
                          Work *work)
{
    const int64_t base = (as_bits(top) >> LOG_SHIFT) - (BUCKETS - 1);
    int64_t (*counts4)[BUCKETS] = work->counts4;
    memset(counts4, 0, sizeof work->counts4);
    const uint64_t samples = (uint64_t)(n / stride + (n % stride > 0));
#pragma GCC unroll 4 /* i & 3 a constant in each copy (numba's code is as fast without) */
    for (uint64_t i = 0; i < samples; i++) {
        const int64_t x = as_bits(acc[i * (uint64_t)stride]);
        /* an arithmetic shift (gcc's, and numba's): -0.0 lands in bucket 0 and counts 0 */
        const int64_t b = min_i64(max_i64((x >> LOG_SHIFT) - base, 0), BUCKETS - 1);
        counts4[i & 3][b] += x != NO_POSTING;
    }
    int64_t *counts = work->counts;
    for (int b = 0; b < BUCKETS; b++)
        counts[b] = counts4[0][b] + counts4[1][b] + counts4[2][b] + counts4[3][b];
    const int64_t wanted = stride == 1 ? k : 2 * (k / stride) + 16;
    const int64_t b = bucket_reaching(counts, BUCKETS, 0, wanted);
    if (b <= 0)
        return -INFINITY;
    const double edge = as_float((int64_t)((uint64_t)(b + base) << LOG_SHIFT)); /* numba's shl wraps */
    return (edge + cnst) - MARGIN * (edge + fabs(top) + fabs(cnst));
}

/* list_and_clear of the `count` documents from `first` (those with bits below low_bits cannot reach
 * the floor); returns the new count of listed documents. numba tests the whole block, then lists
 * it; here the test stops at the block's first document over low_bits and the listing starts there
 * (the documents before it fail the listing's test too): the same documents, and unrolled whole it
 * is as fast as LLVM's code for numba's (a vectorized test of the whole block took twice as long). */
ALWAYS_INLINE int64_t list_block(double *restrict acc, int64_t first, int64_t count, int64_t low_bits, double cnst,
                                 double floor, int64_t *restrict keep, double *restrict buf, int64_t m)
{
    double *restrict const block = acc + first;
    int64_t i;
#pragma GCC unroll 16
    for (i = 0; i < count; i++)
        if (as_bits(block[i]) >= low_bits)
            break;
#pragma GCC unroll 16
    for (; i < count; i++) {
        if (as_bits(block[i]) >= low_bits) {
            const double s = block[i] + cnst;
            if (s >= floor) {
                keep[m] = first + i;
                buf[m] = s;
                m++;
            }
        }
    }
    for (i = 0; i < count; i++)
        block[i] = -0.0;
    return m;
}

/* List the scored documents with acc[d] + const >= floor in keep and their scores in buf (returns
 * how many), setting every acc[d] back to -0.0 in the same pass. */
static int64_t list_and_clear(double *restrict acc, int64_t n, double cnst, double floor, int64_t *restrict keep,
                              double *restrict buf)
{
    int64_t m = 0;
    const double low = (floor - cnst) - MARGIN * (fabs(floor) + fabs(cnst));
    if (low > 0.0) {
        /* an integer comparison passes over most documents: below low (below every acc[d] that
         * reaches the floor) no score can, and -0.0 has the lowest bits of all; in blocks of
         * LIST_BLOCK documents */
        const int64_t low_bits = as_bits(low);
        const int64_t blocks = n / LIST_BLOCK;
        for (int64_t block = 0; block < blocks; block++)
            m = list_block(acc, block * LIST_BLOCK, LIST_BLOCK, low_bits, cnst, floor, keep, buf, m);
        m = list_block(acc, blocks * LIST_BLOCK, n - blocks * LIST_BLOCK, low_bits, cnst, floor, keep, buf, m);
    } else {
        for (int64_t d = 0; d < n; d++) {
            const double a = acc[d];
            const double s = a + cnst;
            if (s >= floor && as_bits(a) != NO_POSTING) {
                keep[m] = d;
                buf[m] = s;
                m++;
            }
            acc[d] = -0.0;
        }
    }
    return m;
}

/* Keep of docs[:m]/scores[:m] (m > k) those at or above a floor of the k-th best score (histograms
 * of the scores, a crowded bucket histogrammed again, twice at most); returns how many are kept: at
 * least k, every document of the top k, ties included. */
static int64_t narrow_pairs(int64_t *docs, double *scores, int64_t m, int64_t k, Work *work)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < m; i++) {
        lo = py_min(lo, scores[i]);
        hi = py_max(hi, scores[i]);
    }
    double floor = lo;
    hi = nextafter(hi, INFINITY);
    int64_t *counts = work->counts;
    for (int round = 0; round < 2; round++) {
        if (!(hi > lo))
            break;
        memset(counts, 0, BUCKETS * sizeof *counts);
        const double scale = BUCKETS / (hi - lo);
        int64_t above = 0;
        for (int64_t i = 0; i < m; i++) {
            const double s = scores[i];
            if (s >= hi)
                above++;
            else if (s >= lo)
                counts[bucket_of((s - lo) * scale, BUCKETS)]++;
        }
        const int64_t b = bucket_reaching(counts, BUCKETS, above, k);
        if (b < 0)
            break;
        const double edge = lo + (double)b / scale;
        floor = py_max(floor, edge - MARGIN * (fabs(edge) + fabs(lo) + fabs(hi)));
        if (counts[b] <= max_i64(k / 4, 64))
            break;
        const double next_hi = lo + (double)(b + 1) / scale;
        lo = edge;
        hi = next_hi;
    }
    int64_t c = 0;
    for (int64_t i = 0; i < m; i++) {
        if (scores[i] >= floor) {
            docs[c] = docs[i];
            scores[c] = scores[i];
            c++;
        }
    }
    return c;
}

/* The best k of docs[:m] with final scores scores[:m] into the output rows, best first (score
 * descending, then id rank descending): the k-th best score by quickselect (after narrow_pairs
 * when they are many), the documents at or above it sorted. Returns the count or NOMEM. */
static int64_t best_pairs(int64_t *docs, double *scores, int64_t m, Ranks id_rank, int64_t k, double *scratch,
                          int64_t *out_docs, double *out_scores, Work *work)
{
    if (m > SORT_MAX * k)
        m = narrow_pairs(docs, scores, m, k, work);
    if (m > k) {
        for (int64_t i = 0; i < m; i++)
            scratch[i] = scores[i];
        const double kth = select_in_place(scratch, m, m - k);
        int64_t c = 0;
        for (int64_t i = 0; i < m; i++) {
            if (scores[i] >= kth) {
                docs[c] = docs[i];
                scores[c] = scores[i];
                c++;
            }
        }
        m = c;
    }
    for (int64_t i = 0; i < m; i++)
        scratch[i] = -scores[i];
    int64_t *order = radix_order(scratch, m, work);
    if (order == NULL)
        return NOMEM;
    const int64_t n = min_i64(k, m);
    int64_t i = 0;
    while (i < n) {
        int64_t j = i + 1;
        while (j < m && scores[order[j]] == scores[order[i]])
            j++;
        if (j - i > 1 && by_rank_desc(order, i, j, docs, id_rank) < 0) {
            free(order);
            return NOMEM;
        }
        i = j;
    }
    for (i = 0; i < n; i++) {
        out_docs[i] = docs[order[i]];
        out_scores[i] = scores[order[i]];
    }
    free(order);
    return n;
}

/* The top k once every term is added in full (weights >= 0, every acc below top), leaving acc all
 * -0.0 whatever it returns. With `sample` (and documents many next to k) the floor comes from every
 * SAMPLE-th document; when it proves too high, RETRY: the caller adds the terms again and calls it
 * without `sample`, which never leaves one out. */
static int64_t dense_top_k(double *acc, int64_t n_docs, double cnst, int64_t k, double top, Ranks id_rank,
                           int64_t *keep, double *buf, double *scratch, int64_t *out_docs, double *out_scores,
                           int sample, Work *work)
{
    const int64_t stride = sample && n_docs >= 64 * k ? SAMPLE : 1;
    const double floor = dense_floor(acc, n_docs, cnst, k, top, stride, work);
    const int64_t m = list_and_clear(acc, n_docs, cnst, floor, keep, buf);
    if (m < k && stride > 1 && floor > -INFINITY)
        return RETRY;
    return best_pairs(keep, buf, m, id_rank, k, scratch, out_docs, out_scores, work);
}

/* ------------------------------------------------------------------------------------------ */
/* adding postings                                                                            */

/* How many of the first candidates a threshold is taken from. */
static inline int64_t subset(int64_t k) { return max_i64(4 * k, 4096); }

/* The first position in pos:hi whose document is >= d (hi if none): an exponential then a binary
 * search from pos, cheap when successive targets are close. */
ALWAYS_INLINE int64_t gallop(const int32_t *doc_nums, int64_t pos, int64_t hi, int64_t d)
{
    int64_t step = 1;
    while (pos + step < hi && doc_nums[pos + step] < d)
        step *= 2;
    int64_t lo = step > 1 ? pos + step / 2 : pos;
    int64_t top = min_i64(pos + step + 1, hi);
    while (lo < top) {
        const int64_t mid = (lo + top) / 2;
        if (doc_nums[mid] < d)
            lo = mid + 1;
        else
            top = mid;
    }
    return lo;
}

/* The weight of posting p: its term's scale (idf) times its entry of table, + 0.0 (a -0.0 product
 * is 0.0: -0.0 means "no posting added yet"). code_size is a constant where this is inlined. */
ALWAYS_INLINE double weight(const void *codes, int code_size, const double *table, double scale, uint64_t p)
{
    const uint32_t code = code_size == 2 ? ((const uint16_t *)codes)[p] : ((const uint32_t *)codes)[p];
    return scale * table[code] + 0.0;
}

/* Add a term's weights (postings lo:hi) to the kept documents docs[:n] (ascending, marked KEPT)
 * that have it: galloping from one kept document to the next when they are few next to the
 * postings, else one pass over the postings checking the marks. */
ALWAYS_INLINE void add_term_to_kept(const int64_t *docs, int64_t n, const uint8_t *marks, double *acc,
                                    const int32_t *doc_nums, const void *codes, int code_size,
                                    const double *table, double scale, int64_t lo, int64_t hi, double mult)
{
    if (n * GALLOP < hi - lo) {
        int64_t pos = lo;
        for (int64_t i = 0; i < n; i++) {
            const int64_t d = docs[i];
            pos = gallop(doc_nums, pos, hi, d);
            if (pos >= hi)
                return;
            if (doc_nums[pos] == d) {
                const double w = weight(codes, code_size, table, scale, (uint64_t)pos);
                acc[d] += mult == 1.0 ? w : w * mult;
            }
        }
    } else {
        for (uint64_t p = (uint64_t)lo; p < (uint64_t)hi; p++) {
            const uint32_t d = (uint32_t)doc_nums[p];
            if (marks[d] == KEPT) {
                const double w = weight(codes, code_size, table, scale, p);
                acc[d] += mult == 1.0 ? w : w * mult;
            }
        }
    }
}

/* What a posting of document d adds to acc[d]: its weight w, or -0.0 when the mask leaves d out
 * (-0.0 + -0.0 is -0.0: acc[d] stays "no posting added"). Chosen by bits, not by a branch: a random
 * mask would mispredict half the postings (measured: a batch 3 to 4 times slower than unmasked).
 * mask is a NULL constant where this is inlined into the unmasked searches: their loops are as before. */
ALWAYS_INLINE double masked_weight(const uint8_t *mask, uint32_t d, double w)
{
    if (mask == NULL)
        return w;
    const int64_t keep = -(int64_t)(mask[d] != 0); /* all ones, or 0 */
    return as_float((as_bits(w) & keep) | (NO_POSTING & ~keep));
}

/* Add a term's weights (postings lo:hi, times mult) to every one of its documents the mask keeps.
 * (The posting loops are unrolled 4 times, as LLVM unrolls numba's: a few % faster.) */
ALWAYS_INLINE void add_in_full(double *acc, const int32_t *doc_nums, const void *codes, int code_size,
                               const double *table, double scale, int64_t lo, int64_t hi, double mult,
                               const uint8_t *mask)
{
    if (mult == 1.0) {
#pragma GCC unroll 4
        for (uint64_t p = (uint64_t)lo; p < (uint64_t)hi; p++) {
            const uint32_t d = (uint32_t)doc_nums[p];
            acc[d] += masked_weight(mask, d, weight(codes, code_size, table, scale, p));
        }
    } else {
#pragma GCC unroll 4
        for (uint64_t p = (uint64_t)lo; p < (uint64_t)hi; p++) {
            const uint32_t d = (uint32_t)doc_nums[p];
            acc[d] += masked_weight(mask, d, weight(codes, code_size, table, scale, p) * mult);
        }
    }
}

/* The canonical term order (retrieval.term_order: np.argsort(-upper, kind="mergesort")): positions
 * by -upper ascending, stably, NaN last as numpy orders it. A merge sort of order[:m] with tmp. */
static inline int before(double a, double b) { return a < b || (isnan(b) && !isnan(a)); }

static void merge_order(int64_t *order, int64_t *tmp, int64_t m, const double *upper)
{
    if (m < 2)
        return;
    const int64_t mid = m / 2;
    merge_order(order, tmp, mid, upper);
    merge_order(order + mid, tmp, m - mid, upper);
    memcpy(tmp, order, (size_t)mid * sizeof *tmp);
    int64_t i = 0, j = mid, o = 0;
    while (i < mid && j < m) /* the left one unless the right one is strictly before: stable */
        order[o++] = before(-upper[order[j]], -upper[tmp[i]]) ? order[j++] : tmp[i++];
    while (i < mid)
        order[o++] = tmp[i++];
}

static void term_order(const double *upper, int64_t m, int64_t *order, int64_t *tmp)
{
    for (int64_t i = 0; i < m; i++)
        order[i] = i;
    merge_order(order, tmp, m, upper);
}

/* ------------------------------------------------------------------------------------------ */
/* one query                                                                                  */

/* Exact top-k of one query (terms j = postings starts[j]:ends[j], multiplicity mult[j], largest
 * weight upper[j] (times mult[j]), idf scale[j]); returns how many, or NOMEM.
 *
 * Terms are added in the canonical order. Without pruning every posting is added. With pruning, a
 * term-at-a-time MaxScore: once k documents are scored, a lower bound theta of the k-th best partial
 * score is one of the final k-th score too (weights >= 0); when the remaining terms' largest weights
 * add up to less than theta, no unscored document can enter the top k, so the remaining terms only
 * update the documents that still can (galloping through their postings) and documents are dropped
 * as their bound falls below theta. Kept documents get every term in the same order: the same
 * documents, scores and order as the plain path.
 *
 * acc is all -0.0 and marks all 0 on entry and both are left so (on NOMEM too). code_size is a
 * constant in each instantiation (query_top_k_u16/_u32), so the posting loops have no branch on it;
 * mask is ix->mask in the masked ones (the documents it leaves out never get a weight added: the
 * kept documents the pruned terms update are scored ones, so they need no test), NULL in the others. */
ALWAYS_INLINE int64_t query_top_k_impl(const int64_t *starts, const int64_t *ends, const double *mult,
                                       const double *upper, const double *scale, int64_t m, double cnst,
                                       const Index *ix, int code_size, const uint8_t *mask, int64_t k,
                                       int prune, Scratch *sc, int64_t *out_docs, double *out_scores)
{
    double *restrict const acc = sc->acc;
    uint8_t *restrict const marks = sc->marks;
    int64_t *restrict const cand = sc->cand;
    int64_t *restrict const keep = sc->keep;
    double *restrict const buf = sc->buf;
    const int64_t n_docs = sc->n_docs;
    const int32_t *restrict const doc_nums = ix->doc_nums;
    const void *const codes = ix->codes;
    const double *restrict const table = ix->table;
    const Ranks id_rank = ix->id_rank;
    Work *const work = sc->work;

    int64_t *order = alloc_array(2 * m, sizeof *order); /* the term order, then a merge buffer */
    double *rest = alloc_array(m + 1, sizeof *rest);
    if (order == NULL || rest == NULL) {
        free(order);
        free(rest);
        return NOMEM;
    }
    term_order(upper, m, order, order + m);
    rest[m] = 0.0;
    for (int64_t i = m - 1; i >= 0; i--)
        rest[i] = rest[i + 1] + upper[order[i]];

    int64_t count;
    int64_t nc = 0;
    /* Candidates are listed in cand while they are few; past n_docs / dense the per-document arrays
     * are walked in order instead (and cleared whole), which beats random access then. */
    int tracked = 1;
    const int64_t dense = k >= SORT_K ? DENSE_LARGE_K : DENSE;
    int64_t lookup_from = m;
    double theta = 0.0;
    for (int64_t i = 0; i < m; i++) {
        const int64_t j = order[i];
        const int64_t lo = starts[j], hi = ends[j];
        /* theta <= the best partial score <= the processed terms' bound: only then can it prune; a
         * threshold costs O(subset(k)): not worth it for a term with fewer postings; once dense,
         * listing the kept documents costs more than adding the remaining terms in full saves */
        if (prune && tracked && i > 0 && nc >= k && rest[i] < rest[0] - rest[i] && hi - lo > subset(k)) {
            theta = kth_largest(acc, cand, min_i64(nc, subset(k)), k, buf);
            if (rest[i] < theta - MARGIN * (fabs(theta) + rest[0])) {
                lookup_from = i;
                break;
            }
        }
        if (tracked && (nc + hi - lo) * dense > n_docs)
            tracked = 0;
        const double w_mult = mult[j];
        const double s = scale[j];
        if (tracked) {
#pragma GCC unroll 4
            for (uint64_t p = (uint64_t)lo; p < (uint64_t)hi; p++) {
                const uint32_t d = (uint32_t)doc_nums[p];
                const double a = acc[d];
                cand[nc] = d; /* branch-free: kept only if new (and not left out) */
                nc += (as_bits(a) == NO_POSTING) & (mask == NULL || mask[d] != 0);
                const double w = weight(codes, code_size, table, s, p);
                acc[d] = a + masked_weight(mask, d, w_mult == 1.0 ? w : w * w_mult);
            }
        } else {
            add_in_full(acc, doc_nums, codes, code_size, table, s, lo, hi, w_mult, mask);
        }
    }

    if (lookup_from < m) {
        double bound = theta - MARGIN * (fabs(theta) + rest[0]) - rest[lookup_from];
        int64_t ns = 0;
        for (int64_t c = 0; c < nc; c++) {
            const int64_t d = cand[c];
            if (acc[d] >= bound) {
                marks[d] = KEPT;
                keep[ns++] = d;
            }
        }
        /* ascending, to gallop (numba: _radix_sort of keep's values as keys) */
        uint64_t *keys = alloc_array(ns, sizeof *keys);
        if (keys != NULL) {
            for (int64_t c = 0; c < ns; c++)
                keys[c] = (uint64_t)keep[c];
        }
        const int sorted = keys != NULL && radix_sort(keys, keep, ns, work) == 0;
        free(keys);
        if (sorted) {
            for (int64_t i = lookup_from; i < m; i++) {
                const int64_t j = order[i];
                add_term_to_kept(keep, ns, marks, acc, doc_nums, codes, code_size, table, scale[j], starts[j],
                                 ends[j], mult[j]);
                if (i + 1 < m && ns > k) {
                    theta = kth_largest(acc, keep, min_i64(ns, subset(k)), k, buf);
                    bound = theta - MARGIN * (fabs(theta) + rest[0]) - rest[i + 1];
                    int64_t kept = 0;
                    for (int64_t c = 0; c < ns; c++) {
                        const int64_t d = keep[c];
                        if (acc[d] >= bound)
                            keep[kept++] = d;
                        else
                            marks[d] = 0;
                    }
                    ns = kept;
                }
            }
        }
        for (int64_t c = 0; c < ns; c++)
            marks[keep[c]] = 0;
        count = sorted ? select_best(keep, ns, acc, cnst, id_rank, k, top_k_floor(keep, ns, acc, cnst, k, work),
                                     keep, buf, sc->hs, sc->hr, sc->hd, out_docs, out_scores, 0, work)
                       : NOMEM;
    } else if (tracked) {
        count = select_best(cand, nc, acc, cnst, id_rank, k, top_k_floor(cand, nc, acc, cnst, k, work), keep, buf,
                            sc->hs, sc->hr, sc->hd, out_docs, out_scores, 0, work);
    } else if (prune && k >= SORT_K) {
        const double top = (rest[0] + cnst) * (1.0 + MARGIN) + MARGIN; /* above every score (weights >= 0) */
        /* the listed documents are no longer needed (acc is cleared whole): cand is the scratch; with
         * a mask every document is looked at (a mask that leaves out every SAMPLE-th one would leave
         * the samples empty and the floor at -inf: every scored document listed, 3 times slower) */
        double *const scratch = (double *)(void *)cand;
        count = dense_top_k(acc, n_docs, cnst, k, top, id_rank, keep, buf, scratch, out_docs, out_scores,
                            mask == NULL, work);
        if (count == RETRY) {
            for (int64_t i = 0; i < m; i++) {
                const int64_t j = order[i];
                add_in_full(acc, doc_nums, codes, code_size, table, scale[j], starts[j], ends[j], mult[j], mask);
            }
            count = dense_top_k(acc, n_docs, cnst, k, top, id_rank, keep, buf, scratch, out_docs, out_scores, 0,
                                work);
        }
        free(order);
        free(rest);
        return count; /* dense_top_k has cleared acc */
    } else {
        /* the k-th best final score of the documents listed before the switch (those of the
         * heaviest terms, often the best) is a floor of the k-th best of all: the heap then rarely
         * reorders itself */
        double floor = -INFINITY;
        if (nc >= k)
            floor = kth_largest(acc, cand, min_i64(nc, subset(k)), k, buf) + cnst;
        count = select_best(keep, n_docs, acc, cnst, id_rank, k, floor, keep, buf, sc->hs, sc->hr, sc->hd, out_docs,
                            out_scores, 1, work);
    }
    if (tracked) {
        for (int64_t c = 0; c < nc; c++)
            acc[cand[c]] = -0.0;
    } else {
        for (int64_t d = 0; d < n_docs; d++)
            acc[d] = -0.0;
    }
    free(order);
    free(rest);
    return count;
}

/* query_top_k_impl for one code size, with or without the index's mask */
#define QUERY_TOP_K(NAME, CODE_SIZE, MASK)                                                                  \
    static int64_t __attribute__((noinline))                                                              \
    NAME(const int64_t *starts, const int64_t *ends, const double *mult, const double *upper,             \
         const double *scale, int64_t m, double cnst, const Index *ix, int64_t k, int prune, Scratch *sc,   \
         int64_t *out_docs, double *out_scores)                                                           \
    {                                                                                                     \
        return query_top_k_impl(starts, ends, mult, upper, scale, m, cnst, ix, CODE_SIZE, MASK, k, prune, sc, \
                                out_docs, out_scores);                                                    \
    }
QUERY_TOP_K(query_top_k_u16, 2, NULL)
QUERY_TOP_K(query_top_k_u32, 4, NULL)
QUERY_TOP_K(query_top_k_u16_masked, 2, ix->mask)
QUERY_TOP_K(query_top_k_u32_masked, 4, ix->mask)

static int64_t query_top_k(const int64_t *starts, const int64_t *ends, const double *mult, const double *upper,
                           const double *scale, int64_t m, double cnst, const Index *ix, int64_t k, int prune,
                           Scratch *sc, int64_t *out_docs, double *out_scores)
{
    const int wide = ix->code_size != 2;
    return (ix->mask == NULL ? (wide ? query_top_k_u32 : query_top_k_u16)
                             : (wide ? query_top_k_u32_masked : query_top_k_u16_masked))(
        starts, ends, mult, upper, scale, m, cnst, ix, k, prune, sc, out_docs, out_scores);
}

/* ------------------------------------------------------------------------------------------ */
/* a batch, in chunks on threads                                                              */

typedef struct {
    const int64_t *q_ptr;
    int64_t nq;
    const double *counts;   /* per span: the term's multiplicity (weight) in the query */
    const double *q_const;
    const int64_t *span_start, *span_end;
    const double *span_upper, *span_scale;
    Index ix;
    int64_t n_docs, k, n_chunks;
    int prune;
    int64_t *out_docs;      /* row qi at qi * k */
    double *out_scores;
    int64_t *out_len;
    int failed;             /* set (atomically) by a chunk out of memory: the others stop */
} Batch;

typedef struct {
    Batch *batch;
    int64_t chunk;
    pthread_t thread;
    int started;
} Chunk;

static void free_scratch(Scratch *sc)
{
    free(sc->acc);
    free(sc->marks);
    free(sc->cand);
    free(sc->keep);
    free(sc->buf);
    free(sc->hs);
    free(sc->hr);
    free(sc->hd);
    free(sc->work);
}

/* A chunk's own work arrays, as numba's batch_top_k makes them (acc all -0.0, marks all 0); 0, or
 * -1 when out of memory (all freed). */
static int alloc_scratch(Scratch *sc, int64_t n_docs, int64_t k)
{
    sc->n_docs = n_docs;
    sc->acc = alloc_array(n_docs, sizeof *sc->acc);
    sc->marks = calloc((size_t)(n_docs > 0 ? n_docs : 1), 1);
    sc->cand = alloc_array(n_docs, sizeof *sc->cand);
    sc->keep = alloc_array(n_docs, sizeof *sc->keep);
    sc->buf = alloc_array(n_docs, sizeof *sc->buf);
    sc->hs = alloc_array(k, sizeof *sc->hs);
    sc->hr = alloc_array(k, sizeof *sc->hr);
    sc->hd = alloc_array(k, sizeof *sc->hd);
    sc->work = malloc(sizeof *sc->work);
    if (!sc->acc || !sc->marks || !sc->cand || !sc->keep || !sc->buf || !sc->hs || !sc->hr || !sc->hd || !sc->work) {
        free_scratch(sc);
        return -1;
    }
    for (int64_t d = 0; d < n_docs; d++)
        sc->acc[d] = -0.0;
    return 0;
}

/* The queries c, c + n_chunks, ... of the batch. */
static void run_chunk(Batch *b, int64_t c)
{
    Scratch sc;
    if (alloc_scratch(&sc, b->n_docs, b->k) < 0) {
        __atomic_store_n(&b->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t qi = c; qi < b->nq; qi += b->n_chunks) {
        if (__atomic_load_n(&b->failed, __ATOMIC_RELAXED))
            break;
        const int64_t a = b->q_ptr[qi], z = b->q_ptr[qi + 1];
        const int64_t n = query_top_k(b->span_start + a, b->span_end + a, b->counts + a, b->span_upper + a,
                                      b->span_scale + a, z - a, b->q_const[qi], &b->ix, b->k, b->prune, &sc,
                                      b->out_docs + qi * b->k, b->out_scores + qi * b->k);
        if (n == NOMEM) {
            __atomic_store_n(&b->failed, 1, __ATOMIC_RELAXED);
            break;
        }
        b->out_len[qi] = n;
    }
    free_scratch(&sc);
}

static void *chunk_thread(void *arg)
{
    const Chunk *ch = arg;
    run_chunk(ch->batch, ch->chunk);
    return NULL;
}

/* Run every chunk: 1.. on threads, 0 in the calling thread (and any chunk whose thread could not
 * be started after it: the results are the same). Returns 0, or -1 when out of memory. */
static int run_batch(Batch *b)
{
    Chunk *chunks = calloc((size_t)b->n_chunks, sizeof *chunks);
    if (chunks == NULL)
        return -1;
    for (int64_t c = 0; c < b->n_chunks; c++) {
        chunks[c].batch = b;
        chunks[c].chunk = c;
    }
    for (int64_t c = 1; c < b->n_chunks; c++)
        chunks[c].started = pthread_create(&chunks[c].thread, NULL, chunk_thread, &chunks[c]) == 0;
    run_chunk(b, 0);
    for (int64_t c = 1; c < b->n_chunks; c++) {
        if (chunks[c].started)
            pthread_join(chunks[c].thread, NULL);
        else
            run_chunk(b, c);
    }
    free(chunks);
    return __atomic_load_n(&b->failed, __ATOMIC_RELAXED) ? -1 : 0;
}

#define CODE_SIZES (SIZE_2 | SIZE_4) /* pair codes: uint16 or uint32 */
#define RANK_SIZES (SIZE_4 | SIZE_8) /* id ranks: int32 or int64 */

/* The index arrays of a search from their arguments (acquired): postings, codes, table, id ranks. */
static Index index_of(const Arg *doc_nums, const Arg *codes, const Arg *table, const Arg *id_rank)
{
    return (Index){doc_nums->view.buf, codes->view.buf, (int)codes->view.itemsize, table->view.buf,
                   {id_rank->view.buf, id_rank->view.itemsize == 8}, NULL};
}

/* The optional mask argument (None: no mask, *mask NULL) taken into arg: uint8, at least n_docs
 * entries. 0 (release arg with release_mask), or -1 with an exception set. */
static int acquire_mask(PyObject *obj, Arg *arg, Py_ssize_t n_docs, const uint8_t **mask)
{
    *mask = NULL;
    if (obj == NULL || obj == Py_None)
        return 0;
    *arg = (Arg)IN("mask", UNSIGNED, SIZE_1);
    arg->obj = obj;
    if (acquire_args(arg, 1) < 0)
        return -1;
    if (arg->n < n_docs) {
        release_args(arg, 1);
        PyErr_SetString(PyExc_ValueError, "mask is shorter than the documents");
        return -1;
    }
    *mask = arg->view.buf;
    return 0;
}

static void release_mask(Arg *arg, const uint8_t *mask)
{
    if (mask != NULL)
        release_args(arg, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* batch_top_k                                                                                */

enum { B_Q_PTR, B_TERM_IDS, B_COUNTS, B_OFFSETS, B_TERM_UPPER, B_TERM_SCALE, B_Q_CONST, B_DOC_NUMS, B_CODES,
       B_TABLE, B_ID_RANK, B_OUT_DOCS, B_OUT_SCORES, B_OUT_LEN, B_ARGS };

/* Checks of the batch's structure (term ids, spans, sizes); the values in doc_nums and codes are
 * trusted (the index files are checksummed). 0, or -1 with ValueError set. */
static int check_batch(const Arg *a, Py_ssize_t n_docs, Py_ssize_t k)
{
    const Py_ssize_t nq = a[B_Q_PTR].n - 1, n_spans = a[B_TERM_IDS].n, n_terms = a[B_OFFSETS].n - 1;
    const int64_t *q_ptr = BUF(a, B_Q_PTR, const int64_t);
    const int64_t *term_ids = BUF(a, B_TERM_IDS, const int64_t);
    const int64_t *offsets = BUF(a, B_OFFSETS, const int64_t);
    const char *problem = NULL;
    if (nq < 0)
        problem = "q_ptr is empty";
    else if (n_terms < 0)
        problem = "offsets is empty";
    else if (a[B_COUNTS].n != n_spans)
        problem = "counts and term_ids differ in length";
    else if (a[B_TERM_UPPER].n < n_terms || a[B_TERM_SCALE].n < n_terms)
        problem = "term_upper or term_scale is shorter than the terms";
    else if (a[B_Q_CONST].n < nq)
        problem = "q_const is shorter than the queries";
    else if (n_docs < 0 || a[B_ID_RANK].n < n_docs)
        problem = "id_rank is shorter than n_docs";
    else if (k < 1)
        problem = "k must be at least 1";
    else if (nq > 0 && k > PY_SSIZE_T_MAX / nq)
        problem = "nq * k is too large";
    else if (a[B_OUT_DOCS].n < nq * k || a[B_OUT_SCORES].n < nq * k || a[B_OUT_LEN].n < nq)
        problem = "an output array is too small";
    if (problem == NULL && q_ptr[0] != 0)
        problem = "q_ptr must start at 0";
    for (Py_ssize_t i = 0; problem == NULL && i < nq; i++)
        if (q_ptr[i + 1] < q_ptr[i])
            problem = "q_ptr must be non-decreasing";
    if (problem == NULL && q_ptr[nq] != n_spans)
        problem = "q_ptr must end at the number of spans";
    if (problem == NULL && offsets[0] < 0)
        problem = "offsets must start at 0 or more";
    for (Py_ssize_t t = 0; problem == NULL && t < n_terms; t++)
        if (offsets[t + 1] < offsets[t])
            problem = "offsets must be non-decreasing";
    if (problem == NULL && (offsets[n_terms] > a[B_DOC_NUMS].n || offsets[n_terms] > a[B_CODES].n))
        problem = "offsets go past doc_nums or codes";
    for (Py_ssize_t j = 0; problem == NULL && j < n_spans; j++)
        if (term_ids[j] < 0 || term_ids[j] >= n_terms)
            problem = "a term id is out of range";
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return -1;
    }
    return 0;
}

static PyObject *py_batch_top_k(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"q_ptr", "term_ids", "counts", "offsets", "term_upper", "term_scale", "q_const",
                             "doc_nums", "codes", "table", "id_rank", "n_docs", "k", "prune", "n_threads",
                             "out_docs", "out_scores", "out_len", "mask", NULL};
    Arg a[B_ARGS] = {
        [B_Q_PTR] = IN("q_ptr", SIGNED, SIZE_8),
        [B_TERM_IDS] = IN("term_ids", SIGNED, SIZE_8),
        [B_COUNTS] = IN("counts", FLOAT, SIZE_8),
        [B_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [B_TERM_UPPER] = IN("term_upper", FLOAT, SIZE_8),
        [B_TERM_SCALE] = IN("term_scale", FLOAT, SIZE_8),
        [B_Q_CONST] = IN("q_const", FLOAT, SIZE_8),
        [B_DOC_NUMS] = IN("doc_nums", SIGNED, SIZE_4),
        [B_CODES] = IN("codes", UNSIGNED, CODE_SIZES),
        [B_TABLE] = IN("table", FLOAT, SIZE_8),
        [B_ID_RANK] = IN("id_rank", SIGNED, RANK_SIZES),
        [B_OUT_DOCS] = OUT("out_docs", SIGNED, SIZE_8),
        [B_OUT_SCORES] = OUT("out_scores", FLOAT, SIZE_8),
        [B_OUT_LEN] = OUT("out_len", SIGNED, SIZE_8),
    };
    Py_ssize_t n_docs, k, n_threads;
    int prune;
    PyObject *mask_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOOOOOOOnnpnOOO|O:batch_top_k", kwlist, &a[B_Q_PTR].obj,
                                     &a[B_TERM_IDS].obj, &a[B_COUNTS].obj, &a[B_OFFSETS].obj, &a[B_TERM_UPPER].obj,
                                     &a[B_TERM_SCALE].obj, &a[B_Q_CONST].obj, &a[B_DOC_NUMS].obj, &a[B_CODES].obj,
                                     &a[B_TABLE].obj, &a[B_ID_RANK].obj, &n_docs, &k, &prune, &n_threads,
                                     &a[B_OUT_DOCS].obj, &a[B_OUT_SCORES].obj, &a[B_OUT_LEN].obj, &mask_obj))
        return NULL;
    if (n_threads < 1) {
        PyErr_SetString(PyExc_ValueError, "n_threads must be at least 1");
        return NULL;
    }
    if (acquire_args(a, B_ARGS) < 0)
        return NULL;
    Arg mask_arg;
    const uint8_t *mask;
    if (check_batch(a, n_docs, k) < 0 || acquire_mask(mask_obj, &mask_arg, n_docs, &mask) < 0) {
        release_args(a, B_ARGS);
        return NULL;
    }
    const int64_t nq = a[B_Q_PTR].n - 1, n_spans = a[B_TERM_IDS].n;
    if (nq == 0) {
        release_mask(&mask_arg, mask);
        release_args(a, B_ARGS);
        Py_RETURN_NONE;
    }
    /* per span: its postings, largest weight (times the multiplicity) and idf */
    int64_t *span_pos = alloc_array(2 * n_spans, sizeof *span_pos);
    double *span_val = alloc_array(2 * n_spans, sizeof *span_val);
    if (span_pos == NULL || span_val == NULL) {
        free(span_pos);
        free(span_val);
        release_mask(&mask_arg, mask);
        release_args(a, B_ARGS);
        return PyErr_NoMemory();
    }
    const int64_t *term_ids = BUF(a, B_TERM_IDS, const int64_t), *offsets = BUF(a, B_OFFSETS, const int64_t);
    const double *counts = BUF(a, B_COUNTS, const double);
    const double *term_upper = BUF(a, B_TERM_UPPER, const double), *term_scale = BUF(a, B_TERM_SCALE, const double);
    Batch b = {
        .q_ptr = BUF(a, B_Q_PTR, const int64_t),
        .nq = nq,
        .counts = counts,
        .q_const = BUF(a, B_Q_CONST, const double),
        .span_start = span_pos,
        .span_end = span_pos + n_spans,
        .span_upper = span_val,
        .span_scale = span_val + n_spans,
        .ix = index_of(&a[B_DOC_NUMS], &a[B_CODES], &a[B_TABLE], &a[B_ID_RANK]),
        .n_docs = n_docs,
        .k = k,
        .n_chunks = n_threads < nq ? n_threads : nq,
        .prune = prune,
        .out_docs = BUF(a, B_OUT_DOCS, int64_t),
        .out_scores = BUF(a, B_OUT_SCORES, double),
        .out_len = BUF(a, B_OUT_LEN, int64_t),
        .failed = 0,
    };
    b.ix.mask = mask;
    int status;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t j = 0; j < n_spans; j++) {
        const int64_t t = term_ids[j];
        span_pos[j] = offsets[t];
        span_pos[n_spans + j] = offsets[t + 1];
        span_val[j] = term_upper[t] * counts[j];
        span_val[n_spans + j] = term_scale[t];
    }
    status = run_batch(&b);
    Py_END_ALLOW_THREADS
    free(span_pos);
    free(span_val);
    release_mask(&mask_arg, mask);
    release_args(a, B_ARGS);
    if (status < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* query_top_k                                                                                */

enum { Q_STARTS, Q_ENDS, Q_MULT, Q_UPPER, Q_SCALE, Q_DOC_NUMS, Q_CODES, Q_TABLE, Q_ID_RANK, Q_ACC, Q_MARKS, Q_CAND,
       Q_KEEP, Q_BUF, Q_HS, Q_HR, Q_HD, Q_OUT_DOCS, Q_OUT_SCORES, Q_ARGS };

static int check_query(const Arg *a, Py_ssize_t k)
{
    const Py_ssize_t m = a[Q_STARTS].n, n_docs = a[Q_ACC].n;
    const int64_t *starts = BUF(a, Q_STARTS, const int64_t), *ends = BUF(a, Q_ENDS, const int64_t);
    const char *problem = NULL;
    if (a[Q_ENDS].n != m || a[Q_MULT].n != m || a[Q_UPPER].n != m || a[Q_SCALE].n != m)
        problem = "starts, ends, mult, upper and scale differ in length";
    else if (a[Q_MARKS].n < n_docs || a[Q_CAND].n < n_docs || a[Q_KEEP].n < n_docs || a[Q_BUF].n < n_docs)
        problem = "marks, cand, keep and buf must be as long as acc";
    else if (a[Q_ID_RANK].n < n_docs)
        problem = "id_rank is shorter than acc";
    else if (k < 1)
        problem = "k must be at least 1";
    else if (a[Q_HS].n < k || a[Q_HR].n < k || a[Q_HD].n < k || a[Q_OUT_DOCS].n < k || a[Q_OUT_SCORES].n < k)
        problem = "hs, hr, hd, out_docs and out_scores must hold k elements";
    for (Py_ssize_t j = 0; problem == NULL && j < m; j++)
        if (starts[j] < 0 || ends[j] < starts[j] || ends[j] > a[Q_DOC_NUMS].n || ends[j] > a[Q_CODES].n)
            problem = "a term's postings are out of range";
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return -1;
    }
    return 0;
}

static PyObject *py_query_top_k(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"starts", "ends", "mult", "upper", "scale", "const", "doc_nums", "codes", "table",
                             "id_rank", "k", "prune", "acc", "marks", "cand", "keep", "buf", "hs", "hr", "hd",
                             "out_docs", "out_scores", "mask", NULL};
    Arg a[Q_ARGS] = {
        [Q_STARTS] = IN("starts", SIGNED, SIZE_8),
        [Q_ENDS] = IN("ends", SIGNED, SIZE_8),
        [Q_MULT] = IN("mult", FLOAT, SIZE_8),
        [Q_UPPER] = IN("upper", FLOAT, SIZE_8),
        [Q_SCALE] = IN("scale", FLOAT, SIZE_8),
        [Q_DOC_NUMS] = IN("doc_nums", SIGNED, SIZE_4),
        [Q_CODES] = IN("codes", UNSIGNED, CODE_SIZES),
        [Q_TABLE] = IN("table", FLOAT, SIZE_8),
        [Q_ID_RANK] = IN("id_rank", SIGNED, RANK_SIZES),
        [Q_ACC] = OUT("acc", FLOAT, SIZE_8),
        [Q_MARKS] = OUT("marks", UNSIGNED, SIZE_1),
        [Q_CAND] = OUT("cand", SIGNED, SIZE_8),
        [Q_KEEP] = OUT("keep", SIGNED, SIZE_8),
        [Q_BUF] = OUT("buf", FLOAT, SIZE_8),
        [Q_HS] = OUT("hs", FLOAT, SIZE_8),
        [Q_HR] = OUT("hr", SIGNED, SIZE_8),
        [Q_HD] = OUT("hd", SIGNED, SIZE_8),
        [Q_OUT_DOCS] = OUT("out_docs", SIGNED, SIZE_8),
        [Q_OUT_SCORES] = OUT("out_scores", FLOAT, SIZE_8),
    };
    double cnst;
    Py_ssize_t k;
    int prune;
    PyObject *mask_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOdOOOOnpOOOOOOOOOO|O:query_top_k", kwlist, &a[Q_STARTS].obj,
                                     &a[Q_ENDS].obj, &a[Q_MULT].obj, &a[Q_UPPER].obj, &a[Q_SCALE].obj, &cnst,
                                     &a[Q_DOC_NUMS].obj, &a[Q_CODES].obj, &a[Q_TABLE].obj, &a[Q_ID_RANK].obj, &k,
                                     &prune, &a[Q_ACC].obj, &a[Q_MARKS].obj, &a[Q_CAND].obj, &a[Q_KEEP].obj,
                                     &a[Q_BUF].obj, &a[Q_HS].obj, &a[Q_HR].obj, &a[Q_HD].obj, &a[Q_OUT_DOCS].obj,
                                     &a[Q_OUT_SCORES].obj, &mask_obj))
        return NULL;
    if (acquire_args(a, Q_ARGS) < 0)
        return NULL;
    Arg mask_arg;
    const uint8_t *mask;
    if (check_query(a, k) < 0 || acquire_mask(mask_obj, &mask_arg, a[Q_ACC].n, &mask) < 0) {
        release_args(a, Q_ARGS);
        return NULL;
    }
    Index ix = index_of(&a[Q_DOC_NUMS], &a[Q_CODES], &a[Q_TABLE], &a[Q_ID_RANK]);
    ix.mask = mask;
    Scratch sc = {BUF(a, Q_ACC, double), BUF(a, Q_MARKS, uint8_t), BUF(a, Q_CAND, int64_t), BUF(a, Q_KEEP, int64_t),
                  BUF(a, Q_BUF, double), BUF(a, Q_HS, double), BUF(a, Q_HR, int64_t), BUF(a, Q_HD, int64_t),
                  a[Q_ACC].n, NULL};
    int64_t count = NOMEM;
    Py_BEGIN_ALLOW_THREADS
    sc.work = malloc(sizeof *sc.work);
    if (sc.work != NULL)
        count = query_top_k(BUF(a, Q_STARTS, const int64_t), BUF(a, Q_ENDS, const int64_t), BUF(a, Q_MULT, const double),
                            BUF(a, Q_UPPER, const double), BUF(a, Q_SCALE, const double), a[Q_STARTS].n, cnst, &ix, k,
                            prune, &sc, BUF(a, Q_OUT_DOCS, int64_t), BUF(a, Q_OUT_SCORES, double));
    free(sc.work);
    Py_END_ALLOW_THREADS
    release_mask(&mask_arg, mask);
    release_args(a, Q_ARGS);
    if (count == NOMEM)
        return PyErr_NoMemory();
    return PyLong_FromLongLong(count);
}

/* ------------------------------------------------------------------------------------------ */
/* term_extremes                                                                              */

/* high[t] and low[t]: the largest and smallest entry of table over term t's postings' codes (-inf and
 * +inf for a term without postings). Comparisons only, no arithmetic: exactly the values numpy's
 * maximum/minimum.reduceat give for finite entries (PreparedWeights.extremes). */
#define TERM_EXTREMES(CODE_T)                                                                             \
    static void term_extremes_##CODE_T(const int64_t *offsets, int64_t n_terms, const CODE_T *codes,       \
                                       const double *table, double *high, double *low)                     \
    {                                                                                                     \
        for (int64_t t = 0; t < n_terms; t++) {                                                           \
            double hi = -INFINITY, lo = INFINITY;                                                         \
            for (int64_t p = offsets[t]; p < offsets[t + 1]; p++) {                                       \
                const double w = table[codes[p]];                                                         \
                hi = w > hi ? w : hi;                                                                     \
                lo = w < lo ? w : lo;                                                                     \
            }                                                                                             \
            high[t] = hi;                                                                                 \
            low[t] = lo;                                                                                  \
        }                                                                                                 \
    }
TERM_EXTREMES(uint16_t)
TERM_EXTREMES(uint32_t)

enum { E_OFFSETS, E_CODES, E_TABLE, E_HIGH, E_LOW, E_ARGS };

static PyObject *py_term_extremes(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"offsets", "codes", "table", "high", "low", NULL};
    Arg a[E_ARGS] = {
        [E_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [E_CODES] = IN("codes", UNSIGNED, CODE_SIZES),
        [E_TABLE] = IN("table", FLOAT, SIZE_8),
        [E_HIGH] = OUT("high", FLOAT, SIZE_8),
        [E_LOW] = OUT("low", FLOAT, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOO:term_extremes", kwlist, &a[E_OFFSETS].obj,
                                     &a[E_CODES].obj, &a[E_TABLE].obj, &a[E_HIGH].obj, &a[E_LOW].obj))
        return NULL;
    if (acquire_args(a, E_ARGS) < 0)
        return NULL;
    const int64_t *offsets = BUF(a, E_OFFSETS, const int64_t);
    const Py_ssize_t n_terms = a[E_OFFSETS].n - 1;
    const char *problem = NULL;
    if (n_terms < 0)
        problem = "offsets is empty";
    else if (a[E_HIGH].n < n_terms || a[E_LOW].n < n_terms)
        problem = "high or low is shorter than the terms";
    else if (offsets[0] < 0)
        problem = "offsets must start at 0 or more";
    for (Py_ssize_t t = 0; problem == NULL && t < n_terms; t++)
        if (offsets[t + 1] < offsets[t])
            problem = "offsets must be non-decreasing";
    if (problem == NULL && offsets[n_terms] > a[E_CODES].n)
        problem = "offsets go past codes";
    /* the codes' values are trusted, as by batch_top_k: the index files are checksummed and the table
     * is made from the same pairs */
    const int wide = a[E_CODES].view.itemsize == 4;
    if (problem != NULL) {
        release_args(a, E_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (wide)
        term_extremes_uint32_t(offsets, n_terms, BUF(a, E_CODES, const uint32_t), BUF(a, E_TABLE, const double),
                               BUF(a, E_HIGH, double), BUF(a, E_LOW, double));
    else
        term_extremes_uint16_t(offsets, n_terms, BUF(a, E_CODES, const uint16_t), BUF(a, E_TABLE, const double),
                               BUF(a, E_HIGH, double), BUF(a, E_LOW, double));
    Py_END_ALLOW_THREADS
    release_args(a, E_ARGS);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */

PyMethodDef core_search_methods[] = {
    {"term_extremes", (PyCFunction)(void (*)(void))py_term_extremes, METH_VARARGS | METH_KEYWORDS,
     "term_extremes(offsets, codes, table, high, low) -> None\n\n"
     "Every term's largest and smallest entry of table over its postings' codes (-inf/+inf for a term "
     "without postings): the values of numpy's maximum/minimum.reduceat."},
    {"batch_top_k", (PyCFunction)(void (*)(void))py_batch_top_k, METH_VARARGS | METH_KEYWORDS,
     "batch_top_k(q_ptr, term_ids, counts, offsets, term_upper, term_scale, q_const, doc_nums, codes, table, "
     "id_rank, n_docs, k, prune, n_threads, out_docs, out_scores, out_len) -> None\n\n"
     "Exact top-k of every query of a term batch, in min(n_threads, queries) chunks on threads; row qi "
     "of out_docs/out_scores (k wide) holds query qi's out_len[qi] results, best first."},
    {"query_top_k", (PyCFunction)(void (*)(void))py_query_top_k, METH_VARARGS | METH_KEYWORDS,
     "query_top_k(starts, ends, mult, upper, scale, const, doc_nums, codes, table, id_rank, k, prune, acc, "
     "marks, cand, keep, buf, hs, hr, hd, out_docs, out_scores) -> int\n\n"
     "Exact top-k of one query with caller-provided work arrays (acc all -0.0 and marks all 0 on entry, "
     "left so); returns how many results were written."},
    {NULL, NULL, 0, NULL},
};
