"""numba kernels of the compiled TREC run reader (imported only by :mod:`bm25lab.evaluation.readers`).

:func:`parse_trec_run` reads one line-aligned chunk of a TREC run's bytes in one pass: it splits the
lines into fields as the Python path does (``bytes.split()`` on ASCII whitespace, lines on ``\\n``,
blank lines and lines whose first field starts with ``#`` skipped), and for each line of at least six
fields notes the query id's segment (a run of rows of one query), copies the document id into a
string column, hashes it, looks for it among the segment's documents and reads its score; then it
numbers the segments' query ids (:func:`_intern`) and orders each segment's ties (:func:`_rank_ties`).
Whatever the Python path would refuse (fewer than six fields, an id that is not UTF-8), and any
document repeated within a segment, stops the kernel with :data:`REFUSED`: the caller then reads the
file the usual way, which names the line.

Formulas and sources: the hash and the decimals below; the tie rule is trec_eval's (score descending,
then document id descending in ``strcmp`` order: ``form_res_rels.c``, ``comp_sim_docno``).

**Hash** (:func:`_string_hash`): that of :func:`bm25lab.engine.columns.string_hashes` (``length *
golden ratio``, then splitmix64's finaliser after each 8 bytes xor-ed in, little-endian, the last
word zero-padded), so the run's hashes are those the evaluation computes for any string column.

**Scores** (:func:`_decimal`): a decimal ``[+-]digits[.digits][(e|E)[+-]digits]`` whose significant
digits make an integer ``w <= 2**53`` and whose power of ten ``e`` has ``|e| <= 22`` is ``w * 10**e``
(or ``w / 10**-e``): both operands are exact float64 values, so the one IEEE operation rounds the
exact quotient or product correctly, to the float64 that C's ``strtod`` and Python's ``float`` give
(Clinger, "How to read floating point numbers accurately", PLDI 1990, the fast path). Any other
spelling (more digits, larger exponents, ``inf``, ``nan``, ``_``, anything else) is left to Python's
``float``: the kernel lists those rows and the caller converts their text.
"""
from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
"""The chunk was read."""
REFUSED = 1
"""A line the Python path would refuse (or must judge): the caller reads the file the usual way."""
TOO_MANY_SLOW = 2
"""More scores than the caller's room for them need Python's ``float``: the caller reads the file the usual way."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)  # exact: 10**22 < 2**53 * 2**22
_MAX_MANTISSA = np.uint64(1 << 53)


@njit(cache=True, nogil=True, inline="always")
def _is_space(b: np.uint8) -> bool:
    """C's ``isspace`` in the C locale, Python's ``bytes.split()``: space, \\t \\n \\v \\f \\r."""
    return b == 32 or (9 <= b <= 13)


@njit(cache=True, nogil=True, inline="always")
def _mix(h: np.uint64) -> np.uint64:
    """splitmix64's finaliser (:func:`bm25lab.engine.columns._mix`)."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(cache=True, nogil=True)
def _string_hash(data: np.ndarray, start: int, end: int) -> np.uint64:
    """The hash of ``data[start:end]`` as :func:`bm25lab.engine.columns.string_hashes` computes it."""
    h = np.uint64(end - start) * _GOLDEN
    at = start
    while at < end:
        word = np.uint64(0)
        stop = min(at + 8, end)
        for k in range(stop - at):
            word |= np.uint64(data[at + k]) << np.uint64(8 * k)
        h = _mix(h ^ word)
        at = stop
    return h


@njit(cache=True, nogil=True)
def _valid_utf8(data: np.ndarray, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is UTF-8 as Python's strict decoder reads it: no overlong forms, no
    surrogates, nothing beyond U+10FFFF, no sequence cut short (RFC 3629's table)."""
    i = start
    while i < end:
        b = data[i]
        if b < 0x80:
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need, lo, hi = 1, 0x80, 0xBF
        elif b == 0xE0:
            need, lo, hi = 2, 0xA0, 0xBF
        elif 0xE1 <= b <= 0xEC or 0xEE <= b <= 0xEF:
            need, lo, hi = 2, 0x80, 0xBF
        elif b == 0xED:
            need, lo, hi = 2, 0x80, 0x9F
        elif b == 0xF0:
            need, lo, hi = 3, 0x90, 0xBF
        elif 0xF1 <= b <= 0xF3:
            need, lo, hi = 3, 0x80, 0xBF
        elif b == 0xF4:
            need, lo, hi = 3, 0x80, 0x8F
        else:
            return False
        if i + need >= end:  # the sequence runs past the field
            return False
        if not (lo <= data[i + 1] <= hi):
            return False
        for k in range(2, need + 1):
            if not (0x80 <= data[i + k] <= 0xBF):
                return False
        i += need + 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _digit_run(data: np.ndarray, i: int, end: int, mantissa: np.uint64, digits: int) -> tuple:
    """The digits from ``data[i]`` on taken into ``mantissa`` (``digits`` significant ones so far;
    leading zeros are not significant): (position after them, mantissa, significant digits, digits
    read, ok); not ok once a 20th significant digit comes (the fast path then cannot read it)."""
    read = 0
    while i < end and 48 <= data[i] <= 57:
        d = data[i] - 48
        if digits or d:
            if digits == 19:
                return i, mantissa, digits, read, False
            mantissa = mantissa * np.uint64(10) + np.uint64(d)
            digits += 1
        read += 1
        i += 1
    return i, mantissa, digits, read, True


@njit(cache=True, nogil=True, inline="always")
def _digits(data: np.ndarray, i: int, end: int, mantissa: np.uint64) -> tuple:
    """The digits from ``data[i]`` on taken into ``mantissa``, with no check of their number: (position
    after them, mantissa)."""
    while i < end:
        d = np.uint64(data[i]) - np.uint64(48)  # wraps around below '0'
        if d > np.uint64(9):
            break
        mantissa = mantissa * np.uint64(10) + d
        i += 1
    return i, mantissa


@njit(cache=True, nogil=True, inline="always")
def _plain_decimal(data: np.ndarray, start: int, end: int) -> tuple:
    """(ok, value) of a score spelled ``digits[.digits]``, as nearly every run spells them, read with
    one branch a digit: ok when the text is that spelling, with 19 digits at most (leading zeros
    counted: the mantissa cannot overflow) making an integer ``<= 2**53``, so that the value is
    :func:`_decimal`'s (the same one division); else (False, 0.0) and :func:`_decimal` reads it."""
    i, mantissa = _digits(data, start, end, np.uint64(0))
    whole = i - start
    fraction = 0
    if i < end and data[i] == 46:  # .
        i, mantissa = _digits(data, i + 1, end, mantissa)
        fraction = i - (start + whole + 1)
    if i != end or whole + fraction == 0 or whole + fraction > 19 or mantissa > _MAX_MANTISSA or fraction > 22:
        return False, 0.0
    return True, np.float64(mantissa) / _POW10[fraction]


@njit(cache=True, nogil=True)
def _decimal(data: np.ndarray, start: int, end: int) -> tuple:
    """(ok, value) of the score text ``data[start:end]``: ok when it is a decimal the fast path reads
    exactly (see the module's notes), else (False, 0.0) and Python's ``float`` must judge it."""
    i = start
    negative = False
    if i < end and (data[i] == 43 or data[i] == 45):  # + -
        negative = data[i] == 45
        i += 1
    # digits: significant digits taken into the mantissa
    i, mantissa, digits, whole, ok = _digit_run(data, i, end, np.uint64(0), 0)
    if not ok:
        return False, 0.0
    fraction = 0
    if i < end and data[i] == 46:  # .
        i, mantissa, digits, fraction, ok = _digit_run(data, i + 1, end, mantissa, digits)
        if not ok:
            return False, 0.0
    if whole + fraction == 0:
        return False, 0.0
    exponent = -fraction  # power of ten of the mantissa's last digit
    if i < end and (data[i] == 101 or data[i] == 69):  # e E
        i += 1
        exp_negative = False
        if i < end and (data[i] == 43 or data[i] == 45):
            exp_negative = data[i] == 45
            i += 1
        if i == end:
            return False, 0.0
        written = 0
        while i < end and 48 <= data[i] <= 57:
            if written > 100_000:
                return False, 0.0
            written = written * 10 + (data[i] - 48)
            i += 1
        exponent += -written if exp_negative else written
    if i != end:
        return False, 0.0
    if mantissa == 0:
        return True, -0.0 if negative else 0.0
    if mantissa > _MAX_MANTISSA or exponent < -22 or exponent > 22:
        return False, 0.0
    value = np.float64(mantissa)
    value = value * _POW10[exponent] if exponent >= 0 else value / _POW10[-exponent]
    return True, -value if negative else value


@njit(cache=True, nogil=True, inline="always")
def _same_bytes(data: np.ndarray, a: int, b: int, length: int) -> bool:
    for k in range(length):
        if data[a + k] != data[b + k]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _same_document(doc_bytes: np.ndarray, at: int, data: np.ndarray, start: int, length: int) -> bool:
    for k in range(length):
        if doc_bytes[at + k] != data[start + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _intern(data: np.ndarray, seg_starts: np.ndarray, seg_ends: np.ndarray, segments: int) -> tuple:
    """(code of each segment's query, where each distinct query id's text starts, its length, how many):
    the query ids ``data[seg_starts[s]:seg_ends[s]]`` numbered in first-appearance order by an
    open-addressing hash table, each new one checked as UTF-8 (code -1 for the first that is not)."""
    cap = 64
    while cap < 2 * segments:
        cap *= 2
    table = np.full(cap, -1, dtype=np.int64)
    mask = cap - 1
    q_starts = np.empty(segments, dtype=np.int64)
    q_lengths = np.empty(segments, dtype=np.int64)
    q_hashes = np.empty(segments, dtype=np.uint64)
    seg_codes = np.empty(segments, dtype=np.int64)
    queries = 0
    for s in range(segments):
        q0, q1 = seg_starts[s], seg_ends[s]
        length = q1 - q0
        h = _string_hash(data, q0, q1)
        slot = np.int64(h & np.uint64(mask))
        code = -1
        while table[slot] >= 0:
            e = table[slot]
            if q_hashes[e] == h and q_lengths[e] == length and _same_bytes(data, q0, q_starts[e], length):
                code = e
                break
            slot = (slot + 1) & mask
        if code < 0:
            if not _valid_utf8(data, q0, q1):
                seg_codes[s] = -1
                return seg_codes, q_starts, q_lengths, queries
            code = queries
            q_starts[code], q_lengths[code], q_hashes[code] = q0, length, h
            table[slot] = code
            queries += 1
        seg_codes[s] = code
    return seg_codes, q_starts, q_lengths, queries


_TIE_ROWS = 64  # tied rows (one query, one score) sorted by the kernel at most; longer runs of ties: the caller
_TIE_BYTES = 1 << 16  # bytes of their document ids at most


@njit(cache=True, nogil=True, inline="always")
def _greater(doc_bytes: np.ndarray, doc_offsets: np.ndarray, x: int, y: int) -> bool:
    """Whether row ``x``'s document id comes after row ``y``'s in ``strcmp`` order (bytes, unsigned)."""
    a, a_end = doc_offsets[x], doc_offsets[x + 1]
    b, b_end = doc_offsets[y], doc_offsets[y + 1]
    while a < a_end and b < b_end:
        if doc_bytes[a] != doc_bytes[b]:
            return doc_bytes[a] > doc_bytes[b]
        a += 1
        b += 1
    return a < a_end  # a longer id after its own prefix


@njit(cache=True, nogil=True)
def _rank_ties(seg_rows: np.ndarray, segments: int, rows: int, scores: np.ndarray, hashes: np.ndarray,
               doc_offsets: np.ndarray, doc_bytes: np.ndarray) -> bool:
    """Put the rows of each segment in trec_eval's tie-rule order where they are in rank order but for
    ties: each run of tied rows (a query's rows of one score) sorted by document id descending, their
    ids and hashes moved within the run's own bytes. Returns whether every segment's scores are
    non-increasing and every run of ties was short enough to sort here (:data:`_TIE_ROWS`,
    :data:`_TIE_BYTES`); if not, the rows are left as they were but for the runs sorted already, which
    the tie rule's sort (:meth:`bm25lab.evaluation.ranking.Run.from_encoded`) then finishes."""
    order = np.empty(_TIE_ROWS, dtype=np.int64)
    starts = np.empty(_TIE_ROWS + 1, dtype=np.int64)
    kept_hashes = np.empty(_TIE_ROWS, dtype=np.uint64)
    kept_bytes = np.empty(_TIE_BYTES, dtype=np.uint8)
    for s in range(segments):
        stop = seg_rows[s + 1] if s + 1 < segments else rows
        a = seg_rows[s]
        while a < stop:
            b = a + 1
            while b < stop and scores[b] == scores[a]:
                b += 1
            if b < stop and scores[b] > scores[a]:
                return False
            n = b - a
            if n > 1:
                if n > _TIE_ROWS or doc_offsets[b] - doc_offsets[a] > _TIE_BYTES:
                    return False
                for k in range(n):  # insertion sort, descending
                    order[k] = a + k
                    j = k
                    while j > 0 and _greater(doc_bytes, doc_offsets, order[j], order[j - 1]):
                        order[j], order[j - 1] = order[j - 1], order[j]
                        j -= 1
                moved = False
                for k in range(n):
                    moved |= order[k] != a + k
                if moved:
                    base = doc_offsets[a]
                    for k in range(n + 1):
                        starts[k] = doc_offsets[a + k] - base
                    for k in range(doc_offsets[b] - base):
                        kept_bytes[k] = doc_bytes[base + k]
                    for k in range(n):
                        kept_hashes[k] = hashes[a + k]
                    at = base
                    for k in range(n):
                        r = order[k] - a
                        for m in range(starts[r], starts[r + 1]):
                            doc_bytes[at] = kept_bytes[m]
                            at += 1
                        doc_offsets[a + k + 1] = at
                        hashes[a + k] = kept_hashes[r]
            a = b
    return True


@njit(cache=True, nogil=True)
def parse_trec_run(data: np.ndarray, lo: int, hi: int, codes: np.ndarray, doc_offsets: np.ndarray,
                   doc_bytes: np.ndarray, hashes: np.ndarray, scores: np.ndarray, slow_rows: np.ndarray,
                   slow_starts: np.ndarray, slow_ends: np.ndarray, seg_rows: np.ndarray, seg_starts: np.ndarray,
                   seg_ends: np.ndarray, seen_rows: np.ndarray, seen_marks: np.ndarray) -> tuple:
    """Read the lines of ``data[lo:hi]`` (``lo`` at a line's start, ``hi`` after a ``\\n`` or at the end).

    Row ``r`` gets its query's code ``codes[r]`` (the chunk's query ids numbered in first-appearance
    order), its document id ``doc_bytes[doc_offsets[r]:doc_offsets[r + 1]]`` and that id's hash
    ``hashes[r]``, and its score ``scores[r]``, or, for a score the fast path does not read, the
    row and its text's bounds in ``slow_rows``/``slow_starts``/``slow_ends`` (``scores[r]`` is then
    0.0). The output arrays must have room for every row (the chunk's ``\\n`` bytes plus one:
    :func:`bm25lab.evaluation.readers._count_lines`) and ``doc_bytes`` for ``hi - lo`` bytes; so must the
    segments' arrays
    ``seg_rows``/``seg_starts``/``seg_ends``. The hash set ``seen_rows``/``seen_marks`` (zeros, a power
    of two of at least 1024 entries) holds the documents of a segment of up to half its size; past
    that the kernel stops looking for repeated documents (the last value returned is then False).
    Nothing is allocated in the loop: an array variable reassigned there costs numba reference
    counting on every line (a third of the time).

    Rows are grouped into segments, runs of consecutive rows of one query id (a run file lists a
    query's documents together): the loop compares each row's query id with the previous row's only,
    and the segments' ids are numbered once, at the end (:func:`_intern`).

    A document repeated within a segment is refused (a hash set of the segment's documents, the
    strings compared where hashes match); one repeated across two segments of a query is not seen
    here: a chunk with fewer distinct queries than segments needs the full check of
    :meth:`bm25lab.evaluation.ranking.Run.from_encoded`.

    Last, each segment's rows are put in the tie-rule order where they are in rank order but for ties
    (:func:`_rank_ties`; a chunk with scores left to Python's ``float`` is not).

    Returns (status, rows, slow, segments, query_starts, query_lengths, queries, checked, ranked):
    :data:`OK`, :data:`REFUSED` or :data:`TOO_MANY_SLOW`; the rows, slow scores and segments written;
    where each distinct query id's text is in ``data`` and how many there are; whether every segment
    was checked for repeated documents; whether every segment's rows are in the tie-rule order.
    """
    segments = 0
    mark = 0  # the hash set's entries marked ``mark`` are the current segment's documents
    mask = 1023  # the part of the hash set in use: twice the current segment's rows at least
    checking = True  # whether every segment so far fitted in the hash set
    rows = 0
    slow = 0
    used = 0  # bytes of doc_bytes written
    previous_start, previous_length = -1, -1
    doc_offsets[0] = 0
    empty = np.empty(0, dtype=np.int64)
    i = lo
    while i < hi:
        while i < hi and _is_space(data[i]):
            i += 1
        if i >= hi:
            break
        if data[i] == 35:  # '#' opens a comment line
            while i < hi and data[i] != 10:
                i += 1
            continue
        fields = 0
        q0 = q1 = d0 = d1 = s0 = s1 = 0
        while True:
            start = i
            while i < hi and not _is_space(data[i]):
                i += 1
            if fields == 0:
                q0, q1 = start, i
            elif fields == 2:
                d0, d1 = start, i
            elif fields == 4:
                s0, s1 = start, i
            fields += 1
            while i < hi and data[i] != 10 and _is_space(data[i]):
                i += 1
            if i >= hi or data[i] == 10:
                break
        if fields < 6:
            return REFUSED, rows, slow, segments, empty, empty, 0, False, False
        length = q1 - q0
        if length != previous_length or not _same_bytes(data, q0, previous_start, length):
            seg_rows[segments], seg_starts[segments], seg_ends[segments] = rows, q0, q1
            segments += 1
            mark += 1
            previous_start, previous_length = q0, length
        if checking and 2 * (rows - seg_rows[segments - 1] + 1) > mask + 1:  # the set at most half full
            if 2 * (mask + 1) > seen_rows.shape[0]:  # no more room: the caller checks the whole file
                checking = False
            else:
                mask = 2 * mask + 1
                mark += 1
                for e in range(seg_rows[segments - 1], rows):
                    slot = np.int64(hashes[e] & np.uint64(mask))
                    while seen_marks[slot] == mark:
                        slot = (slot + 1) & mask
                    seen_marks[slot], seen_rows[slot] = mark, e
        # the document: copied and hashed in one pass (:func:`_string_hash`'s words), then checked
        high = 0
        h = np.uint64(d1 - d0) * _GOLDEN
        word = np.uint64(0)
        shift = np.uint64(0)
        for k in range(d0, d1):
            b = data[k]
            doc_bytes[used + k - d0] = b
            high |= b
            word |= np.uint64(b) << shift
            shift += np.uint64(8)
            if shift == np.uint64(64):
                h = _mix(h ^ word)
                word = np.uint64(0)
                shift = np.uint64(0)
        if shift:
            h = _mix(h ^ word)
        if high >= 0x80 and not _valid_utf8(data, d0, d1):
            return REFUSED, rows, slow, segments, empty, empty, 0, False, False
        if checking:
            slot = np.int64(h & np.uint64(mask))
            while seen_marks[slot] == mark:  # a document repeated within the segment's query: refused
                e = seen_rows[slot]
                if hashes[e] == h and doc_offsets[e + 1] - doc_offsets[e] == d1 - d0 and \
                        _same_document(doc_bytes, doc_offsets[e], data, d0, d1 - d0):
                    return REFUSED, rows, slow, segments, empty, empty, 0, False, False
                slot = (slot + 1) & mask
            seen_marks[slot], seen_rows[slot] = mark, rows
        used += d1 - d0
        doc_offsets[rows + 1] = used
        hashes[rows] = h
        # the score
        ok, value = _plain_decimal(data, s0, s1)
        if not ok:
            ok, value = _decimal(data, s0, s1)
        if ok:
            scores[rows] = value + 0.0  # -0.0 -> 0.0, as C compares them equal
        else:
            if slow == slow_rows.shape[0]:
                return TOO_MANY_SLOW, rows, slow, segments, empty, empty, 0, False, False
            slow_rows[slow], slow_starts[slow], slow_ends[slow] = rows, s0, s1
            scores[rows] = 0.0
            slow += 1
        rows += 1
    seg_codes, q_starts, q_lengths, queries = _intern(data, seg_starts, seg_ends, segments)
    for s in range(segments):
        if seg_codes[s] < 0:
            return REFUSED, rows, slow, segments, empty, empty, 0, False, False
        stop = seg_rows[s + 1] if s + 1 < segments else rows
        codes[seg_rows[s]:stop] = seg_codes[s]
    ranked = slow == 0 and _rank_ties(seg_rows, segments, rows, scores, hashes, doc_offsets, doc_bytes)
    return OK, rows, slow, segments, q_starts, q_lengths, queries, checking, ranked
