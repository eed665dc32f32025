"""numba kernels for search and building (imported only by :mod:`bm25lab.engine.backends.numba_backend`).

The arithmetic is exactly that of :meth:`bm25lab.engine.retrieval.Scorer.score`: float64 weights, a repeated
query term multiplies its weight, each document's weights are added from 0.0 in the query's
canonical term order (:func:`bm25lab.engine.retrieval.term_order`: largest weight first), then the
per-query constant is added. Selection is exact top-k with bm25lab's tie rule (score descending,
then document id descending via ``id_rank``).

Searching (:func:`query_top_k`, :func:`batch_top_k` running it on every core) prunes exactly, term
at a time (MaxScore): once k documents are scored, a lower bound of the k-th score decides when the
remaining terms' largest weights can no longer lift an unseen document into the top k; from then on
those terms only update the documents that still can (galloping through their postings) and
documents are dropped as their bound falls below it. The documents kept receive every term, so the
results are exactly the unpruned ones. Look-ups pay only while the candidates are few enough to
list; past that the per-document arrays are walked in order and every remaining term is added in
full (then a histogram of the scores' float bits, one bucket per 1/128 of a binade, of every 16th
document gives a floor of the k-th best, and one pass lists the documents at or above it while it
clears the scores: if the sample promised too much, the terms are added again and every document
counted). The top k: for a small k a heap (started at the k-th best of the first-listed documents);
for k >= 64 the candidates at or above a floor of the k-th are cut to the k-th by quickselect and
sorted (an LSD radix sort on the float bits, runs of equal scores by document id). The
per-document scores start at -0.0, which no sum of weights gives, so they also tell which documents
were scored: adding a posting writes nothing else.

Building (:func:`encode_tokens`, :func:`group_by_term`, :func:`sort_terms`, :func:`joined_terms`):
the vocabulary is a hash table in arrays; a chunk's tokens, joined by spaces, are hashed from their
UTF-8, a counting sort gives the (term, document, tf) triples, and at the end the terms' bytes are
sorted (code point order) and decoded by Python in one call. A search's query tokens are looked up
in a copy of the index's vocabulary the same way (:func:`group_query_terms` groups them per query).

The hot loops index arrays with unsigned integers (``np.uint64(i)``, ``np.uint32(d)``): numba tests
every signed index for a negative value to wrap around, which cost about a third of a posting's add.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..retrieval import term_order


@njit(cache=True, nogil=True, inline="always")
def _worse(sa: float, ra: int, sb: float, rb: int) -> bool:
    """Whether (score a, id rank a) ranks below (score b, id rank b): lower score, or tied and lower id."""
    return sa < sb or (sa == sb and ra < rb)


@njit(cache=True, nogil=True)
def _sift_down(hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, n: int, i: int) -> None:
    """Restore the min-heap (worst at the root) below position ``i``."""
    while True:
        left = 2 * i + 1
        if left >= n:
            return
        child = left
        if left + 1 < n and _worse(hs[left + 1], hr[left + 1], hs[left], hr[left]):
            child = left + 1
        if not _worse(hs[child], hr[child], hs[i], hr[i]):
            return
        hs[i], hs[child] = hs[child], hs[i]
        hr[i], hr[child] = hr[child], hr[i]
        hd[i], hd[child] = hd[child], hd[i]
        i = child


_BUCKETS = 4096

# acc[d] holds -0.0 while no posting has been added to it, and a sum of postings never has these bits
# (-0.0 + w is exactly w, as 0.0 + w is, and x + y is -0.0 only when both are; prepared weights are
# never -0.0, see bm25lab.engine.retrieval.Scorer.prepare): the scores mark the scored documents themselves
_NO_POSTING = np.int64(-(2 ** 63))  # -0.0 viewed as int64


@njit(cache=True, nogil=True)
def _floor_of_top_k(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, k: int) -> float:
    """A lower bound of the k-th best score of ``cand[:nc]`` (``nc > k``), close to it: the scores'
    range, then :func:`_refine_floor` over it."""
    lo = np.inf
    hi = -np.inf
    for i in range(np.uint64(nc)):
        s = acc[np.uint64(cand[i])] + const
        lo = min(lo, s)
        hi = max(hi, s)
    return _refine_floor(cand, nc, acc, const, k, lo, np.nextafter(hi, np.inf), lo, 3)


@njit(cache=True, nogil=True)
def _bucket_reaching(counts: np.ndarray, above: int, k: int) -> int:
    """The highest bucket at which ``above`` plus the counts of it and every bucket over it reach
    ``k``; -1 if they never do."""
    total = above
    for b in range(counts.shape[0] - 1, -1, -1):
        total += counts[b]
        if total >= k:
            return b
    return -1


@njit(cache=True, nogil=True)
def _refine_floor(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, k: int, lo: float, hi: float,
                  floor: float, rounds: int) -> float:
    """Raise ``floor`` (a lower bound of the k-th best score of ``cand[:nc]``) with histograms of the
    scores in ``[lo, hi)`` (which must hold the k-th best): the buckets are summed from the top down,
    after the documents at or above ``hi``, until they hold ``k`` documents; that bucket's lower edge
    (less a margin for rounding in the bucket arithmetic) is a bound, and a crowded bucket (many
    near-equal scores) is histogrammed again, ``rounds`` times at most.
    """
    buckets = max(64, min(_BUCKETS, nc // 8))
    counts = np.zeros(buckets, np.int64)
    for _ in range(rounds):
        if not hi > lo:
            break
        counts[:] = 0
        above = 0
        scale = buckets / (hi - lo)
        for i in range(np.uint64(nc)):
            s = acc[np.uint64(cand[i])] + const
            if s >= hi:
                above += 1
            elif s >= lo:
                counts[min(int((s - lo) * scale), buckets - 1)] += 1
        b = _bucket_reaching(counts, above, k)
        if b < 0:  # rounding left documents out of this range: keep the last bound
            break
        edge = lo + b / scale
        floor = max(floor, edge - _MARGIN * (abs(edge) + abs(lo) + abs(hi)))
        if counts[b] <= max(k // 4, 64):
            break
        lo, hi = edge, lo + (b + 1) / scale
    return floor


# A dense selection takes its floor from a histogram of every _SAMPLE-th document's score (when the
# documents are many next to k), checked by counting: a sample can only cost a second pass
_SAMPLE = 16
# From this k on, the top k is found by sorting the candidates at or above a histogram floor of the
# k-th score, while they are at most _SORT_MAX times k (a heap beats both for a small k: its root
# is high from the start); with more candidates than that, the floor is taken first.
_SORT_K = 64
_SORT_MAX = 8


@njit(cache=True, nogil=True)
def _floor(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, k: int) -> float:
    """:func:`_floor_of_top_k` where it pays (a large k, many more candidates than k), else -inf."""
    return _floor_of_top_k(cand, nc, acc, const, k) if k >= _SORT_K and nc > _SORT_MAX * k else -np.inf


@njit(cache=True, nogil=True)
def _select(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, id_rank: np.ndarray, k: int, floor: float,
            dst: np.ndarray, buf: np.ndarray, hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, out_docs: np.ndarray,
            out_scores: np.ndarray, dense: bool = False) -> int:
    """Write the best ``k`` of ``cand[:nc]`` into the output rows, best first; returns how many.
    With ``dense``, the candidates are instead the documents ``d < nc`` with a posting added to
    ``acc[d]`` (not :data:`_NO_POSTING`): one sequential pass, no list to build. Candidates below
    ``floor``, a lower bound of the k-th score (-inf: none), are passed over at once.

    A small ``k`` keeps a bounded heap (:func:`_heap_select`). A large ``k`` lists the candidates at
    or above ``floor`` in ``dst`` (may be ``cand`` itself) with their scores in ``buf`` and sorts them
    (:func:`_sorted_best`) unless they are still many more than ``k``: sorting ``m`` numbers costs far
    less than ``m`` pushes and pops of a heap of ``k``.
    """
    if k < _SORT_K:
        return _heap_select(cand, nc, acc, const, id_rank, k, floor, hs, hr, hd, out_docs, out_scores, dense)
    bits = acc.view(np.int64)
    m = 0
    for i in range(np.uint64(nc)):
        d = i if dense else np.uint64(cand[i])
        s = acc[d] + const
        if s >= floor and (not dense or bits[d] != _NO_POSTING):
            dst[m] = d
            buf[m] = -s
            m += 1
    if m > _SORT_MAX * k:
        return _heap_select(dst, m, acc, const, id_rank, k, -np.inf, hs, hr, hd, out_docs, out_scores)
    return _sorted_best(dst, buf, m, acc, const, id_rank, k, out_docs, out_scores)


@njit(cache=True, nogil=True)
def _sorted_best(docs: np.ndarray, neg: np.ndarray, m: int, acc: np.ndarray, const: float, id_rank: np.ndarray,
                 k: int, out_docs: np.ndarray, out_scores: np.ndarray) -> int:
    """The best ``k`` of ``docs[:m]`` (negated scores ``neg[:m]``) into the output rows by sorting:
    score descending, then runs of equal scores by id rank descending (the heap's tie rule)."""
    order = _radix_order(neg, m)
    n = min(k, m)
    i = 0
    while i < n:
        j = i + 1
        while j < m and neg[order[j]] == neg[order[i]]:  # equal final scores (not acc: the constant may round)
            j += 1
        if j - i > 1:
            _by_rank_desc(order, i, j, docs, id_rank)
        i = j
    for i in range(n):
        d = docs[order[i]]
        out_docs[i] = d
        out_scores[i] = acc[d] + const
    return n


_SIGN = np.uint64(1 << 63)
_BYTE = np.uint64(255)


# _order_ascending puts keys into this many buckets of equal width, then sorts each bucket
_ORDER_BUCKETS = 2048
# a bucket of more keys than this is radix sorted, fewer by insertion
_ORDER_FEW = 32


@njit(cache=True, nogil=True)
def _radix_order(values: np.ndarray, m: int) -> np.ndarray:
    """Positions of ``values[:m]`` in ascending order, stably, by :func:`_order_ascending` of the
    float64 bits made order-preserving (negative: all bits flipped; else the sign bit set)."""
    bits = values[:m].view(np.uint64)
    keys = np.empty(m, np.uint64)
    for i in range(m):
        x = bits[i]
        keys[i] = ~x if x & _SIGN else x | _SIGN
    return _order_ascending(keys, m)


@njit(cache=True, nogil=True)
def _order_ascending(keys: np.ndarray, m: int) -> np.ndarray:
    """Positions of ``keys[:m]`` (uint64) in ascending order, stably: a counting pass into
    :data:`_ORDER_BUCKETS` buckets of equal width between the least and the greatest key, then each
    bucket by insertion (a crowded one by :func:`_radix_sort`). O(m) whatever the data; for the top
    k of a search, 2-3x faster than a radix sort of every byte (most bytes of close scores differ)."""
    order = np.empty(m, np.int64)
    if m == 0:
        return order
    lo = keys[0]
    hi = keys[0]
    for i in range(m):
        lo = min(lo, keys[i])
        hi = max(hi, keys[i])
    shift = np.uint64(0)
    while ((hi - lo) >> shift) >= np.uint64(_ORDER_BUCKETS):
        shift += np.uint64(1)
    starts = np.zeros(_ORDER_BUCKETS + 1, np.int64)
    for i in range(m):
        starts[((keys[i] - lo) >> shift) + np.uint64(1)] += 1
    for b in range(_ORDER_BUCKETS):
        starts[b + 1] += starts[b]
    free = starts.copy()
    for i in range(m):
        b = (keys[i] - lo) >> shift
        order[free[b]] = i
        free[b] += 1
    for b in range(_ORDER_BUCKETS):
        a, z = starts[b], starts[b + 1]
        if z - a > _ORDER_FEW:
            sub = np.empty(z - a, np.uint64)
            for x in range(a, z):
                sub[x - a] = keys[order[x]]
            order[a:z] = _radix_sort(sub, order[a:z].copy(), z - a)
        else:
            for x in range(a + 1, z):
                o = order[x]
                key = keys[o]
                y = x
                while y > a and keys[order[y - 1]] > key:
                    order[y] = order[y - 1]
                    y -= 1
                order[y] = o
    return order


@njit(cache=True, nogil=True)
def _radix_sort(keys: np.ndarray, payload: np.ndarray, m: int) -> np.ndarray:
    """``payload[:m]`` ordered by ``keys[:m]`` (uint64) ascending, stably: an LSD radix sort, a byte
    per pass, passes where every key has the same byte skipped; O(m) whatever the data (numba's
    quicksort takes several times as long on scores). Both arrays are used as work space."""
    counts = np.zeros((8, 256), np.int64)
    for i in range(m):
        x = keys[i]
        for b in range(8):
            counts[b, (x >> np.uint64(8 * b)) & _BYTE] += 1
    other_keys = np.empty(m, np.uint64)
    other_payload = np.empty(m, payload.dtype)
    starts = np.empty(256, np.int64)
    for b in range(8):
        if counts[b].max() == m:
            continue
        total = 0
        for v in range(256):
            starts[v] = total
            total += counts[b, v]
        shift = np.uint64(8 * b)
        for i in range(m):
            x = keys[i]
            v = (x >> shift) & _BYTE
            p = starts[v]
            other_keys[p] = x
            other_payload[p] = payload[i]
            starts[v] = p + 1
        keys, other_keys = other_keys, keys
        payload, other_payload = other_payload, payload
    return payload[:m]


@njit(cache=True, nogil=True)
def _by_rank_desc(order: np.ndarray, lo: int, hi: int, docs: np.ndarray, id_rank: np.ndarray) -> None:
    """Sort ``order[lo:hi]`` by the id rank of its documents, descending (ranks are distinct)."""
    if hi - lo <= 16:  # insertion sort: most runs of ties are short
        for x in range(lo + 1, hi):
            o = order[x]
            r = id_rank[docs[o]]
            y = x
            while y > lo and id_rank[docs[order[y - 1]]] < r:
                order[y] = order[y - 1]
                y -= 1
            order[y] = o
        return
    ranks = np.empty(hi - lo, np.int64)
    for x in range(lo, hi):
        ranks[x - lo] = -id_rank[docs[order[x]]]
    by_rank = np.argsort(ranks)
    run = order[lo:hi].copy()
    for x in range(hi - lo):
        order[lo + x] = run[by_rank[x]]


@njit(cache=True, nogil=True)
def _heap_select(cand: np.ndarray, nc: int, acc: np.ndarray, const: float, id_rank: np.ndarray, k: int,
                 floor: float, hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, out_docs: np.ndarray,
                 out_scores: np.ndarray, dense: bool = False) -> int:
    """:func:`_select` with a bounded min-heap keyed by (score, id rank) holding the best k so far;
    the heap is then emptied worst-first into the output from the back."""
    bits = acc.view(np.int64)
    n = 0
    lim = floor  # max(floor, the worst kept score once k are kept): below it, no need to look at the id
    for i in range(np.uint64(nc)):
        d = i if dense else np.uint64(cand[i])
        s = acc[d] + const
        if s < lim:
            continue
        if dense and bits[d] == _NO_POSTING:
            continue
        r = id_rank[d]
        if n < k:
            # sift up
            j = n
            hs[j] = s
            hr[j] = r
            hd[j] = d
            n += 1
            while j > 0:
                parent = (j - 1) // 2
                if not _worse(hs[j], hr[j], hs[parent], hr[parent]):
                    break
                hs[j], hs[parent] = hs[parent], hs[j]
                hr[j], hr[parent] = hr[parent], hr[j]
                hd[j], hd[parent] = hd[parent], hd[j]
                j = parent
            if n == k:
                lim = max(floor, hs[0])
        elif _worse(hs[0], hr[0], s, r):
            hs[0] = s
            hr[0] = r
            hd[0] = d
            _sift_down(hs, hr, hd, n, 0)
            lim = max(floor, hs[0])
    count = n
    while n > 0:
        out_docs[n - 1] = hd[0]
        out_scores[n - 1] = hs[0]
        n -= 1
        hs[0] = hs[n]
        hr[0] = hr[n]
        hd[0] = hd[n]
        _sift_down(hs, hr, hd, n, 0)
    return count


# Pruning keeps a document or a term only when its bound clears the threshold by this relative
# margin: far above float64 rounding (about 1e-16 per addition), so exactness never depends on it.
_MARGIN = 1e-9


@njit(cache=True, nogil=True)
def _kth_largest(acc: np.ndarray, docs: np.ndarray, n: int, k: int, buf: np.ndarray) -> float:
    """The ``k``-th largest of ``acc[docs[:n]]`` (``n >= k``). Called on the first few candidates
    only: a subset's k-th largest is never above the whole set's, so it is a cheap lower bound."""
    for i in range(np.uint64(n)):
        buf[i] = acc[np.uint64(docs[i])]
    return _select_in_place(buf, n, n - k)


@njit(cache=True, nogil=True)
def _select_in_place(a: np.ndarray, n: int, kth: int) -> float:
    """The value that would stand at ``kth`` if ``a[:n]`` were sorted ascending (quickselect with a
    median-of-three pivot, in place: no allocation)."""
    lo, hi = 0, n - 1
    while hi > lo:
        mid = (lo + hi) // 2
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return a[kth]
    return a[kth]


# A dense selection's histograms are of the scores' float64 bits (non-negative values order as their
# bits): a bucket is 1/128 of a binade (the exponent and the top 7 bits of the mantissa), so the
# 4096 buckets follow the scores 32 binades down from the best, where a common term's small weights
# crowd (a histogram of equal widths puts them all in its lowest bucket: a query with a few rare
# terms and one in almost every document, k above the rare terms' documents, listed them all)
_LOG_SHIFT = np.uint64(45)


@njit(cache=True, nogil=True, inline="always")
def _as_bits(x: float) -> int:
    return np.array([x]).view(np.int64)[0]


@njit(cache=True, nogil=True, inline="always")
def _as_float(b: int) -> float:
    return np.array([b], np.int64).view(np.float64)[0]


@njit(cache=True, nogil=True)
def _dense_floor(acc: np.ndarray, const: float, k: int, top: float, stride: int) -> float:
    """A floor of the k-th best final score (``acc[d] + const``; ``acc`` >= 0 where scored, ``top``
    above every ``acc``): the lower edge of the highest bucket of a histogram of the scores' bits
    that, with the buckets above it, holds k documents (of every ``stride``-th document: about twice
    its share of k, a floor that is then usually, not always, low enough); -inf if none."""
    bits = acc.view(np.int64)
    n = acc.shape[0]
    base = (_as_bits(top) >> _LOG_SHIFT) - (_BUCKETS - 1)
    counts4 = np.zeros((4, _BUCKETS), np.int64)
    for i in range(np.uint64(n // stride + (n % stride > 0))):
        d = i * np.uint64(stride)
        x = bits[d]
        counts4[i & np.uint64(3), min(max((x >> _LOG_SHIFT) - base, 0), _BUCKETS - 1)] += x != _NO_POSTING
    wanted = k if stride == 1 else 2 * (k // stride) + 16
    b = _bucket_reaching(counts4[0] + counts4[1] + counts4[2] + counts4[3], 0, wanted)
    if b <= 0:
        return -np.inf
    edge = _as_float((b + base) << _LOG_SHIFT)
    return (edge + const) - _MARGIN * (edge + abs(top) + abs(const))


# documents per block of _list_and_clear's test (measured on the Zipf benchmark: 16 halves the time of
# a test per document, 8 is as fast, 32 and more are slower)
_LIST_BLOCK = 16


@njit(cache=True, nogil=True, inline="always")
def _list_block(acc: np.ndarray, bits: np.ndarray, first: int, last: int, low_bits: int, const: float, floor: float,
                keep: np.ndarray, buf: np.ndarray, m: int) -> int:
    """:func:`_list_and_clear` of the documents ``first:last`` (``bits``: ``acc`` viewed as int64;
    those below ``low_bits`` cannot reach ``floor``); returns the new count of listed documents."""
    hit = False
    for d in range(first, last):
        hit |= bits[d] >= low_bits
    if hit:
        for d in range(first, last):
            if bits[d] >= low_bits:
                s = acc[d] + const
                if s >= floor:
                    keep[m] = d
                    buf[m] = s
                    m += 1
    for d in range(first, last):
        acc[d] = -0.0
    return m


@njit(cache=True, nogil=True)
def _list_and_clear(acc: np.ndarray, const: float, floor: float, keep: np.ndarray, buf: np.ndarray) -> int:
    """List the scored documents with ``acc[d] + const >= floor`` in ``keep`` and their scores in
    ``buf`` (returns how many), setting every ``acc[d]`` back to -0.0 in the same pass."""
    bits = acc.view(np.int64)
    n = acc.shape[0]
    m = 0
    low = (floor - const) - _MARGIN * (abs(floor) + abs(const))
    if low > 0.0:
        # an integer comparison passes over most documents: below ``low`` (which is below every
        # acc[d] that reaches the floor) no score can, and -0.0 has the lowest bits of all
        # in blocks of _LIST_BLOCK: the test of a whole block compiles to vector instructions
        low_bits = _as_bits(low)
        blocks = n // _LIST_BLOCK
        for block in range(blocks):
            m = _list_block(acc, bits, block * _LIST_BLOCK, (block + 1) * _LIST_BLOCK, low_bits, const, floor, keep,
                            buf, m)
        m = _list_block(acc, bits, blocks * _LIST_BLOCK, n, low_bits, const, floor, keep, buf, m)
    else:
        for d in range(np.uint64(n)):
            s = acc[d] + const
            if s >= floor and bits[d] != _NO_POSTING:
                keep[m] = d
                buf[m] = s
                m += 1
            acc[d] = -0.0
    return m


@njit(cache=True, nogil=True)
def _narrow_pairs(docs: np.ndarray, scores: np.ndarray, m: int, k: int) -> int:
    """Keep of ``docs[:m]``/``scores[:m]`` (``m > k``) those at or above a floor of the k-th best
    score (histograms of the scores, a crowded bucket histogrammed again, twice at most); returns
    how many are kept: at least ``k``, every document of the top k, ties included."""
    lo = np.inf
    hi = -np.inf
    for i in range(m):
        lo = min(lo, scores[i])
        hi = max(hi, scores[i])
    floor = lo
    hi = np.nextafter(hi, np.inf)
    counts = np.zeros(_BUCKETS, np.int64)
    for _ in range(2):
        if not hi > lo:
            break
        counts[:] = 0
        scale = _BUCKETS / (hi - lo)
        above = 0
        for i in range(m):
            s = scores[i]
            if s >= hi:
                above += 1
            elif s >= lo:
                counts[min(int((s - lo) * scale), _BUCKETS - 1)] += 1
        b = _bucket_reaching(counts, above, k)
        if b < 0:
            break
        edge = lo + b / scale
        floor = max(floor, edge - _MARGIN * (abs(edge) + abs(lo) + abs(hi)))
        if counts[b] <= max(k // 4, 64):
            break
        lo, hi = edge, lo + (b + 1) / scale
    c = 0
    for i in range(m):
        if scores[i] >= floor:
            docs[c] = docs[i]
            scores[c] = scores[i]
            c += 1
    return c


@njit(cache=True, nogil=True)
def _best_pairs(docs: np.ndarray, scores: np.ndarray, m: int, id_rank: np.ndarray, k: int, scratch: np.ndarray,
                out_docs: np.ndarray, out_scores: np.ndarray) -> int:
    """The best ``k`` of the documents ``docs[:m]`` with final scores ``scores[:m]`` into the output
    rows, best first (score descending, then id rank descending): the k-th best score by quickselect
    (after :func:`_narrow_pairs` when they are many), the documents at or above it sorted."""
    if m > _SORT_MAX * k:
        m = _narrow_pairs(docs, scores, m, k)
    if m > k:
        for i in range(m):
            scratch[i] = scores[i]
        kth = _select_in_place(scratch, m, m - k)
        c = 0
        for i in range(m):
            if scores[i] >= kth:
                docs[c] = docs[i]
                scores[c] = scores[i]
                c += 1
        m = c
    for i in range(m):
        scratch[i] = -scores[i]
    order = _radix_order(scratch, m)
    n = min(k, m)
    i = 0
    while i < n:
        j = i + 1
        while j < m and scores[order[j]] == scores[order[i]]:
            j += 1
        if j - i > 1:
            _by_rank_desc(order, i, j, docs, id_rank)
        i = j
    for i in range(n):
        out_docs[i] = docs[order[i]]
        out_scores[i] = scores[order[i]]
    return n


@njit(cache=True, nogil=True)
def _dense_top_k(acc: np.ndarray, const: float, k: int, top: float, id_rank: np.ndarray, keep: np.ndarray,
                 buf: np.ndarray, scratch: np.ndarray, out_docs: np.ndarray, out_scores: np.ndarray,
                 sample: bool) -> int:
    """The top k once every term is added in full (weights >= 0, every ``acc`` below ``top``),
    leaving ``acc`` all -0.0. With ``sample`` (and documents many next to k) the floor comes from
    every :data:`_SAMPLE`-th document; when it proves too high, -1 (``acc`` cleared all the same):
    the caller adds the terms again and calls it without ``sample``, which never leaves one out."""
    stride = _SAMPLE if sample and acc.shape[0] >= 64 * k else 1
    floor = _dense_floor(acc, const, k, top, stride)
    m = _list_and_clear(acc, const, floor, keep, buf)
    if m < k and stride > 1 and floor > -np.inf:
        return -1
    return _best_pairs(keep, buf, m, id_rank, k, scratch, out_docs, out_scores)


@njit(cache=True, nogil=True, inline="always")
def _subset(k: int) -> int:
    """How many of the first candidates a threshold is taken from (its cost, and its strength: with
    4,096 rather than 1,024 at a small k, a top-10 batch of the 10^6-document Zipf benchmark took 8%
    less time, of the 150k one the same)."""
    return max(4 * k, 4096)


@njit(cache=True, nogil=True, inline="always")
def _gallop(doc_nums: np.ndarray, pos: int, hi: int, d: int) -> int:
    """The first position in ``pos:hi`` whose document is >= ``d`` (``hi`` if none): an exponential
    then a binary search from ``pos``, cheap when successive targets are close."""
    step = 1
    while pos + step < hi and doc_nums[pos + step] < d:
        step *= 2
    lo = pos + step // 2 if step > 1 else pos
    top = min(pos + step + 1, hi)
    while lo < top:
        mid = (lo + top) // 2
        if doc_nums[mid] < d:
            lo = mid + 1
        else:
            top = mid
    return lo


# marks[d] during a search: _KEPT while the document is one of those the remaining terms update, else 0
_KEPT = 1
# a search stops listing its candidates once they could exceed n_docs / _DENSE (n_docs / _DENSE_LARGE_K
# for k >= _SORT_K: for a large k, pruning saves less and the dense selection costs little next to
# it, so going dense sooner pays; for a small k it does not; measured on the Zipf benchmark: with 8
# rather than 16 and the larger _subset, top-10 batches of 10^6 documents took 13% less time, of
# 150k the same; 32 was 19% slower)
_DENSE = 8
_DENSE_LARGE_K = 32
# a term reaches the kept documents by galloping when its postings are more than _GALLOP times them
# (measured on the Zipf benchmark: with 8, galloping to a few thousand kept documents through lists
# of 10^5 postings cost more than adding the whole lists)
_GALLOP = 64


@njit(cache=True, nogil=True, inline="always")
def _weight(codes: np.ndarray, table: np.ndarray, scale: float, p: int) -> float:
    """The weight of posting ``p``: its term's ``scale`` (idf) times its entry of ``table`` (its tf part,
    by its (tf, document length) pair ``codes[p]``), + 0.0 (a -0.0 product is 0.0: -0.0 means "no
    posting added yet"); exactly :meth:`bm25lab.engine.retrieval.PreparedWeights.of_span`."""
    return scale * table[codes[p]] + 0.0


@njit(cache=True, nogil=True)
def _add_term_to_kept(docs: np.ndarray, n: int, marks: np.ndarray, acc: np.ndarray, doc_nums: np.ndarray,
                      codes: np.ndarray, table: np.ndarray, scale: float, lo: int, hi: int, mult: float) -> None:
    """Add a term's weights (postings ``lo:hi``, see :func:`_weight`) to the kept documents ``docs[:n]``
    (ascending, marked ``_KEPT`` in ``marks``) that have it: galloping from one kept document to the
    next when they are few next to the postings (a gallop costs some dozens of postings' checks),
    else one pass over the postings checking the marks."""
    if n * _GALLOP < hi - lo:
        pos = lo
        for i in range(n):
            d = docs[i]
            pos = _gallop(doc_nums, pos, hi, d)
            if pos >= hi:
                return
            if doc_nums[pos] == d:
                w = _weight(codes, table, scale, pos)
                acc[d] += w if mult == 1.0 else w * mult
    else:
        for p in range(np.uint64(lo), np.uint64(hi)):
            d = np.uint32(doc_nums[p])
            if marks[d] == _KEPT:
                w = _weight(codes, table, scale, p)
                acc[d] += w if mult == 1.0 else w * mult


@njit(cache=True, nogil=True, inline="always")
def _add_in_full(acc: np.ndarray, doc_nums: np.ndarray, codes: np.ndarray, table: np.ndarray, scale: float,
                 lo: int, hi: int, mult: float) -> None:
    """Add a term's weights (postings ``lo:hi``, times ``mult``) to every one of its documents."""
    if mult == 1.0:
        for p in range(np.uint64(lo), np.uint64(hi)):
            acc[np.uint32(doc_nums[p])] += _weight(codes, table, scale, p)
    else:
        for p in range(np.uint64(lo), np.uint64(hi)):
            acc[np.uint32(doc_nums[p])] += _weight(codes, table, scale, p) * mult


# the canonical term order, compiled from its one definition
_term_order = njit(cache=True, nogil=True)(term_order)


@njit(cache=True, nogil=True)
def query_top_k(starts: np.ndarray, ends: np.ndarray, mult: np.ndarray, upper: np.ndarray, scale: np.ndarray,
                const: float, doc_nums: np.ndarray, codes: np.ndarray, table: np.ndarray, id_rank: np.ndarray,
                k: int, prune: bool, acc: np.ndarray, marks: np.ndarray, cand: np.ndarray, keep: np.ndarray, buf: np.ndarray,
                hs: np.ndarray, hr: np.ndarray, hd: np.ndarray, out_docs: np.ndarray, out_scores: np.ndarray) -> int:
    """Exact top-``k`` of one query (terms ``j`` = postings ``starts[j]:ends[j]``, multiplicity
    ``mult[j]``, largest weight ``upper[j]``, already times ``mult[j]``, idf ``scale[j]``: a posting
    ``p`` weighs :func:`_weight` of ``codes``, ``table``); returns how many.

    Terms are added in the canonical order (largest weight first). Without pruning (``prune``
    False: some weight is negative) every posting is added. With pruning, a term-at-a-time MaxScore:
    once at least ``k`` documents are scored, a lower bound ``theta`` of the k-th best partial score
    is also one of the final k-th score (weights are >= 0); when the remaining terms' largest
    weights add up to less than ``theta`` no document not yet scored can enter the top ``k``, so the
    remaining terms only update the documents that still can (galloping through their postings),
    and documents are dropped as their bound falls below ``theta``. Kept documents get every term,
    in the same order: the same documents, scores and order as the plain path.

    ``acc`` (per document) is all -0.0 (:data:`_NO_POSTING`) and ``marks`` all zero on entry and both
    are left so; ``cand``, ``keep``, ``buf`` are per-document scratch.
    """
    m = starts.shape[0]
    n_docs = acc.shape[0]
    bits = acc.view(np.int64)
    order = _term_order(upper)
    rest = np.zeros(m + 1)
    for i in range(m - 1, -1, -1):
        rest[i] = rest[i + 1] + upper[order[i]]
    nc = 0
    # Candidates are listed in ``cand`` while they are few; past n_docs / dense the per-document
    # arrays are walked in order instead (and cleared whole), which beats random access then.
    tracked = True
    dense = _DENSE_LARGE_K if k >= _SORT_K else _DENSE
    lookup_from = m
    theta = 0.0
    for i in range(m):
        j = order[i]
        lo, hi = starts[j], ends[j]
        # theta <= the best partial score <= the processed terms' bound: only then can it prune;
        # a threshold costs O(_subset(k)): not worth it for a term with fewer postings than that;
        # and once the candidates are dense, listing the kept ones costs a pass over every document,
        # more than adding the remaining terms in full saves (measured on the Zipf benchmark)
        if (prune and tracked and i > 0 and nc >= k and rest[i] < rest[0] - rest[i]
                and hi - lo > _subset(k)):
            theta = _kth_largest(acc, cand, min(nc, _subset(k)), k, buf)
            if rest[i] < theta - _MARGIN * (abs(theta) + rest[0]):
                lookup_from = i
                break
        if tracked and (nc + hi - lo) * dense > n_docs:
            tracked = False
        w_mult = mult[j]
        s = scale[j]
        if tracked:
            for p in range(np.uint64(lo), np.uint64(hi)):
                d = np.uint32(doc_nums[p])
                cand[nc] = d  # branch-free: kept only if new
                nc += bits[d] == _NO_POSTING
                w = _weight(codes, table, s, p)
                acc[d] += w if w_mult == 1.0 else w * w_mult
        else:
            _add_in_full(acc, doc_nums, codes, table, s, lo, hi, w_mult)
    if lookup_from < m:
        bound = theta - _MARGIN * (abs(theta) + rest[0]) - rest[lookup_from]
        ns = 0
        for c in range(nc):
            d = cand[c]
            if acc[d] >= bound:
                marks[d] = _KEPT
                keep[ns] = d
                ns += 1
        keep[:ns] = _radix_sort(keep[:ns].astype(np.uint64), keep[:ns].copy(), ns)  # ascending, to gallop
        for i in range(lookup_from, m):
            j = order[i]
            _add_term_to_kept(keep, ns, marks, acc, doc_nums, codes, table, scale[j], starts[j], ends[j], mult[j])
            if i + 1 < m and ns > k:
                theta = _kth_largest(acc, keep, min(ns, _subset(k)), k, buf)
                bound = theta - _MARGIN * (abs(theta) + rest[0]) - rest[i + 1]
                kept = 0
                for c in range(ns):
                    d = keep[c]
                    if acc[d] >= bound:
                        keep[kept] = d
                        kept += 1
                    else:
                        marks[d] = 0
                ns = kept
        for c in range(ns):
            marks[keep[c]] = 0
        count = _select(keep, ns, acc, const, id_rank, k, _floor(keep, ns, acc, const, k), keep, buf, hs, hr, hd,
                        out_docs, out_scores)
    elif tracked:
        count = _select(cand, nc, acc, const, id_rank, k, _floor(cand, nc, acc, const, k), keep, buf, hs, hr, hd,
                        out_docs, out_scores)
    else:
        if prune and k >= _SORT_K:
            top = (rest[0] + const) * (1.0 + _MARGIN) + _MARGIN  # above every score (weights >= 0)
            scratch = cand.view(np.float64)  # the listed documents are no longer needed: acc is cleared whole
            count = _dense_top_k(acc, const, k, top, id_rank, keep, buf, scratch, out_docs, out_scores, True)
            if count < 0:
                for i in range(m):
                    j = order[i]
                    _add_in_full(acc, doc_nums, codes, table, scale[j], starts[j], ends[j], mult[j])
                count = _dense_top_k(acc, const, k, top, id_rank, keep, buf, scratch, out_docs, out_scores, False)
            return count
        else:
            # the k-th best final score of the documents listed before the switch (those of the
            # heaviest terms, often the best) is a floor of the k-th best of all: the heap then
            # rarely reorders itself
            floor = -np.inf
            if nc >= k:
                floor = _kth_largest(acc, cand, min(nc, _subset(k)), k, buf) + const
            count = _select(keep, n_docs, acc, const, id_rank, k, floor, keep, buf, hs, hr, hd, out_docs,
                            out_scores, True)
    if tracked:
        for c in range(np.uint64(nc)):
            acc[np.uint64(cand[c])] = -0.0
    else:
        acc[:] = -0.0
    return count


@njit(parallel=True, cache=True, nogil=True)
def batch_top_k(q_ptr: np.ndarray, term_ids: np.ndarray, counts: np.ndarray, offsets: np.ndarray,
                term_upper: np.ndarray, term_scale: np.ndarray, q_const: np.ndarray, doc_nums: np.ndarray,
                codes: np.ndarray, table: np.ndarray, id_rank: np.ndarray, n_docs: int, k: int, prune: bool,
                n_chunks: int, out_docs: np.ndarray, out_scores: np.ndarray, out_len: np.ndarray) -> None:
    """:func:`query_top_k` for every query of a :class:`bm25lab.engine.retrieval.TermBatch` (``q_ptr``,
    ``term_ids``, ``counts``) with ``offsets`` of the postings and each term's largest weight
    ``term_upper`` and idf ``term_scale``, in ``n_chunks`` parallel chunks (queries ``c``, ``c + n_chunks``, ...)."""
    nq = q_ptr.shape[0] - 1
    n_spans = term_ids.shape[0]
    span_start = np.empty(n_spans, np.int64)
    span_end = np.empty(n_spans, np.int64)
    span_upper = np.empty(n_spans, np.float64)
    span_scale = np.empty(n_spans, np.float64)
    for j in range(n_spans):
        t = term_ids[j]
        span_start[j] = offsets[t]
        span_end[j] = offsets[t + 1]
        span_upper[j] = term_upper[t] * counts[j]
        span_scale[j] = term_scale[t]
    for c in prange(n_chunks):
        acc = np.full(n_docs, -0.0)
        marks = np.zeros(n_docs, np.uint8)
        cand = np.empty(n_docs, np.int64)
        keep = np.empty(n_docs, np.int64)
        buf = np.empty(n_docs, np.float64)
        hs = np.empty(k, np.float64)
        hr = np.empty(k, np.int64)
        hd = np.empty(k, np.int64)
        for qi in range(c, nq, n_chunks):
            a, z = q_ptr[qi], q_ptr[qi + 1]
            out_len[qi] = query_top_k(span_start[a:z], span_end[a:z], counts[a:z], span_upper[a:z],
                                      span_scale[a:z], q_const[qi], doc_nums, codes, table, id_rank, k, prune,
                                      acc, marks, cand, keep, buf, hs, hr, hd, out_docs[qi], out_scores[qi])


@njit(cache=True, nogil=True)
def mark_pairs(doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
               used: np.ndarray) -> None:
    """Mark ``used[tf * n_lengths + length_rank[doc]]`` for every posting (its (tf, length) pair)."""
    for p in range(np.uint64(doc_nums.shape[0])):
        used[np.uint64(tfs[p]) * np.uint64(n_lengths) + np.uint64(length_rank[np.uint32(doc_nums[p])])] = 1


@njit(cache=True, nogil=True)
def write_codes(doc_nums: np.ndarray, tfs: np.ndarray, length_rank: np.ndarray, n_lengths: int,
                code_of: np.ndarray, out: np.ndarray) -> None:
    """``out[p]``: the code (``code_of`` by pair key, as :func:`mark_pairs`) of every posting's pair."""
    for p in range(np.uint64(doc_nums.shape[0])):
        out[p] = code_of[np.uint64(tfs[p]) * np.uint64(n_lengths) + np.uint64(length_rank[np.uint32(doc_nums[p])])]


# ---------------------------------------------------------------------------------------------
# Building: token strings to term ids, and (term, document, tf) triples, for bm25lab.engine.postings


@njit(cache=True, nogil=True)
def _rehash(hashes: np.ndarray, distinct: int, cap: int) -> np.ndarray:
    table = np.full(cap, -1, dtype=np.int32)
    mask = np.uint64(cap - 1)
    for e in range(distinct):
        slot = np.int64(hashes[e] & mask)
        while table[slot] >= 0:
            slot = (slot + 1) & (cap - 1)
        table[slot] = e
    return table


@njit(cache=True, nogil=True)
def count_pieces(text: np.ndarray) -> int:
    """How many pieces single spaces cut ``text`` into (0x20 is only ever a space in UTF-8)."""
    pieces = 1
    for i in range(text.shape[0]):
        if text[i] == 32:
            pieces += 1
    return pieces


@njit(cache=True, nogil=True)
def _grown(a: np.ndarray, size: int) -> np.ndarray:
    b = np.empty(max(size, 2 * a.shape[0]), dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


_FNV_OFFSET = np.uint64(14695981039346656037)  # FNV-1a over a term's UTF-8 bytes, then _mixed
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True, inline="always")
def _mixed(h: np.uint64) -> np.uint64:
    """splitmix64's finaliser over an FNV-1a hash: FNV's low bits, the table's slots, are weak for short keys."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _same_bytes(x: np.ndarray, x_start: int, y: np.ndarray, y_start: int, length: int) -> bool:
    """Whether ``x[x_start:x_start + length]`` and ``y[y_start:y_start + length]`` hold the same bytes."""
    for j in range(np.uint64(length)):
        if x[np.uint64(x_start) + j] != y[np.uint64(y_start) + j]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _term_id(text: np.ndarray, a: int, length: int, h: np.uint64, insert: bool, table: np.ndarray,
             hashes: np.ndarray, term_starts: np.ndarray, term_lengths: np.ndarray, term_bytes: np.ndarray,
             distinct: int, used: int) -> tuple:
    """The id of the term ``text[a:a + length]`` (hash ``h``) in the vocabulary arrays of
    :func:`encode_tokens`; a new term takes the next id with ``insert``, else is -1. Returns (id,
    table, hashes, term_starts, term_lengths, term_bytes, distinct, used): arrays grown as needed,
    the table doubled when half full."""
    cap = table.shape[0]
    slot = h & np.uint64(cap - 1)
    while True:
        e = table[slot]
        if e < 0 and not insert:
            return np.int64(-1), table, hashes, term_starts, term_lengths, term_bytes, distinct, used
        if e < 0:
            if distinct == hashes.shape[0]:
                hashes = _grown(hashes, distinct + 1)
                term_starts = _grown(term_starts, distinct + 1)
                term_lengths = _grown(term_lengths, distinct + 1)
            if used + length > term_bytes.shape[0]:
                term_bytes = _grown(term_bytes, used + length)
            term_bytes[used:used + length] = text[a:a + length]
            term_starts[distinct] = used
            term_lengths[distinct] = length
            hashes[distinct] = h
            table[slot] = distinct
            if 2 * (distinct + 1) > cap:
                table = _rehash(hashes, distinct + 1, 2 * cap)
            return (np.int64(distinct), table, hashes, term_starts, term_lengths, term_bytes, distinct + 1,
                    used + length)
        if hashes[e] == h and term_lengths[e] == length and _same_bytes(term_bytes, term_starts[e], text, a, length):
            return np.int64(e), table, hashes, term_starts, term_lengths, term_bytes, distinct, used
        slot = (slot + np.uint64(1)) & np.uint64(cap - 1)


@njit(cache=True, nogil=True)
def encode_tokens(text: np.ndarray, ends: np.ndarray, n: int, insert: bool, table: np.ndarray, hashes: np.ndarray,
                  term_starts: np.ndarray, term_lengths: np.ndarray, term_bytes: np.ndarray, distinct: int,
                  used: int) -> tuple:
    """The term id of each of the ``n`` tokens of ``text`` (bytes): the pieces between single spaces,
    or, when ``ends`` is not empty, ``text[ends[i - 1]:ends[i]]``. The vocabulary is kept in arrays:
    an open-addressing ``table`` of term ids by hash (FNV-1a, mixed; doubled when half full), each
    term's hash and its bytes at ``term_starts``/``term_lengths`` in ``term_bytes``. With ``insert``
    a new term takes the next id, else its id is -1 and nothing changes. Returns (ids, table, hashes,
    term_starts, term_lengths, term_bytes, distinct, used): the arrays may have been replaced by
    larger ones."""
    by_space = ends.shape[0] == 0
    ids = np.empty(n, dtype=np.int32)
    a = 0
    b = -1
    for t in range(n):
        if t:
            a = b + 1 if by_space else ends[t - 1]
        b = a
        if by_space:
            while b < text.shape[0] and text[np.uint64(b)] != 32:
                b += 1
        else:
            b = ends[t]
        length = b - a
        h = _FNV_OFFSET
        for j in range(np.uint64(a), np.uint64(b)):
            h = (h ^ np.uint64(text[j])) * _FNV_PRIME
        term, table, hashes, term_starts, term_lengths, term_bytes, distinct, used = _term_id(
            text, a, length, _mixed(h), insert, table, hashes, term_starts, term_lengths, term_bytes, distinct, used)
        ids[t] = term
    return ids, table, hashes, term_starts, term_lengths, term_bytes, distinct, used


@njit(cache=True, nogil=True)
def group_query_terms(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries' token ids (query ``q``: the next ``lengths[q]`` of ``ids``; -1: not in the vocabulary)
    as :class:`bm25lab.engine.retrieval.TermBatch` arrays: (q_ptr, each query's distinct known ids ascending,
    how often each occurs)."""
    nq = lengths.shape[0]
    q_ptr = np.zeros(nq + 1, np.int64)
    terms = np.empty(ids.shape[0], np.int64)
    counts = np.empty(ids.shape[0], np.float64)
    buf = np.empty(lengths.max() if nq else 0, np.int64)
    pos = 0
    out = 0
    for q in range(nq):
        m = 0
        for i in range(pos, pos + lengths[q]):
            if ids[i] >= 0:
                buf[m] = ids[i]
                m += 1
        pos += lengths[q]
        if m > 16:
            buf[:m].sort()
        else:  # insertion sort: most queries are short
            for x in range(1, m):
                v = buf[x]
                y = x
                while y > 0 and buf[y - 1] > v:
                    buf[y] = buf[y - 1]
                    y -= 1
                buf[y] = v
        i = 0
        while i < m:
            j = i + 1
            while j < m and buf[j] == buf[i]:
                j += 1
            terms[out] = buf[i]
            counts[out] = j - i
            out += 1
            i = j
        q_ptr[q + 1] = out
    return q_ptr, terms[:out], counts[:out]


@njit(cache=True, nogil=True)
def group_by_term(terms: np.ndarray, lengths: np.ndarray, first_doc: int,
                  num_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term, document, tf) of the tokens ``terms`` (ids below ``num_terms``) of consecutive documents
    of ``lengths`` tokens, numbered from ``first_doc``: every term's triples together, documents
    ascending. One pass over the tokens makes the (term, document) pairs in document order, then a
    counting sort by term places them (linear in tokens plus terms)."""
    n = terms.shape[0]
    pair_terms = np.empty(n, dtype=np.int32)
    pair_docs = np.empty(n, dtype=np.int32)
    pair_tfs = np.zeros(n, dtype=np.int32)
    starts = np.zeros(num_terms + 1, dtype=np.int64)
    last = np.full(num_terms, -1, dtype=np.int64)  # the last document of each term, and its pair
    at = np.empty(num_terms, dtype=np.int64)
    pairs = 0
    t = 0
    for d in range(lengths.shape[0]):
        for _ in range(lengths[d]):
            term = np.uint32(terms[t])
            if last[term] != d:
                last[term] = d
                at[term] = pairs
                pair_terms[pairs] = term
                pair_docs[pairs] = first_doc + d
                starts[term + np.uint32(1)] += 1
                pairs += 1
            pair_tfs[np.uint64(at[term])] += 1
            t += 1
    for term in range(num_terms):
        starts[term + 1] += starts[term]
    out_terms = np.empty(pairs, dtype=np.int32)
    out_docs = np.empty(pairs, dtype=np.int32)
    out_tfs = np.empty(pairs, dtype=np.int32)
    for p in range(np.uint64(pairs)):
        term = np.uint32(pair_terms[p])
        slot = np.uint64(starts[term])
        starts[term] += 1
        out_terms[slot] = term
        out_docs[slot] = pair_docs[p]
        out_tfs[slot] = pair_tfs[p]
    return out_terms, out_docs, out_tfs


@njit(cache=True, nogil=True)
def sort_terms(term_starts: np.ndarray, term_lengths: np.ndarray, term_bytes: np.ndarray, distinct: int) -> np.ndarray:
    """Ids of the ``distinct`` terms of :func:`encode_tokens`'s arrays in the byte order of their
    UTF-8, which is the code point order. A radix sort by 8 bytes at a time (big-endian, missing
    bytes as 0): each run of terms equal so far is sorted again by their next 8 bytes, and a run
    whose terms all end within those bytes (they differ only by trailing zero bytes then) by length."""
    order = np.arange(distinct, dtype=np.int64)
    keys = np.empty(distinct, dtype=np.uint64)
    runs = [(np.int64(0), np.int64(distinct), np.int64(0))]  # (first, end, bytes already equal)
    while len(runs):
        lo, hi, depth = runs.pop()
        for i in range(lo, hi):
            e = order[i]
            s = term_starts[e] + depth
            m = term_lengths[e] - depth
            key = np.uint64(0)
            for j in range(8):
                key <<= np.uint64(8)
                if j < m:
                    key |= np.uint64(term_bytes[s + j])
            keys[i] = key
        by_key = np.argsort(keys[lo:hi], kind="mergesort")
        order[lo:hi] = order[lo:hi][by_key]
        keys[lo:hi] = keys[lo:hi][by_key]
        i = lo
        while i < hi:
            j = i + 1
            while j < hi and keys[j] == keys[i]:
                j += 1
            if j - i > 1:
                longest = 0
                for r in range(i, j):
                    longest = max(longest, term_lengths[order[r]])
                if longest <= depth + 8:
                    run = order[i:j].copy()
                    order[i:j] = run[np.argsort(term_lengths[run], kind="mergesort")]
                else:
                    runs.append((np.int64(i), np.int64(j), depth + 8))
            i = j
    return order


@njit(cache=True, nogil=True)
def joined_terms(order: np.ndarray, term_starts: np.ndarray, term_lengths: np.ndarray, term_bytes: np.ndarray,
                 used: int) -> tuple[np.ndarray, int]:
    """The bytes of the terms ``order`` (ids into :func:`encode_tokens`'s arrays) one after another,
    with a separator between two: newline, or if a term holds one the next ASCII byte (cyclically)
    that none holds (an ASCII byte in UTF-8 is always a whole character). Returns (bytes,
    separator), the separator -1 when every ASCII byte is in some term (the bytes are then of no use)."""
    present = np.zeros(128, dtype=np.bool_)
    for i in range(used):
        if term_bytes[i] < 128:
            present[term_bytes[i]] = True
    separator = -1
    for c in range(128):
        if not present[(c + 10) % 128]:  # newline first
            separator = (c + 10) % 128
            break
    n = order.shape[0]
    out = np.empty(used + max(n - 1, 0), dtype=np.uint8)
    p = 0
    for i in range(n):
        if i:
            out[p] = separator
            p += 1
        e = order[i]
        s = term_starts[e]
        for j in range(term_lengths[e]):
            out[p + j] = term_bytes[s + j]
        p += term_lengths[e]
    return out, separator


# Raw texts to a chunk's (term, document, tf) triples in one pass (the whitespace analysis's compiled path)


def _byte_classes() -> np.ndarray:
    """What each byte is to the whitespace analysis of bytes: 1 an ASCII whitespace byte of
    ``str.split()`` (\\t \\n \\v \\f \\r, \\x1c-\\x1f, the space), 2 an ASCII letter or digit or any byte of a
    non-ASCII character (such texts come analysed already: every piece is a term), 0 anything else."""
    classes = np.zeros(256, dtype=np.uint8)
    classes[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = 1
    for first, last in ((48, 57), (65, 90), (97, 122), (128, 255)):
        classes[first:last + 1] = 2
    return classes


_BYTE_CLASS = _byte_classes()  # a constant of the compiled code


@njit(cache=True, nogil=True)
def split_texts(text: np.ndarray, bounds: np.ndarray, first_doc: int) -> tuple:
    """The whitespace analysis of documents ``text[bounds[d]:bounds[d + 1]]`` (bytes; ASCII text as
    it is, other text analysed already and joined by spaces), reduced to (term, document, tf) triples
    over a vocabulary of the chunk's own, as :func:`group_by_term` gives them. A token is a run of
    bytes between ASCII whitespace bytes and is kept when it holds a letter or digit (the classes of
    :func:`_byte_classes`; a lookup per byte: 12% faster than comparisons). Local term ``e`` is the
    ``e``-th distinct token met, its bytes ``text[starts[e]:starts[e] + lengths[e]]``. Returns (terms, documents from ``first_doc``, tfs,
    each document's length, each term's hash, start, length)."""
    n = text.shape[0]
    n_docs = bounds.shape[0] - 1
    cap = 1 << 12
    table = np.full(cap, -1, dtype=np.int32)
    size = n // 2 + 2  # at most this many tokens, so terms and pairs: nothing grows in the loop (it cost half)
    hashes = np.empty(size, dtype=np.uint64)
    starts = np.empty(size, dtype=np.int64)
    lengths = np.empty(size, dtype=np.int64)
    last = np.empty(size, dtype=np.int64)  # each term's last document, and that document's pair
    at = np.empty(size, dtype=np.int64)
    pair_terms = np.empty(size, dtype=np.int32)
    pair_docs = np.empty(pair_terms.shape[0], dtype=np.int32)
    pair_tfs = np.empty(pair_terms.shape[0], dtype=np.int32)
    doc_lengths = np.zeros(n_docs, dtype=np.int32)
    distinct = 0
    pairs = 0
    for d in range(n_docs):
        i = bounds[d]
        end = min(bounds[d + 1], n)
        tokens = 0
        while i < end:
            while i < end and _BYTE_CLASS[text[np.uint64(i)]] == 1:
                i += 1
            a = i
            kinds = 0  # the classes of the piece's bytes, or-ed
            h = _FNV_OFFSET  # encode_tokens's hash, computed as the piece is read
            while i < end:
                c = text[np.uint64(i)]
                kind = _BYTE_CLASS[c]
                if kind == 1:
                    break
                kinds |= kind
                h = (h ^ np.uint64(c)) * _FNV_PRIME
                i += 1
            if kinds == 0:  # no letter or digit: not a term
                continue
            length = i - a
            h = _mixed(h)
            slot = h & np.uint64(cap - 1)
            while True:
                e = table[slot]
                if e < 0:
                    e = distinct
                    hashes[e] = h
                    starts[e] = a
                    lengths[e] = length
                    last[e] = -1
                    table[slot] = e
                    distinct += 1
                    if 2 * distinct > cap:
                        cap *= 2
                        table = _rehash(hashes, distinct, cap)
                    break
                if hashes[e] == h and lengths[e] == length and _same_bytes(text, starts[e], text, a, length):
                    break
                slot = (slot + np.uint64(1)) & np.uint64(cap - 1)
            if last[e] != d:
                last[e] = d
                at[e] = pairs
                pair_terms[pairs] = e
                pair_docs[pairs] = first_doc + d
                pair_tfs[pairs] = 0
                pairs += 1
            pair_tfs[np.uint64(at[e])] += 1
            tokens += 1
        doc_lengths[d] = tokens
    slots = np.zeros(distinct + 1, dtype=np.int64)  # a counting sort of the pairs by term
    for p in range(pairs):
        slots[pair_terms[p] + 1] += 1
    for e in range(distinct):
        slots[e + 1] += slots[e]
    out_terms = np.empty(pairs, dtype=np.int32)
    out_docs = np.empty(pairs, dtype=np.int32)
    out_tfs = np.empty(pairs, dtype=np.int32)
    for p in range(np.uint64(pairs)):
        e = np.uint32(pair_terms[p])
        slot = np.uint64(slots[e])
        slots[e] += 1
        out_terms[slot] = e
        out_docs[slot] = pair_docs[p]
        out_tfs[slot] = pair_tfs[p]
    return (out_terms, out_docs, out_tfs, doc_lengths, hashes[:distinct].copy(), starts[:distinct].copy(),
            lengths[:distinct].copy())


@njit(cache=True, nogil=True)
def merge_terms(text: np.ndarray, local_hashes: np.ndarray, local_starts: np.ndarray, local_lengths: np.ndarray,
                table: np.ndarray, hashes: np.ndarray, term_starts: np.ndarray, term_lengths: np.ndarray,
                term_bytes: np.ndarray, distinct: int, used: int) -> tuple:
    """The terms of a chunk's vocabulary (:func:`split_texts`: term ``e`` is ``text[local_starts[e]:
    local_starts[e] + local_lengths[e]]``, its hash ``local_hashes[e]``) looked up in, or added to, the
    arrays of :func:`encode_tokens`, in local id order (so the ids are those :func:`encode_tokens` gives
    the same tokens in the same order). Returns (each local term's id, then the arrays as
    :func:`encode_tokens` returns them)."""
    ids = np.empty(local_hashes.shape[0], dtype=np.int32)
    for t in range(local_hashes.shape[0]):
        term, table, hashes, term_starts, term_lengths, term_bytes, distinct, used = _term_id(
            text, local_starts[t], local_lengths[t], local_hashes[t], True, table, hashes, term_starts, term_lengths,
            term_bytes, distinct, used)
        ids[t] = term
    return ids, table, hashes, term_starts, term_lengths, term_bytes, distinct, used


@njit(cache=True, nogil=True)
def count_terms(terms: np.ndarray, new_id: np.ndarray, counts: np.ndarray) -> None:
    """Add to ``counts[new_id[old] + 1]`` each triple of term ``old`` (an id before sorting): summed over
    the chunks and accumulated, the CSR offsets."""
    for p in range(terms.shape[0]):
        counts[new_id[np.uint32(terms[p])] + 1] += 1


@njit(cache=True, nogil=True)
def scatter_by_term(terms: np.ndarray, values: np.ndarray, new_id: np.ndarray, free: np.ndarray,
                    out: np.ndarray) -> None:
    """One column of a chunk's triples (documents or tfs) laid out by term: each value goes to ``out``
    at the next free place of its term (``free``, from the CSR offsets, advanced), so that chunks
    given in document order leave each term's values in document order (a counting sort)."""
    for p in range(terms.shape[0]):
        t = np.uint64(new_id[np.uint32(terms[p])])
        out[np.uint64(free[t])] = values[p]
        free[t] += 1
