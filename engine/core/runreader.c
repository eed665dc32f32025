/*
 * runreader.c: the TREC run reader (read_trec_run), the TREC qrels reader (read_trec_qrels) and their pieces,
 * exposed for the tests (string_hash, parse_score, valid_utf8).
 *
 * read_trec_run reads one line-aligned chunk of a TREC run's bytes in one pass, as the Python reader of
 * bm25lab.evaluation.readers (its specification) splits and reads it:
 *
 *   Lines end at '\n'; fields are separated by runs of C's isspace bytes (space, \t \n \v \f \r: Python's
 *   bytes.split()); blank lines and lines whose first field starts with '#' are skipped. A line needs six
 *   fields at least (qid Q0 docid rank score tag; more are ignored).
 *
 *   Rows come in segments, runs of consecutive rows of one query id (a run lists a query's documents
 *   together): each row's query id is compared with the previous row's only, and the segments' ids are
 *   numbered once, at the end, in first-appearance order (an open-addressing hash table).
 *
 *   Each document id is copied into a string column (int32 offsets, as pyarrow's), checked as UTF-8 as
 *   Python's strict decoder reads it (RFC 3629: no overlong forms, no surrogates, nothing past
 *   U+10FFFF) and hashed as bm25lab.engine.columns.string_hashes hashes it: length * golden ratio, then
 *   splitmix64's finaliser after each 8 bytes xor-ed in (little-endian, the last word zero-padded).
 *
 *   A document repeated within a segment is refused (a hash set of the segment's rows, strings compared
 *   where hashes match; past seen_limit entries the segment is not checked, and checked is false).
 *
 *   Scores (parse_score): a decimal [+-]digits[.digits][(e|E)[+-]digits] with at most 19 significant
 *   digits, making an integer w, times 10^q, is read exactly, to the float64 Python's float (and C's
 *   correctly rounded strtod) gives:
 *     - w <= 2^53 and |q| <= 22: w * 10^q or w / 10^-q, one IEEE operation on two exact float64 values,
 *       correctly rounded (Clinger, "How to read floating point numbers accurately", PLDI 1990, the fast
 *       path);
 *     - else |q| <= 19: the exact product w * 10^q (< 2^128), or the quotient of w * 2^s by 10^-q with its
 *       remainder, in 128-bit integers, rounded once to 53 bits, to nearest, ties to even;
 *   any other spelling (more digits, larger exponents, inf, nan, '_', anything else) is left to Python's
 *   float: the row and its text's bounds go to slow_rows/slow_starts/slow_ends, its score 0.0. -0.0 is
 *   read as 0.0 (C compares them equal).
 *
 *   Last, where no score was left to Python, each segment is put in trec_eval's tie-rule order (score
 *   descending, then document id descending in strcmp order: form_res_rels.c, comp_sim_docno): its rows
 *   sorted by score (a stable merge sort on keys; most runs are written in that order and need none), each
 *   run of tied rows (one query, one score) by document id, scores, hashes and ids moved within the
 *   segment's own bytes; ranked says whether every segment is then in the tie-rule order (runs of ties
 *   longer than TIE_ROWS rows or TIE_BYTES bytes are left to the caller's sort).
 *
 * Whatever the Python reader would refuse (fewer than six fields, an id that is not UTF-8) and any
 * document repeated within a segment stop the reading with REFUSED: the caller then reads the file the
 * usual way, which names the line. More scores for Python than slow_rows has room for: TOO_MANY_SLOW.
 *
 * read_trec_qrels reads TREC qrels (qid iteration docid relevance) as the Python reader does with
 * trec_eval's rules: lines, comments and fields as above, exactly four fields a line; query ids numbered in
 * first-appearance order and document ids copied, checked and hashed as above; the relevance read as a grade
 * (parse_score: a finite float64 of magnitude 2^53 at most) and as C's atol reads its text (trec_eval 10.0's
 * label: the sign and leading digits, 0 without digits). Anything else (another number of fields, an id
 * that is not UTF-8, a relevance parse_score leaves to Python, larger than 2^53, or whose leading digits
 * need more than 18 digits) stops the reading with REFUSED: the usual readers then name the line. Repeated
 * (query, document) pairs are the caller's to find.
 *
 * order_run orders a whole run whose queries' rows are not each in one chunk's segment, in tie-rule order
 * (runs shuffled across queries): rows grouped by query code (a counting sort, file order kept), each query's
 * checked for a repeated document (a hash set, strings compared where hashes match) and sorted by score key
 * (a stable merge sort), runs of tied rows by document id (merge sort, strcmp order).
 *
 * Python API (buffer protocol; the GIL is released while reading):
 *   read_trec_run(data, lo, hi, codes, doc_offsets, doc_bytes, hashes, scores, slow_rows, slow_starts,
 *                 slow_ends, seen_limit) -> (status, rows, slow, segments, qids, checked, ranked)
 *   read_trec_qrels(data, lo, hi, codes, doc_offsets, doc_bytes, hashes, grades, labels) -> (status, rows, qids)
 *   order_run(codes, n_queries, scores, hashes, doc_offsets, doc_bytes, order) -> status
 *   string_hash(data) -> int;  parse_score(data) -> float | None;  valid_utf8(data) -> bool
 */
#include "core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STATUS_OK = 0, STATUS_REFUSED = 1, STATUS_TOO_MANY_SLOW = 2, STATUS_NOMEM = -1, STATUS_FULL = -2 };

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)
#define MAX_MANTISSA (UINT64_C(1) << 53)
#define MIN_SEEN 1024          /* entries of the duplicate check's hash set in use at first */
#define TIE_ROWS 64            /* tied rows (one query, one score) sorted here at most */
#define TIE_BYTES (1 << 16)    /* bytes of their document ids at most */

/* ------------------------------------------------------------------------------------------ */
/* bytes                                                                                      */

/* C's isspace in the C locale, Python's bytes.split(): space, \t \n \v \f \r */
ALWAYS_INLINE int is_space(uint8_t b)
{
    return b == 32 || (uint8_t)(b - 9) <= 4;
}

/* splitmix64's finaliser (bm25lab.engine.columns._mix) */
ALWAYS_INLINE uint64_t mix(uint64_t h)
{
    h = (h ^ (h >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94D049BB133111EB);
    return h ^ (h >> 31);
}

/* n <= 8 bytes as a little-endian word, zero-padded */
ALWAYS_INLINE uint64_t load_word(const uint8_t *p, Py_ssize_t n)
{
    uint64_t word = 0;
#if PY_LITTLE_ENDIAN
    if (n == 8) {
        memcpy(&word, p, 8);
        return word;
    }
#endif
    for (Py_ssize_t k = 0; k < n; k++)
        word |= (uint64_t)p[k] << (8 * k);
    return word;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* the first byte of a word (little-endian) flagged by a SWAR test: its index */
ALWAYS_INLINE Py_ssize_t first_flagged(uint64_t flags)
{
    return __builtin_ctzll(flags) / 8;
}

/* The position of the first whitespace byte at or after i, or hi: words of 8 bytes are looked at for a byte
 * below 0x21 (the lowest byte so flagged is exact: no borrow comes from below it), then that byte checked. */
ALWAYS_INLINE Py_ssize_t field_end(const uint8_t *data, Py_ssize_t i, Py_ssize_t hi)
{
    while (i + 8 <= hi) {
        const uint64_t x = load_word(data + i, 8);
        const uint64_t low = (x - 0x21 * ONES) & ~x & HIGHS;
        if (low == 0) {
            i += 8;
            continue;
        }
        i += first_flagged(low);
        if (is_space(data[i]))
            return i;
        i++;
    }
    while (i < hi && !is_space(data[i]))
        i++;
    return i;
}

/* The position of the first '\n' at or after i, or hi. */
ALWAYS_INLINE Py_ssize_t line_end(const uint8_t *data, Py_ssize_t i, Py_ssize_t hi)
{
    while (i + 8 <= hi) {
        const uint64_t x = load_word(data + i, 8) ^ ('\n' * ONES);
        const uint64_t zero = (x - ONES) & ~x & HIGHS;
        if (zero)
            return i + first_flagged(zero);
        i += 8;
    }
    while (i < hi && data[i] != '\n')
        i++;
    return i;
}

/* p[0:n] copied to out and hashed as string_hash does, in one pass; *high gets the bytes' top bits */
ALWAYS_INLINE uint64_t copy_and_hash(const uint8_t *p, Py_ssize_t n, uint8_t *out, uint64_t *high)
{
    uint64_t h = (uint64_t)n * GOLDEN, tops = 0;
    for (Py_ssize_t at = 0; at < n; at += 8) {
        const uint64_t word = load_word(p + at, n - at < 8 ? n - at : 8);
        tops |= word;
        h = mix(h ^ word);
    }
    memcpy(out, p, (size_t)n);
    *high = tops & HIGHS;
    return h;
}

/* the hash of p[0:n], as bm25lab.engine.columns.string_hashes computes it */
static uint64_t string_hash(const uint8_t *p, Py_ssize_t n)
{
    uint64_t h = (uint64_t)n * GOLDEN;
    for (Py_ssize_t at = 0; at < n; at += 8)
        h = mix(h ^ load_word(p + at, n - at < 8 ? n - at : 8));
    return h;
}

/* whether p[0:n] is UTF-8 as Python's strict decoder reads it (RFC 3629's table) */
static int valid_utf8(const uint8_t *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        const uint8_t b = p[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        int need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF)
            need = 1;
        else if (b == 0xE0)
            need = 2, lo = 0xA0;
        else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
            need = 2;
        else if (b == 0xED)
            need = 2, hi = 0x9F;
        else if (b == 0xF0)
            need = 3, lo = 0x90;
        else if (b >= 0xF1 && b <= 0xF3)
            need = 3;
        else if (b == 0xF4)
            need = 3, hi = 0x8F;
        else
            return 0;
        if (i + need >= n) /* the sequence runs past the field */
            return 0;
        if (p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (int k = 2; k <= need; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF)
                return 0;
        i += need + 1;
    }
    return 1;
}

ALWAYS_INLINE int same_bytes(const uint8_t *a, const uint8_t *b, Py_ssize_t n)
{
    return memcmp(a, b, (size_t)n) == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* scores                                                                                     */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const uint64_t POW10_INT[20] = {UINT64_C(1),
                                       UINT64_C(10),
                                       UINT64_C(100),
                                       UINT64_C(1000),
                                       UINT64_C(10000),
                                       UINT64_C(100000),
                                       UINT64_C(1000000),
                                       UINT64_C(10000000),
                                       UINT64_C(100000000),
                                       UINT64_C(1000000000),
                                       UINT64_C(10000000000),
                                       UINT64_C(100000000000),
                                       UINT64_C(1000000000000),
                                       UINT64_C(10000000000000),
                                       UINT64_C(100000000000000),
                                       UINT64_C(1000000000000000),
                                       UINT64_C(10000000000000000),
                                       UINT64_C(100000000000000000),
                                       UINT64_C(1000000000000000000),
                                       UINT64_C(10000000000000000000)};

typedef unsigned __int128 u128;

static int bit_length(u128 x)
{
    const uint64_t high = (uint64_t)(x >> 64);
    if (high)
        return 128 - __builtin_clzll(high);
    const uint64_t low = (uint64_t)x;
    return low ? 64 - __builtin_clzll(low) : 0;
}

/* (x + a bit less than one unit when sticky) * 2^scale rounded to the nearest float64, ties to even; x > 0
 * with more than 54 bits whenever sticky is set, the result a normal number */
static double round_to_double(u128 x, int sticky, int scale)
{
    const int bits = bit_length(x);
    if (bits <= 53)
        return ldexp((double)(uint64_t)x, scale);
    int drop = bits - 53;
    uint64_t m = (uint64_t)(x >> drop);
    const u128 rest = x & (((u128)1 << drop) - 1);
    const u128 half = (u128)1 << (drop - 1);
    if (rest > half || (rest == half && (sticky || (m & 1))))
        m++;
    if (m >> 53) {
        m >>= 1;
        drop++;
    }
    return ldexp((double)m, scale + drop);
}

/* w * 10^q exactly rounded, for 0 < w < 2^64 and |q| <= 19 */
static double scaled_exactly(uint64_t w, int q)
{
    if (q >= 0)
        return round_to_double((u128)w * POW10_INT[q], 0, 0);
    const uint64_t divisor = POW10_INT[-q];
    const int shift = 127 - bit_length(w); /* the dividend 2^126 or more: a quotient of 63 bits or more */
    const u128 dividend = (u128)w << shift;
    return round_to_double(dividend / divisor, dividend % divisor != 0, -shift);
}

/* The digits at p[i:end] taken into *w (*digits significant ones so far; leading zeros are not):
 * returns the position after them, or -1 once a 20th significant digit comes. */
ALWAYS_INLINE Py_ssize_t digit_run(const uint8_t *p, Py_ssize_t i, Py_ssize_t end, uint64_t *w, int *digits)
{
    while (i < end && (uint8_t)(p[i] - '0') <= 9) {
        const unsigned d = p[i] - '0';
        if (*digits || d) {
            if (*digits == 19)
                return -1;
            *w = *w * 10 + d;
            (*digits)++;
        }
        i++;
    }
    return i;
}

/* The score p[0:n] into *value when the fast path reads it exactly (returns 1; -0.0 read as 0.0), else 0:
 * Python's float must judge it (see the notes at the top). */
static int parse_score(const uint8_t *p, Py_ssize_t n, double *value)
{
    Py_ssize_t i = 0;
    int negative = 0, digits = 0;
    uint64_t w = 0;
    if (i < n && (p[i] == '+' || p[i] == '-')) {
        negative = p[i] == '-';
        i++;
    }
    const Py_ssize_t whole_start = i;
    i = digit_run(p, i, n, &w, &digits);
    if (i < 0)
        return 0;
    const Py_ssize_t whole = i - whole_start;
    Py_ssize_t fraction = 0;
    if (i < n && p[i] == '.') {
        const Py_ssize_t start = i + 1;
        i = digit_run(p, start, n, &w, &digits);
        if (i < 0)
            return 0;
        fraction = i - start;
    }
    if (whole + fraction == 0)
        return 0;
    int64_t exponent = -(int64_t)fraction; /* the power of ten of w's last digit */
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        int exp_negative = 0;
        if (i < n && (p[i] == '+' || p[i] == '-')) {
            exp_negative = p[i] == '-';
            i++;
        }
        if (i == n)
            return 0;
        int64_t written = 0;
        while (i < n && (uint8_t)(p[i] - '0') <= 9) {
            if (written > 100000)
                return 0;
            written = written * 10 + (p[i] - '0');
            i++;
        }
        exponent += exp_negative ? -written : written;
    }
    if (i != n)
        return 0;
    double v;
    if (w == 0)
        v = 0.0;
    else if (w <= MAX_MANTISSA && exponent >= -22 && exponent <= 22)
        v = exponent >= 0 ? (double)w * POW10[exponent] : (double)w / POW10[-exponent];
    else if (exponent >= -19 && exponent <= 19)
        v = scaled_exactly(w, (int)exponent);
    else
        return 0;
    *value = (negative ? -v : v) + 0.0; /* -0.0 -> 0.0 */
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* reading a chunk                                                                            */

typedef struct {
    /* in */
    const uint8_t *data;
    Py_ssize_t lo, hi;
    Py_ssize_t room;       /* rows the outputs have room for */
    Py_ssize_t slow_room;  /* slow scores slow_* have room for */
    Py_ssize_t seen_limit; /* entries of the duplicate check's hash set at most (a power of two) */
    /* out, caller's */
    int32_t *codes, *doc_offsets;
    uint8_t *doc_bytes;
    uint64_t *hashes;
    double *scores;                               /* a run's scores, qrels' grades */
    int64_t *slow_rows, *slow_starts, *slow_ends;
    int64_t *labels;                              /* qrels' labels as atol reads them */
    /* out, own (freed by chunk_free) */
    Py_ssize_t *seg_rows, *seg_starts, *seg_ends; /* each segment's first row, where its query id is */
    Py_ssize_t seg_cap;
    Py_ssize_t *q_starts, *q_lengths;             /* each distinct query id */
    Py_ssize_t rows, slow, segments, queries;
    int checked, ranked;
} Chunk;

static void chunk_free(Chunk *c)
{
    free(c->seg_rows);
    free(c->seg_starts);
    free(c->seg_ends);
    free(c->q_starts);
    free(c->q_lengths);
}

/* room for one more segment: at first for as many as the rows (memory the system maps as it is touched: a run
 * of long segments touches a few pages of it, a shuffled run all, and nothing is copied as they come) */
static int grow_segments(Chunk *c)
{
    if (c->segments < c->seg_cap)
        return 0;
    const Py_ssize_t cap = c->seg_cap ? 2 * c->seg_cap : (c->room > 64 ? c->room : 64);
    Py_ssize_t **arrays[3] = {&c->seg_rows, &c->seg_starts, &c->seg_ends};
    for (int k = 0; k < 3; k++) {
        Py_ssize_t *grown = realloc(*arrays[k], (size_t)cap * sizeof(Py_ssize_t));
        if (grown == NULL)
            return -1;
        *arrays[k] = grown;
    }
    c->seg_cap = cap;
    return 0;
}

/* The segments' query ids numbered in first-appearance order (codes written for every row); STATUS_REFUSED
 * for a query id that is not UTF-8. */
static int intern_queries(Chunk *c)
{
    const Py_ssize_t n = c->segments;
    size_t cap = 64;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    const size_t mask = cap - 1;
    Py_ssize_t *table = malloc(cap * sizeof(Py_ssize_t));
    uint64_t *q_hashes = malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    c->q_starts = malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    c->q_lengths = malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    int status = STATUS_OK;
    if (table == NULL || q_hashes == NULL || c->q_starts == NULL || c->q_lengths == NULL) {
        status = STATUS_NOMEM;
        goto done;
    }
    memset(table, 0xff, cap * sizeof(Py_ssize_t)); /* -1: empty */
    for (Py_ssize_t s = 0; s < n; s++) {
        const Py_ssize_t q0 = c->seg_starts[s], length = c->seg_ends[s] - q0;
        const uint64_t h = string_hash(c->data + q0, length);
        size_t slot = (size_t)h & mask;
        Py_ssize_t code = -1;
        while (table[slot] >= 0) {
            const Py_ssize_t e = table[slot];
            if (q_hashes[e] == h && c->q_lengths[e] == length &&
                same_bytes(c->data + q0, c->data + c->q_starts[e], length)) {
                code = e;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (code < 0) {
            if (!valid_utf8(c->data + q0, length)) {
                status = STATUS_REFUSED;
                goto done;
            }
            code = c->queries++;
            c->q_starts[code] = q0;
            c->q_lengths[code] = length;
            q_hashes[code] = h;
            table[slot] = code;
        }
        const Py_ssize_t stop = s + 1 < n ? c->seg_rows[s + 1] : c->rows;
        for (Py_ssize_t r = c->seg_rows[s]; r < stop; r++)
            c->codes[r] = (int32_t)code;
    }
done:
    free(table);
    free(q_hashes);
    return status;
}

/* whether row x's document id comes after row y's in strcmp order (bytes, unsigned) */
ALWAYS_INLINE int doc_greater(const Chunk *c, Py_ssize_t x, Py_ssize_t y)
{
    const int32_t a = c->doc_offsets[x], a_len = c->doc_offsets[x + 1] - a;
    const int32_t b = c->doc_offsets[y], b_len = c->doc_offsets[y + 1] - b;
    const int cmp = memcmp(c->doc_bytes + a, c->doc_bytes + b, (size_t)(a_len < b_len ? a_len : b_len));
    return cmp ? cmp > 0 : a_len > b_len; /* a longer id after its own prefix */
}

typedef struct {
    Py_ssize_t order[TIE_ROWS];
    int32_t starts[TIE_ROWS + 1];
    uint64_t kept_hashes[TIE_ROWS];
    uint8_t kept_bytes[TIE_BYTES];
} TieSpace;

/* One run of tied rows a..b-1 (b - a <= TIE_ROWS, their bytes <= TIE_BYTES) sorted by document id
 * descending, their ids and hashes moved within the run's own bytes. */
static void sort_tied(Chunk *c, Py_ssize_t a, Py_ssize_t b, TieSpace *t)
{
    const Py_ssize_t n = b - a;
    for (Py_ssize_t k = 0; k < n; k++) { /* insertion sort, descending */
        t->order[k] = a + k;
        for (Py_ssize_t j = k; j > 0 && doc_greater(c, t->order[j], t->order[j - 1]); j--) {
            const Py_ssize_t swap = t->order[j];
            t->order[j] = t->order[j - 1];
            t->order[j - 1] = swap;
        }
    }
    int moved = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        moved |= t->order[k] != a + k;
    if (!moved)
        return;
    const int32_t base = c->doc_offsets[a];
    for (Py_ssize_t k = 0; k <= n; k++)
        t->starts[k] = c->doc_offsets[a + k] - base;
    memcpy(t->kept_bytes, c->doc_bytes + base, (size_t)(c->doc_offsets[b] - base));
    memcpy(t->kept_hashes, c->hashes + a, (size_t)n * sizeof(uint64_t));
    int32_t at = base;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Py_ssize_t r = t->order[k] - a;
        const int32_t length = t->starts[r + 1] - t->starts[r];
        memcpy(c->doc_bytes + at, t->kept_bytes + t->starts[r], (size_t)length);
        at += length;
        c->doc_offsets[a + k + 1] = at;
        c->hashes[a + k] = t->kept_hashes[r];
    }
}

/* a row of a segment being sorted: its score as a key that orders scores descending, and its place */
typedef struct {
    uint64_t key;
    Py_ssize_t row;
} Keyed;

/* The key of a score (no NaN, no -0.0): smaller for a larger score. */
ALWAYS_INLINE uint64_t descending_key(double score)
{
    uint64_t bits;
    memcpy(&bits, &score, sizeof bits);
    const uint64_t ascending = (bits >> 63) ? ~bits : bits | (UINT64_C(1) << 63);
    return ~ascending;
}

/* a[0:n] sorted by key, stably (equal keys keep their order): insertion sort of runs of 16, then merges */
static void sort_keyed(Keyed *a, Keyed *tmp, Py_ssize_t n)
{
    enum { RUN = 16 };
    for (Py_ssize_t lo = 0; lo < n; lo += RUN) {
        const Py_ssize_t hi = lo + RUN < n ? lo + RUN : n;
        for (Py_ssize_t k = lo + 1; k < hi; k++) {
            const Keyed x = a[k];
            Py_ssize_t j = k;
            for (; j > lo && a[j - 1].key > x.key; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    }
    for (Py_ssize_t width = RUN; width < n; width *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {
            const Py_ssize_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = a[j].key < a[i].key ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* room for sorting a segment: grown as segments need */
typedef struct {
    Keyed *keyed, *tmp;
    uint64_t *hashes;
    double *scores;
    int32_t *offsets;
    uint8_t *bytes;
    Py_ssize_t rows, byte_room;
} SegmentSpace;

static void segment_space_free(SegmentSpace *s)
{
    free(s->keyed);
    free(s->tmp);
    free(s->hashes);
    free(s->scores);
    free(s->offsets);
    free(s->bytes);
}

static int segment_space_fit(SegmentSpace *s, Py_ssize_t rows, Py_ssize_t bytes)
{
    if (rows > s->rows) {
        segment_space_free(s);
        memset(s, 0, sizeof *s);
        s->keyed = malloc((size_t)rows * sizeof(Keyed));
        s->tmp = malloc((size_t)rows * sizeof(Keyed));
        s->hashes = malloc((size_t)rows * sizeof(uint64_t));
        s->scores = malloc((size_t)rows * sizeof(double));
        s->offsets = malloc((size_t)(rows + 1) * sizeof(int32_t));
        if (!s->keyed || !s->tmp || !s->hashes || !s->scores || !s->offsets)
            return -1;
        s->rows = rows;
    }
    if (bytes > s->byte_room) {
        free(s->bytes);
        s->bytes = malloc((size_t)(bytes ? bytes : 1));
        s->byte_room = s->bytes ? bytes : 0;
        if (s->bytes == NULL)
            return -1;
    }
    return 0;
}

/* The rows first..stop-1 (one segment) put in score order, descending, stably: scores, hashes and document
 * ids moved within the segment's own bytes (its query codes are one). -1 when memory runs out. */
static int sort_segment(Chunk *c, Py_ssize_t first, Py_ssize_t stop, SegmentSpace *s)
{
    const Py_ssize_t n = stop - first;
    const int32_t base = c->doc_offsets[first], size = c->doc_offsets[stop] - base;
    if (segment_space_fit(s, n, size) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        s->keyed[k].key = descending_key(c->scores[first + k]);
        s->keyed[k].row = first + k;
    }
    sort_keyed(s->keyed, s->tmp, n);
    memcpy(s->hashes, c->hashes + first, (size_t)n * sizeof(uint64_t));
    memcpy(s->scores, c->scores + first, (size_t)n * sizeof(double));
    memcpy(s->offsets, c->doc_offsets + first, (size_t)(n + 1) * sizeof(int32_t));
    memcpy(s->bytes, c->doc_bytes + base, (size_t)size);
    int32_t at = base;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Py_ssize_t r = s->keyed[k].row - first;
        const int32_t length = s->offsets[r + 1] - s->offsets[r];
        memcpy(c->doc_bytes + at, s->bytes + (s->offsets[r] - base), (size_t)length);
        at += length;
        c->doc_offsets[first + k + 1] = at;
        c->hashes[first + k] = s->hashes[r];
        c->scores[first + k] = s->scores[r];
    }
    return 0;
}

/* whether the scores of rows first..stop-1 are non-increasing */
static int descending(const double *scores, Py_ssize_t first, Py_ssize_t stop)
{
    for (Py_ssize_t r = first + 1; r < stop; r++)
        if (scores[r] > scores[r - 1])
            return 0;
    return 1;
}

/* Each segment put in the tie-rule order: its rows by score descending (sorted here when they are not so
 * written), each run of tied rows by document id descending; whether every segment is then in that order
 * (its runs of ties short enough to sort here, and memory enough). */
static int rank_segments(Chunk *c)
{
    TieSpace *space = NULL;
    SegmentSpace sorting = {0};
    int ranked = 1;
    for (Py_ssize_t s = 0; ranked && s < c->segments; s++) {
        const Py_ssize_t first = c->seg_rows[s], stop = s + 1 < c->segments ? c->seg_rows[s + 1] : c->rows;
        if (!descending(c->scores, first, stop) && sort_segment(c, first, stop, &sorting) < 0)
            ranked = 0;
        for (Py_ssize_t a = first; ranked && a < stop;) {
            Py_ssize_t b = a + 1;
            while (b < stop && c->scores[b] == c->scores[a])
                b++;
            if (b - a > 1) {
                if (b - a > TIE_ROWS || c->doc_offsets[b] - c->doc_offsets[a] > TIE_BYTES)
                    ranked = 0;
                else if (space == NULL && (space = malloc(sizeof *space)) == NULL)
                    ranked = 0;
                else
                    sort_tied(c, a, b, space);
            }
            a = b;
        }
    }
    free(space);
    segment_space_free(&sorting);
    return ranked;
}

typedef struct {
    Py_ssize_t *rows; /* the row of each entry */
    Py_ssize_t *marks; /* entries marked `mark` are the current segment's documents */
    Py_ssize_t mark;
    size_t mask;      /* the part in use: twice the current segment's rows at least */
} Seen;

/* Whether the current row's document (hash h, bytes p[0:n]) is in the segment already; if not, added. */
static int seen_before(Seen *seen, const Chunk *c, uint64_t h, const uint8_t *p, Py_ssize_t n)
{
    size_t slot = (size_t)h & seen->mask;
    while (seen->marks[slot] == seen->mark) {
        const Py_ssize_t e = seen->rows[slot];
        if (c->hashes[e] == h && c->doc_offsets[e + 1] - c->doc_offsets[e] == n &&
            same_bytes(c->doc_bytes + c->doc_offsets[e], p, n))
            return 1;
        slot = (slot + 1) & seen->mask;
    }
    seen->marks[slot] = seen->mark;
    seen->rows[slot] = c->rows;
    return 0;
}

/* The hash set widened to twice its size, the current segment's rows (first..rows-1) entered again. */
static void widen_seen(Seen *seen, const Chunk *c, Py_ssize_t first)
{
    seen->mask = 2 * seen->mask + 1;
    seen->mark++;
    for (Py_ssize_t e = first; e < c->rows; e++) {
        size_t slot = (size_t)c->hashes[e] & seen->mask;
        while (seen->marks[slot] == seen->mark)
            slot = (slot + 1) & seen->mask;
        seen->marks[slot] = seen->mark;
        seen->rows[slot] = e;
    }
}

/* Read the lines of data[lo:hi] into the chunk's outputs (see the notes at the top). */
static int read_chunk(Chunk *c)
{
    const uint8_t *data = c->data;
    const Py_ssize_t hi = c->hi;
    Seen seen = {calloc((size_t)c->seen_limit, sizeof(Py_ssize_t)), calloc((size_t)c->seen_limit, sizeof(Py_ssize_t)),
                 0, MIN_SEEN - 1};
    if (seen.rows == NULL || seen.marks == NULL) {
        free(seen.rows);
        free(seen.marks);
        return STATUS_NOMEM;
    }
    int status = STATUS_OK;
    int checking = 1;
    Py_ssize_t used = 0; /* bytes of doc_bytes written */
    Py_ssize_t previous_start = -1, previous_length = -1;
    c->doc_offsets[0] = 0;
    Py_ssize_t i = c->lo;
    while (i < hi) {
        while (i < hi && is_space(data[i]))
            i++;
        if (i >= hi)
            break;
        if (data[i] == '#') { /* a comment line */
            i = line_end(data, i, hi);
            continue;
        }
        /* the fields: the first five kept; a sixth must follow (a tag), the rest of the line is ignored */
        Py_ssize_t starts[5], ends[5];
        int fields = 0;
        for (;;) {
            starts[fields] = i;
            i = ends[fields] = field_end(data, i, hi);
            fields++;
            while (i < hi && data[i] != '\n' && is_space(data[i]))
                i++;
            if (i >= hi || data[i] == '\n')
                break;
            if (fields == 5) {
                fields++;
                i = line_end(data, i, hi);
                break;
            }
        }
        if (fields < 6) {
            status = STATUS_REFUSED;
            goto done;
        }
        if (c->rows == c->room) {
            status = STATUS_FULL;
            goto done;
        }
        /* the query: a new segment where the id changes */
        const Py_ssize_t q0 = starts[0], q_length = ends[0] - starts[0];
        if (q_length != previous_length || !same_bytes(data + q0, data + previous_start, q_length)) {
            if (grow_segments(c) < 0) {
                status = STATUS_NOMEM;
                goto done;
            }
            c->seg_rows[c->segments] = c->rows;
            c->seg_starts[c->segments] = q0;
            c->seg_ends[c->segments] = ends[0];
            c->segments++;
            seen.mark++;
            previous_start = q0;
            previous_length = q_length;
        }
        const Py_ssize_t seg_first = c->seg_rows[c->segments - 1];
        if (checking && 2 * (size_t)(c->rows - seg_first + 1) > seen.mask + 1) { /* the set at most half full */
            if (2 * (seen.mask + 1) > (size_t)c->seen_limit)
                checking = 0; /* no more room: the caller checks the whole file */
            else
                widen_seen(&seen, c, seg_first);
        }
        /* the document: copied and hashed, checked as UTF-8, looked for among the segment's */
        const Py_ssize_t d_length = ends[2] - starts[2];
        const uint8_t *doc = data + starts[2];
        uint64_t high;
        const uint64_t h = copy_and_hash(doc, d_length, c->doc_bytes + used, &high);
        if (high && !valid_utf8(doc, d_length)) {
            status = STATUS_REFUSED;
            goto done;
        }
        if (checking && seen_before(&seen, c, h, doc, d_length)) {
            status = STATUS_REFUSED;
            goto done;
        }
        used += d_length;
        c->doc_offsets[c->rows + 1] = (int32_t)used;
        c->hashes[c->rows] = h;
        const Py_ssize_t s0 = starts[4], s1 = ends[4];
        /* the score */
        double value;
        if (parse_score(data + s0, s1 - s0, &value)) {
            c->scores[c->rows] = value;
        } else {
            if (c->slow == c->slow_room) {
                status = STATUS_TOO_MANY_SLOW;
                goto done;
            }
            c->slow_rows[c->slow] = c->rows;
            c->slow_starts[c->slow] = s0;
            c->slow_ends[c->slow] = s1;
            c->scores[c->rows] = 0.0;
            c->slow++;
        }
        c->rows++;
    }
    status = intern_queries(c);
    if (status == STATUS_OK) {
        c->checked = checking;
        c->ranked = c->slow == 0 && rank_segments(c);
    }
done:
    free(seen.rows);
    free(seen.marks);
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* reading qrels                                                                              */

#define MAX_LABEL 9007199254740992.0 /* 2^53: larger relevance values are the Python reader's errors */

/* C's atol of a field (no whitespace in it): the sign and leading digits, 0 without digits, into *value;
 * 0 when more than 18 significant digits would be needed (Python's int must judge: the caller refuses). */
static int field_atol(const uint8_t *p, Py_ssize_t n, int64_t *value)
{
    Py_ssize_t i = 0;
    const int negative = n > 0 && p[0] == '-';
    if (n > 0 && (p[0] == '+' || p[0] == '-'))
        i++;
    int64_t v = 0;
    int digits = 0;
    for (; i < n && (uint8_t)(p[i] - '0') <= 9; i++) {
        if ((digits || p[i] != '0') && ++digits > 18)
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    *value = negative ? -v : v;
    return 1;
}

/* The fields of the line at i (at its first field) up to four, their bounds into starts/ends; the position
 * after the line's last field; *fields: how many (5 for more than four). */
ALWAYS_INLINE Py_ssize_t qrels_fields(const uint8_t *data, Py_ssize_t i, Py_ssize_t hi, Py_ssize_t *starts,
                                      Py_ssize_t *ends, int *fields)
{
    *fields = 0;
    for (;;) {
        if (*fields == 4) {
            *fields = 5;
            return i;
        }
        starts[*fields] = i;
        i = ends[*fields] = field_end(data, i, hi);
        (*fields)++;
        while (i < hi && data[i] != '\n' && is_space(data[i]))
            i++;
        if (i >= hi || data[i] == '\n')
            return i;
    }
}

/* Read the qrels lines of data[lo:hi] into the chunk's outputs: codes, document ids, hashes, grades (scores)
 * and labels (see the notes at the top). */
static int read_qrels_lines(Chunk *c)
{
    const uint8_t *data = c->data;
    const Py_ssize_t hi = c->hi;
    Py_ssize_t used = 0, previous_start = -1, previous_length = -1;
    c->doc_offsets[0] = 0;
    for (Py_ssize_t i = c->lo; i < hi;) {
        while (i < hi && is_space(data[i]))
            i++;
        if (i >= hi)
            break;
        if (data[i] == '#') { /* a comment line */
            i = line_end(data, i, hi);
            continue;
        }
        Py_ssize_t starts[4], ends[4];
        int fields;
        i = qrels_fields(data, i, hi, starts, ends, &fields);
        if (fields != 4)
            return STATUS_REFUSED;
        if (c->rows == c->room)
            return STATUS_FULL;
        const Py_ssize_t q0 = starts[0], q_length = ends[0] - starts[0];
        if (q_length != previous_length || !same_bytes(data + q0, data + previous_start, q_length)) {
            if (grow_segments(c) < 0)
                return STATUS_NOMEM;
            c->seg_rows[c->segments] = c->rows;
            c->seg_starts[c->segments] = q0;
            c->seg_ends[c->segments] = ends[0];
            c->segments++;
            previous_start = q0;
            previous_length = q_length;
        }
        const Py_ssize_t d_length = ends[2] - starts[2];
        uint64_t high;
        c->hashes[c->rows] = copy_and_hash(data + starts[2], d_length, c->doc_bytes + used, &high);
        if (high && !valid_utf8(data + starts[2], d_length))
            return STATUS_REFUSED;
        used += d_length;
        c->doc_offsets[c->rows + 1] = (int32_t)used;
        const uint8_t *value = data + starts[3];
        const Py_ssize_t v_length = ends[3] - starts[3];
        double grade;
        if (!parse_score(value, v_length, &grade) || !(fabs(grade) <= MAX_LABEL) ||
            !field_atol(value, v_length, &c->labels[c->rows]))
            return STATUS_REFUSED;
        c->scores[c->rows] = grade;
        c->rows++;
    }
    return intern_queries(c);
}

/* ------------------------------------------------------------------------------------------ */
/* ordering a whole run                                                                       */

enum { ORDER_OK = 0, ORDER_DUPLICATE = 1, ORDER_NOMEM = -1, ORDER_BAD_CODE = -2, ORDER_BAD_OFFSETS = -3 };

typedef struct {
    Py_ssize_t n, n_queries;
    const int32_t *codes;
    const double *scores;
    const uint64_t *hashes;
    const int32_t *offsets32; /* one of the two: the document ids' offsets */
    const int64_t *offsets64;
    const uint8_t *bytes;
    Py_ssize_t n_bytes;
    int64_t *order;
} Whole;

ALWAYS_INLINE int64_t whole_offset(const Whole *w, Py_ssize_t i)
{
    return w->offsets32 ? w->offsets32[i] : w->offsets64[i];
}

/* whether row x's document id comes after row y's in strcmp order */
ALWAYS_INLINE int whole_doc_greater(const Whole *w, int64_t x, int64_t y)
{
    const int64_t a = whole_offset(w, x), a_len = whole_offset(w, x + 1) - a;
    const int64_t b = whole_offset(w, y), b_len = whole_offset(w, y + 1) - b;
    const int cmp = memcmp(w->bytes + a, w->bytes + b, (size_t)(a_len < b_len ? a_len : b_len));
    return cmp ? cmp > 0 : a_len > b_len;
}

ALWAYS_INLINE int whole_same_doc(const Whole *w, int64_t x, int64_t y)
{
    const int64_t a = whole_offset(w, x), a_len = whole_offset(w, x + 1) - a;
    const int64_t b = whole_offset(w, y), b_len = whole_offset(w, y + 1) - b;
    return a_len == b_len && memcmp(w->bytes + a, w->bytes + b, (size_t)a_len) == 0;
}

/* rows[0:n] (distinct documents) sorted by document id descending: insertion sort of runs of 16, merges */
static void sort_by_doc(const Whole *w, int64_t *rows, int64_t *tmp, Py_ssize_t n)
{
    enum { RUN = 16 };
    for (Py_ssize_t lo = 0; lo < n; lo += RUN) {
        const Py_ssize_t hi = lo + RUN < n ? lo + RUN : n;
        for (Py_ssize_t k = lo + 1; k < hi; k++) {
            const int64_t x = rows[k];
            Py_ssize_t j = k;
            for (; j > lo && whole_doc_greater(w, x, rows[j - 1]); j--)
                rows[j] = rows[j - 1];
            rows[j] = x;
        }
    }
    for (Py_ssize_t width = RUN; width < n; width *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {
            const Py_ssize_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = whole_doc_greater(w, rows[j], rows[i]) ? rows[j++] : rows[i++];
            while (i < mid)
                tmp[k++] = rows[i++];
            while (j < hi)
                tmp[k++] = rows[j++];
        }
        memcpy(rows, tmp, (size_t)n * sizeof *rows);
    }
}

/* The checks of the codes and offsets (the caller's arrays are not trusted). */
static int whole_valid(const Whole *w)
{
    for (Py_ssize_t r = 0; r < w->n; r++)
        if (w->codes[r] < 0 || w->codes[r] >= w->n_queries)
            return ORDER_BAD_CODE;
    if (whole_offset(w, 0) < 0 || whole_offset(w, w->n) > w->n_bytes)
        return ORDER_BAD_OFFSETS;
    for (Py_ssize_t r = 0; r < w->n; r++)
        if (whole_offset(w, r + 1) < whole_offset(w, r))
            return ORDER_BAD_OFFSETS;
    return ORDER_OK;
}

/* One query's rows (rows[0:m], in file order) checked for a repeated document (a hash set marked `mark`) and
 * put in the tie-rule order. */
static int order_query(const Whole *w, int64_t *rows, Py_ssize_t m, Keyed *keyed, Keyed *ktmp, int64_t *rtmp,
                       Seen *seen)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)m)
        cap *= 2;
    seen->mask = cap - 1;
    seen->mark++;
    for (Py_ssize_t k = 0; k < m; k++) {
        const int64_t r = rows[k];
        size_t slot = (size_t)w->hashes[r] & seen->mask;
        while (seen->marks[slot] == seen->mark) {
            const int64_t e = seen->rows[slot];
            if (w->hashes[e] == w->hashes[r] && whole_same_doc(w, e, r))
                return ORDER_DUPLICATE;
            slot = (slot + 1) & seen->mask;
        }
        seen->marks[slot] = seen->mark;
        seen->rows[slot] = r;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        keyed[k].key = descending_key(w->scores[rows[k]]);
        keyed[k].row = rows[k];
    }
    sort_keyed(keyed, ktmp, m);
    for (Py_ssize_t a = 0; a < m;) {
        Py_ssize_t b = a + 1;
        while (b < m && keyed[b].key == keyed[a].key)
            b++;
        for (Py_ssize_t k = a; k < b; k++)
            rows[k] = keyed[k].row;
        if (b - a > 1)
            sort_by_doc(w, rows + a, rtmp, b - a);
        a = b;
    }
    return ORDER_OK;
}

/* w->order: the rows by query code, then score descending, then document id descending (trec_eval's tie
 * rule); ORDER_DUPLICATE when a query lists a document twice. */
static int order_whole(Whole *w)
{
    int status = whole_valid(w);
    if (status != ORDER_OK)
        return status;
    int64_t *starts = calloc((size_t)w->n_queries + 1, sizeof(int64_t));
    if (starts == NULL)
        return ORDER_NOMEM;
    for (Py_ssize_t r = 0; r < w->n; r++)
        starts[w->codes[r] + 1]++;
    Py_ssize_t largest = 0;
    for (Py_ssize_t q = 0; q < w->n_queries; q++) {
        if (starts[q + 1] > largest)
            largest = starts[q + 1];
        starts[q + 1] += starts[q];
    }
    int64_t *at = malloc(((size_t)w->n_queries + 1) * sizeof(int64_t));
    Keyed *keyed = malloc((size_t)(largest ? largest : 1) * sizeof(Keyed));
    Keyed *ktmp = malloc((size_t)(largest ? largest : 1) * sizeof(Keyed));
    int64_t *rtmp = malloc((size_t)(largest ? largest : 1) * sizeof(int64_t));
    size_t cap = 16;
    while (cap < 2 * (size_t)largest)
        cap *= 2;
    Seen seen = {calloc(cap, sizeof(Py_ssize_t)), calloc(cap, sizeof(Py_ssize_t)), 0, cap - 1};
    if (at == NULL || keyed == NULL || ktmp == NULL || rtmp == NULL || seen.rows == NULL || seen.marks == NULL) {
        status = ORDER_NOMEM;
        goto done;
    }
    memcpy(at, starts, ((size_t)w->n_queries + 1) * sizeof(int64_t));
    for (Py_ssize_t r = 0; r < w->n; r++) /* rows grouped by query, in file order (a counting sort) */
        w->order[at[w->codes[r]]++] = r;
    for (Py_ssize_t q = 0; status == ORDER_OK && q < w->n_queries; q++)
        status = order_query(w, w->order + starts[q], starts[q + 1] - starts[q], keyed, ktmp, rtmp, &seen);
done:
    free(starts);
    free(at);
    free(keyed);
    free(ktmp);
    free(rtmp);
    free(seen.rows);
    free(seen.marks);
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* Python                                                                                     */

enum { R_DATA, R_CODES, R_OFFSETS, R_BYTES, R_HASHES, R_SCORES, R_SLOW_ROWS, R_SLOW_STARTS, R_SLOW_ENDS, R_ARGS };

/* the structural checks of read_trec_run's arguments: NULL, or what is wrong */
static const char *check_read_args(const Arg *a, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t seen_limit)
{
    const Py_ssize_t size = a[R_DATA].n;
    if (lo < 0 || hi < lo || hi > size)
        return "lo and hi must satisfy 0 <= lo <= hi <= len(data)";
    if (hi - lo > INT32_MAX)
        return "a chunk must be shorter than 2**31 bytes (int32 offsets)";
    if (a[R_OFFSETS].n < 1)
        return "doc_offsets must have room for one offset at least";
    if (a[R_BYTES].n < hi - lo)
        return "doc_bytes must have room for hi - lo bytes";
    if (a[R_SLOW_STARTS].n != a[R_SLOW_ROWS].n || a[R_SLOW_ENDS].n != a[R_SLOW_ROWS].n)
        return "slow_rows, slow_starts and slow_ends must have one length";
    if (seen_limit < MIN_SEEN || (seen_limit & (seen_limit - 1)))
        return "seen_limit must be a power of two of at least 1024";
    return NULL;
}

/* the rows the outputs have room for */
static Py_ssize_t row_room(const Arg *a)
{
    Py_ssize_t room = a[R_OFFSETS].n - 1;
    const int outputs[] = {R_CODES, R_HASHES, R_SCORES};
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++)
        if (a[outputs[k]].n < room)
            room = a[outputs[k]].n;
    return room;
}

/* the chunk's distinct query ids as a list of str */
static PyObject *query_list(const Chunk *c)
{
    PyObject *list = PyList_New(c->queries);
    for (Py_ssize_t k = 0; list != NULL && k < c->queries; k++) {
        PyObject *qid = PyUnicode_DecodeUTF8((const char *)c->data + c->q_starts[k], c->q_lengths[k], "strict");
        if (qid == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, k, qid);
    }
    return list;
}

static PyObject *py_read_trec_run(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"data", "lo", "hi", "codes", "doc_offsets", "doc_bytes", "hashes", "scores",
                             "slow_rows", "slow_starts", "slow_ends", "seen_limit", NULL};
    Arg a[R_ARGS] = {
        [R_DATA] = IN("data", UNSIGNED, SIZE_1),
        [R_CODES] = OUT("codes", SIGNED, SIZE_4),
        [R_OFFSETS] = OUT("doc_offsets", SIGNED, SIZE_4),
        [R_BYTES] = OUT("doc_bytes", UNSIGNED, SIZE_1),
        [R_HASHES] = OUT("hashes", UNSIGNED, SIZE_8),
        [R_SCORES] = OUT("scores", FLOAT, SIZE_8),
        [R_SLOW_ROWS] = OUT("slow_rows", SIGNED, SIZE_8),
        [R_SLOW_STARTS] = OUT("slow_starts", SIGNED, SIZE_8),
        [R_SLOW_ENDS] = OUT("slow_ends", SIGNED, SIZE_8),
    };
    Py_ssize_t lo, hi, seen_limit;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OnnOOOOOOOOn:read_trec_run", kwlist, &a[R_DATA].obj, &lo, &hi,
                                     &a[R_CODES].obj, &a[R_OFFSETS].obj, &a[R_BYTES].obj, &a[R_HASHES].obj,
                                     &a[R_SCORES].obj, &a[R_SLOW_ROWS].obj, &a[R_SLOW_STARTS].obj,
                                     &a[R_SLOW_ENDS].obj, &seen_limit))
        return NULL;
    if (acquire_args(a, R_ARGS) < 0)
        return NULL;
    const char *problem = check_read_args(a, lo, hi, seen_limit);
    if (problem != NULL) {
        release_args(a, R_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Chunk c = {
        .data = BUF(a, R_DATA, const uint8_t), .lo = lo, .hi = hi, .room = row_room(a),
        .slow_room = a[R_SLOW_ROWS].n, .seen_limit = seen_limit,
        .codes = BUF(a, R_CODES, int32_t), .doc_offsets = BUF(a, R_OFFSETS, int32_t),
        .doc_bytes = BUF(a, R_BYTES, uint8_t), .hashes = BUF(a, R_HASHES, uint64_t), .scores = BUF(a, R_SCORES, double),
        .slow_rows = BUF(a, R_SLOW_ROWS, int64_t), .slow_starts = BUF(a, R_SLOW_STARTS, int64_t),
        .slow_ends = BUF(a, R_SLOW_ENDS, int64_t),
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = read_chunk(&c);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (status == STATUS_NOMEM) {
        PyErr_NoMemory();
    } else if (status == STATUS_FULL) {
        PyErr_Format(PyExc_ValueError, "codes, doc_offsets, hashes and scores have room for %zd rows; the chunk "
                     "has more", c.room);
    } else if (status != STATUS_OK) {
        result = Py_BuildValue("(innn[]OO)", status, c.rows, c.slow, c.segments, Py_False, Py_False);
    } else {
        PyObject *qids = query_list(&c);
        if (qids == NULL) { /* not UTF-8 after all: cannot happen (checked), but refused as such */
            PyErr_Clear();
            result = Py_BuildValue("(innn[]OO)", STATUS_REFUSED, c.rows, c.slow, c.segments, Py_False, Py_False);
        } else {
            result = Py_BuildValue("(innnNOO)", status, c.rows, c.slow, c.segments, qids,
                                   c.checked ? Py_True : Py_False, c.ranked ? Py_True : Py_False);
        }
    }
    chunk_free(&c);
    release_args(a, R_ARGS);
    return result;
}

enum { Q_DATA, Q_CODES, Q_OFFSETS, Q_BYTES, Q_HASHES, Q_GRADES, Q_LABELS, Q_ARGS };

/* the rows read_trec_qrels's outputs have room for */
static Py_ssize_t qrels_room(const Arg *a)
{
    Py_ssize_t room = a[Q_OFFSETS].n - 1;
    const int outputs[] = {Q_CODES, Q_HASHES, Q_GRADES, Q_LABELS};
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++)
        if (a[outputs[k]].n < room)
            room = a[outputs[k]].n;
    return room;
}

static PyObject *py_read_trec_qrels(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"data", "lo", "hi", "codes", "doc_offsets", "doc_bytes", "hashes", "grades", "labels",
                             NULL};
    Arg a[Q_ARGS] = {
        [Q_DATA] = IN("data", UNSIGNED, SIZE_1),
        [Q_CODES] = OUT("codes", SIGNED, SIZE_4),
        [Q_OFFSETS] = OUT("doc_offsets", SIGNED, SIZE_4),
        [Q_BYTES] = OUT("doc_bytes", UNSIGNED, SIZE_1),
        [Q_HASHES] = OUT("hashes", UNSIGNED, SIZE_8),
        [Q_GRADES] = OUT("grades", FLOAT, SIZE_8),
        [Q_LABELS] = OUT("labels", SIGNED, SIZE_8),
    };
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OnnOOOOOO:read_trec_qrels", kwlist, &a[Q_DATA].obj, &lo, &hi,
                                     &a[Q_CODES].obj, &a[Q_OFFSETS].obj, &a[Q_BYTES].obj, &a[Q_HASHES].obj,
                                     &a[Q_GRADES].obj, &a[Q_LABELS].obj))
        return NULL;
    if (acquire_args(a, Q_ARGS) < 0)
        return NULL;
    const char *problem = NULL;
    if (lo < 0 || hi < lo || hi > a[Q_DATA].n)
        problem = "lo and hi must satisfy 0 <= lo <= hi <= len(data)";
    else if (hi - lo > INT32_MAX)
        problem = "qrels must be shorter than 2**31 bytes (int32 offsets)";
    else if (a[Q_OFFSETS].n < 1)
        problem = "doc_offsets must have room for one offset at least";
    else if (a[Q_BYTES].n < hi - lo)
        problem = "doc_bytes must have room for hi - lo bytes";
    if (problem != NULL) {
        release_args(a, Q_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Chunk c = {
        .data = BUF(a, Q_DATA, const uint8_t), .lo = lo, .hi = hi, .room = qrels_room(a),
        .codes = BUF(a, Q_CODES, int32_t), .doc_offsets = BUF(a, Q_OFFSETS, int32_t),
        .doc_bytes = BUF(a, Q_BYTES, uint8_t), .hashes = BUF(a, Q_HASHES, uint64_t), .scores = BUF(a, Q_GRADES, double),
        .labels = BUF(a, Q_LABELS, int64_t),
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = read_qrels_lines(&c);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (status == STATUS_NOMEM) {
        PyErr_NoMemory();
    } else if (status == STATUS_FULL) {
        PyErr_Format(PyExc_ValueError, "codes, doc_offsets, hashes, grades and labels have room for %zd rows; the "
                     "qrels have more", c.room);
    } else if (status != STATUS_OK) {
        result = Py_BuildValue("(in[])", status, c.rows);
    } else {
        PyObject *qids = query_list(&c);
        if (qids == NULL) { /* not UTF-8 after all: cannot happen (checked), but refused as such */
            PyErr_Clear();
            result = Py_BuildValue("(in[])", STATUS_REFUSED, c.rows);
        } else {
            result = Py_BuildValue("(inN)", status, c.rows, qids);
        }
    }
    chunk_free(&c);
    release_args(a, Q_ARGS);
    return result;
}

/* the pieces, for the tests: one bytes-like argument each */
static int take_bytes(PyObject *obj, Py_buffer *view)
{
    return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS);
}

static PyObject *py_string_hash(PyObject *self, PyObject *obj)
{
    (void)self;
    Py_buffer view;
    if (take_bytes(obj, &view) < 0)
        return NULL;
    const uint64_t h = string_hash(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *py_parse_score(PyObject *self, PyObject *obj)
{
    (void)self;
    Py_buffer view;
    if (take_bytes(obj, &view) < 0)
        return NULL;
    double value;
    const int ok = parse_score(view.buf, view.len, &value);
    PyBuffer_Release(&view);
    if (!ok)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(value);
}

static PyObject *py_valid_utf8(PyObject *self, PyObject *obj)
{
    (void)self;
    Py_buffer view;
    if (take_bytes(obj, &view) < 0)
        return NULL;
    const int valid = valid_utf8(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(valid);
}

enum { O_CODES, O_SCORES, O_HASHES, O_OFFSETS, O_BYTES, O_ORDER, O_ARGS };

static PyObject *py_order_run(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"codes", "n_queries", "scores", "hashes", "doc_offsets", "doc_bytes", "order", NULL};
    Arg a[O_ARGS] = {
        [O_CODES] = IN("codes", SIGNED, SIZE_4),
        [O_SCORES] = IN("scores", FLOAT, SIZE_8),
        [O_HASHES] = IN("hashes", UNSIGNED, SIZE_8),
        [O_OFFSETS] = IN("doc_offsets", SIGNED, SIZE_4 | SIZE_8),
        [O_BYTES] = IN("doc_bytes", UNSIGNED, SIZE_1),
        [O_ORDER] = OUT("order", SIGNED, SIZE_8),
    };
    Py_ssize_t n_queries;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OnOOOOO:order_run", kwlist, &a[O_CODES].obj, &n_queries,
                                     &a[O_SCORES].obj, &a[O_HASHES].obj, &a[O_OFFSETS].obj, &a[O_BYTES].obj,
                                     &a[O_ORDER].obj))
        return NULL;
    if (acquire_args(a, O_ARGS) < 0)
        return NULL;
    const Py_ssize_t n = a[O_CODES].n;
    const char *problem = NULL;
    if (a[O_SCORES].n != n || a[O_HASHES].n != n || a[O_ORDER].n != n)
        problem = "codes, scores, hashes and order must have one length";
    else if (a[O_OFFSETS].n != n + 1)
        problem = "doc_offsets must have one offset more than codes";
    else if (n_queries < 0 || n_queries > INT32_MAX)
        problem = "n_queries must be between 0 and 2**31 - 1";
    if (problem != NULL) {
        release_args(a, O_ARGS);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    const int wide = a[O_OFFSETS].view.itemsize == 8;
    Whole w = {
        .n = n, .n_queries = n_queries, .codes = BUF(a, O_CODES, const int32_t),
        .scores = BUF(a, O_SCORES, const double), .hashes = BUF(a, O_HASHES, const uint64_t),
        .offsets32 = wide ? NULL : BUF(a, O_OFFSETS, const int32_t),
        .offsets64 = wide ? BUF(a, O_OFFSETS, const int64_t) : NULL,
        .bytes = BUF(a, O_BYTES, const uint8_t), .n_bytes = a[O_BYTES].n, .order = BUF(a, O_ORDER, int64_t),
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = order_whole(&w);
    Py_END_ALLOW_THREADS
    release_args(a, O_ARGS);
    switch (status) {
    case ORDER_NOMEM:
        return PyErr_NoMemory();
    case ORDER_BAD_CODE:
        PyErr_SetString(PyExc_ValueError, "codes must lie in 0 .. n_queries - 1");
        return NULL;
    case ORDER_BAD_OFFSETS:
        PyErr_SetString(PyExc_ValueError, "doc_offsets must be non-decreasing, from 0 or more, within doc_bytes");
        return NULL;
    default:
        return PyLong_FromLong(status);
    }
}

PyMethodDef core_runreader_methods[] = {
    {"read_trec_run", (PyCFunction)(void (*)(void))py_read_trec_run, METH_VARARGS | METH_KEYWORDS,
     "read_trec_run(data, lo, hi, codes, doc_offsets, doc_bytes, hashes, scores, slow_rows, slow_starts, "
     "slow_ends, seen_limit) -> (status, rows, slow, segments, qids, checked, ranked)\n\n"
     "Read the TREC run lines of data[lo:hi] (lo at a line's start): each row's query code (int32), document id "
     "(doc_bytes[doc_offsets[r]:doc_offsets[r + 1]]), its hash and its score, or its score's text bounds in "
     "slow_* for Python's float. status 0 read, 1 refused (the Python reader must name the line), 2 too many "
     "scores for Python's float; qids: the chunk's query ids in first-appearance order."},
    {"read_trec_qrels", (PyCFunction)(void (*)(void))py_read_trec_qrels, METH_VARARGS | METH_KEYWORDS,
     "read_trec_qrels(data, lo, hi, codes, doc_offsets, doc_bytes, hashes, grades, labels) -> (status, rows, qids)"
     "\n\nRead the TREC qrels lines of data[lo:hi] (qid iteration docid relevance): each row's query code (int32), "
     "document id (doc_bytes[doc_offsets[r]:doc_offsets[r + 1]]), its hash, its relevance as a number (grades) "
     "and as C's atol reads it (labels). status 0 read, 1 refused (the Python reader must name the line); qids: "
     "the query ids in first-appearance order."},
    {"order_run", (PyCFunction)(void (*)(void))py_order_run, METH_VARARGS | METH_KEYWORDS,
     "order_run(codes, n_queries, scores, hashes, doc_offsets, doc_bytes, order) -> status\n\n"
     "order: the rows by query code, then score descending, then document id descending (trec_eval's tie rule); "
     "status 0, or 1 when a query lists a document twice (order is then incomplete). doc_offsets: int32 or int64 "
     "offsets of the document ids in doc_bytes."},
    {"string_hash", py_string_hash, METH_O,
     "string_hash(data) -> int\n\nThe hash bm25lab.engine.columns.string_hashes gives these UTF-8 bytes."},
    {"parse_score", py_parse_score, METH_O,
     "parse_score(data) -> float | None\n\nThe score these bytes spell, when the reader reads it itself (exactly "
     "Python's float, -0.0 read as 0.0); None when it leaves it to Python's float."},
    {"valid_utf8", py_valid_utf8, METH_O,
     "valid_utf8(data) -> bool\n\nWhether these bytes are UTF-8 as Python's strict decoder reads it."},
    {NULL, NULL, 0, NULL},
};
