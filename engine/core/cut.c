/*
 * cut.c: jieba 0.42.1's precise cut (jieba.Tokenizer.lcut, HMM on) of whole texts, and the terms the
 * tokenizer's zh and auto analyses make of it for many texts in one call.
 *
 * The specification is the Python replica bm25lab.engine.tokenization._cut_precise (itself tested
 * equal to jieba's lcut): the same steps over the code points of a text, its jieba blocks (maximal
 * runs of re_han_default: U+4E00..U+9FD5, ASCII letters and digits, +#&._%-) cut so:
 *
 * 1. the route: from the end of a block, each position takes the dictionary word starting there
 *    whose log(freq) - log(total) + value(after it) is largest (ties to the longer word); a position
 *    no word of nonzero frequency starts at is a single character scored log(1) - log(total) + ...
 *    The logarithms are Python's math.log, computed when the dictionary arrays are made; sums in
 *    Python's order. The prefix dictionary (every word and every prefix of one, prefixes with
 *    frequency 0) is a trie kept in an open-addressing hash table: a key is its parent key and its
 *    last character;
 * 2. runs of single characters of the route: one character is a word; a run that is itself a word
 *    of the dictionary gives its characters; any other run goes through jieba's HMM (finalseg.cut):
 *    its Han stretches (U+4E00..U+9FD5) through the Viterbi decoder of B/E/M/S states (ties to the
 *    larger state letter, as Python's max over (prob, state) tuples; the last state the better of E
 *    and S, ties to S), the rest cut by [a-zA-Z0-9]+(?:\.\d+)?%? into matches and what lies between.
 *
 * Every character outside a block is a word of its own, but a carriage return and line feed
 * (re_skip_default) is one.
 *
 * The terms (cut_terms): zh cuts each whole text; auto (tokenization._analyse_auto) cuts each run of
 * Han characters (U+3400..4DBF, U+4E00..9FFF, U+F900..FAFF, U+20000..3134F) on its own (its jieba
 * blocks are then its runs of U+4E00..U+9FD5) and gives the text between the runs to the English
 * path. A word of the cut is dropped unless it holds a letter or digit (classes & ALNUM: str.isalnum
 * of every BMP character), lowercased through `lower` (ord(c.lower()) of every BMP character, 0 where
 * Python must tell), dropped when the stopword trie marks it. A stretch for the English path whose
 * characters are all ASCII, U+2018/U+2019 (apostrophes) or BMP characters no English rule looks at
 * (not classes & ENGLISH) is split into [A-Za-z0-9]+(?:'[A-Za-z0-9]+)* words here, lowercased, a final
 * 's dropped, stopwords dropped. What Python must finish is listed in `fixups`, rows of (kind, text,
 * start, end) over the output: TELL a word with a character beyond the BMP or one `lower` leaves to
 * Python; STEM an English word with a letter or apostrophe (Snowball stemming, when asked); ENGLISH a
 * stretch for the English path that holds other characters, copied as it is (no separator after it).
 *
 * Python API (buffer protocol only; the GIL is released while cutting):
 *   build_trie(cps, starts, lengths, table, parent, last) -> None
 *   cut_text(text, dictionary, ends) -> int
 *   cut_terms(text, text_ends, dictionary, lower, classes, stop, auto, stem, out, counts, fixups)
 *       -> (written, fixups written)
 * dictionary: (table, parent, last, freq, log_freq, emit, start_p, trans, prev, log_total);
 * stop: (table, parent, last, flag). A trie's key ids are checked as they are read: a hostile table
 * raises ValueError, never reads outside the arrays.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* constants                                                                                  */

#define HAN_FIRST 0x4E00       /* finalseg's re_han: [\u4E00-\u9FD5] */
#define HAN_LAST 0x9FD5
#define HAN_SPAN (HAN_LAST - HAN_FIRST + 1)
#define BMP 65536
#define ROOT (-1)              /* the parent of one-character keys */
#define SEPARATOR 10           /* "\n": after every term written (no term holds one) */
#define CR 13
#define LF 10
#define APOSTROPHE 39

/* the HMM states in jieba's letter order, so that comparing numbers compares letters: B < E < M < S */
enum { B, E, M, S, N_STATES };

/* classes: bits of every BMP character */
enum { ALNUM = 1, ENGLISH = 2 };

/* fixups: what Python finishes */
enum { TELL = 1, STEM = 2, ENGLISH_TEXT = 3, FIXUP_FIELDS = 4 };

/* errors of the work done without the GIL */
enum { OK = 0, NOMEM = -1, BAD_KEY = -2, MISSING_PREFIX = -3, FULL = -4 };

/* ------------------------------------------------------------------------------------------ */
/* the trie                                                                                   */

typedef struct {
    const int64_t *table;  /* slot -> key id, negative: empty; a power of two long */
    uint64_t mask;
    const int64_t *parent; /* each key's parent key (ROOT for one character) */
    const int64_t *last;   /* each key's last character */
    int64_t n_keys;
} Trie;

static inline uint64_t slot_of(int64_t parent, uint32_t c, uint64_t mask)
{
    uint64_t h = (uint64_t)(parent + 1) * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)c;
    h = (h ^ (h >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (h ^ (h >> 31)) & mask;
}

/* The key that extends key `node` (ROOT: the empty key) by `c`; -1 if there is none; BAD_KEY if the
 * table holds a key id that is not one. A table with no empty slot is searched once round. */
static inline int64_t child(const Trie *t, int64_t node, uint32_t c)
{
    uint64_t slot = slot_of(node, c, t->mask);
    for (uint64_t probes = 0; probes <= t->mask; probes++) {
        const int64_t e = t->table[slot];
        if (e < 0)
            return -1;
        if (e >= t->n_keys)
            return BAD_KEY;
        if (t->parent[e] == node && t->last[e] == (int64_t)c)
            return e;
        slot = (slot + 1) & t->mask;
    }
    return -1;
}

/* The key of text[a:b], a < b (-1: not a key; BAD_KEY). */
static int64_t key_of(const Trie *t, const uint32_t *text, int64_t a, int64_t b)
{
    int64_t node = ROOT;
    for (int64_t j = a; j < b; j++) {
        node = child(t, node, text[j]);
        if (node < 0)
            return node;
    }
    return node;
}

/* Add keys cps[starts[i]:starts[i] + lengths[i]] shortest first (a stable counting sort by length, as
 * numpy's mergesort), so that a parent is always there before its children; MISSING_PREFIX when a
 * key's prefix is not a key. table is all -1 and holds more slots than keys. */
static int build_trie(const uint32_t *cps, const int64_t *starts, const int64_t *lengths, int64_t n,
                      int64_t max_length, int64_t *table, uint64_t mask, int64_t *parent, int64_t *last)
{
    int64_t *first = calloc((size_t)max_length + 2, sizeof *first);
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (first == NULL || order == NULL) {
        free(first);
        free(order);
        return NOMEM;
    }
    for (int64_t i = 0; i < n; i++)
        first[lengths[i] + 1]++;
    for (int64_t len = 1; len <= max_length + 1; len++)
        first[len] += first[len - 1];
    for (int64_t i = 0; i < n; i++)
        order[first[lengths[i]]++] = i;
    free(first);
    const Trie t = {table, mask, parent, last, n};
    int status = OK;
    for (int64_t k = 0; k < n && status == OK; k++) {
        const int64_t i = order[k];
        const int64_t end = starts[i] + lengths[i] - 1;
        int64_t node = ROOT;
        for (int64_t j = starts[i]; j < end && status == OK; j++) {
            node = child(&t, node, cps[j]);
            if (node < 0)
                status = MISSING_PREFIX;
        }
        if (status != OK)
            break;
        const uint32_t c = cps[end];
        uint64_t slot = slot_of(node, c, mask);
        while (table[slot] >= 0)
            slot = (slot + 1) & mask;
        table[slot] = i;
        parent[i] = node;
        last[i] = c;
    }
    free(order);
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* the cut                                                                                    */

typedef struct {
    Trie trie;
    const int64_t *freq;
    const double *log_freq;  /* math.log(freq), 0.0 for a prefix */
    double log_total;
    const double *emit;      /* [state][character - HAN_FIRST] */
    const double *start_p;   /* [state] */
    const double *trans;     /* [from][to] */
    const int64_t *prev;     /* [state][2]: finalseg.PrevStatus */
} Dictionary;

/* A word sink: called with the end of each word, in order (the word starts where the last ended). */
typedef int (*Sink)(void *ctx, int64_t end);

/* A cut in progress: the dictionary, the work arrays (grown to the longest block so far) and the sink. */
typedef struct {
    const Dictionary *d;
    const uint32_t *text;
    int (*in_block)(uint32_t c);
    Sink sink;
    void *ctx;
    int64_t cap;
    double *value;    /* route: best value from each position (cap + 1) */
    int64_t *end;     /* route: last position of the word taken at each position (cap + 1) */
    double *v;        /* Viterbi: [t][state] */
    int8_t *back;     /* Viterbi: the best previous state of [t][state] */
    int8_t *states;
} Cut;

static void free_cut(Cut *k)
{
    free(k->value);
    free(k->end);
    free(k->v);
    free(k->back);
    free(k->states);
    k->value = NULL;
    k->end = NULL;
    k->v = NULL;
    k->back = NULL;
    k->states = NULL;
    k->cap = 0;
}

/* Work arrays for blocks of `size` characters. */
static int reserve(Cut *k, int64_t size)
{
    if (size <= k->cap)
        return OK;
    if (size > PY_SSIZE_T_MAX / 64)
        return NOMEM; /* the arrays' bytes would overflow */
    int64_t cap = k->cap > 0 ? k->cap : 64;
    while (cap < size)
        cap *= 2;
    free_cut(k);
    const size_t n = (size_t)cap;
    k->value = malloc((n + 1) * sizeof *k->value);
    k->end = malloc((n + 1) * sizeof *k->end);
    k->v = malloc(n * N_STATES * sizeof *k->v);
    k->back = malloc(n * N_STATES * sizeof *k->back);
    k->states = malloc(n * sizeof *k->states);
    if (!k->value || !k->end || !k->v || !k->back || !k->states) {
        free_cut(k);
        return NOMEM;
    }
    k->cap = cap;
    return OK;
}

static inline int is_han(uint32_t c) { return c >= HAN_FIRST && c <= HAN_LAST; }
static inline int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static inline int is_alnum(uint32_t c) { return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* jieba's re_han_default: the blocks of the zh cut */
static int in_jieba_block(uint32_t c)
{
    return is_han(c) || is_alnum(c) || c == '+' || c == '#' || c == '&' || c == '.' || c == '_' || c == '%' ||
           c == '-';
}

/* the blocks of a Han run of auto (its only re_han_default characters) */
static int in_han_block(uint32_t c) { return is_han(c); }

/* auto's Han characters (tokenization._HAN_RANGES) */
static inline int is_auto_han(uint32_t c)
{
    return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0x20000 && c <= 0x3134F);
}

/* end[i - a]: the last position of the word the best route takes at i (a <= i < b). */
static int route(Cut *k, int64_t a, int64_t b)
{
    const Dictionary *d = k->d;
    const uint32_t *text = k->text;
    const int64_t size = b - a;
    double *value = k->value;
    int64_t *end = k->end;
    value[size] = 0.0;
    for (int64_t start = size - 1; start >= 0; start--) {
        double best_value = 0.0;
        int64_t best_end = start;
        int found = 0;
        int64_t node = child(&d->trie, ROOT, text[a + start]);
        int64_t stop = start;
        while (node >= 0) {
            if (d->freq[node] != 0) {
                const double candidate = d->log_freq[node] - d->log_total + value[stop + 1];
                if (!found || candidate > best_value || (candidate == best_value && stop > best_end)) {
                    best_value = candidate;
                    best_end = stop;
                    found = 1;
                }
            }
            stop++;
            if (stop >= size)
                break;
            node = child(&d->trie, node, text[a + stop]);
        }
        if (node == BAD_KEY)
            return BAD_KEY;
        if (!found) /* log(freq or 1): freq is 0 or the character no key */
            best_value = 0.0 - d->log_total + value[start + 1];
        value[start] = best_value;
        end[start] = best_end;
    }
    return OK;
}

/* finalseg.viterbi of the Han characters text[a:b]: their states into k->states. */
static void viterbi(Cut *k, int64_t a, int64_t b)
{
    const Dictionary *d = k->d;
    const uint32_t *text = k->text;
    const int64_t n = b - a;
    double *v = k->v;
    int8_t *back = k->back;
    for (int y = 0; y < N_STATES; y++)
        v[y] = d->start_p[y] + d->emit[y * HAN_SPAN + (text[a] - HAN_FIRST)];
    for (int64_t t = 1; t < n; t++) {
        const uint32_t column = text[a + t] - HAN_FIRST;
        const double *before = v + (t - 1) * N_STATES;
        for (int y = 0; y < N_STATES; y++) {
            const double em = d->emit[y * HAN_SPAN + column];
            double best = 0.0;
            int best_state = -1;
            for (int c = 0; c < 2; c++) {
                const int y0 = (int)d->prev[y * 2 + c];
                const double prob = before[y0] + d->trans[y0 * N_STATES + y] + em;
                if (best_state < 0 || prob > best || (prob == best && y0 > best_state)) {
                    best = prob;
                    best_state = y0;
                }
            }
            v[t * N_STATES + y] = best;
            back[t * N_STATES + y] = (int8_t)best_state;
        }
    }
    const double *final = v + (n - 1) * N_STATES;
    int state = final[S] > final[E] || final[S] == final[E] ? S : E; /* ties: 'S' > 'E' */
    k->states[n - 1] = (int8_t)state;
    for (int64_t t = n - 1; t > 0; t--) {
        state = back[t * N_STATES + state];
        k->states[t - 1] = (int8_t)state;
    }
}

/* The end of [a-zA-Z0-9]+(?:\.\d+)?%? matched at p (an ASCII letter or digit), within b. */
static int64_t skip_match(const uint32_t *text, int64_t p, int64_t b)
{
    int64_t q = p;
    while (q < b && is_alnum(text[q]))
        q++;
    if (q + 1 < b && text[q] == '.' && is_digit(text[q + 1])) {
        q++;
        while (q < b && is_digit(text[q]))
            q++;
    }
    if (q < b && text[q] == '%')
        q++;
    return q;
}

/* finalseg.cut of text[a:b]. */
static int hmm_cut(Cut *k, int64_t a, int64_t b)
{
    const uint32_t *text = k->text;
    int64_t p = a;
    int status = OK;
    while (p < b && status == OK) {
        int64_t q = p;
        if (is_han(text[p])) {
            while (q < b && is_han(text[q]))
                q++;
            viterbi(k, p, q);
            int64_t next = p;
            for (int64_t i = 0; i < q - p && status == OK; i++) {
                const int s = k->states[i];
                if (s == E || s == S) {
                    next = p + i + 1;
                    status = k->sink(k->ctx, next);
                }
            }
            if (next < q && status == OK)
                status = k->sink(k->ctx, q);
        } else {
            while (q < b && !is_han(text[q]))
                q++;
            int64_t r = p; /* the stretch p..q: matches of the skip pattern and what lies between them */
            while (r < q && status == OK) {
                if (is_alnum(text[r])) {
                    r = skip_match(text, r, q);
                } else {
                    while (r < q && !is_alnum(text[r]))
                        r++;
                }
                status = k->sink(k->ctx, r);
            }
        }
        p = q;
    }
    return status;
}

/* A run text[a:b] of single characters of the route: one word, its characters when the run is a
 * dictionary word, else the HMM's words. */
static int flush(Cut *k, int64_t a, int64_t b)
{
    if (b - a == 1)
        return k->sink(k->ctx, b);
    const int64_t key = key_of(&k->d->trie, k->text, a, b);
    if (key == BAD_KEY)
        return BAD_KEY;
    if (key >= 0 && k->d->freq[key] > 0) {
        int status = OK;
        for (int64_t i = a + 1; i <= b && status == OK; i++)
            status = k->sink(k->ctx, i);
        return status;
    }
    return hmm_cut(k, a, b);
}

/* jieba's __cut_DAG of the block text[p:b]. */
static int cut_block(Cut *k, int64_t p, int64_t b)
{
    int status = reserve(k, b - p);
    if (status == OK)
        status = route(k, p, b);
    int64_t position = 0;
    int64_t pending = -1; /* where the current run of single characters began */
    while (status == OK && position < b - p) {
        const int64_t after = k->end[position] + 1;
        if (after - position == 1) {
            if (pending < 0)
                pending = position;
        } else {
            if (pending >= 0) {
                status = flush(k, p + pending, p + position);
                pending = -1;
            }
            if (status == OK)
                status = k->sink(k->ctx, p + after);
        }
        position = after;
    }
    if (status == OK && pending >= 0)
        status = flush(k, p + pending, b);
    return status;
}

/* The words of text[a:b] to the sink: its blocks (maximal runs of k->in_block) cut by the route, every
 * other character a word but a carriage return and line feed, one word. */
static int cut_span(Cut *k, int64_t a, int64_t b)
{
    const uint32_t *text = k->text;
    int64_t p = a;
    int status = OK;
    while (p < b && status == OK) {
        if (!k->in_block(text[p])) {
            const int64_t q = text[p] == CR && p + 1 < b && text[p + 1] == LF ? p + 2 : p + 1;
            status = k->sink(k->ctx, q);
            p = q;
            continue;
        }
        int64_t q = p;
        while (q < b && k->in_block(text[q]))
            q++;
        status = cut_block(k, p, q);
        p = q;
    }
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* cut_text: the ends of the words                                                            */

typedef struct {
    int64_t *ends;
    int64_t n;
    int64_t cap;
} Ends;

static int add_end(void *ctx, int64_t end)
{
    Ends *e = ctx;
    if (e->n >= e->cap)
        return FULL;
    e->ends[e->n++] = end;
    return OK;
}

/* ------------------------------------------------------------------------------------------ */
/* cut_terms: the terms                                                                       */

typedef struct {
    const uint32_t *text;
    const uint32_t *lower;   /* BMP */
    const uint8_t *classes;  /* BMP */
    Trie stop;
    const uint8_t *stop_flag;
    int stem;
    uint32_t *out;
    int64_t n_out, out_cap;
    int64_t *counts;
    int64_t *fixups;
    int64_t n_fixups, fixup_cap;
    int64_t text_no;
    int64_t start;           /* where the next word of the cut starts */
} Terms;

static int add_fixup(Terms *t, int64_t kind, int64_t a, int64_t b)
{
    if (t->n_fixups >= t->fixup_cap)
        return FULL;
    int64_t *row = t->fixups + t->n_fixups * FIXUP_FIELDS;
    row[0] = kind;
    row[1] = t->text_no;
    row[2] = a;
    row[3] = b;
    t->n_fixups++;
    return OK;
}

/* Whether out[a:b] is a key of the stopword trie marked as a whole stopword (BAD_KEY: a bad trie). */
static int is_stopword(const Terms *t, int64_t a, int64_t b)
{
    if (t->stop.n_keys == 0)
        return 0;
    const int64_t key = key_of(&t->stop, t->out, a, b);
    if (key == BAD_KEY)
        return BAD_KEY;
    return key >= 0 && t->stop_flag[key] != 0;
}

/* The word text[a:b] written, followed by the separator, unless it is a stopword. */
static int keep_unless_stopword(Terms *t, int64_t first)
{
    const int stop = is_stopword(t, first, t->n_out);
    if (stop == BAD_KEY)
        return BAD_KEY;
    if (stop) {
        t->n_out = first;
        return 0;
    }
    t->out[t->n_out++] = SEPARATOR;
    t->counts[t->text_no]++;
    return 1;
}

/* A word of the cut, text[t->start:end]: dropped when it holds no letter or digit, else written
 * lowercased (and dropped if a stopword); a word Python must tell is written as it is (TELL). */
static int cut_word(void *ctx, int64_t end)
{
    Terms *t = ctx;
    const int64_t a = t->start;
    t->start = end;
    enum { DROP, KEEP, ASK } kind = DROP;
    for (int64_t j = a; j < end; j++) {
        const uint32_t c = t->text[j];
        if (c >= BMP || t->lower[c] == 0) {
            kind = ASK;
            break;
        }
        if (t->classes[c] & ALNUM)
            kind = KEEP;
    }
    if (kind == DROP)
        return OK;
    if (t->n_out + (end - a) + 1 > t->out_cap)
        return FULL;
    const int64_t first = t->n_out;
    if (kind == ASK) {
        for (int64_t j = a; j < end; j++)
            t->out[t->n_out++] = t->text[j];
        const int status = add_fixup(t, TELL, first, t->n_out);
        t->out[t->n_out++] = SEPARATOR;
        t->counts[t->text_no]++;
        return status;
    }
    for (int64_t j = a; j < end; j++)
        t->out[t->n_out++] = t->lower[t->text[j]];
    const int kept = keep_unless_stopword(t, first);
    return kept < 0 ? kept : OK;
}

static inline int is_apostrophe(uint32_t c) { return c == APOSTROPHE || c == 0x2018 || c == 0x2019; }

/* Whether the English path's rules for text[a:b] are those of ASCII text: every character ASCII, an
 * apostrophe, or a BMP character no English rule looks at (not a letter, digit or mark, no case). */
static int plain_english(const Terms *t, int64_t a, int64_t b)
{
    for (int64_t j = a; j < b; j++) {
        const uint32_t c = t->text[j];
        if (c >= 128 && !is_apostrophe(c) && (c >= BMP || (t->classes[c] & ENGLISH)))
            return 0;
    }
    return 1;
}

/* The English path of text[a:b] (tokenization._english_terms, stemming left to Python): its words
 * [A-Za-z0-9]+(?:'[A-Za-z0-9]+)* (U+2018/U+2019 read as '), lowercased, a final 's dropped, stopwords
 * dropped; a word with a letter or apostrophe marked STEM when stemming. Other text: ENGLISH_TEXT. */
static int english(Terms *t, int64_t a, int64_t b)
{
    const uint32_t *text = t->text;
    if (!plain_english(t, a, b)) {
        if (t->n_out + (b - a) > t->out_cap)
            return FULL;
        const int64_t first = t->n_out;
        memcpy(t->out + first, text + a, (size_t)(b - a) * sizeof *text);
        t->n_out += b - a;
        return add_fixup(t, ENGLISH_TEXT, first, t->n_out);
    }
    int64_t p = a;
    while (p < b) {
        if (!is_alnum(text[p])) {
            p++;
            continue;
        }
        int64_t q = p;
        for (;;) {
            while (q < b && is_alnum(text[q]))
                q++;
            if (q + 1 < b && is_apostrophe(text[q]) && is_alnum(text[q + 1]))
                q++;
            else
                break;
        }
        if (t->n_out + (q - p) + 1 > t->out_cap)
            return FULL;
        const int64_t first = t->n_out;
        int letters = 0;
        for (int64_t j = p; j < q; j++) {
            uint32_t c = text[j];
            if (is_apostrophe(c))
                c = APOSTROPHE;
            else if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            letters |= !is_digit(c);
            t->out[t->n_out++] = c;
        }
        if (t->n_out - first >= 2 && t->out[t->n_out - 2] == APOSTROPHE && t->out[t->n_out - 1] == 's')
            t->n_out -= 2; /* a possessive: at least one letter or digit stays before it */
        const int kept = keep_unless_stopword(t, first);
        if (kept < 0)
            return kept;
        if (kept && t->stem && letters) {
            const int status = add_fixup(t, STEM, first, t->n_out - 1);
            if (status != OK)
                return status;
        }
        p = q;
    }
    return OK;
}

/* The terms of text[a:b]: the zh analysis (the whole text cut) or auto's (Han runs cut, the rest to
 * the English path). */
static int text_terms(Cut *k, Terms *t, int64_t a, int64_t b, int auto_)
{
    t->start = a;
    if (!auto_)
        return cut_span(k, a, b);
    const uint32_t *text = t->text;
    int64_t p = a;
    int status = OK;
    while (p < b && status == OK) {
        int64_t q = p;
        if (is_auto_han(text[p])) {
            while (q < b && is_auto_han(text[q]))
                q++;
            t->start = p;
            status = cut_span(k, p, q);
        } else {
            while (q < b && !is_auto_han(text[q]))
                q++;
            status = english(t, p, q);
        }
        p = q;
    }
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* arguments                                                                                  */

/* the dictionary's array arguments, in the order of its tuple */
enum { D_TABLE, D_PARENT, D_LAST, D_FREQ, D_LOG_FREQ, D_EMIT, D_START_P, D_TRANS, D_PREV, D_ARGS };

#define DICTIONARY_ARGS(p)                                                                                   \
    [p + D_TABLE] = IN("dictionary table", SIGNED, SIZE_8), [p + D_PARENT] = IN("dictionary parent", SIGNED, SIZE_8), \
    [p + D_LAST] = IN("dictionary last", SIGNED, SIZE_8), [p + D_FREQ] = IN("dictionary freq", SIGNED, SIZE_8),    \
    [p + D_LOG_FREQ] = IN("dictionary log_freq", FLOAT, SIZE_8), [p + D_EMIT] = IN("dictionary emit", FLOAT, SIZE_8), \
    [p + D_START_P] = IN("dictionary start_p", FLOAT, SIZE_8), [p + D_TRANS] = IN("dictionary trans", FLOAT, SIZE_8), \
    [p + D_PREV] = IN("dictionary prev", SIGNED, SIZE_8)

#define DICTIONARY_FORMAT "(OOOOOOOOOd)"
#define DICTIONARY_OBJECTS(a, p, log_total)                                                                  \
    &a[p + D_TABLE].obj, &a[p + D_PARENT].obj, &a[p + D_LAST].obj, &a[p + D_FREQ].obj, &a[p + D_LOG_FREQ].obj, \
        &a[p + D_EMIT].obj, &a[p + D_START_P].obj, &a[p + D_TRANS].obj, &a[p + D_PREV].obj, log_total

static int power_of_two(Py_ssize_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* A trie of the arrays at a[p], a[p + 1], a[p + 2] (table, parent, last); the problem, or NULL. */
static const char *trie_of(const Arg *a, int p, Trie *t)
{
    if (!power_of_two(a[p].n))
        return "the trie's table must be a power of two long";
    if (a[p + 1].n != a[p + 2].n)
        return "the trie's parent and last must be as long";
    *t = (Trie){BUF(a, p, const int64_t), (uint64_t)a[p].n - 1, BUF(a, p + 1, const int64_t),
                BUF(a, p + 2, const int64_t), a[p + 1].n};
    return NULL;
}

/* The dictionary of the arrays at a[p:p + D_ARGS]; the problem, or NULL. */
static const char *dictionary_of(const Arg *a, int p, double log_total, Dictionary *d)
{
    const char *problem = trie_of(a, p + D_TABLE, &d->trie);
    if (problem != NULL)
        return problem;
    if (a[p + D_FREQ].n != d->trie.n_keys || a[p + D_LOG_FREQ].n != d->trie.n_keys)
        return "the dictionary's freq and log_freq must have a value for each key";
    if (a[p + D_EMIT].n != (Py_ssize_t)N_STATES * HAN_SPAN || a[p + D_START_P].n != N_STATES ||
        a[p + D_TRANS].n != N_STATES * N_STATES || a[p + D_PREV].n != N_STATES * 2)
        return "the dictionary's HMM tables must be 4 x 20950 (emit), 4 (start_p), 4 x 4 (trans), 4 x 2 (prev)";
    const int64_t *prev = BUF(a, p + D_PREV, const int64_t);
    for (int i = 0; i < N_STATES * 2; i++)
        if (prev[i] < 0 || prev[i] >= N_STATES)
            return "the dictionary's prev must hold states 0 to 3";
    *d = (Dictionary){d->trie, BUF(a, p + D_FREQ, const int64_t), BUF(a, p + D_LOG_FREQ, const double), log_total,
                      BUF(a, p + D_EMIT, const double), BUF(a, p + D_START_P, const double),
                      BUF(a, p + D_TRANS, const double), prev};
    return NULL;
}

/* Raise the error of a status of the work done without the GIL. */
static PyObject *raise_status(int status, const char *full)
{
    switch (status) {
    case NOMEM:
        return PyErr_NoMemory();
    case BAD_KEY:
        PyErr_SetString(PyExc_ValueError, "a trie's table holds a key id out of range");
        return NULL;
    case MISSING_PREFIX:
        PyErr_SetString(PyExc_ValueError, "a prefix of a dictionary word is not in the dictionary");
        return NULL;
    default:
        PyErr_SetString(PyExc_ValueError, full);
        return NULL;
    }
}

static PyObject *fail(Arg *a, int n, const char *problem)
{
    release_args(a, n);
    PyErr_SetString(PyExc_ValueError, problem);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* entry points                                                                               */

enum { T_CPS, T_STARTS, T_LENGTHS, T_TABLE, T_PARENT, T_LAST, T_ARGS };

static PyObject *py_build_trie(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"cps", "starts", "lengths", "table", "parent", "last", NULL};
    Arg a[T_ARGS] = {
        [T_CPS] = IN("cps", UNSIGNED, SIZE_4),
        [T_STARTS] = IN("starts", SIGNED, SIZE_8),
        [T_LENGTHS] = IN("lengths", SIGNED, SIZE_8),
        [T_TABLE] = OUT("table", SIGNED, SIZE_8),
        [T_PARENT] = OUT("parent", SIGNED, SIZE_8),
        [T_LAST] = OUT("last", SIGNED, SIZE_8),
    };
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OOOOOO:build_trie", kwlist, &a[T_CPS].obj, &a[T_STARTS].obj,
                                     &a[T_LENGTHS].obj, &a[T_TABLE].obj, &a[T_PARENT].obj, &a[T_LAST].obj))
        return NULL;
    if (acquire_args(a, T_ARGS) < 0)
        return NULL;
    const Py_ssize_t n = a[T_STARTS].n, n_cps = a[T_CPS].n;
    const int64_t *starts = BUF(a, T_STARTS, const int64_t), *lengths = BUF(a, T_LENGTHS, const int64_t);
    if (a[T_LENGTHS].n != n)
        return fail(a, T_ARGS, "starts and lengths must be as long");
    if (a[T_PARENT].n != n || a[T_LAST].n != n)
        return fail(a, T_ARGS, "parent and last must have a place for each key");
    if (!power_of_two(a[T_TABLE].n) || a[T_TABLE].n <= n)
        return fail(a, T_ARGS, "table must be a power of two long, longer than the keys");
    int64_t max_length = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (lengths[i] < 1 || starts[i] < 0 || lengths[i] > n_cps || starts[i] > n_cps - lengths[i])
            return fail(a, T_ARGS, "a key is empty or goes past cps");
        if (lengths[i] > max_length)
            max_length = lengths[i];
    }
    int64_t *table = BUF(a, T_TABLE, int64_t), *parent = BUF(a, T_PARENT, int64_t), *last = BUF(a, T_LAST, int64_t);
    int status;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < a[T_TABLE].n; i++)
        table[i] = -1;
    for (Py_ssize_t i = 0; i < n; i++)
        parent[i] = last[i] = -1;
    status = build_trie(BUF(a, T_CPS, const uint32_t), starts, lengths, n, max_length, table,
                        (uint64_t)a[T_TABLE].n - 1, parent, last);
    Py_END_ALLOW_THREADS
    release_args(a, T_ARGS);
    if (status != OK)
        return raise_status(status, "");
    Py_RETURN_NONE;
}

enum { C_TEXT, C_DICT, C_ENDS = C_DICT + D_ARGS, C_ARGS };

static PyObject *py_cut_text(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"text", "dictionary", "ends", NULL};
    Arg a[C_ARGS] = {
        [C_TEXT] = IN("text", UNSIGNED, SIZE_4),
        DICTIONARY_ARGS(C_DICT),
        [C_ENDS] = OUT("ends", SIGNED, SIZE_8),
    };
    double log_total;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "O" DICTIONARY_FORMAT "O:cut_text", kwlist, &a[C_TEXT].obj,
                                     DICTIONARY_OBJECTS(a, C_DICT, &log_total), &a[C_ENDS].obj))
        return NULL;
    if (acquire_args(a, C_ARGS) < 0)
        return NULL;
    Dictionary d;
    const char *problem = dictionary_of(a, C_DICT, log_total, &d);
    if (problem == NULL && a[C_ENDS].n < a[C_TEXT].n)
        problem = "ends must have a place for each character of text";
    if (problem != NULL)
        return fail(a, C_ARGS, problem);
    Ends ends = {BUF(a, C_ENDS, int64_t), 0, a[C_ENDS].n};
    Cut k = {.d = &d, .text = BUF(a, C_TEXT, const uint32_t), .in_block = in_jieba_block, .sink = add_end,
             .ctx = &ends};
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = cut_span(&k, 0, a[C_TEXT].n);
    free_cut(&k);
    Py_END_ALLOW_THREADS
    release_args(a, C_ARGS);
    if (status != OK)
        return raise_status(status, "ends is full");
    return PyLong_FromSsize_t(ends.n);
}

enum {
    W_TEXT, W_TEXT_ENDS, W_DICT, W_LOWER = W_DICT + D_ARGS, W_CLASSES, W_STOP_TABLE, W_STOP_PARENT, W_STOP_LAST,
    W_STOP_FLAG, W_OUT, W_COUNTS, W_FIXUPS, W_ARGS
};

static PyObject *py_cut_terms(PyObject *self, PyObject *pyargs, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"text", "text_ends", "dictionary", "lower", "classes", "stop", "auto", "stem",
                             "out", "counts", "fixups", NULL};
    Arg a[W_ARGS] = {
        [W_TEXT] = IN("text", UNSIGNED, SIZE_4),
        [W_TEXT_ENDS] = IN("text_ends", SIGNED, SIZE_8),
        DICTIONARY_ARGS(W_DICT),
        [W_LOWER] = IN("lower", UNSIGNED, SIZE_4),
        [W_CLASSES] = IN("classes", UNSIGNED, SIZE_1),
        [W_STOP_TABLE] = IN("stop table", SIGNED, SIZE_8),
        [W_STOP_PARENT] = IN("stop parent", SIGNED, SIZE_8),
        [W_STOP_LAST] = IN("stop last", SIGNED, SIZE_8),
        [W_STOP_FLAG] = IN("stop flag", UNSIGNED, SIZE_1),
        [W_OUT] = OUT("out", UNSIGNED, SIZE_4),
        [W_COUNTS] = OUT("counts", SIGNED, SIZE_8),
        [W_FIXUPS] = OUT("fixups", SIGNED, SIZE_8),
    };
    double log_total;
    int auto_, stem;
    if (!PyArg_ParseTupleAndKeywords(pyargs, kwargs, "OO" DICTIONARY_FORMAT "OO(OOOO)ppOOO:cut_terms", kwlist,
                                     &a[W_TEXT].obj, &a[W_TEXT_ENDS].obj, DICTIONARY_OBJECTS(a, W_DICT, &log_total),
                                     &a[W_LOWER].obj, &a[W_CLASSES].obj, &a[W_STOP_TABLE].obj, &a[W_STOP_PARENT].obj,
                                     &a[W_STOP_LAST].obj, &a[W_STOP_FLAG].obj, &auto_, &stem, &a[W_OUT].obj,
                                     &a[W_COUNTS].obj, &a[W_FIXUPS].obj))
        return NULL;
    if (acquire_args(a, W_ARGS) < 0)
        return NULL;
    const Py_ssize_t n = a[W_TEXT].n, n_texts = a[W_TEXT_ENDS].n;
    const int64_t *text_ends = BUF(a, W_TEXT_ENDS, const int64_t);
    Dictionary d;
    Trie stop;
    const char *problem = dictionary_of(a, W_DICT, log_total, &d);
    if (problem == NULL)
        problem = trie_of(a, W_STOP_TABLE, &stop);
    if (problem == NULL && a[W_STOP_FLAG].n != stop.n_keys)
        problem = "the stopword trie's flag must have a value for each key";
    if (problem == NULL && (a[W_LOWER].n != BMP || a[W_CLASSES].n != BMP))
        problem = "lower and classes must have a value for each of the 65536 BMP characters";
    if (problem == NULL && (a[W_OUT].n < 2 * n + 1 || a[W_COUNTS].n < n_texts || a[W_FIXUPS].n / FIXUP_FIELDS < n))
        problem = "out (2 places a character, and 1), counts (1 a text) or fixups (4 a character) is too small";
    for (Py_ssize_t i = 0; problem == NULL && i < n_texts; i++)
        if (text_ends[i] < (i ? text_ends[i - 1] : 0) || text_ends[i] > n)
            problem = "text_ends must be non-decreasing, from 0 to the length of text";
    if (problem != NULL)
        return fail(a, W_ARGS, problem);
    Terms t = {.text = BUF(a, W_TEXT, const uint32_t), .lower = BUF(a, W_LOWER, const uint32_t),
               .classes = BUF(a, W_CLASSES, const uint8_t), .stop = stop,
               .stop_flag = BUF(a, W_STOP_FLAG, const uint8_t), .stem = stem, .out = BUF(a, W_OUT, uint32_t),
               .out_cap = a[W_OUT].n, .counts = BUF(a, W_COUNTS, int64_t), .fixups = BUF(a, W_FIXUPS, int64_t),
               .fixup_cap = a[W_FIXUPS].n / FIXUP_FIELDS};
    Cut k = {.d = &d, .text = t.text, .in_block = auto_ ? in_han_block : in_jieba_block, .sink = cut_word, .ctx = &t};
    int status = OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_texts && status == OK; i++) {
        t.text_no = i;
        t.counts[i] = 0;
        status = text_terms(&k, &t, i ? text_ends[i - 1] : 0, text_ends[i], auto_);
    }
    free_cut(&k);
    Py_END_ALLOW_THREADS
    release_args(a, W_ARGS);
    if (status != OK)
        return raise_status(status, "out or fixups is full");
    return Py_BuildValue("nn", (Py_ssize_t)t.n_out, (Py_ssize_t)t.n_fixups);
}

/* ------------------------------------------------------------------------------------------ */

PyMethodDef core_cut_methods[] = {
    {"build_trie", (PyCFunction)(void (*)(void))py_build_trie, METH_VARARGS | METH_KEYWORDS,
     "build_trie(cps, starts, lengths, table, parent, last) -> None\n\n"
     "The keys cps[starts[i]:starts[i] + lengths[i]] (uint32 code points) as a trie in a hash table: "
     "table (a power of two long, longer than the keys) gets each slot's key id (-1: empty), parent "
     "each key's parent key (-1 for one character), last its last character. Every prefix of a key "
     "must be a key (ValueError otherwise)."},
    {"cut_text", (PyCFunction)(void (*)(void))py_cut_text, METH_VARARGS | METH_KEYWORDS,
     "cut_text(text, dictionary, ends) -> int\n\n"
     "jieba's precise cut (lcut, HMM on) of text (uint32 code points): the end of each word into ends "
     "(a place for each character); returns the number of words. dictionary: (table, parent, last, "
     "freq, log_freq, emit, start_p, trans, prev, log_total)."},
    {"cut_terms", (PyCFunction)(void (*)(void))py_cut_terms, METH_VARARGS | METH_KEYWORDS,
     "cut_terms(text, text_ends, dictionary, lower, classes, stop, auto, stem, out, counts, fixups) "
     "-> (written, fixups written)\n\n"
     "The terms of the texts text[text_ends[i - 1]:text_ends[i]] by the zh analysis (auto false: each "
     "text cut whole) or auto's (its Han runs cut, the rest by the English path), each term followed "
     "by a line feed in out, each text's count in counts, what Python must finish as rows (kind, text, "
     "start, end) of fixups (1: a word to tell, 2: an English word to stem, 3: English text to "
     "analyse). stop: the stopword trie (table, parent, last, flag)."},
    {NULL, NULL, 0, NULL},
};
