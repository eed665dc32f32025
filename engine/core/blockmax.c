/*
 * blockmax.c: exact top-k of one query by block-max MaxScore over windows of documents, for a small k in
 * a large collection (search.c chooses).
 *
 * The documents are taken a window of WINDOW at a time, in order, as Lucene's MaxScoreBulkScorer does
 * (Turtle and Flood's MaxScore, 1995, with the block-max bounds of Ding and Suel, "Faster top-k document
 * retrieval using block-max indexes", SIGIR 2011). In a window each term is bounded by its blocks that
 * overlap it (search.h: a block's bound; at most its term's bound):
 *   - when the window's bounds add up to less than the k-th best score so far (the heap's lowest, less
 *     the constant), no document of it can enter: its blocks are passed over unread;
 *   - else the terms are added term at a time in the canonical order into an accumulator of the window
 *     (small enough for the caches, where the one of search.c spans the collection); once the remaining
 *     terms' window bounds add up to less than that score, a document no term has reached cannot enter,
 *     and the remaining terms only update the documents whose sum so far plus those bounds still can
 *     (reading only the blocks that hold them), as search.c does over the whole collection;
 *   - while every document is still listed, a block of a term whose bound, with the window bounds of the
 *     other terms, cannot reach that score is passed over unread (its documents may be listed without
 *     that term's weight: their sums stay below the score, and they are never offered);
 *   - once k documents are held, the terms of least bounds whose bounds add up to less than that score
 *     cannot lift a document alone (MaxScore's non-essential terms): the windows where none of the other
 *     terms has a block are passed over without looking at the bounds of their blocks.
 * Each document kept gets every term in the canonical order, from -0.0, exactly as the accumulator of
 * search.c adds them: the same score bits; the window's documents then enter the top k by the tie rule.
 * A document a mask leaves out gets -0.0 from its postings (masked_weight): it is never listed, kept
 * or offered, and every bound stays one of the documents that pass.
 * Bounds are compared with the k-th score less a relative margin far above float64 rounding, so a
 * document is never dropped that could enter. Without pruning (a negative weight) every posting is
 * added and every document offered.
 */
#include "search.h"

#include <stdlib.h>

#ifndef WINDOW_SHIFT
#define WINDOW_SHIFT 12
#endif
#define WINDOW (1 << WINDOW_SHIFT)     /* documents a window */
#define NO_WEIGHT INT64_MIN            /* -0.0 viewed as int64: no posting added to the document yet */

static inline int64_t bits_of(double x)
{
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* A term's place in its postings. */
typedef struct {
    const Term *term;
    int64_t j;          /* the block buf holds (term->b1: past the last) */
    int pos;            /* the next posting of buf to read */
    int64_t shallow;    /* the first block not yet known to end before the window (bounds) */
    BlockBuf buf;
} Cursor;

typedef struct {
    const Index *ix;
    int damaged;
} Reader;

static void cursor_start(Cursor *c, const Term *term)
{
    c->term = term;
    c->j = term->b0 - 1;   /* no block read yet */
    c->buf.j = -1;
    c->buf.n = 0;
    c->buf.blocks_read = c->buf.postings_read = 0;
    c->pos = 0;
    c->shallow = term->b0;
}

/* Put the cursor at its first posting at or after document d (reading the block that holds it): 0,
 * or 1 when the term has none. */
static int seek(Reader *r, Cursor *c, int64_t d)
{
    const Term *term = c->term;
    const int32_t *last_docs = r->ix->blocks.last_docs;
    if (c->j < term->b0 || c->j >= term->b1 || last_docs[c->j] < d) {
        const int64_t j = block_of(last_docs, max_i64(c->j, term->b0), term->b1, d);
        c->j = j;
        if (j >= term->b1)
            return 1;
        if (load_block(r->ix, term, j, &c->buf) < 0) {
            r->damaged = 1;
            c->j = term->b1;
            return 1;
        }
        c->pos = 0;
    }
    const uint32_t *docs = c->buf.docs;
    int pos = c->pos;
    while (pos < c->buf.n - 1 && docs[pos] < d) /* the block's last document is >= d */
        pos++;
    c->pos = pos;
    return 0;
}

/* A bound of the term's weights at documents w0 to w1 - 1 (its blocks overlapping them; at most its
 * bound), and whether it has a block there. */
static double window_bound(Reader *r, Cursor *c, int64_t w0, int64_t w1, int *present)
{
    const Term *term = c->term;
    const int32_t *last_docs = r->ix->blocks.last_docs;
    int64_t j = block_of(last_docs, max_i64(c->shallow, term->b0), term->b1, w0);
    c->shallow = j;
    double bound = 0.0;
    *present = 0;
    for (; j < term->b1; j++) {
        if (j > term->b0 && (int64_t)last_docs[j - 1] + 1 >= w1) /* the block starts after the window */
            break;
        *present = 1;
        bound = py_max(bound, block_bound(r->ix, term, j));
        if (bound >= term->bound || last_docs[j] >= w1)
            break;
    }
    return py_min(py_max(bound, 0.0), term->bound);
}

typedef struct {
    double *hs;        /* heap of k: final scores, id ranks, documents (worst at the root) */
    int64_t *hr, *hd;
    int64_t n, k;
    int prune;
    double cnst, total; /* the query's constant; the sum of its terms' bounds */
    double floor;       /* the least bound of a score (before the constant) that could enter */
} TopK;

static inline void set_floor(TopK *top)
{
    if (top->prune && top->n == top->k) {
        const double theta = top->hs[0];
        top->floor = theta - MARGIN * (fabs(theta) + top->total + fabs(top->cnst)) - top->cnst;
    }
}

static inline void offer(TopK *top, double score, int64_t rank, int64_t doc)
{
    if (top->n < top->k) {
        top->hs[top->n] = score;
        top->hr[top->n] = rank;
        top->hd[top->n] = doc;
        sift_up(top->hs, top->hr, top->hd, top->n);
        top->n++;
        set_floor(top);
    } else if (worse(top->hs[0], top->hr[0], score, rank)) {
        top->hs[0] = score;
        top->hr[0] = rank;
        top->hd[0] = doc;
        sift_down(top->hs, top->hr, top->hd, top->n, 0);
        set_floor(top);
    }
}

/* A window's work space. */
typedef struct {
    double acc[WINDOW];       /* -0.0 where no posting was added */
    uint16_t listed[WINDOW + 1]; /* the window's documents with a posting added (offsets; one spare) */
    uint16_t kept[WINDOW];    /* ... those that can still enter, ascending */
    uint64_t bits[WINDOW / 64];
    double bound[1];          /* per term (allocated with the struct) */
} Window;

/* Add term c's postings in [w0, w1) to every document (listing the new ones); returns the count listed.
 * A block whose bound is below `least` is passed over unread: a document of it cannot enter (its sum
 * of the terms before, at most their window bounds, plus this block's bound, plus the window bounds of
 * the terms after stays below the k-th score); it may be listed without this term's weight, with a sum
 * then below the true one, and is never offered (see windowed_top_k). */
static int add_all(Reader *r, Cursor *c, int64_t w0, int64_t w1, Window *win, int nl, double least)
{
    const Term *term = c->term;
    const int32_t *last_docs = r->ix->blocks.last_docs;
    const double scale = term->scale, mult = term->mult;
    const uint8_t *mask = r->ix->mask;
    double *restrict acc = win->acc;
    uint16_t *restrict listed = win->listed;
    int damaged = 0;
    const int64_t from = c->j >= term->b0 && c->j < term->b1 ? c->j : term->b0;
    for (int64_t j = block_of(last_docs, from, term->b1, w0); j < term->b1; j++) {
        if (j > term->b0 && (int64_t)last_docs[j - 1] + 1 >= w1) /* the block starts after the window */
            break;
        if (least > 0.0 && py_min(py_max(block_bound(r->ix, term, j), 0.0), term->bound) < least)
            continue;
        BlockBuf *buf = &c->buf;
        if (c->j != j || buf->j != j) {
            c->j = j;
            c->pos = 0;
            if (load_block(r->ix, term, j, buf) < 0) {
                damaged = 1;
                c->j = term->b1;
                break;
            }
        }
        int pos = c->pos, end = buf->n;
        while (pos < end && buf->docs[pos] < w0)
            pos++;
        while (end > pos && buf->docs[end - 1] >= w1) /* the block's postings in the window: pos:end */
            end--;
        const int fast = read_freqs(r->ix, buf);
        if (fast && mult == 1.0 && mask == NULL) {
            for (; pos < end; pos++) {
                const uint32_t off = buf->docs[pos] - (uint32_t)w0;
                const double a = acc[off];
                listed[nl] = (uint16_t)off;
                nl += bits_of(a) == NO_WEIGHT;
                acc[off] = a + grid_weight(r->ix, buf, pos, scale, 1.0);
            }
        } else { /* a document the mask leaves out gets -0.0: never listed (search.h) */
            for (; pos < end; pos++) {
                const uint32_t d = buf->docs[pos], off = d - (uint32_t)w0;
                const double a = acc[off];
                listed[nl] = (uint16_t)off;
                nl += (bits_of(a) == NO_WEIGHT) & (mask == NULL || mask[d] != 0);
                acc[off] = a + masked_weight(mask, d, weight_at(r->ix, term, buf, pos));
            }
        }
        c->pos = end;
        if (end < buf->n) /* the block goes on past the window */
            break;
    }
    r->damaged |= damaged;
    return nl;
}

/* Add term c's postings in the window to the kept documents kept[:nk] (ascending offsets). */
static void add_kept(Reader *r, Cursor *c, int64_t w0, Window *win, int nk)
{
    const Term *term = c->term;
    for (int i = 0; i < nk; i++) {
        const int64_t d = w0 + win->kept[i];
        if (seek(r, c, d)) /* no posting from d on: none for the later kept documents either */
            break;
        const BlockBuf *buf = &c->buf;
        if (buf->docs[c->pos] == d)
            win->acc[win->kept[i]] += weight_of_one(r->ix, term, &c->buf, c->pos);
    }
}

/* The listed documents whose sum so far plus `rest` could still enter (rest: a bound of what the
 * remaining terms add), ascending, in win->kept; returns how many. */
static int keep_those(const TopK *top, Window *win, const uint16_t *listed, int nl, double rest)
{
    memset(win->bits, 0, sizeof win->bits);
    for (int i = 0; i < nl; i++) {
        const uint16_t off = listed[i];
        if (win->acc[off] + rest >= top->floor)
            win->bits[off >> 6] |= UINT64_C(1) << (off & 63);
    }
    int nk = 0;
    for (int w = 0; w < WINDOW / 64; w++)
        for (uint64_t b = win->bits[w]; b; b &= b - 1)
            win->kept[nk++] = (uint16_t)(w * 64 + __builtin_ctzll(b));
    return nk;
}

/* The least document from w0 on that one of the terms order[:count] may have: where the first of its
 * blocks not ending before w0 may start (INT64_MAX when none has one). */
static int64_t next_block_start(Reader *r, Cursor *cursors, const int64_t *order, int64_t count, int64_t w0)
{
    const int32_t *last_docs = r->ix->blocks.last_docs;
    int64_t next = INT64_MAX;
    for (int64_t x = 0; x < count; x++) {
        Cursor *c = &cursors[order[x]];
        const Term *term = c->term;
        const int64_t j = block_of(last_docs, max_i64(c->shallow, term->b0), term->b1, w0);
        c->shallow = j;
        if (j < term->b1)
            next = min_i64(next, j > term->b0 ? max_i64((int64_t)last_docs[j - 1] + 1, w0) : w0);
    }
    return next;
}

int64_t windowed_top_k(const Index *ix, const Term *terms, int64_t m, double cnst, int64_t k, int prune,
                   double *hs, int64_t *hr, int64_t *hd, int64_t *out_docs, double *out_scores)
{
    if (m == 0)
        return 0;
    Cursor *cursors = malloc((size_t)m * sizeof *cursors);
    int64_t *order = malloc((size_t)(2 * m) * sizeof *order);
    double *rest = malloc((size_t)(m + 1) * sizeof *rest);
    int *present = malloc((size_t)m * sizeof *present);
    Window *win = malloc(sizeof *win + (size_t)m * sizeof(double));
    if (cursors == NULL || order == NULL || rest == NULL || present == NULL || win == NULL) {
        free(cursors);
        free(order);
        free(rest);
        free(present);
        free(win);
        return NOMEM;
    }
    Reader r = {ix, 0};
    TopK top = {hs, hr, hd, 0, k, prune, cnst, 0.0, -INFINITY};
    term_order(terms, m, order, order + m);
    for (int64_t x = 0; x < m; x++) {
        cursor_start(&cursors[x], &terms[x]);
        top.total += terms[x].bound;
    }
    for (int i = 0; i < WINDOW; i++)
        win->acc[i] = -0.0;
    const int32_t *last_docs = ix->blocks.last_docs;
    const int64_t n_docs = ix->blocks.n_docs;
    int64_t w0 = 0;
    while (w0 < n_docs && !r.damaged) {
        if (prune && top.n == k) {
            /* MaxScore over windows: the terms of least bounds whose bounds add up to less than the k-th
             * score cannot lift a document alone; only a window where another term has a block can hold
             * one that enters (order runs from the heaviest term: the light ones are its end) */
            double light = 0.0;
            int64_t essential = m;
            while (essential > 0 && light + terms[order[essential - 1]].bound < top.floor)
                light += terms[order[--essential]].bound;
            const int64_t next = next_block_start(&r, cursors, order, essential, w0);
            if (next == INT64_MAX)
                break;
            if (next >= w0 + WINDOW) {
                w0 = next & ~(int64_t)(WINDOW - 1);
                continue;
            }
        }
        const int64_t w1 = w0 + WINDOW;
        double total = 0.0;
        int any = 0;
        for (int64_t x = 0; x < m; x++) {
            rest[x] = window_bound(&r, &cursors[x], w0, w1, &present[x]);
            total += rest[x];
            any |= present[x];
        }
        if (!any || (prune && total < top.floor)) {
            /* nothing here, or nothing that can enter: on to the first window a term has a block in */
            int64_t next = INT64_MAX;
            for (int64_t x = 0; x < m; x++) {
                const Cursor *c = &cursors[x];
                const int64_t j = block_of(last_docs, c->shallow, c->term->b1, w1);
                if (j < c->term->b1)
                    next = min_i64(next, j > c->term->b0 ? max_i64((int64_t)last_docs[j - 1] + 1, w1) : w1);
            }
            if (next == INT64_MAX)
                break;
            w0 = next & ~(int64_t)(WINDOW - 1);
            continue;
        }
        /* the window's bounds in the canonical order, summed from the last */
        for (int64_t x = 0; x < m; x++)
            win->bound[x] = rest[order[x]];
        rest[m] = 0.0;
        for (int64_t x = m - 1; x >= 0; x--)
            rest[x] = rest[x + 1] + win->bound[x];
        int nl = 0, nk = -1; /* nk >= 0: only the kept documents are updated */
        for (int64_t x = 0; x < m; x++) {
            Cursor *c = &cursors[order[x]];
            if (!present[order[x]])
                continue;
            if (nk < 0 && prune && x > 0 && rest[x] < top.floor) /* an unlisted document cannot enter */
                nk = keep_those(&top, win, win->listed, nl, rest[x]);
            if (nk < 0) {
                /* a block of this term can add a document that enters only if its bound reaches this */
                const double least = prune ? top.floor - (rest[0] - rest[x]) - rest[x + 1] : -INFINITY;
                nl = add_all(&r, c, w0, w1, win, nl, least);
            } else {
                add_kept(&r, c, w0, win, nk);
                int kept = 0; /* drop those that the terms after this one cannot lift */
                for (int i = 0; i < nk; i++)
                    if (win->acc[win->kept[i]] + rest[x + 1] >= top.floor)
                        win->kept[kept++] = win->kept[i];
                nk = kept;
            }
        }
        const uint16_t *final = nk < 0 ? win->listed : win->kept;
        const int nf = nk < 0 ? nl : nk;
        for (int i = 0; i < nf; i++) {
            const uint16_t off = final[i];
            const double a = win->acc[off];
            if (a >= top.floor)
                offer(&top, a + cnst, rank_of(ix->id_rank, (uint64_t)(w0 + off)), w0 + off);
        }
        for (int i = 0; i < nl; i++)
            win->acc[win->listed[i]] = -0.0;
        w0 = w1;
    }
    for (int64_t x = 0; x < m; x++) {
        blocks_read += cursors[x].buf.blocks_read;
        postings_read += cursors[x].buf.postings_read;
    }
    free(cursors);
    free(order);
    free(rest);
    free(present);
    free(win);
    if (r.damaged)
        return DAMAGED;
    return heap_out(hs, hr, hd, top.n, out_docs, out_scores);
}
