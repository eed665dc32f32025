/*
 * Postings in blocks of 128 (the format: engine/codec.py's docstring, whose numpy code is its
 * specification): what codec.c decodes, for the searches of search.c and blockmax.c.
 *
 * A block is read through a BlockSet (the arrays of every term's blocks). Every read is checked
 * against the arrays' sizes, and a decoded block's documents against its last document (which must
 * be below n_docs): a damaged or hostile block is an error (-1), never a read or write out of bounds,
 * and the documents a search gets are always strictly increasing and below n_docs.
 */
#ifndef BM25LAB_CODEC_H
#define BM25LAB_CODEC_H

#include "core.h"

#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the block format is little-endian and so is the core's reading of it"
#endif

#define BLOCK 128        /* postings a block (the last of a term fewer) */
#define LANES 4          /* a full block's values in 4 interleaved 32-bit lanes */
#define PAD 16           /* zero bytes after the blocks: a word may be read past a block's end */
#define HEADER 2         /* the gaps' width, the frequencies' width */
#define END_DOC UINT32_MAX /* a cursor past its last posting */

typedef struct {
    const int32_t *last_docs;  /* each block's last document */
    const int64_t *positions;  /* where each block starts in data; positions[n_blocks]: where they end */
    const uint8_t *data;
    int64_t n_blocks;
    int64_t data_len;          /* bytes of data, PAD included */
    int64_t n_docs;            /* every document is below it */
} BlockSet;

/* The bytes of n values of `width` bits: 16 x width for a full block, else ceil(n x width / 8). */
static inline int64_t section_bytes(int n, int width)
{
    return n == BLOCK ? 16 * (int64_t)width : ((int64_t)n * width + 7) / 8;
}

/* the unpacking routines of codec.c: a full block of each width, straight into documents (gaps of at
 * most 24 bits: the document before them given, the last returned) or as values; a short block */
typedef void (*UnpackFull)(const uint8_t *, uint32_t *);
typedef uint32_t (*UnpackDocs)(const uint8_t *, uint32_t *, uint32_t);
extern const UnpackFull UNPACK_FULL_BY_WIDTH[33];
extern const UnpackDocs UNPACK_DOCS_BY_WIDTH[25];
void unpack_short(const uint8_t *in, int width, int n, uint32_t *out);

static inline void unpack(const uint8_t *in, int width, int n, uint32_t *out)
{
    if (n == BLOCK)
        UNPACK_FULL_BY_WIDTH[width](in, out);
    else
        unpack_short(in, width, n, out);
}

/* Block j's widths and where its gaps start, checked against the arrays (n postings); 0 or -1. */
static inline int block_header(const BlockSet *bs, int64_t j, int n, int *gap_width, int *tf_width, int64_t *at)
{
    if (j < 0 || j >= bs->n_blocks || n < 1 || n > BLOCK)
        return -1;
    const int64_t pos = bs->positions[j], end = bs->positions[j + 1];
    if (pos < 0 || end < pos || end > bs->data_len - PAD || end - pos < HEADER)
        return -1;
    const int gw = bs->data[pos], tw = bs->data[pos + 1];
    if (gw > 32 || tw > 32 || HEADER + section_bytes(n, gw) + section_bytes(n, tw) > end - pos)
        return -1;
    *gap_width = gw;
    *tf_width = tw;
    *at = pos + HEADER;
    return 0;
}

/* decode_docs past its first case (codec.c). */
int decode_docs_rest(const BlockSet *bs, int n, int gw, int64_t at, int64_t base, int64_t last, uint32_t *docs);

/* Block j's n documents into docs (base: the term's previous block's last document + 1, 0 for its
 * first block), and where its frequencies are and their width (for decode_freqs_at: the header was
 * checked for both); 0, or -1 when the block is damaged (see above). */
static inline int decode_docs(const BlockSet *bs, int64_t j, int n, int64_t base, uint32_t *docs, int *tf_width,
                              int64_t *tf_at)
{
    int gw, tw;
    int64_t at;
    if (block_header(bs, j, n, &gw, &tw, &at) < 0)
        return -1;
    *tf_width = tw;
    *tf_at = at + section_bytes(n, gw);
    const int64_t last = bs->last_docs[j];
    if (last < 0 || last >= bs->n_docs || base < 0 || base > last)
        return -1;
    if (gw <= 24 && n == BLOCK) /* no wrap (see codec.c): the last document checks them all */
        return UNPACK_DOCS_BY_WIDTH[gw](bs->data + at, docs, (uint32_t)base - 1) == (uint32_t)last ? 0 : -1;
    return decode_docs_rest(bs, n, gw, at, base, last, docs);
}

/* Value i of n values of `width` bits packed as unpack reads them (a full block in 4 lanes of 32-bit
 * words, value i in lane i % 4 at bit (i / 4) x width of its words; a short one value after value):
 * one value without unpacking the others. */
static inline uint32_t unpack_one(const uint8_t *in, int width, int n, int i)
{
    if (width == 0)
        return 0;
    const uint64_t mask = (UINT64_C(1) << width) - 1;
    uint64_t v;
    if (n == BLOCK) {
        const int bit = (i >> 2) * width, w = bit >> 5, s = bit & 31, lane = 4 * (i & 3);
        uint32_t word;
        memcpy(&word, in + 16 * w + lane, sizeof word);
        v = (uint64_t)word >> s;
        if (s + width > 32) {
            memcpy(&word, in + 16 * (w + 1) + lane, sizeof word);
            v |= (uint64_t)word << (32 - s);
        }
    } else {
        const int64_t bit = (int64_t)i * width;
        memcpy(&v, in + bit / 8, sizeof v); /* the PAD bytes make a read past the last block safe */
        v >>= bit % 8;
    }
    return (uint32_t)(v & mask);
}

/* The n frequencies less one of a block decode_docs read (at tf_at, of width tf_width) into values. */
static inline void decode_freqs_at(const BlockSet *bs, int64_t tf_at, int n, int tf_width, uint32_t *values)
{
    unpack(bs->data + tf_at, tf_width, n, values);
}

/* The blocks' arrays of a Python call, checked: positions holds n_blocks + 1 entries, data PAD bytes past
 * the last; 0, or -1 with ValueError set. */
int block_set(BlockSet *bs, const Arg *last_docs, const Arg *positions, const Arg *data, int64_t n_docs);

#endif
