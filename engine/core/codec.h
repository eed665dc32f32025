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

/* Block j's n documents into docs (base: the term's previous block's last document + 1, 0 for its
 * first block); 0, or -1 when the block is damaged (see above). */
int decode_docs(const BlockSet *bs, int64_t j, int n, int64_t base, uint32_t *docs);

/* Block j's n frequencies less one into values, and their width (every value is below 2**width); 0,
 * or -1 when the block is damaged. */
int decode_freqs(const BlockSet *bs, int64_t j, int n, uint32_t *values, int *width);

/* The blocks' arrays of a Python call, checked: positions holds n_blocks + 1 entries, data PAD bytes past
 * the last; 0, or -1 with ValueError set. */
int block_set(BlockSet *bs, const Arg *last_docs, const Arg *positions, const Arg *data, int64_t n_docs);

#endif
