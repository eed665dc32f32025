"""numba kernels of jieba 0.42.1's precise segmentation, with jieba's output exactly (imported only by
:mod:`bm25lab.engine.segmentation`).

The same steps as :func:`bm25lab.engine.tokenization._cut_precise` (the Python replica, itself
tested equal to ``jieba.Tokenizer.lcut``), over the code points of a whole text at once; its Han
blocks (runs of ``re_han_default``) are cut so:

1. the route: from the end of a block, each position takes the dictionary word starting there
   whose ``log(freq) - log(total) + value(after it)`` is largest (ties to the longer word), a
   position no word starts at is a single character scored ``log(freq or 1) - log(total) + ...``;
   the prefix dictionary (every word and every prefix of one, prefixes with frequency 0) is an
   trie kept in an open-addressing hash table (a key = its parent key and its last character);
2. runs of single characters of the route: one character is a word; a run that is itself a word
   of the dictionary gives its characters; any other run goes through jieba's HMM (``finalseg``):
   its Han stretches (U+4E00..U+9FD5) through the Viterbi decoder of B/M/E/S states, the rest cut
   by ``[a-zA-Z0-9]+(?:\\.\\d+)?%?`` into matches and the stretches between them.

Floating point follows Python's order of operations: ``log`` is Python's (the log frequencies are
computed by ``math.log`` when the dictionary is made), sums are added
left to right, Viterbi ties go to the larger state letter (Python's ``max`` over (prob, state)
tuples), the final state is the better of E and S.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

MIN_FLOAT = -3.14e100
# the HMM states in jieba's letter order, so that comparing indices compares letters: B < E < M < S
B, E, M, S = 0, 1, 2, 3
HAN_FIRST, HAN_LAST = 0x4E00, 0x9FD5  # finalseg's re_han: [\u4E00-\u9FD5]

_ROOT = -1  # the parent of one-character keys


@njit(cache=True, nogil=True, inline="always")
def _slot(parent: int, char: int, mask: np.uint64) -> np.uint64:
    h = np.uint64(parent + 1) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(char)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (h ^ (h >> np.uint64(31))) & mask


@njit(cache=True, nogil=True)
def build_trie(cps: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The prefix dictionary's keys ``cps[starts[i]:starts[i] + lengths[i]]`` as a trie kept in a hash
    table: slot -> key id (-1: empty), each key's parent (the key one character shorter, -1 for one
    character) and last character. Keys are added shortest first, so a parent is always there
    before its children; a key whose prefix is missing raises (jieba's dictionary holds them all)."""
    n = starts.shape[0]
    cap = 1
    while cap < 2 * n + 2:
        cap *= 2
    mask = np.uint64(cap - 1)
    table = np.full(cap, -1, np.int64)
    parent = np.empty(n, np.int64)
    last = np.empty(n, np.int64)
    for i in np.argsort(lengths, kind="mergesort"):
        node = _ROOT
        for j in range(starts[i], starts[i] + lengths[i] - 1):
            node = child(table, parent, last, node, cps[j])
            if node < 0:
                raise ValueError("a prefix of a dictionary word is not in the dictionary")
        c = cps[starts[i] + lengths[i] - 1]
        slot = _slot(node, c, mask)
        while table[slot] >= 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = i
        parent[i] = node
        last[i] = c
    return table, parent, last


@njit(cache=True, nogil=True, inline="always")
def child(table: np.ndarray, parent: np.ndarray, last: np.ndarray, node: int, char: int) -> int:
    """The key that extends key ``node`` (``-1``: the empty key) by ``char``, or -1."""
    mask = np.uint64(table.shape[0] - 1)
    slot = _slot(node, char, mask)
    while True:
        e = table[slot]
        if e < 0 or (parent[e] == node and last[e] == char):
            return e
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def _freq_of(text: np.ndarray, a: int, b: int, table: np.ndarray, parent: np.ndarray, last: np.ndarray,
             freq: np.ndarray) -> int:
    """The dictionary frequency of ``text[a:b]``: -1 when it is not in the prefix dictionary."""
    node = _ROOT
    for j in range(a, b):
        node = child(table, parent, last, node, text[j])
        if node < 0:
            return -1
    return freq[node]


@njit(cache=True, nogil=True)
def _route(text: np.ndarray, a: int, b: int, table: np.ndarray, parent: np.ndarray, last: np.ndarray,
           freq: np.ndarray, log_freq: np.ndarray, log_total: float, value: np.ndarray, end: np.ndarray) -> None:
    """``end[i - a]``: the last position of the word the best route takes at ``i`` (``a <= i < b``)."""
    size = b - a
    value[size] = 0.0
    for start in range(size - 1, -1, -1):
        best_value = 0.0
        best_end = start
        found = False
        single = -1
        node = child(table, parent, last, _ROOT, text[a + start])
        stop = start
        while node >= 0:
            count = freq[node]
            if stop == start:
                single = count
            if count:
                candidate = log_freq[node] - log_total + value[stop + 1]
                if not found or candidate > best_value or (candidate == best_value and stop > best_end):
                    best_value = candidate
                    best_end = stop
                    found = True
            stop += 1
            if stop >= size:
                break
            node = child(table, parent, last, node, text[a + stop])
        if not found:
            best_value = math.log(float(single if single > 0 else 1)) - log_total + value[start + 1]
        value[start] = best_value
        end[start] = best_end


@njit(cache=True, nogil=True)
def _viterbi(text: np.ndarray, a: int, b: int, emit: np.ndarray, start_p: np.ndarray, trans: np.ndarray,
             prev: np.ndarray, v: np.ndarray, back: np.ndarray, states: np.ndarray) -> None:
    """jieba's ``finalseg.viterbi`` of the Han characters ``text[a:b]``: their states into ``states``."""
    n = b - a
    for y in range(4):
        v[0, y] = start_p[y] + emit[y, text[a] - HAN_FIRST]
    for t in range(1, n):
        column = text[a + t] - HAN_FIRST
        for y in range(4):
            em = emit[y, column]
            best = -np.inf
            best_state = -1
            for c in range(2):
                y0 = prev[y, c]
                prob = v[t - 1, y0] + trans[y0, y] + em
                if best_state < 0 or prob > best or (prob == best and y0 > best_state):
                    best = prob
                    best_state = y0
            v[t, y] = best
            back[t, y] = best_state
    last = S if v[n - 1, S] > v[n - 1, E] or v[n - 1, S] == v[n - 1, E] else E  # ties: 'S' > 'E'
    states[n - 1] = last
    for t in range(n - 1, 0, -1):
        last = back[t, last]
        states[t - 1] = last


@njit(cache=True, nogil=True)
def _is_han(c: int) -> bool:
    return HAN_FIRST <= c <= HAN_LAST


@njit(cache=True, nogil=True)
def _is_alnum(c: int) -> bool:
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)


@njit(cache=True, nogil=True)
def _skip_match(text: np.ndarray, p: int, b: int) -> int:
    """The end of ``[a-zA-Z0-9]+(?:\\.\\d+)?%?`` matched at ``p`` (an alphanumeric), within ``b``."""
    q = p
    while q < b and _is_alnum(text[q]):
        q += 1
    if q + 1 < b and text[q] == 46 and 48 <= text[q + 1] <= 57:  # "." and a digit
        q += 1
        while q < b and 48 <= text[q] <= 57:
            q += 1
    if q < b and text[q] == 37:  # "%"
        q += 1
    return q


@njit(cache=True, nogil=True)
def _hmm_cut(text: np.ndarray, a: int, b: int, emit: np.ndarray, start_p: np.ndarray, trans: np.ndarray,
             prev: np.ndarray, v: np.ndarray, back: np.ndarray, states: np.ndarray, out: np.ndarray, n_out: int) -> int:
    """jieba's ``finalseg.cut`` of ``text[a:b]``: word ends appended to ``out`` from ``n_out``."""
    p = a
    while p < b:
        if _is_han(text[p]):
            q = p
            while q < b and _is_han(text[q]):
                q += 1
            _viterbi(text, p, q, emit, start_p, trans, prev, v, back, states)
            nexti = p
            for i in range(q - p):
                s = states[i]
                if s == E or s == S:
                    out[n_out] = p + i + 1
                    n_out += 1
                    nexti = p + i + 1
            if nexti < q:
                out[n_out] = q
                n_out += 1
            p = q
        else:
            q = p
            while q < b and not _is_han(text[q]):
                q += 1
            r = p  # the stretch p..q: matches of the skip pattern and what lies between them
            while r < q:
                if _is_alnum(text[r]):
                    r = _skip_match(text, r, q)
                    out[n_out] = r
                    n_out += 1
                else:
                    while r < q and not _is_alnum(text[r]):
                        r += 1
                    out[n_out] = r
                    n_out += 1
            p = q
    return n_out


@njit(cache=True, nogil=True)
def _flush(text: np.ndarray, a: int, b: int, table: np.ndarray, parent: np.ndarray, last: np.ndarray,
           freq: np.ndarray, emit: np.ndarray, start_p: np.ndarray, trans: np.ndarray, prev: np.ndarray,
           v: np.ndarray, back: np.ndarray, states: np.ndarray, out: np.ndarray, n_out: int) -> int:
    """A run ``text[a:b]`` of single characters of the route: one word, its characters when the run
    is a dictionary word, else the HMM's words."""
    if b - a == 1:
        out[n_out] = b
        return n_out + 1
    if _freq_of(text, a, b, table, parent, last, freq) > 0:
        for i in range(a + 1, b + 1):
            out[n_out] = i
            n_out += 1
        return n_out
    return _hmm_cut(text, a, b, emit, start_p, trans, prev, v, back, states, out, n_out)


@njit(cache=True, nogil=True, inline="always")
def _in_han_block(c: int) -> bool:
    """Whether jieba's ``re_han_default`` (Han U+4E00..U+9FD5, ASCII letters and digits, ``+#&._%-``)
    takes ``c``."""
    return _is_han(c) or _is_alnum(c) or c == 43 or c == 35 or c == 38 or c == 46 or c == 95 or c == 37 or c == 45


@njit(cache=True, nogil=True)
def cut_text(text: np.ndarray, table: np.ndarray, parent: np.ndarray, last: np.ndarray, freq: np.ndarray,
             log_freq: np.ndarray, log_total: float, emit: np.ndarray, start_p: np.ndarray, trans: np.ndarray,
             prev: np.ndarray) -> np.ndarray:
    """The end of every word of ``jieba.Tokenizer.lcut`` of ``text`` (code points), in order: its Han
    blocks (maximal runs of ``re_han_default``) cut as the module docstring says, every other
    character a word of its own but a carriage return and line feed, one word (``re_skip_default``)."""
    n = text.shape[0]
    out = np.empty(n, np.int64)
    value = np.empty(n + 1, np.float64)
    end = np.empty(n + 1, np.int64)
    v = np.empty((max(n, 1), 4), np.float64)
    back = np.empty((max(n, 1), 4), np.int64)
    states = np.empty(max(n, 1), np.int64)
    n_out = 0
    p = 0
    while p < n:
        if not _in_han_block(text[p]):
            q = p + 2 if text[p] == 13 and p + 1 < n and text[p + 1] == 10 else p + 1
            out[n_out] = q
            n_out += 1
            p = q
            continue
        b = p
        while b < n and _in_han_block(text[b]):
            b += 1
        _route(text, p, b, table, parent, last, freq, log_freq, log_total, value, end)
        position = 0
        pending = -1  # where the current run of single characters began
        while position < b - p:
            after = end[position] + 1
            if after - position == 1:
                if pending < 0:
                    pending = position
            else:
                if pending >= 0:
                    n_out = _flush(text, p + pending, p + position, table, parent, last, freq, emit, start_p, trans,
                                   prev, v, back, states, out, n_out)
                    pending = -1
                out[n_out] = p + after
                n_out += 1
            position = after
        if pending >= 0:
            n_out = _flush(text, p + pending, b, table, parent, last, freq, emit, start_p, trans, prev, v, back,
                           states, out, n_out)
        p = b
    return out[:n_out]


SEPARATOR = 10  # "\n": never inside a term (jieba's cut keeps line feeds apart, and they are no letter or digit)


@njit(cache=True, nogil=True)
def _is_stopword(out: np.ndarray, a: int, b: int, stop_table: np.ndarray, stop_parent: np.ndarray,
                 stop_last: np.ndarray, stop_flag: np.ndarray) -> bool:
    """Whether ``out[a:b]`` is a key of the stopword trie marked as a whole stopword."""
    node = _ROOT
    for j in range(a, b):
        node = child(stop_table, stop_parent, stop_last, node, out[j])
        if node < 0:
            return False
    return stop_flag[node] != 0


@njit(cache=True, nogil=True)
def chunk_terms(text: np.ndarray, text_ends: np.ndarray, table: np.ndarray, parent: np.ndarray, last: np.ndarray,
                freq: np.ndarray, log_freq: np.ndarray, log_total: float, emit: np.ndarray, start_p: np.ndarray,
                trans: np.ndarray, prev: np.ndarray, alnum: np.ndarray, lower: np.ndarray, stop_table: np.ndarray,
                stop_parent: np.ndarray, stop_last: np.ndarray, stop_flag: np.ndarray,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The terms of several texts at once (text ``i``: code points ``text[text_ends[i - 1]:text_ends[i]]``):
    each text cut by :func:`cut_text`. A word is dropped when it holds no letter or digit
    (``alnum``: ``str.isalnum()`` of every BMP character); else it is written lowercased, character
    by character through ``lower`` (``ord(c.lower())`` of every BMP character, 0 where that is not
    one character or depends on the context: ``İ``, ``Σ``), and kept unless the stopword trie marks
    it. A word holding a character beyond the BMP or one that ``lower`` leaves to Python is written
    as it is and its number recorded, for Python to tell (lowercase, letter or digit, stopword).
    Returns the written terms, each followed by :data:`SEPARATOR`, the number of terms of each
    text, and the numbers (over all texts) of the terms Python must tell."""
    out = np.empty(2 * text.shape[0] + 1, np.uint32)
    counts = np.zeros(text_ends.shape[0], np.int64)
    odd = np.empty(16, np.int64)
    n_odd = 0
    n_out = 0
    n_terms = 0
    check_stop = stop_flag.shape[0] > 0
    start = 0
    for t in range(text_ends.shape[0]):
        stop = text_ends[t]
        ends = cut_text(text[start:stop], table, parent, last, freq, log_freq, log_total, emit, start_p, trans, prev)
        a = start
        for w in range(ends.shape[0]):
            b = start + ends[w]
            kind = 0
            for j in range(a, b):
                c = text[j]
                if c >= 65536 or lower[c] == 0:
                    kind = 2
                    break
                if alnum[c]:
                    kind = 1
            if kind == 1:
                first = n_out
                for j in range(a, b):
                    out[n_out] = lower[text[j]]
                    n_out += 1
                if check_stop and _is_stopword(out, first, n_out, stop_table, stop_parent, stop_last, stop_flag):
                    n_out = first
                else:
                    out[n_out] = SEPARATOR
                    n_out += 1
                    counts[t] += 1
                    n_terms += 1
            elif kind == 2:
                for j in range(a, b):
                    out[n_out] = text[j]
                    n_out += 1
                out[n_out] = SEPARATOR
                n_out += 1
                counts[t] += 1
                if n_odd == odd.shape[0]:
                    odd = np.concatenate((odd, np.empty(odd.shape[0], np.int64)))
                odd[n_odd] = n_terms
                n_odd += 1
                n_terms += 1
            a = b
        start = stop
    return out[:n_out], counts, odd[:n_odd]
