/*
 * search.c: exact top-k search of one query or a batch (query_top_k, batch_top_k), each term's extreme
 * table entries (term_extremes), and the choice between the two searches.
 *
 *   Scores are float64 sums of the postings' weights (scale * entry + 0.0, search.h) in the query's
 *   canonical term order (retrieval.term_order: largest weight first, stable), plus the per-query
 *   constant. Selection is exact top-k, score descending, then id rank descending.
 *
 * Two searches give the same documents, scores and order (the tests compare both with numpy's):
 *   - here, term-at-a-time MaxScore over a per-document accumulator: terms are added in the canonical
 *     order; once the remaining terms cannot lift an unscored document into the top k, they only update
 *     the documents that still can (skipping the blocks between them), and documents are dropped as their
 *     bound falls below the k-th score. acc[d] is -0.0 while no posting was added to document d: no sum
 *     of prepared weights is -0.0, so the scores also mark the documents scored. Fast while the
 *     accumulator is small (it lives in the caches) or k is large;
 *   - blockmax.c: block-max MaxScore over windows of documents, which passes over the blocks whose
 *     bounds cannot reach the k-th score and keeps its accumulator small: fast for a small k in a large
 *     collection.
 * The caller chooses one by k and the number of documents only (core_backend.search_method).
 *
 * Build with -ffp-contract=off (and never -ffast-math): a fused multiply-add (acc + w * mult,
 * edge - margin * x, ...) rounds once where the specification rounds twice and would change score bits.
 *
 * A document mask (optional, uint8, one per document: a metadata filter) leaves out the documents
 * whose entry is 0: their postings add -0.0 as they are read (masked_weight, search.h), so they are
 * never scored, listed, counted in a threshold or selected; every bound stays an upper bound and every
 * threshold a lower bound of the k-th best of the documents that pass, so pruning stays exact. The
 * others get the very sums they get without a mask (retrieval.Scorer.top with mask= is the
 * specification).
 *
 * Python API (buffer protocol only, no numpy headers; `index` and `weights` are the tuples of
 * index_args() below, made by core_backend.py):
 *   batch_top_k(index, weights, q_ptr, term_ids, counts, term_upper, term_bound, q_const, n_docs, k, prune,
 *               n_threads, method, out_docs, out_scores, out_len, mask=None, stats=None) -> None
 *   query_top_k(index, weights, term_ids, counts, upper, bound, const, n_docs, k, prune, method, acc, marks, cand,
 *               keep, buf, hs, hr, hd, out_docs, out_scores, mask=None) -> int
 *   term_extremes(index, weights, term_ids, n_threads, high, low) -> None
 * All release the GIL while they work.
 */
#include "search.h"

#include <pthread.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>

/* ------------------------------------------------------------------------------------------ */
/* constants (same names and values as _kernels.py)                                          */

#define BUCKETS 4096        /* histogram buckets of the floors */
#define SAMPLE 16           /* a dense floor samples every SAMPLE-th document (many documents next to k) */
#define SORT_K 64           /* from this k on, candidates over a floor are sorted rather than heaped */
#define SORT_MAX 8          /* ... while they are at most SORT_MAX times k */
#define ORDER_BUCKETS 2048  /* order_ascending's buckets of equal width */
#define ORDER_FEW 32        /* a bucket of more keys is radix sorted, fewer by insertion */
#define LOG_SHIFT 45        /* dense histogram bucket: exponent and top 7 mantissa bits (1/128 binade) */
#define LIST_BLOCK 16       /* documents per block of list_and_clear's test */
#define KEPT 1              /* marks[d] while d is one of the documents the remaining terms update */
#define DENSE 8             /* candidates stop being listed past n_docs / DENSE ... */
#define DENSE_LARGE_K 32    /* ... n_docs / DENSE_LARGE_K for k >= SORT_K */
#define GALLOP 64           /* a term skips to the kept documents when its postings are > GALLOP times them */
#define TAAT 1              /* method: term at a time (here) */
#define WINDOWED 2          /* method: block-max MaxScore over windows (blockmax.c) */

#define NO_POSTING INT64_MIN /* -0.0 viewed as int64: acc[d] of a document no posting was added to */
#define SIGN_BIT (UINT64_C(1) << 63)

/* counts returned besides >= 0 */
#define RETRY (-1)          /* dense_top_k, dense_lookup: the sampled floor was too high, add the terms again */
#define NOT_PRUNED (-2)     /* dense_lookup: nothing to prune yet */
#define DENSE_LOOKUP 2      /* dense_lookup is tried for the terms left once their postings are n_docs / DENSE_LOOKUP */
#define DENSE_RATIO 10      /* ... and their bounds add up to less than 1 / DENSE_RATIO of those of the terms added */

/* ------------------------------------------------------------------------------------------ */
/* the data a search reads, and its per-thread work space                                    */

/* Fixed-size histograms and bucket tables; numba allocates them per call, here once per thread. */
typedef struct {
    int64_t counts[BUCKETS];          /* refine_floor, narrow_pairs, dense_floor's total */
    uint32_t counts4[4][BUCKETS];     /* dense_floor: 4 interleaved rows (independent increments; n_docs < 2**31) */
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
    int damaged;      /* a block could not be read */
    BlockBuf block;   /* the block being read */
} Scratch;

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                              */

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
        if (n < k) {
            hs[n] = s;
            hr[n] = r;
            hd[n] = (int64_t)d;
            sift_up(hs, hr, hd, n);
            n++;
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
    return heap_out(hs, hr, hd, n, out_docs, out_scores);
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

/* Move the values of a[lo:hi] that are below the pivot (below or equal with `or_equal`) to its
 * front; returns where the others start. Branch-free (Lomuto's scheme, a swap for every value): the
 * scores are in no order, so a branch on each would be mispredicted half the time. */
static inline int64_t partition_below(double *a, int64_t lo, int64_t hi, double pivot, int or_equal)
{
    int64_t store = lo;
    if (or_equal) {
        for (int64_t i = lo; i < hi; i++) {
            const double x = a[i];
            a[i] = a[store];
            a[store] = x;
            store += x <= pivot;
        }
    } else {
        for (int64_t i = lo; i < hi; i++) {
            const double x = a[i];
            a[i] = a[store];
            a[store] = x;
            store += x < pivot;
        }
    }
    return store;
}

/* The value that would stand at `kth` if a[:n] were sorted ascending (quickselect with a
 * median-of-three pivot, in place; no NaN). */
static double select_in_place(double *a, int64_t n, int64_t kth)
{
    int64_t lo = 0, hi = n; /* kth in [lo, hi) */
    while (hi - lo > 16) {
        const int64_t mid = lo + (hi - lo) / 2;
        const double x = a[lo], y = a[mid], z = a[hi - 1];
        const double pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        const int64_t below = partition_below(a, lo, hi, pivot, 0);
        if (kth < below) {
            hi = below; /* below < hi: the pivot is one of a[below:hi] */
        } else if (below > lo) {
            lo = below;
        } else {
            /* the pivot is the least: the values equal to it move to the front (at least one) */
            const int64_t equal_end = partition_below(a, lo, hi, pivot, 1);
            if (kth < equal_end)
                return pivot;
            lo = equal_end;
        }
    }
    for (int64_t i = lo + 1; i < hi; i++) { /* insertion sort of the rest */
        const double v = a[i];
        int64_t j = i;
        while (j > lo && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
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
 * binade per bucket, 32 binades down from top) that, with the buckets above it, holds `wanted` of
 * every stride-th document (wanted_samples); -inf if none. The histogram is left in work->counts. */
static double dense_floor(const double *acc, int64_t n, double cnst, double top, int64_t stride, int64_t wanted,
                          Work *work)
{
    const int64_t base = (as_bits(top) >> LOG_SHIFT) - (BUCKETS - 1);
    uint32_t (*counts4)[BUCKETS] = work->counts4;
    memset(counts4, 0, sizeof work->counts4);
    const uint64_t samples = (uint64_t)(n / stride + (n % stride > 0));
#pragma GCC unroll 4 /* i & 3 a constant in each copy (numba's code is as fast without) */
    for (uint64_t i = 0; i < samples; i++) {
        const int64_t x = as_bits(acc[i * (uint64_t)stride]);
        /* an arithmetic shift (gcc's, and numba's): -0.0 lands in bucket 0 and counts 0 */
        const int64_t b = min_i64(max_i64((x >> LOG_SHIFT) - base, 0), BUCKETS - 1);
        counts4[i & 3][b] += (uint32_t)(x != NO_POSTING);
    }
    int64_t *counts = work->counts;
    for (int b = 0; b < BUCKETS; b++)
        counts[b] = (int64_t)counts4[0][b] + counts4[1][b] + counts4[2][b] + counts4[3][b];
    const int64_t b = bucket_reaching(counts, BUCKETS, 0, wanted);
    if (b <= 0)
        return -INFINITY;
    const double edge = as_float((int64_t)((uint64_t)(b + base) << LOG_SHIFT)); /* numba's shl wraps */
    return (edge + cnst) - MARGIN * (edge + fabs(top) + fabs(cnst));
}

/* Which of block[:LIST_BLOCK] are >= low, a bit each (bit i: block[i]); a float comparison, so NaN
 * never is. Two at a time (SSE2's cmppd and movmskpd on x86-64). */
ALWAYS_INLINE unsigned at_least_bits(const double *block, double low)
{
    unsigned bits = 0;
#if defined(__SSE2__)
    const __m128d lo = _mm_set1_pd(low);
#pragma GCC unroll 8
    for (int i = 0; i < LIST_BLOCK; i += 2)
        bits |= (unsigned)_mm_movemask_pd(_mm_cmpge_pd(_mm_loadu_pd(block + i), lo)) << i;
#else
#pragma GCC unroll 16
    for (int i = 0; i < LIST_BLOCK; i++)
        bits |= (unsigned)(block[i] >= low) << i;
#endif
    return bits;
}

/* How many samples of every stride-th document a dense floor must have at or above it: k when every
 * document is one, else their share of k times quarters / 4, plus extra. */
static inline int64_t wanted_samples(int64_t k, int64_t stride, int64_t quarters, int64_t extra)
{
    return stride == 1 ? k : quarters * (k / stride) / 4 + extra;
}

/* list_and_clear of LIST_BLOCK documents from `first` (those below low, low > 0, cannot reach the
 * floor: -0.0 and NaN are below it too); returns the new count of listed documents. The test of the
 * whole block is vectorized and most blocks hold no document at or above low: one branch a block. */
ALWAYS_INLINE int64_t list_block(double *restrict acc, int64_t first, double low, double cnst, double floor,
                                 int64_t *restrict keep, double *restrict buf, int64_t m)
{
    double *restrict const block = acc + first;
    for (unsigned bits = at_least_bits(block, low); bits != 0; bits &= bits - 1) {
        const int i = __builtin_ctz(bits);
        const double s = block[i] + cnst;
        keep[m] = first + i; /* branch-free: kept if s >= floor */
        buf[m] = s;
        m += s >= floor;
    }
#pragma GCC unroll 16
    for (int i = 0; i < LIST_BLOCK; i++)
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
        /* a comparison with low passes over most documents: below it (below every acc[d] that reaches
         * the floor) no score can, and -0.0 is below it too; in blocks of LIST_BLOCK documents */
        const int64_t end = n - n % LIST_BLOCK;
        for (int64_t first = 0; first < end; first += LIST_BLOCK)
            m = list_block(acc, first, low, cnst, floor, keep, buf, m);
        for (int64_t d = end; d < n; d++) {
            const double a = acc[d];
            const double s = a + cnst;
            if (a >= low && s >= floor) {
                keep[m] = d;
                buf[m] = s;
                m++;
            }
            acc[d] = -0.0;
        }
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
    const double floor = dense_floor(acc, n_docs, cnst, top, stride, wanted_samples(k, stride, 8, 16), work);
    const int64_t m = list_and_clear(acc, n_docs, cnst, floor, keep, buf);
    if (m < k && stride > 1 && floor > -INFINITY)
        return RETRY;
    return best_pairs(keep, buf, m, id_rank, k, scratch, out_docs, out_scores, work);
}

/* Once dense, the MaxScore step of taat_impl: when the terms left (their bounds add up to `left`) can no
 * longer lift a document from below a floor theta of the k-th best partial score into the top k, the
 * documents that still can (acc[d] >= theta - left, less the margin) are marked KEPT and listed in
 * keep, ascending, and every other acc[d] is set back to -0.0 (one pass). theta is taken from every
 * SAMPLE-th document (with enough documents next to k) and proven by the pass: k documents at or above
 * it. Returns how many are kept (theta set), NOT_PRUNED (nothing changed: theta too low to prune), or
 * RETRY when theta proved too high (acc is then all -0.0: the caller adds the terms again). */
static int64_t dense_lookup(double *restrict acc, int64_t n_docs, int64_t k, double left, double all,
                            int64_t postings_left, uint8_t *marks, int64_t *restrict keep, double *theta, Work *work)
{
    const double top = all * (1.0 + MARGIN) + MARGIN; /* above every partial score (weights >= 0) */
    const int64_t stride = n_docs >= 64 * k ? SAMPLE : 1;
    /* closer to the k-th best than dense_top_k's (fewer documents kept): proven by the pass anyway */
    const double floor = dense_floor(acc, n_docs, 0.0, top, stride, wanted_samples(k, stride, 5, 8), work);
    const double bound = floor - MARGIN * (fabs(floor) + all) - left;
    if (!(bound > 0.0)) /* -inf, or left too large: nothing to prune */
        return NOT_PRUNED;
    /* the documents that would be kept, by the samples (dense_floor's histogram, work->counts): worth
     * the pass when they are few next to the postings left */
    const int64_t base = (as_bits(top) >> LOG_SHIFT) - (BUCKETS - 1);
    int64_t above = 0;
    for (int64_t b = min_i64(max_i64((as_bits(bound) >> LOG_SHIFT) - base, 0), BUCKETS - 1); b < BUCKETS; b++)
        above += work->counts[b];
    if (above * stride * GALLOP > postings_left)
        return NOT_PRUNED;
    int64_t ns = 0, reach = 0;
    const int64_t end = n_docs - n_docs % LIST_BLOCK;
    for (int64_t first = 0; first < n_docs; first += LIST_BLOCK) {
        double *restrict const block = acc + first;
        const int count = first < end ? LIST_BLOCK : (int)(n_docs - first);
        const unsigned bits = count == LIST_BLOCK ? at_least_bits(block, bound) : 0;
        if (bits == 0 && count == LIST_BLOCK) {
            for (int i = 0; i < LIST_BLOCK; i++)
                block[i] = -0.0;
            continue;
        }
        for (int i = 0; i < count; i++) {
            const double a = block[i];
            if (count == LIST_BLOCK ? (bits >> i) & 1 : a >= bound) {
                marks[first + i] = KEPT;
                keep[ns++] = first + i;
                reach += a >= floor;
            } else {
                block[i] = -0.0;
            }
        }
    }
    if (reach >= k) {
        *theta = floor;
        return ns;
    }
    for (int64_t c = 0; c < ns; c++) {
        marks[keep[c]] = 0;
        acc[keep[c]] = -0.0;
    }
    return RETRY;
}

_Thread_local int64_t blocks_read, postings_read;

/* ------------------------------------------------------------------------------------------ */
/* adding postings                                                                            */

/* How many of the first candidates a threshold is taken from. */
static inline int64_t subset(int64_t k) { return max_i64(4 * k, 4096); }

/* The weights (times mult) of the postings of the block load_postings read into buf. */
static void block_weights(const Index *ix, const Term *term, const BlockBuf *buf, double *restrict w)
{
    const int n = buf->n;
    const int64_t p = term->p0 + (buf->j - term->b0) * BLOCK;
    const double s = term->scale, mult = term->mult;
    if (ix->per_posting) {
        for (int i = 0; i < n; i++)
            w[i] = s * ix->table[p + i] + 0.0;
    } else if (buf->tf_width <= ix->grid_shift && !ix->rank_wide) {
        for (int i = 0; i < n; i++)
            w[i] = grid_weight(ix, buf, i, s, 1.0);
    } else {
        for (int i = 0; i < n; i++)
            w[i] = s * entry_of(ix, buf->tfs[i], buf->docs[i], p + i) + 0.0;
    }
    if (mult != 1.0)
        for (int i = 0; i < n; i++)
            w[i] *= mult;
}

/* Read block j of `term` into sc->block (documents and frequencies); whether every posting's entry is
 * in the grid with no check (grid_weight), 0, or -1 (sc->damaged set, the block empty) when it cannot
 * be read. */
static inline int load_postings(const Index *ix, const Term *term, int64_t j, Scratch *sc)
{
    BlockBuf *buf = &sc->block;
    if (load_block(ix, term, j, buf) < 0) {
        sc->damaged = 1;
        return -1;
    }
    return read_freqs(ix, buf);
}

/* The first of docs[lo:hi] (ascending) >= d, hi if none: a binary search without branches (a block's
 * 128 documents hold about one kept document when the kept ones are skipped to, so a scan would read
 * half of them). */
static inline int first_at_least(const uint32_t *docs, int lo, int hi, uint32_t d)
{
    if (lo >= hi)
        return hi;
    const uint32_t *at = docs + lo;
    int n = hi - lo;
    while (n > 1) {
        const int half = n / 2;
        at = at[half] < d ? at + half : at;
        n -= half;
    }
    return (int)(at - docs) + (*at < d);
}

/* Add a term's weights to the kept documents docs[:n] (ascending, marked KEPT) that have it:
 * skipping from one kept document's block to the next's when they are few next to the postings,
 * else one pass over the postings checking the marks. */
static void add_term_to_kept(const int64_t *docs, int64_t n, const uint8_t *marks, double *acc, const Index *ix,
                             const Term *term, Scratch *sc)
{
    BlockBuf *buf = &sc->block;
    int damaged = 0;
    if (n * GALLOP < term->p1 - term->p0) {
        const int32_t *last_docs = ix->blocks.last_docs;
        int64_t j = term->b0;
        int pos = 0;
        buf->j = -1;
        for (int64_t i = 0; i < n; i++) {
            const int64_t d = docs[i];
            j = block_of(last_docs, j, term->b1, d);
            if (j >= term->b1)
                break;
            if (buf->j != j) {
                damaged |= load_block(ix, term, j, buf) < 0;
                pos = 0;
            }
            pos = first_at_least(buf->docs, pos, buf->n, (uint32_t)d);
            if (pos < buf->n && buf->docs[pos] == d)
                acc[d] += weight_of_one(ix, term, buf, pos);
        }
    } else {
        for (int64_t j = term->b0; j < term->b1; j++) {
            damaged |= load_block(ix, term, j, buf) < 0;
            for (int i = 0; i < buf->n; i++) {
                const uint32_t d = buf->docs[i];
                if (marks[d] == KEPT)
                    acc[d] += weight_at(ix, term, buf, i);
            }
        }
    }
    sc->damaged |= damaged;
}

/* Add a term's weights to every one of its documents the mask keeps. */
ALWAYS_INLINE void add_in_full(double *restrict acc, const Index *ix, const Term *term, Scratch *sc,
                               const uint8_t *mask)
{
    double w[BLOCK];
    const double scale = term->scale, mult = term->mult;
    const BlockBuf *buf = &sc->block;
    for (int64_t j = term->b0; j < term->b1; j++) {
        const int fast = load_postings(ix, term, j, sc);
        if (fast < 0)
            continue;
        const uint32_t *restrict docs = buf->docs;
        const int n = buf->n;
        if (fast && mult == 1.0) {
#pragma GCC unroll 4
            for (int i = 0; i < n; i++)
                acc[docs[i]] += masked_weight(mask, docs[i], grid_weight(ix, buf, i, scale, 1.0));
        } else {
            block_weights(ix, term, buf, w);
            for (int i = 0; i < n; i++)
                acc[docs[i]] += masked_weight(mask, docs[i], w[i]);
        }
    }
}

/* The canonical term order (retrieval.term_order: np.argsort(-upper, kind="stable")): positions
 * by -upper ascending, stably, NaN last as numpy orders it. A merge sort of order[:m] with tmp. */
static inline int before(double a, double b) { return a < b || (isnan(b) && !isnan(a)); }

static void merge_order(int64_t *order, int64_t *tmp, int64_t m, const Term *terms)
{
    if (m < 2)
        return;
    const int64_t mid = m / 2;
    merge_order(order, tmp, mid, terms);
    merge_order(order + mid, tmp, m - mid, terms);
    memcpy(tmp, order, (size_t)mid * sizeof *tmp);
    int64_t i = 0, j = mid, o = 0;
    while (i < mid && j < m) /* the left one unless the right one is strictly before: stable */
        order[o++] = before(-terms[order[j]].upper, -terms[tmp[i]].upper) ? order[j++] : tmp[i++];
    while (i < mid)
        order[o++] = tmp[i++];
}

void term_order(const Term *terms, int64_t m, int64_t *order, int64_t *tmp)
{
    for (int64_t i = 0; i < m; i++)
        order[i] = i;
    merge_order(order, tmp, m, terms);
}

/* ------------------------------------------------------------------------------------------ */
/* one query, term at a time                                                                  */

/* Exact top-k of one query (terms[:m]); returns how many, NOMEM or DAMAGED.
 *
 * Terms are added in the canonical order. Without pruning every posting is added. With pruning, a
 * term-at-a-time MaxScore: once k documents are scored, a lower bound theta of the k-th best partial
 * score is one of the final k-th score too (weights >= 0); when the remaining terms' bounds add up to
 * less than theta, no unscored document can enter the top k, so the remaining terms only update the
 * documents that still can (skipping to their blocks) and documents are dropped as their bound falls
 * below theta. Kept documents get every term in the same order: the same documents, scores and order
 * as the plain path. Once the listed candidates are many (dense: the per-document arrays are walked
 * instead), the same step is dense_lookup's: a sampled floor of the k-th best partial score, proven
 * by a pass that lists the documents the remaining terms may still lift (or, when the floor proves too
 * high, the terms are added again).
 *
 * acc is all -0.0 and marks all 0 on entry and both are left so (on NOMEM and DAMAGED too). mask is
 * ix->mask in the masked instantiation (the documents it leaves out never get a weight added: the kept
 * documents the pruned terms update are scored ones, so they need no test), NULL in the other. */
ALWAYS_INLINE int64_t taat_impl(const Index *ix, const Term *terms, int64_t m, double cnst, int64_t k, int prune,
                                Scratch *sc, int64_t *out_docs, double *out_scores, const uint8_t *mask)
{
    double *restrict const acc = sc->acc;
    uint8_t *restrict const marks = sc->marks;
    int64_t *restrict const cand = sc->cand;
    int64_t *restrict const keep = sc->keep;
    double *restrict const buf = sc->buf;
    const int64_t n_docs = sc->n_docs;
    const Ranks id_rank = ix->id_rank;
    Work *const work = sc->work;
    sc->damaged = 0;

    int64_t *order = alloc_array(2 * m, sizeof *order); /* the term order, then a merge buffer */
    double *rest = alloc_array(m + 1, sizeof *rest);
    int64_t *left = alloc_array(m + 1, sizeof *left); /* the postings of the terms from the i-th on */
    if (order == NULL || rest == NULL || left == NULL) {
        free(order);
        free(rest);
        free(left);
        return NOMEM;
    }
    term_order(terms, m, order, order + m);
    rest[m] = 0.0;
    left[m] = 0;
    for (int64_t i = m - 1; i >= 0; i--) {
        rest[i] = rest[i + 1] + terms[order[i]].bound;
        left[i] = left[i + 1] + (terms[order[i]].p1 - terms[order[i]].p0);
    }

    int64_t count;
    int64_t nc = 0;
    /* Candidates are listed in cand while they are few; past n_docs / dense the per-document arrays
     * are walked in order instead (and cleared whole), which beats random access then. */
    int tracked = 1;
    const int64_t dense = k >= SORT_K ? DENSE_LARGE_K : DENSE;
    int64_t lookup_from = m;
    double theta = 0.0;
    double w[BLOCK];
    int64_t ns = 0;          /* the kept documents (keep[:ns]) once lookup_from < m */
    int dense_tried = 0;     /* dense_lookup retried (the terms added again): not tried again */
    for (int64_t i = 0; i < m; i++) {
        const Term *term = &terms[order[i]];
        const int64_t postings = term->p1 - term->p0;
        if (prune && !tracked && !dense_tried && mask == NULL && rest[i] * DENSE_RATIO < rest[0] - rest[i] &&
            left[i] * DENSE_LOOKUP >= n_docs) {
            const int64_t kept = dense_lookup(acc, n_docs, k, rest[i], rest[0], left[i], marks, keep, &theta, work);
            if (kept >= 0) {
                ns = kept;
                lookup_from = i;
                break;
            }
            if (kept == RETRY) { /* acc is all -0.0: the terms before this one again */
                dense_tried = 1;
                for (int64_t j = 0; j < i; j++)
                    add_in_full(acc, ix, &terms[order[j]], sc, mask);
            }
        }
        /* theta <= the best partial score <= the processed terms' bound: only then can it prune; a
         * threshold costs O(subset(k)): not worth it for a term with fewer postings; once dense,
         * dense_lookup (above) takes theta from the documents' partial scores instead */
        if (prune && tracked && i > 0 && nc >= k && rest[i] < rest[0] - rest[i] && postings > subset(k)) {
            theta = kth_largest(acc, cand, min_i64(nc, subset(k)), k, buf);
            if (rest[i] < theta - MARGIN * (fabs(theta) + rest[0])) {
                lookup_from = i;
                break;
            }
        }
        if (tracked && (nc + postings) * dense > n_docs)
            tracked = 0;
        if (tracked) {
            const BlockBuf *block = &sc->block;
            for (int64_t j = term->b0; j < term->b1; j++) {
                const int fast = load_postings(ix, term, j, sc);
                if (fast < 0)
                    continue;
                const uint32_t *docs = block->docs;
                const int n = block->n;
                if (fast && term->mult == 1.0) {
                    const double scale = term->scale;
#pragma GCC unroll 4
                    for (int x = 0; x < n; x++) {
                        const uint32_t d = docs[x];
                        const double a = acc[d];
                        cand[nc] = d; /* branch-free: kept only if new (and not left out) */
                        nc += (as_bits(a) == NO_POSTING) & (mask == NULL || mask[d] != 0);
                        acc[d] = a + masked_weight(mask, d, grid_weight(ix, block, x, scale, 1.0));
                    }
                } else {
                    block_weights(ix, term, block, w);
                    for (int x = 0; x < n; x++) {
                        const uint32_t d = docs[x];
                        const double a = acc[d];
                        cand[nc] = d;
                        nc += (as_bits(a) == NO_POSTING) & (mask == NULL || mask[d] != 0);
                        acc[d] = a + masked_weight(mask, d, w[x]);
                    }
                }
            }
        } else {
            add_in_full(acc, ix, term, sc, mask);
        }
    }

    if (lookup_from < m) {
        double bound = theta - MARGIN * (fabs(theta) + rest[0]) - rest[lookup_from];
        int sorted = 1; /* dense_lookup listed keep ascending */
        if (tracked) {
            for (int64_t c = 0; c < nc; c++) {
                const int64_t d = cand[c];
                if (acc[d] >= bound) {
                    marks[d] = KEPT;
                    keep[ns++] = d;
                }
            }
            /* ascending, to skip through the blocks */
            uint64_t *keys = alloc_array(ns, sizeof *keys);
            if (keys != NULL) {
                for (int64_t c = 0; c < ns; c++)
                    keys[c] = (uint64_t)keep[c];
            }
            sorted = keys != NULL && radix_sort(keys, keep, ns, work) == 0;
            free(keys);
        }
        if (sorted) {
            for (int64_t i = lookup_from; i < m; i++) {
                add_term_to_kept(keep, ns, marks, acc, ix, &terms[order[i]], sc);
                if (i + 1 < m && ns > k) {
                    theta = kth_largest(acc, keep, min_i64(ns, subset(k)), k, buf);
                    bound = theta - MARGIN * (fabs(theta) + rest[0]) - rest[i + 1];
                    int64_t kept = 0;
                    for (int64_t c = 0; c < ns; c++) {
                        const int64_t d = keep[c];
                        if (acc[d] >= bound) {
                            keep[kept++] = d;
                        } else {
                            marks[d] = 0;
                            if (!tracked) /* acc is cleared by the kept documents (dense_lookup cleared the rest) */
                                acc[d] = -0.0;
                        }
                    }
                    ns = kept;
                }
            }
        }
        for (int64_t c = 0; c < ns; c++)
            marks[keep[c]] = 0;
        /* listed in place when tracked (cand clears acc below), else in cand: keep clears acc */
        count = sorted ? select_best(keep, ns, acc, cnst, id_rank, k, top_k_floor(keep, ns, acc, cnst, k, work),
                                     tracked ? keep : cand, buf, sc->hs, sc->hr, sc->hd, out_docs, out_scores, 0,
                                     work)
                       : NOMEM;
        for (int64_t c = 0; !tracked && c < ns; c++)
            acc[keep[c]] = -0.0;
    } else if (tracked) {
        count = select_best(cand, nc, acc, cnst, id_rank, k, top_k_floor(cand, nc, acc, cnst, k, work), keep, buf,
                            sc->hs, sc->hr, sc->hd, out_docs, out_scores, 0, work);
    } else if (prune && k >= SORT_K) {
        const double top = (rest[0] + cnst) * (1.0 + MARGIN) + MARGIN; /* above every score (weights >= 0) */
        /* the listed documents are no longer needed (acc is cleared whole): cand is the scratch; with
         * a mask every document is looked at (a mask that leaves out every SAMPLE-th one would leave
         * the samples empty and the floor at -inf: every scored document listed) */
        double *const scratch = (double *)(void *)cand;
        count = dense_top_k(acc, n_docs, cnst, k, top, id_rank, keep, buf, scratch, out_docs, out_scores,
                            mask == NULL, work);
        if (count == RETRY) {
            for (int64_t i = 0; i < m; i++)
                add_in_full(acc, ix, &terms[order[i]], sc, mask);
            count = dense_top_k(acc, n_docs, cnst, k, top, id_rank, keep, buf, scratch, out_docs, out_scores, 0,
                                work);
        }
        free(order);
        free(rest);
        free(left);
        return sc->damaged && count >= 0 ? DAMAGED : count; /* dense_top_k has cleared acc */
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
    } else if (lookup_from == m) {
        for (int64_t d = 0; d < n_docs; d++)
            acc[d] = -0.0;
    }
    free(order);
    free(rest);
    free(left);
    return sc->damaged && count >= 0 ? DAMAGED : count;
}

static int64_t __attribute__((noinline)) taat_top_k(const Index *ix, const Term *terms, int64_t m, double cnst,
                                                     int64_t k, int prune, Scratch *sc, int64_t *out_docs,
                                                     double *out_scores)
{
    return taat_impl(ix, terms, m, cnst, k, prune, sc, out_docs, out_scores, NULL);
}

static int64_t __attribute__((noinline)) taat_top_k_masked(const Index *ix, const Term *terms, int64_t m,
                                                            double cnst, int64_t k, int prune, Scratch *sc,
                                                            int64_t *out_docs, double *out_scores)
{
    return taat_impl(ix, terms, m, cnst, k, prune, sc, out_docs, out_scores, ix->mask);
}

/* Exact top-k of one query by `method` (TAAT needs sc's per-document arrays). */
static int64_t query_top_k(const Index *ix, const Term *terms, int64_t m, double cnst, int64_t k, int prune, int method,
                           Scratch *sc, int64_t *out_docs, double *out_scores)
{
    if (method == WINDOWED)
        return windowed_top_k(ix, terms, m, cnst, k, prune, sc->hs, sc->hr, sc->hd, out_docs, out_scores);
    return (ix->mask == NULL ? taat_top_k : taat_top_k_masked)(ix, terms, m, cnst, k, prune, sc, out_docs,
                                                               out_scores);
}

/* ------------------------------------------------------------------------------------------ */
/* the index of a Python call                                                                 */

enum { X_OFFSETS, X_STARTS, X_LAST_DOCS, X_POSITIONS, X_DATA, X_ID_RANK, X_TABLE, X_GRID, X_KEYS, X_LENGTH_RANK,
       X_BOUND_CODES, X_BOUND_TABLE, X_SCALE, X_ARGS };

/* The arrays of the `index` and `weights` tuples (core_backend.py makes them):
 *   index = (offsets int64, term_starts int64, last_docs int32, positions int64, data uint8, id_rank int32|int64)
 *   weights = (table f64, grid f64, grid_shift, n_lengths, keys int64, length_rank uint16|uint32,
 *              bound_codes uint16|uint32, bound_table f64, scale f64, per_posting)
 * With per_posting (BM25F) grid, keys and length_rank are not read. */
typedef struct {
    Arg a[X_ARGS];
    Py_ssize_t grid_shift, n_lengths;
    int per_posting;
} IndexArgs;

#define RANK_SIZES (SIZE_4 | SIZE_8) /* id ranks: int32 or int64 */
#define CODE_SIZES (SIZE_2 | SIZE_4) /* length ranks, bound codes: uint16 or uint32 */

static int take_index(PyObject *index, PyObject *weights, IndexArgs *x)
{
    const Arg spec[X_ARGS] = {
        [X_OFFSETS] = IN("offsets", SIGNED, SIZE_8),
        [X_STARTS] = IN("term_starts", SIGNED, SIZE_8),
        [X_LAST_DOCS] = IN("last_docs", SIGNED, SIZE_4),
        [X_POSITIONS] = IN("positions", SIGNED, SIZE_8),
        [X_DATA] = IN("data", UNSIGNED, SIZE_1),
        [X_ID_RANK] = IN("id_rank", SIGNED, RANK_SIZES),
        [X_TABLE] = IN("table", FLOAT, SIZE_8),
        [X_GRID] = IN("grid", FLOAT, SIZE_8),
        [X_KEYS] = IN("keys", SIGNED, SIZE_8),
        [X_LENGTH_RANK] = IN("length_rank", UNSIGNED, CODE_SIZES),
        [X_BOUND_CODES] = IN("bound_codes", UNSIGNED, CODE_SIZES),
        [X_BOUND_TABLE] = IN("bound_table", FLOAT, SIZE_8),
        [X_SCALE] = IN("scale", FLOAT, SIZE_8),
    };
    memcpy(x->a, spec, sizeof spec);
    Arg *a = x->a;
    if (!PyTuple_Check(index) || !PyTuple_Check(weights)) {
        PyErr_SetString(PyExc_TypeError, "index and weights must be tuples");
        return -1;
    }
    if (!PyArg_ParseTuple(index, "OOOOOO:index", &a[X_OFFSETS].obj, &a[X_STARTS].obj, &a[X_LAST_DOCS].obj,
                          &a[X_POSITIONS].obj, &a[X_DATA].obj, &a[X_ID_RANK].obj)
        || !PyArg_ParseTuple(weights, "OOnnOOOOOp:weights", &a[X_TABLE].obj, &a[X_GRID].obj, &x->grid_shift,
                             &x->n_lengths, &a[X_KEYS].obj, &a[X_LENGTH_RANK].obj, &a[X_BOUND_CODES].obj,
                             &a[X_BOUND_TABLE].obj, &a[X_SCALE].obj, &x->per_posting))
        return -1;
    return acquire_args(a, X_ARGS);
}

/* The Index of taken arrays for n_docs documents, checked (every structural fact a search relies
 * on; the blocks are checked as they are read); 0, or -1 with ValueError set. */
static int index_of(const IndexArgs *x, Py_ssize_t n_docs, Index *ix)
{
    const Arg *a = x->a;
    const int64_t n_terms = a[X_OFFSETS].n - 1;
    const char *problem = NULL;
    if (n_terms < 0 || a[X_STARTS].n != n_terms + 1)
        problem = "offsets and term_starts must hold one entry more than the terms";
    else if (n_docs < 0 || a[X_ID_RANK].n < n_docs || (!x->per_posting && a[X_LENGTH_RANK].n < n_docs))
        problem = "length_rank or id_rank is shorter than the documents";
    else if (a[X_SCALE].n < n_terms)
        problem = "scale is shorter than the terms";
    else if (!x->per_posting
             && (x->n_lengths < 1 || x->grid_shift < 0 || x->grid_shift > 16 || a[X_KEYS].n > a[X_TABLE].n
                 || a[X_GRID].n >> x->grid_shift < (a[X_LENGTH_RANK].view.itemsize == 4 ? x->n_lengths : 1 << 16)))
        problem = "grid, keys and table disagree (the grid needs 2**16 rows for 16-bit length ranks)";
    else if (a[X_BOUND_CODES].n < a[X_LAST_DOCS].n || a[X_BOUND_TABLE].n < 1)
        problem = "bound_codes or bound_table is too short";
    if (refuse(problem) < 0)
        return -1;
    if (block_set(&ix->blocks, &a[X_LAST_DOCS], &a[X_POSITIONS], &a[X_DATA], n_docs) < 0)
        return -1;
    ix->offsets = a[X_OFFSETS].view.buf;
    ix->term_starts = a[X_STARTS].view.buf;
    ix->n_terms = n_terms;
    ix->length_rank = a[X_LENGTH_RANK].view.buf;
    ix->rank_wide = a[X_LENGTH_RANK].view.itemsize == 4;
    ix->id_rank = (Ranks){a[X_ID_RANK].view.buf, a[X_ID_RANK].view.itemsize == 8};
    ix->table = a[X_TABLE].view.buf;
    ix->table_len = a[X_TABLE].n;
    ix->per_posting = x->per_posting;
    ix->grid = a[X_GRID].view.buf;
    ix->grid_shift = (int)x->grid_shift;
    ix->n_lengths = x->n_lengths > 0 ? x->n_lengths : 1;
    ix->keys = a[X_KEYS].view.buf;
    ix->n_keys = a[X_KEYS].n;
    ix->bound_codes = a[X_BOUND_CODES].view.buf;
    ix->bound_wide = a[X_BOUND_CODES].view.itemsize == 4;
    ix->bound_table = a[X_BOUND_TABLE].view.buf;
    ix->n_bounds = a[X_BOUND_TABLE].n;
    ix->mask = NULL;
    return 0;
}

/* Whether term t's arrays agree (its postings and blocks in range, as many blocks as its postings
 * make, its table entries there). */
static int term_ok(const Index *ix, int64_t t)
{
    if (t < 0 || t >= ix->n_terms)
        return 0;
    const int64_t p0 = ix->offsets[t], p1 = ix->offsets[t + 1], b0 = ix->term_starts[t], b1 = ix->term_starts[t + 1];
    return p0 >= 0 && p1 >= p0 && b0 >= 0 && b1 >= b0 && b1 <= ix->blocks.n_blocks
           && b1 - b0 == (p1 - p0 + BLOCK - 1) / BLOCK && (!ix->per_posting || p1 <= ix->table_len);
}

/* Term t of a query (term_ok) with its weight in the query, its order key (times mult), the largest of
 * its weights (>= 0; before mult) and its scale. */
static inline Term term_of(const Index *ix, int64_t t, double mult, double upper, double bound, double scale)
{
    return (Term){ix->offsets[t], ix->offsets[t + 1], ix->term_starts[t], ix->term_starts[t + 1], mult, upper,
                  bound * mult, scale};
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
/* a batch, in chunks on threads                                                              */

typedef struct {
    const Index *ix;
    const int64_t *q_ptr;
    int64_t nq;
    const int64_t *term_ids;
    const double *counts;      /* per span: the term's weight in the query */
    const double *term_upper;  /* per term: the order key (before the multiplicity) */
    const double *term_bound;  /* per term: its largest weight (>= 0) here */
    const double *q_const;
    const double *scale;
    int64_t n_docs, k, n_chunks, max_terms;
    int prune, method;
    int64_t *out_docs;         /* row qi at qi * k */
    double *out_scores;
    int64_t *out_len;
    int64_t read[3];           /* the queries' terms' blocks, the blocks read, their postings (atomically) */
    int failed;                /* set (atomically) by a chunk out of memory (1) or finding a damaged block (2) */
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

/* A chunk's own work arrays (acc all -0.0, marks all 0): the per-document ones for TAAT only; 0, or
 * -1 when out of memory (all freed). */
static int alloc_scratch(Scratch *sc, int64_t n_docs, int64_t k, int method)
{
    memset(sc, 0, sizeof *sc);
    sc->n_docs = n_docs;
    sc->hs = alloc_array(k, sizeof *sc->hs);
    sc->hr = alloc_array(k, sizeof *sc->hr);
    sc->hd = alloc_array(k, sizeof *sc->hd);
    int ok = sc->hs && sc->hr && sc->hd;
    if (method == TAAT) {
        sc->acc = alloc_array(n_docs, sizeof *sc->acc);
        sc->marks = calloc((size_t)(n_docs > 0 ? n_docs : 1), 1);
        sc->cand = alloc_array(n_docs, sizeof *sc->cand);
        sc->keep = alloc_array(n_docs, sizeof *sc->keep);
        sc->buf = alloc_array(n_docs, sizeof *sc->buf);
        sc->work = malloc(sizeof *sc->work);
        ok = ok && sc->acc && sc->marks && sc->cand && sc->keep && sc->buf && sc->work;
    }
    if (!ok) {
        free_scratch(sc);
        return -1;
    }
    for (int64_t d = 0; method == TAAT && d < n_docs; d++)
        sc->acc[d] = -0.0;
    return 0;
}

/* The queries c, c + n_chunks, ... of the batch. */
static void run_chunk(Batch *b, int64_t c)
{
    Scratch sc;
    Term *terms = alloc_array(b->max_terms, sizeof *terms);
    if (terms == NULL || alloc_scratch(&sc, b->n_docs, b->k, b->method) < 0) {
        free(terms);
        __atomic_store_n(&b->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    blocks_read = postings_read = 0;
    int64_t blocks = 0;
    for (int64_t qi = c; qi < b->nq; qi += b->n_chunks) {
        if (__atomic_load_n(&b->failed, __ATOMIC_RELAXED))
            break;
        const int64_t a = b->q_ptr[qi], z = b->q_ptr[qi + 1];
        for (int64_t s = a; s < z; s++) {
            const int64_t t = b->term_ids[s];
            terms[s - a] = term_of(b->ix, t, b->counts[s], b->term_upper[t] * b->counts[s], b->term_bound[t],
                                   b->scale[t]);
            blocks += terms[s - a].b1 - terms[s - a].b0;
        }
        const int64_t n = query_top_k(b->ix, terms, z - a, b->q_const[qi], b->k, b->prune, b->method, &sc,
                                      b->out_docs + qi * b->k, b->out_scores + qi * b->k);
        if (n < 0) {
            __atomic_store_n(&b->failed, n == DAMAGED ? 2 : 1, __ATOMIC_RELAXED);
            break;
        }
        b->out_len[qi] = n;
    }
    blocks_read += sc.block.blocks_read;
    postings_read += sc.block.postings_read;
    __atomic_add_fetch(&b->read[0], blocks, __ATOMIC_RELAXED);
    __atomic_add_fetch(&b->read[1], blocks_read, __ATOMIC_RELAXED);
    __atomic_add_fetch(&b->read[2], postings_read, __ATOMIC_RELAXED);
    free_scratch(&sc);
    free(terms);
}

static void *chunk_thread(void *arg)
{
    const Chunk *ch = arg;
    run_chunk(ch->batch, ch->chunk);
    return NULL;
}

/* Run every chunk: 1.. on threads, 0 in the calling thread (and any chunk whose thread could not
 * be started after it: the results are the same). Returns 0, or what failed (Batch.failed). */
static int run_batch(Batch *b)
{
    Chunk *chunks = calloc((size_t)b->n_chunks, sizeof *chunks);
    if (chunks == NULL)
        return 1;
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
    return __atomic_load_n(&b->failed, __ATOMIC_RELAXED);
}

/* A failure of a search as a Python error (NULL). */
static PyObject *search_error(int failed)
{
    if (failed == 2) {
        PyErr_SetString(PyExc_ValueError, "damaged postings blocks (rebuild the index)");
        return NULL;
    }
    return PyErr_NoMemory();
}

/* ------------------------------------------------------------------------------------------ */
/* batch_top_k                                                                                */

enum { B_Q_PTR, B_TERM_IDS, B_COUNTS, B_TERM_UPPER, B_TERM_BOUND, B_Q_CONST, B_OUT_DOCS, B_OUT_SCORES, B_OUT_LEN,
       B_ARGS };

/* Checks of the batch's structure (term ids, spans, sizes, every term used); 0, or -1 with ValueError. */
static int check_batch(const Arg *a, const Index *ix, Py_ssize_t k, int method)
{
    const Py_ssize_t nq = a[B_Q_PTR].n - 1, n_spans = a[B_TERM_IDS].n;
    const int64_t *q_ptr = BUF(a, B_Q_PTR, const int64_t);
    const int64_t *term_ids = BUF(a, B_TERM_IDS, const int64_t);
    const char *problem = NULL;
    if (nq < 0)
        problem = "q_ptr is empty";
    else if (a[B_COUNTS].n != n_spans)
        problem = "counts and term_ids differ in length";
    else if (a[B_TERM_UPPER].n < ix->n_terms || a[B_TERM_BOUND].n < ix->n_terms)
        problem = "term_upper or term_bound is shorter than the terms";
    else if (a[B_Q_CONST].n < nq)
        problem = "q_const is shorter than the queries";
    else if (k < 1)
        problem = "k must be at least 1";
    else if (method != TAAT && method != WINDOWED)
        problem = "method must be 1 (term at a time) or 2 (block-max MaxScore over windows)";
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
    for (Py_ssize_t j = 0; problem == NULL && j < n_spans; j++)
        if (!term_ok(ix, term_ids[j]))
            problem = "a term id is out of range, or its postings disagree with its blocks";
    return refuse(problem);
}

static PyObject *py_batch_top_k(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"index", "weights", "q_ptr", "term_ids", "counts", "term_upper", "term_bound", "q_const",
                             "n_docs", "k", "prune", "n_threads", "method", "out_docs", "out_scores", "out_len",
                             "mask", "stats", NULL};
    Arg a[B_ARGS] = {
        [B_Q_PTR] = IN("q_ptr", SIGNED, SIZE_8),
        [B_TERM_IDS] = IN("term_ids", SIGNED, SIZE_8),
        [B_COUNTS] = IN("counts", FLOAT, SIZE_8),
        [B_TERM_UPPER] = IN("term_upper", FLOAT, SIZE_8),
        [B_TERM_BOUND] = IN("term_bound", FLOAT, SIZE_8),
        [B_Q_CONST] = IN("q_const", FLOAT, SIZE_8),
        [B_OUT_DOCS] = OUT("out_docs", SIGNED, SIZE_8),
        [B_OUT_SCORES] = OUT("out_scores", FLOAT, SIZE_8),
        [B_OUT_LEN] = OUT("out_len", SIGNED, SIZE_8),
    };
    Arg stats = OUT("stats", SIGNED, SIZE_8);
    PyObject *index, *weights, *mask_obj = NULL;
    Py_ssize_t n_docs, k, n_threads;
    int prune, method;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOOOOnnpniOOO|OO:batch_top_k", kwlist, &index, &weights,
                                     &a[B_Q_PTR].obj, &a[B_TERM_IDS].obj, &a[B_COUNTS].obj, &a[B_TERM_UPPER].obj,
                                     &a[B_TERM_BOUND].obj, &a[B_Q_CONST].obj, &n_docs, &k, &prune, &n_threads, &method,
                                     &a[B_OUT_DOCS].obj, &a[B_OUT_SCORES].obj, &a[B_OUT_LEN].obj, &mask_obj,
                                     &stats.obj))
        return NULL;
    if (stats.obj == Py_None)
        stats.obj = NULL;
    if (n_threads < 1) {
        PyErr_SetString(PyExc_ValueError, "n_threads must be at least 1");
        return NULL;
    }
    IndexArgs x;
    if (take_index(index, weights, &x) < 0)
        return NULL;
    Index ix;
    if (acquire_args(a, B_ARGS) < 0) {
        release_args(x.a, X_ARGS);
        return NULL;
    }
    Arg mask_arg;
    const uint8_t *mask = NULL;
    if (index_of(&x, n_docs, &ix) < 0 || check_batch(a, &ix, k, method) < 0
        || acquire_mask(mask_obj, &mask_arg, n_docs, &mask) < 0) {
        release_args(a, B_ARGS);
        release_args(x.a, X_ARGS);
        return NULL;
    }
    ix.mask = mask;
    const int64_t nq = a[B_Q_PTR].n - 1;
    const int64_t *q_ptr = BUF(a, B_Q_PTR, const int64_t);
    int64_t max_terms = 0;
    for (int64_t qi = 0; qi < nq; qi++)
        max_terms = max_i64(max_terms, q_ptr[qi + 1] - q_ptr[qi]);
    Batch b = {
        .ix = &ix,
        .q_ptr = q_ptr,
        .nq = nq,
        .term_ids = BUF(a, B_TERM_IDS, const int64_t),
        .counts = BUF(a, B_COUNTS, const double),
        .term_upper = BUF(a, B_TERM_UPPER, const double),
        .term_bound = BUF(a, B_TERM_BOUND, const double),
        .q_const = BUF(a, B_Q_CONST, const double),
        .scale = BUF(x.a, X_SCALE, const double),
        .n_docs = n_docs,
        .k = k,
        .n_chunks = n_threads < nq ? n_threads : nq,
        .max_terms = max_terms,
        .prune = prune,
        .method = method,
        .out_docs = BUF(a, B_OUT_DOCS, int64_t),
        .out_scores = BUF(a, B_OUT_SCORES, double),
        .out_len = BUF(a, B_OUT_LEN, int64_t),
        .read = {0, 0, 0},
        .failed = 0,
    };
    if (stats.obj != NULL && (acquire_args(&stats, 1) < 0 || stats.n < 3)) { /* the counts asked for */
        if (stats.view.obj != NULL) {
            release_args(&stats, 1);
            PyErr_SetString(PyExc_ValueError, "stats must hold 3 elements");
        }
        release_mask(&mask_arg, mask);
        release_args(a, B_ARGS);
        release_args(x.a, X_ARGS);
        return NULL;
    }
    int failed = 0;
    if (nq > 0) {
        Py_BEGIN_ALLOW_THREADS
        failed = run_batch(&b);
        Py_END_ALLOW_THREADS
    }
    if (stats.obj != NULL) {
        memcpy(stats.view.buf, b.read, sizeof b.read);
        release_args(&stats, 1);
    }
    release_mask(&mask_arg, mask);
    release_args(a, B_ARGS);
    release_args(x.a, X_ARGS);
    if (failed)
        return search_error(failed);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* query_top_k                                                                                */

enum { Q_TERM_IDS, Q_COUNTS, Q_UPPER, Q_BOUND, Q_ACC, Q_MARKS, Q_CAND, Q_KEEP, Q_BUF, Q_HS, Q_HR, Q_HD, Q_OUT_DOCS,
       Q_OUT_SCORES, Q_ARGS };

static int check_query(const Arg *a, const Index *ix, Py_ssize_t n_docs, Py_ssize_t k, int method)
{
    const Py_ssize_t m = a[Q_TERM_IDS].n;
    const int64_t *term_ids = BUF(a, Q_TERM_IDS, const int64_t);
    const char *problem = NULL;
    if (a[Q_COUNTS].n != m || a[Q_UPPER].n != m || a[Q_BOUND].n != m)
        problem = "term_ids, counts, upper and bound differ in length";
    else if (method != TAAT && method != WINDOWED)
        problem = "method must be 1 (term at a time) or 2 (block-max MaxScore over windows)";
    else if (method == TAAT && (a[Q_MARKS].n < n_docs || a[Q_CAND].n < n_docs || a[Q_KEEP].n < n_docs
                                || a[Q_BUF].n < n_docs))
        problem = "marks, cand, keep and buf must be as long as acc";
    else if (k < 1)
        problem = "k must be at least 1";
    else if (a[Q_HS].n < k || a[Q_HR].n < k || a[Q_HD].n < k || a[Q_OUT_DOCS].n < k || a[Q_OUT_SCORES].n < k)
        problem = "hs, hr, hd, out_docs and out_scores must hold k elements";
    for (Py_ssize_t j = 0; problem == NULL && j < m; j++)
        if (!term_ok(ix, term_ids[j]))
            problem = "a term id is out of range, or its postings disagree with its blocks";
    return refuse(problem);
}

static PyObject *py_query_top_k(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"index", "weights", "term_ids", "counts", "upper", "bound", "const", "n_docs", "k", "prune",
                             "method", "acc", "marks", "cand", "keep", "buf", "hs", "hr", "hd", "out_docs",
                             "out_scores", "mask", NULL};
    Arg a[Q_ARGS] = {
        [Q_TERM_IDS] = IN("term_ids", SIGNED, SIZE_8),
        [Q_COUNTS] = IN("counts", FLOAT, SIZE_8),
        [Q_UPPER] = IN("upper", FLOAT, SIZE_8),
        [Q_BOUND] = IN("bound", FLOAT, SIZE_8),
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
    PyObject *index, *weights, *mask_obj = NULL;
    double cnst;
    Py_ssize_t n_docs, k;
    int prune, method;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOOdnnpiOOOOOOOOOO|O:query_top_k", kwlist, &index, &weights,
                                     &a[Q_TERM_IDS].obj, &a[Q_COUNTS].obj, &a[Q_UPPER].obj, &a[Q_BOUND].obj, &cnst, &n_docs, &k, &prune,
                                     &method, &a[Q_ACC].obj, &a[Q_MARKS].obj, &a[Q_CAND].obj, &a[Q_KEEP].obj,
                                     &a[Q_BUF].obj, &a[Q_HS].obj, &a[Q_HR].obj, &a[Q_HD].obj, &a[Q_OUT_DOCS].obj,
                                     &a[Q_OUT_SCORES].obj, &mask_obj))
        return NULL;
    IndexArgs x;
    if (take_index(index, weights, &x) < 0)
        return NULL;
    Index ix;
    if (acquire_args(a, Q_ARGS) < 0) {
        release_args(x.a, X_ARGS);
        return NULL;
    }
    if (method == TAAT && a[Q_ACC].n != n_docs) {
        release_args(a, Q_ARGS);
        release_args(x.a, X_ARGS);
        PyErr_SetString(PyExc_ValueError, "acc must hold n_docs elements");
        return NULL;
    }
    Arg mask_arg;
    const uint8_t *mask = NULL;
    if (index_of(&x, n_docs, &ix) < 0 || check_query(a, &ix, n_docs, k, method) < 0
        || acquire_mask(mask_obj, &mask_arg, n_docs, &mask) < 0) {
        release_args(a, Q_ARGS);
        release_args(x.a, X_ARGS);
        return NULL;
    }
    ix.mask = mask;
    const int64_t m = a[Q_TERM_IDS].n;
    const int64_t *term_ids = BUF(a, Q_TERM_IDS, const int64_t);
    const double *counts = BUF(a, Q_COUNTS, const double), *upper = BUF(a, Q_UPPER, const double);
    const double *bound = BUF(a, Q_BOUND, const double), *scale = BUF(x.a, X_SCALE, const double);
    Scratch sc = {BUF(a, Q_ACC, double), BUF(a, Q_MARKS, uint8_t), BUF(a, Q_CAND, int64_t), BUF(a, Q_KEEP, int64_t),
                  BUF(a, Q_BUF, double), BUF(a, Q_HS, double), BUF(a, Q_HR, int64_t), BUF(a, Q_HD, int64_t),
                  n_docs, NULL, 0, {0}};
    int64_t count = NOMEM;
    Py_BEGIN_ALLOW_THREADS
    Term *terms = alloc_array(m, sizeof *terms);
    sc.work = method == TAAT ? malloc(sizeof *sc.work) : NULL;
    if (terms != NULL && (method != TAAT || sc.work != NULL)) {
        for (int64_t j = 0; j < m; j++)
            terms[j] = term_of(&ix, term_ids[j], counts[j], upper[j], bound[j], scale[term_ids[j]]);
        count = query_top_k(&ix, terms, m, cnst, k, prune, method, &sc, BUF(a, Q_OUT_DOCS, int64_t),
                            BUF(a, Q_OUT_SCORES, double));
    }
    free(sc.work);
    free(terms);
    Py_END_ALLOW_THREADS
    release_mask(&mask_arg, mask);
    release_args(a, Q_ARGS);
    release_args(x.a, X_ARGS);
    if (count < 0)
        return search_error(count == DAMAGED ? 2 : 1);
    return PyLong_FromLongLong(count);
}

/* ------------------------------------------------------------------------------------------ */
/* term_extremes                                                                              */

/* high and low of the listed terms: the largest and smallest table entry over each one's postings
 * (-inf and +inf for a term without postings). Comparisons only, no arithmetic: exactly the values
 * numpy's maximum/minimum.reduceat give for finite entries (PreparedWeights.extremes). */
typedef struct {
    const Index *ix;
    const int64_t *term_ids;
    int64_t lo, hi;             /* this part's terms */
    double *high, *low;
    int damaged;
    pthread_t thread;
    int started;
} ExtremesPart;

static void extremes_of_part(ExtremesPart *part)
{
    const Index *ix = part->ix;
    BlockBuf buf;
    buf.blocks_read = buf.postings_read = 0; /* not counted */
    for (int64_t i = part->lo; i < part->hi; i++) {
        const int64_t t = part->term_ids[i];
        const Term term = {ix->offsets[t], ix->offsets[t + 1], ix->term_starts[t], ix->term_starts[t + 1], 1.0, 0.0,
                           0.0, 1.0};
        /* four running extremes (of postings x, x + 1, ... modulo 4), so that the comparisons do not wait
         * for one another; NaN entries are passed over by each as by one, and which of two equal entries
         * is kept does not matter (of +0.0 and -0.0: scaled_extremes adds +0.0 to either) */
        double high[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, low[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
        for (int64_t j = term.b0; j < term.b1; j++) {
            if (load_block(ix, &term, j, &buf) < 0) {
                part->damaged = 1;
                continue;
            }
            if (!ix->per_posting)
                decode_freqs_at(&ix->blocks, buf.tf_at, buf.n, buf.tf_width, buf.tfs);
            const int64_t p = term.p0 + (j - term.b0) * BLOCK;
            if (!ix->per_posting && buf.tf_width <= ix->grid_shift && !ix->rank_wide) { /* entry_of's grid case */
                const uint16_t *ranks = ix->length_rank;
                const double *grid = ix->grid;
                const int shift = ix->grid_shift;
                for (int x = 0; x < buf.n; x++) {
                    const double e = grid[((uint32_t)ranks[buf.docs[x]] << shift) + buf.tfs[x]];
                    high[x & 3] = e > high[x & 3] ? e : high[x & 3];
                    low[x & 3] = e < low[x & 3] ? e : low[x & 3];
                }
            } else {
                for (int x = 0; x < buf.n; x++) {
                    const double e = ix->per_posting ? ix->table[p + x] : entry_of(ix, buf.tfs[x], buf.docs[x], p + x);
                    high[x & 3] = e > high[x & 3] ? e : high[x & 3];
                    low[x & 3] = e < low[x & 3] ? e : low[x & 3];
                }
            }
        }
        for (int u = 1; u < 4; u++) {
            high[0] = high[u] > high[0] ? high[u] : high[0];
            low[0] = low[u] < low[0] ? low[u] : low[0];
        }
        part->high[i] = high[0];
        part->low[i] = low[0];
    }
}

static void *extremes_thread(void *arg)
{
    extremes_of_part(arg);
    return NULL;
}

enum { E_TERM_IDS, E_HIGH, E_LOW, E_ARGS };

static PyObject *py_term_extremes(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"index", "weights", "term_ids", "n_docs", "n_threads", "high", "low", NULL};
    Arg a[E_ARGS] = {
        [E_TERM_IDS] = IN("term_ids", SIGNED, SIZE_8),
        [E_HIGH] = OUT("high", FLOAT, SIZE_8),
        [E_LOW] = OUT("low", FLOAT, SIZE_8),
    };
    PyObject *index, *weights;
    Py_ssize_t n_docs, n_threads;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOnnOO:term_extremes", kwlist, &index, &weights,
                                     &a[E_TERM_IDS].obj, &n_docs, &n_threads, &a[E_HIGH].obj, &a[E_LOW].obj))
        return NULL;
    IndexArgs x;
    if (take_index(index, weights, &x) < 0)
        return NULL;
    Index ix;
    if (acquire_args(a, E_ARGS) < 0) {
        release_args(x.a, X_ARGS);
        return NULL;
    }
    const int64_t m = a[E_TERM_IDS].n;
    const int64_t *term_ids = BUF(a, E_TERM_IDS, const int64_t);
    const char *problem = NULL;
    if (index_of(&x, n_docs, &ix) < 0) {
        release_args(a, E_ARGS);
        release_args(x.a, X_ARGS);
        return NULL;
    }
    if (a[E_HIGH].n < m || a[E_LOW].n < m)
        problem = "high or low is shorter than term_ids";
    else if (n_threads < 1)
        problem = "n_threads must be at least 1";
    for (int64_t i = 0; problem == NULL && i < m; i++)
        if (!term_ok(&ix, term_ids[i]))
            problem = "a term id is out of range, or its postings disagree with its blocks";
    if (problem != NULL) {
        release_args(a, E_ARGS);
        release_args(x.a, X_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    int damaged = 0, nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    /* parts of about equal postings */
    int64_t total = 0;
    for (int64_t i = 0; i < m; i++)
        total += ix.offsets[term_ids[i] + 1] - ix.offsets[term_ids[i]];
    const int64_t n_parts = max_i64(1, min_i64(n_threads, m));
    ExtremesPart *parts = calloc((size_t)n_parts, sizeof *parts);
    if (parts == NULL) {
        nomem = 1;
    } else {
        int64_t i = 0, seen = 0;
        for (int64_t c = 0; c < n_parts; c++) {
            parts[c] = (ExtremesPart){&ix, term_ids, i, i, BUF(a, E_HIGH, double), BUF(a, E_LOW, double), 0, 0, 0};
            const int64_t until = c + 1 == n_parts ? INT64_MAX : total / n_parts * (c + 1);
            while (i < m && (seen < until || c + 1 == n_parts)) {
                seen += ix.offsets[term_ids[i] + 1] - ix.offsets[term_ids[i]];
                i++;
            }
            parts[c].hi = i;
        }
        for (int64_t c = 1; c < n_parts; c++)
            parts[c].started = pthread_create(&parts[c].thread, NULL, extremes_thread, &parts[c]) == 0;
        extremes_of_part(&parts[0]);
        for (int64_t c = 1; c < n_parts; c++) {
            if (parts[c].started)
                pthread_join(parts[c].thread, NULL);
            else
                extremes_of_part(&parts[c]);
        }
        for (int64_t c = 0; c < n_parts; c++)
            damaged |= parts[c].damaged;
        free(parts);
    }
    Py_END_ALLOW_THREADS
    release_args(a, E_ARGS);
    release_args(x.a, X_ARGS);
    if (nomem || damaged)
        return search_error(damaged ? 2 : 1);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------ */

PyMethodDef core_search_methods[] = {
    {"term_extremes", (PyCFunction)(void (*)(void))py_term_extremes, METH_VARARGS | METH_KEYWORDS,
     "term_extremes(index, weights, term_ids, n_docs, n_threads, high, low) -> None\n\n"
     "The largest and smallest table entry over each listed term's postings (-inf/+inf for a term without "
     "postings): the values of numpy's maximum/minimum.reduceat; on up to n_threads threads."},
    {"batch_top_k", (PyCFunction)(void (*)(void))py_batch_top_k, METH_VARARGS | METH_KEYWORDS,
     "batch_top_k(index, weights, q_ptr, term_ids, counts, term_upper, term_bound, q_const, n_docs, k, prune, "
     "n_threads, method, out_docs, out_scores, out_len, mask=None, stats=None) -> None\n\n"
     "Exact top-k of every query of a term batch (method 1: term at a time, 2: block-max MaxScore over windows), in "
     "min(n_threads, queries) chunks on threads; row qi of out_docs/out_scores (k wide) holds query qi's "
     "out_len[qi] results, best first. stats (int64, 3), when given: the blocks of the queries' terms, the "
     "blocks read and their postings."},
    {"query_top_k", (PyCFunction)(void (*)(void))py_query_top_k, METH_VARARGS | METH_KEYWORDS,
     "query_top_k(index, weights, term_ids, counts, upper, bound, const, n_docs, k, prune, method, acc, marks, cand, keep, "
     "buf, hs, hr, hd, out_docs, out_scores, mask=None) -> int\n\n"
     "Exact top-k of one query; with method 1 (term at a time) the caller's work arrays (acc all -0.0 and marks "
     "all 0 on entry, left so); returns how many results were written."},
    {NULL, NULL, 0, NULL},
};
