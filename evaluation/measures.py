"""Every measure of ``evaluation/MEASURES.md``: one small function each over the judged ranking, and a registry.

A measure function takes a :class:`~bm25lab.evaluation.ranking.JudgedRanking` and its parameter (a cutoff
``k``, a fraction such as a recall level ``r``, or None) and returns one float64 per query, NaN where the measure is
undefined for that query (only ``AUC`` has such queries). The judged ranking already ranked the
documents (score descending, ties by document id descending), attached the labels and counted R
(relevant judged documents, label ``>= rel``) and N (judged non-relevant, ``0 <= label < rel``) per
query, so each function is a few vectorised lines. Sums over a query's documents are added in rank
order, as trec_eval adds them, so values agree with trec_eval to the last bits.

Names are parsed by :func:`parse_measure`, case-insensitively, in the field's syntaxes with the field's
meanings (``evaluation/MEASURES.md``, "Names"):

- bm25lab's: ``P@10``, ``nDCG``, ``nDCG@10``, ``iprec@0.5``, ``RBP@0.8`` and aliases (``MAP``,
  ``MRR``, ``NDCG@k``, ``precision@k``, ``recall@k``);
- trec_eval's: ``P_10``, ``P.10``, ``map_cut_10``, ``ndcg_cut.10``, ``recip_rank``,
  ``iprec_at_recall_0.50``, ``11pt_avg``; :func:`expand_measures` also takes its lists ``P.5,10``, its
  families without a cutoff (``P`` is ``P_5`` .. ``P_1000``, as ``trec_eval -m P``) and its nicknames
  ``official``, ``set`` and ``all_trec`` (the measures bm25lab has of them);
- ir_measures': ``P(rel=2)@5``, ``AP(rel=2)``, ``nDCG(dcg=exp-log2)@10``, ``RR(judged_only=True)``,
  ``SetP``, ``NumRet(rel=1)``, ``IPrec@0.5``, ``Judged@10``: parameters in parentheses, the cutoff after ``@``;
- ranx's: ``hits@10`` (relevant documents in the top 10, a count), ``hit_rate@10``, ``mrr@10``,
  ``ndcg_burges@10``, ``r-precision``, ``rbp.95``, and ``-l2`` for a relevance level (``map@100-l2``).

:data:`MEASURES` is the registry.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Literal

import numpy as np

from .errors import MeasureError
from .ranking import JudgedRanking

__all__ = ["DEFAULT_MEASURES", "ELEVEN_POINTS", "MEASURES", "TREC_CUTOFFS", "TREC_NICKNAMES", "Expansion", "Measure",
           "MeasureDef", "expand_measures", "known_measures", "parse_measure", "parse_measures"]

Param = int | float | None
ParamKind = Literal["none", "cutoff", "optional cutoff", "fraction"]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0."""
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=np.asarray(denominator) != 0)
    return out


def _rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


# ---------------------------------------------------------------------------------------------
# Set and cutoff measures


def precision(r: JudgedRanking, k: int) -> np.ndarray:
    """P@k = relevant in the top k / k; a list shorter than k is padded with non-relevant (``P_k``)."""
    return r.rel_in_top(k) / float(k)


def recall(r: JudgedRanking, k: int) -> np.ndarray:
    """R@k = relevant in the top k / R; 0 when R = 0 (``recall_k``)."""
    return _ratio(r.rel_in_top(k).astype(np.float64), r.num_rel.astype(np.float64))


def f1(r: JudgedRanking, k: int) -> np.ndarray:
    """F1@k = 2 P R / (P + R) of P@k and R@k; 0 when both are 0."""
    p, q = precision(r, k), recall(r, k)
    return _ratio(2.0 * p * q, p + q)


def success(r: JudgedRanking, k: int) -> np.ndarray:
    """Success@k = 1 if any relevant document is in the top k, else 0 (``success_k``; ranx's ``hit_rate@k``)."""
    return (r.rel_in_top(k) > 0).astype(np.float64)


def hits(r: JudgedRanking, k: int | None) -> np.ndarray:
    """Hits(@k) = the number of relevant documents in the top k (all retrieved without k): ranx's ``hits``."""
    return (r.num_rel_ret if k is None else r.rel_in_top(k)).astype(np.float64)


def reciprocal_rank(r: JudgedRanking, k: int | None) -> np.ndarray:
    """RR(@k) = 1 / rank of the first relevant document (in the top k); 0 if none (``recip_rank``)."""
    first = _rows(r.is_rel & (r.cum_rel == 1) & r.top(k))
    return r.total(first, 1.0 / r.rank[first])


def average_precision(r: JudgedRanking, k: int | None) -> np.ndarray:
    """AP(@k) = sum of P@i over ranks i (<= k) holding a relevant document / R (``map``, ``map_cut_k``).

    Relevant documents never retrieved (or below k) add 0; the sum is still divided by all R.
    """
    hits = _rows(r.is_rel & r.top(k))
    return _ratio(r.total(hits, r.cum_rel[hits] / r.rank[hits]), r.num_rel.astype(np.float64))


def r_precision(r: JudgedRanking, _: None) -> np.ndarray:
    """Rprec = relevant in the top R / R; 0 when R = 0 (``Rprec``)."""
    return _ratio(r.rel_in_top(r.num_rel).astype(np.float64), r.num_rel.astype(np.float64))


def bpref(r: JudgedRanking, _: None) -> np.ndarray:
    """bpref = 1/R * sum over retrieved relevant d of (1 - min(n_d, R) / min(N, R)) (``bpref``).

    n_d = judged non-relevant documents ranked above d; the term is 1 when n_d = 0. Unjudged
    documents are skipped. 0 when R = 0.
    """
    hits = _rows(r.is_rel)
    above = r.running_count(r.is_nonrel)[hits]
    num_rel = r.num_rel[r.seg[hits]]
    denominator = np.minimum(r.num_nonrel, r.num_rel)[r.seg[hits]]
    term = np.ones(hits.size, dtype=np.float64)
    seen = above > 0
    term[seen] = 1.0 - np.minimum(above[seen], num_rel[seen]) / denominator[seen]
    return _ratio(r.total(hits, term), r.num_rel.astype(np.float64))


def interpolated_precision(r: JudgedRanking, level: float) -> np.ndarray:
    """iprec@r = max precision at any rank whose recall >= r (``iprec_at_recall_r``).

    As trec_eval: the recall level becomes a number of relevant documents c = (long)(r * R + 0.9), in
    double arithmetic (the rule of trec_eval 9.0.8, the version pytrec_eval-terrier bundles; later
    trec_eval sources round instead). The value is the highest precision j / rank_j over the retrieved
    relevant documents j >= max(c, 1), and 0 when there is none (c above the relevant retrieved, or
    nothing relevant retrieved; trec_eval gives NaN when nothing at all is retrieved).
    """
    needed = np.maximum(np.floor(level * r.num_rel.astype(np.float64) + 0.9), 1).astype(np.int64)
    hits = _rows(r.is_rel & (r.cum_rel >= needed[r.seg]))
    best = np.zeros(r.num_queries, dtype=np.float64)
    np.maximum.at(best, r.seg[hits], r.cum_rel[hits] / r.rank[hits])
    return best


ELEVEN_POINTS = tuple(i / 10 for i in range(11))


def eleven_point_ap(r: JudgedRanking, _: None) -> np.ndarray:
    """11pt-AP = mean of iprec@r for r = 0.0, 0.1, ..., 1.0 (``11pt_avg``), added from 1.0 down."""
    total = np.zeros(r.num_queries, dtype=np.float64)
    for level in reversed(ELEVEN_POINTS):
        total += interpolated_precision(r, level)
    return total / len(ELEVEN_POINTS)


# ---------------------------------------------------------------------------------------------
# Graded measures


def _exp(gain: np.ndarray) -> np.ndarray:
    return np.exp2(gain) - 1.0


def _dcg(r: JudgedRanking, k: int | None, exponential: bool) -> np.ndarray:
    """sum of gain_i / log2(i + 1) over ranks i (<= k); only documents with a positive label add."""
    hits = _rows((r.label > 0) & r.top(k))
    gain = r.gain[hits]
    return r.total(hits, (_exp(gain) if exponential else gain) / np.log2(r.rank[hits] + 1.0))


def _ideal_dcg(r: JudgedRanking, k: int | None, exponential: bool) -> np.ndarray:
    """DCG of the ideal ranking: every positive label of the query sorted descending, cut at k."""
    keep = np.ones(r.ideal_gain.size, dtype=bool) if k is None else r.ideal_rank <= k
    gain = _exp(r.ideal_gain[keep]) if exponential else r.ideal_gain[keep]
    values = gain / np.log2(r.ideal_rank[keep] + 1.0)
    return np.bincount(r.ideal_seg[keep], weights=values, minlength=r.num_queries)


def cumulative_gain(r: JudgedRanking, k: int | None) -> np.ndarray:
    """CG(@k) = sum of the raw labels (unjudged: 0) over the top k."""
    hits = _rows((r.label > 0) & r.top(k))
    return r.total(hits, r.gain[hits])


def dcg(r: JudgedRanking, k: int | None) -> np.ndarray:
    """DCG(@k) = sum of label_i / log2(i + 1) over the top k (labels as gains, unjudged 0)."""
    return _dcg(r, k, exponential=False)


def ndcg(r: JudgedRanking, k: int | None) -> np.ndarray:
    """nDCG(@k) = DCG(@k) / ideal DCG(@k); 0 when the ideal DCG is 0 (``ndcg``, ``ndcg_cut_k``).

    Gains are the raw labels whatever ``rel`` is, as in trec_eval.
    """
    return _ratio(_dcg(r, k, exponential=False), _ideal_dcg(r, k, exponential=False))


def dcg_exp(r: JudgedRanking, k: int | None) -> np.ndarray:
    """DCG_exp(@k) = sum of (2^label_i - 1) / log2(i + 1) over the top k (Burges' "industry" gain)."""
    return _dcg(r, k, exponential=True)


def ndcg_exp(r: JudgedRanking, k: int | None) -> np.ndarray:
    """nDCG_exp(@k) = DCG_exp(@k) / ideal DCG_exp(@k); 0 when the ideal is 0."""
    return _ratio(_dcg(r, k, exponential=True), _ideal_dcg(r, k, exponential=True))


# ---------------------------------------------------------------------------------------------
# Whole-list and user-model measures


def set_precision(r: JudgedRanking, _: None) -> np.ndarray:
    """set_P = relevant retrieved / retrieved, over the whole list; 0 when nothing is retrieved (``set_P``)."""
    return _ratio(r.num_rel_ret.astype(np.float64), r.num_ret.astype(np.float64))


def set_recall(r: JudgedRanking, _: None) -> np.ndarray:
    """set_R = relevant retrieved / R, over the whole list; 0 when R = 0 (``set_recall``)."""
    return _ratio(r.num_rel_ret.astype(np.float64), r.num_rel.astype(np.float64))


def set_f1(r: JudgedRanking, _: None) -> np.ndarray:
    """set_F1 = 2 set_P set_R / (set_P + set_R); 0 when both are 0 (``set_F``, beta = 1)."""
    p, q = set_precision(r, None), set_recall(r, None)
    return _ratio(2.0 * p * q, p + q)


def judged(r: JudgedRanking, k: int) -> np.ndarray:
    """Judged@k = judged documents (any label >= 0) in the top k / the documents in the top k, as
    ir_measures defines it (its ``judged`` provider): a ranking shorter than k divides by its length;
    0 when nothing was retrieved."""
    return _ratio(r.count(r.top(k)).astype(np.float64), np.minimum(r.num_ret, k).astype(np.float64))


def rank_biased_precision(r: JudgedRanking, persistence: float) -> np.ndarray:
    """RBP@p = (1 - p) * sum over ranks i of rel_i p^(i-1), binary rel_i (Moffat and Zobel 2008)."""
    hits = _rows(r.is_rel)
    return (1.0 - persistence) * r.total(hits, np.power(persistence, r.rank[hits] - 1.0))


# ---------------------------------------------------------------------------------------------
# ROC and counts


def auc(r: JudgedRanking, _: None) -> np.ndarray:
    """ROC AUC over the judged documents: the share of (relevant, judged non-relevant) pairs ranked right.

    Unretrieved judged documents rank below every retrieved one and tie with each other (a tie
    counts 1/2). Unjudged documents are ignored. NaN (undefined) when the query lacks either kind.
    AUC = (sum over retrieved relevant d of the non-relevant ranked below d + ties / 2) / (R N).
    """
    hits = _rows(r.is_rel)
    below = r.num_nonrel[r.seg[hits]] - r.running_count(r.is_nonrel)[hits]
    wins = r.total(hits, below.astype(np.float64))
    unretrieved_pairs = (r.num_rel - r.num_rel_ret) * (r.num_nonrel - r.count(r.is_nonrel))
    pairs = (r.num_rel * r.num_nonrel).astype(np.float64)
    value = np.full(r.num_queries, np.nan)
    defined = pairs > 0
    value[defined] = (wins[defined] + 0.5 * unretrieved_pairs[defined]) / pairs[defined]
    return value


def num_ret(r: JudgedRanking, _: None) -> np.ndarray:
    """Documents retrieved (after ``judged_only``)."""
    return r.num_ret.astype(np.float64)


def num_rel(r: JudgedRanking, _: None) -> np.ndarray:
    """Relevant documents in the qrels (R)."""
    return r.num_rel.astype(np.float64)


def num_rel_ret(r: JudgedRanking, _: None) -> np.ndarray:
    """Relevant documents retrieved."""
    return r.num_rel_ret.astype(np.float64)


# ---------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True)
class MeasureDef:
    """One measure family: its canonical name, function, parameter kind and names elsewhere.

    ``trec_eval`` is pytrec_eval's name for it (``{k}`` / ``{r}`` marking the parameter); for a measure
    whose parameter is optional, the form with it, ``|``, and the form without it (either may be empty). ``bounded`` measures lie in [0, 1]; ``total`` ones
    are counts that trec_eval sums over queries instead of averaging.
    """

    name: str
    compute: Callable[[JudgedRanking, Param], np.ndarray]
    param: ParamKind
    description: str
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    bounded: bool = True
    total: bool = False
    symbol: str = "k"

    def forms(self) -> str:
        """How the name is written: ``P@k``, ``RR, RR@k``, ``iprec@r``, ``bpref``."""
        return {
            "none": self.name,
            "cutoff": f"{self.name}@k",
            "optional cutoff": f"{self.name}, {self.name}@k",
            "fraction": f"{self.name}@{self.symbol}",
        }[self.param]


_DEFS = (
    MeasureDef("P", precision, "cutoff", "precision at k", ("precision",), "P_{k}"),
    MeasureDef("R", recall, "cutoff", "recall at k", ("recall",), "recall_{k}"),
    MeasureDef("F1", f1, "cutoff", "harmonic mean of P@k and R@k"),
    MeasureDef("RR", reciprocal_rank, "optional cutoff", "reciprocal rank", ("MRR", "recip_rank"), "|recip_rank"),
    MeasureDef("AP", average_precision, "optional cutoff", "average precision", ("MAP", "map_cut"), "map_cut_{k}|map"),
    MeasureDef("Rprec", r_precision, "none", "precision at rank R", ("R-prec", "r-precision"), "Rprec"),
    MeasureDef("bpref", bpref, "none", "binary preference", (), "bpref"),
    MeasureDef("Success", success, "cutoff", "any relevant in the top k", ("hit_rate",), "success_{k}"),
    MeasureDef("Hits", hits, "optional cutoff", "number of relevant documents in the top k", bounded=False),
    MeasureDef("iprec", interpolated_precision, "fraction", "interpolated precision at recall r",
               ("iprec_at_recall",), "iprec_at_recall_{r}", symbol="r"),
    MeasureDef("11pt-AP", eleven_point_ap, "none", "11-point interpolated average precision",
               ("11pt_avg", "11pt"), "11pt_avg"),
    MeasureDef("CG", cumulative_gain, "optional cutoff", "cumulative gain", bounded=False),
    MeasureDef("DCG", dcg, "optional cutoff", "discounted cumulative gain", bounded=False),
    MeasureDef("nDCG", ndcg, "optional cutoff", "normalized DCG, labels as gains", ("ndcg_cut",),
               "ndcg_cut_{k}|ndcg"),
    MeasureDef("DCG_exp", dcg_exp, "optional cutoff", "DCG with gain 2^label - 1", ("dcg_burges",), bounded=False),
    MeasureDef("nDCG_exp", ndcg_exp, "optional cutoff", "nDCG with gain 2^label - 1", ("ndcg_burges",)),
    MeasureDef("AUC", auc, "none", "ROC area over the judged documents"),
    MeasureDef("set_P", set_precision, "none", "precision of the whole retrieved list", ("SetP",), "set_P"),
    MeasureDef("set_R", set_recall, "none", "recall of the whole retrieved list", ("set_recall", "SetR"), "set_recall"),
    MeasureDef("set_F1", set_f1, "none", "F1 of the whole retrieved list", ("set_F", "SetF"), "set_F"),
    MeasureDef("Judged", judged, "cutoff", "share of the top k that is judged"),
    MeasureDef("RBP", rank_biased_precision, "fraction", "rank-biased precision with persistence p", symbol="p"),
    MeasureDef("num_ret", num_ret, "none", "documents retrieved", ("NumRet",), "num_ret", bounded=False, total=True),
    MeasureDef("num_rel", num_rel, "none", "relevant documents judged", ("NumRel",), "num_rel", bounded=False,
               total=True),
    MeasureDef("num_rel_ret", num_rel_ret, "none", "relevant documents retrieved", ("NumRelRet",), "num_rel_ret",
               bounded=False, total=True),
)

MEASURES: dict[str, MeasureDef] = {d.name: d for d in _DEFS}
"""The registry: canonical name -> definition."""
DEFAULT_MEASURES = ("nDCG@10", "AP", "P@10", "R@100", "RR", "bpref")
"""What ``bm25lab evaluate`` and ``experiment`` report when no measure is named."""

_LOOKUP: dict[str, MeasureDef] = {}
for _d in _DEFS:
    for _name in (_d.name, *_d.aliases):
        assert _name.lower() not in _LOOKUP, f"measure name {_name} registered twice"
        _LOOKUP[_name.lower()] = _d

_NAME = re.compile(r"^(?P<base>.+?)(?:(?P<sep>[@_.])(?P<param>[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$")
_IR_MEASURES = re.compile(r"^(?P<base>[^()@]+)\((?P<params>[^()]*)\)(?:@(?P<param>[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$")
_RANX_LEVEL = re.compile(r"^(?P<name>.+)-l(?P<rel>[0-9]+)$")

TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cutoffs of ``P``, ``recall``, ``map_cut``, ``ndcg_cut`` (``-m P`` = ``P.5,10,...``)."""
_TREC_FAMILIES: dict[str, tuple[str, tuple[Param, ...]]] = {
    "p": ("P", TREC_CUTOFFS),
    "recall": ("recall", TREC_CUTOFFS),
    "map_cut": ("map_cut", TREC_CUTOFFS),
    "ndcg_cut": ("ndcg_cut", TREC_CUTOFFS),
    "success": ("success", (1, 5, 10)),
    "iprec_at_recall": ("iprec_at_recall", ELEVEN_POINTS),
    "relative_p": ("relative_P", TREC_CUTOFFS),
}
"""trec_eval's measure families with default parameters: a family named alone stands for all of them."""
TREC_NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P"),
    "set": ("num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P", "set_map",
            "set_F"),
    "all_trec": ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref",
                 "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut",
                 "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
                 "num_nonrel_judged_ret"),
}
"""trec_eval 10.0's ``-m`` nicknames (``measures.c``), less ``runid`` and ``num_q`` (always reported)."""
_AMBIGUOUS = {
    "recall": "trec_eval's -m recall means recall at its cutoffs (write recall.5,10 or R@k), ranx's recall the "
              "recall of the whole list (write set_R)",
}
_WHOLE_LIST = {"precision": "set_P"}  # ranx: a measure named without a cutoff covers the whole ranking
_OTHER_MEANING = frozenset({"rbp"})  # trec_eval's rbp (graded, p = 0.9) is not ir_measures' RBP (binary, p = 0.8)
IGNORES_REL = frozenset({"CG", "DCG", "nDCG", "DCG_exp", "nDCG_exp", "Judged", "num_ret"})
"""Measures that do not use a relevance threshold (graded, or counting every document)."""
_DEFAULT_P = 0.8  # ir_measures' RBP persistence when none is given


def known_measures() -> str:
    """The known measure names and aliases, for error messages and help."""
    forms = ", ".join(d.forms() for d in _DEFS)
    aliases = ", ".join(f"{a}={d.name}" for d in _DEFS for a in d.aliases)
    return (f"{forms} (aliases {aliases}; trec_eval names such as P_10, ndcg_cut.10 and lists P.5,10, ir_measures "
            f"names such as P(rel=2)@5, ranx names such as hits@10 also work; `bm25lab measures` lists them)")


@dataclass(frozen=True)
class Measure:
    """A parsed measure: the name as written, its definition, its parameter, and the relevance threshold
    and judged-only choice the name sets for itself (ir_measures' ``rel=``, ``judged_only=``; ranx's
    ``-l``), None where the evaluation's options apply."""

    name: str
    definition: MeasureDef
    param: Param
    rel: int | None = None
    judged_only: bool | None = None

    def __call__(self, ranking: JudgedRanking) -> np.ndarray:
        return self.definition.compute(ranking, self.param)

    @property
    def trec_eval_name(self) -> str | None:
        """pytrec_eval's key for this measure (``P_10``, ``ndcg``, ``iprec_at_recall_0.50``), if it has one."""
        pattern = self.definition.trec_eval
        if pattern is None or self.rel is not None or self.judged_only is not None:
            return None
        if "|" in pattern:
            with_param, without = pattern.split("|")
        else:
            with_param, without = ("", pattern) if self.definition.param == "none" else (pattern, "")
        if self.param is None:
            return without or None
        if not with_param:
            return None
        if self.definition.param == "fraction":
            return with_param.format(r=f"{self.param:.2f}")
        return with_param.format(k=self.param)


def parse_measure(name: str) -> Measure:
    """Parse one measure name in any of the syntaxes above; :class:`MeasureError` lists the known
    names for an unknown one and says what is wrong with a known one."""
    if not isinstance(name, str) or not name.strip():
        raise MeasureError(f"unknown measure {name!r}; known: {known_measures()}")
    text = name.strip()
    rel: int | None = None
    level = _RANX_LEVEL.match(text)
    if level:  # no measure's name ends in -l<digits>
        text, rel = level["name"], int(level["rel"])
    call = _IR_MEASURES.match(text)
    if call:
        return _parse_call(name, call["base"].strip(), call["params"], call["param"], rel)
    match = _NAME.match(text)
    base = match["base"] if match else text
    if match and match["param"] is None and base.lower() in _AMBIGUOUS:
        raise MeasureError(f"measure {name!r} is ambiguous: {_AMBIGUOUS[base.lower()]}")
    if match and match["param"] is None and base.lower() in _WHOLE_LIST:
        return _checked(Measure(name, MEASURES[_WHOLE_LIST[base.lower()]], None, rel))
    definition = _lookup_base(base) if match else None
    if match is None or definition is None:
        raise MeasureError(f"unknown measure {name!r}; known: {known_measures()}")
    text_param = _ranx_fraction(definition, match["sep"], match["param"])
    if definition.name == "RBP" and text_param is None:
        text_param = str(_DEFAULT_P)
    return _checked(Measure(name, definition, _parse_param(name, definition, text_param), rel))


def _lookup_base(base: str) -> MeasureDef | None:
    return _LOOKUP.get(base.strip().lower())


def _ranx_fraction(definition: MeasureDef, sep: str | None, text: str | None) -> str | None:
    """ranx writes a persistence as ``rbp.95``: digits after a dot are the decimals of 0.xx."""
    if definition.param == "fraction" and sep == "." and text is not None and text.isdigit():
        return "0." + text
    return text


def _parse_call(name: str, base: str, params: str, cutoff: str | None, rel: int | None) -> Measure:
    """ir_measures' ``Name(key=value, ...)@cutoff``."""
    definition = _lookup_base(base)
    if definition is None:
        raise MeasureError(f"unknown measure {name!r}; known: {known_measures()}")
    values: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in params.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise MeasureError(f"measure {name!r}: expected key=value parameters, found {item!r}")
        values[key.strip()] = value.strip().strip("'\"")
    judged_only = None
    if "rel" in values:
        rel = _int_param(name, "rel", values.pop("rel"))
    if "judged_only" in values:
        judged_only = _bool_param(name, values.pop("judged_only"))
    if "dcg" in values:
        definition = _dcg_variant(name, definition, values.pop("dcg"))
    if "beta" in values and definition.name == "set_F1":
        if float(values.pop("beta")) != 1.0:
            raise MeasureError(f"measure {name!r}: only beta=1 (set_F1) is available")
    param_text = cutoff
    if "p" in values and definition.name == "RBP":
        if cutoff is not None:
            raise MeasureError(f"measure {name!r}: bm25lab's RBP sums the whole ranking; a cutoff cannot be given")
        param_text = values.pop("p")
    if values:
        raise MeasureError(f"measure {name!r}: unknown parameter {next(iter(values))!r} for {definition.name}")
    if definition.name == "num_ret" and rel is not None:  # ir_measures: NumRet(rel=r) counts relevant retrieved
        definition = MEASURES["num_rel_ret"]
    if definition.name == "RBP" and param_text is None:
        param_text = str(_DEFAULT_P)
    return _checked(Measure(name, definition, _parse_param(name, definition, param_text), rel, judged_only))


def _dcg_variant(name: str, definition: MeasureDef, value: str) -> MeasureDef:
    """ir_measures' ``dcg=log2`` (labels as gains) or ``dcg=exp-log2`` (gain 2^label - 1)."""
    variants = {("nDCG", "log2"): "nDCG", ("nDCG", "exp-log2"): "nDCG_exp"}
    chosen = variants.get((definition.name, value))
    if chosen is None:
        raise MeasureError(f"measure {name!r}: dcg= is log2 or exp-log2 for nDCG")
    return MEASURES[chosen]


def _int_param(name: str, key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise MeasureError(f"measure {name!r}: {key} must be an integer, not {value!r}") from None


def _bool_param(name: str, value: str) -> bool:
    flags = {"true": True, "1": True, "false": False, "0": False}
    if value.lower() not in flags:
        raise MeasureError(f"measure {name!r}: judged_only must be True or False, not {value!r}")
    return flags[value.lower()]


def _checked(measure: Measure) -> Measure:
    if measure.rel is not None:
        if measure.rel < 1:
            raise MeasureError(f"measure {measure.name!r}: rel must be at least 1")
        if measure.definition.name in IGNORES_REL:
            raise MeasureError(f"measure {measure.name!r}: {measure.definition.name} does not use a relevance "
                               f"threshold (graded, or counting every document)")
    return measure


def _parse_param(name: str, definition: MeasureDef, text: str | None) -> Param:
    kind = definition.param
    if text is None:
        if kind in ("cutoff", "fraction"):
            raise MeasureError(f"measure {name!r} needs a parameter: {definition.forms()}")
        return None
    if kind == "none":
        raise MeasureError(f"measure {name!r} takes no parameter: write {definition.name}")
    if kind == "fraction":
        try:
            level = float(text)
        except ValueError:
            level = math.nan
        if not 0.0 <= level <= 1.0:
            raise MeasureError(f"measure {name!r}: {definition.symbol} must be between 0 and 1")
        return level
    if not text.isdigit() or int(text) < 1:
        raise MeasureError(f"measure {name!r}: the cutoff must be a positive integer")
    return int(text)


@dataclass(frozen=True)
class Expansion:
    """Measure names with trec_eval's lists, families and nicknames spelled out: ``names`` to compute,
    ``unavailable`` the trec_eval measures a nickname holds that bm25lab does not compute."""

    names: tuple[str, ...]
    unavailable: tuple[str, ...] = ()


def expand_measures(names: Iterable[str] | str) -> Expansion:
    """Spell out trec_eval's ``-m`` forms: lists (``P.5,10`` -> ``P_5``, ``P_10``; ``P@5,10`` -> ``P@5``,
    ``P@10``), families without a parameter (``P`` -> ``P_5`` .. ``P_1000``, ``success`` -> ``success_1,5,10``,
    ``iprec_at_recall`` -> its 11 levels) and nicknames (``official``, ``set``, ``all_trec``). Other names
    pass as they are; repeats are dropped (first kept)."""
    if isinstance(names, str):
        names = [names]
    out: list[str] = []
    unavailable: list[str] = []
    for name in names:
        text = name.strip() if isinstance(name, str) else name
        nickname = TREC_NICKNAMES.get(text.lower()) if isinstance(text, str) else None
        if nickname is None:
            out.extend(_expand_one(name))
            continue
        for member in nickname:
            expanded = _expand_one(member)
            if member in _OTHER_MEANING:
                unavailable.append(member)
                continue
            try:
                parse_measure(expanded[0])
            except MeasureError:
                unavailable.append(member)
                continue
            out.extend(expanded)
    return Expansion(tuple(dict.fromkeys(out)), tuple(dict.fromkeys(unavailable)))


def _expand_one(name: str) -> list[str]:
    if not isinstance(name, str):
        return [name]
    text = name.strip()
    family = _TREC_FAMILIES.get(text.lower())
    if family is not None:
        written, params = family
        return [_trec_name(written, p) for p in params]
    listed = re.match(r"^(?P<base>[^()@]+?)(?P<sep>[@_.])(?P<list>[0-9.]+(?:,[0-9.]+)+)$", text)
    if listed:
        sep = "_" if listed["sep"] == "." else listed["sep"]
        return [f"{listed['base']}{sep}{item}" for item in listed["list"].split(",")]
    return [name]


def _trec_name(family: str, param: Param) -> str:
    return f"{family}_{param:.2f}" if isinstance(param, float) else f"{family}_{param}"


def parse_measures(names: Iterable[str] | str) -> tuple[Measure, ...]:
    """Parse measure names (:func:`expand_measures` first), dropping repeats (first kept); a single
    string is one name (or list, family, nickname)."""
    unique = list(expand_measures(names).names)
    if not unique:
        raise MeasureError(f"no measures given; known: {known_measures()}")
    return tuple(parse_measure(n) for n in unique)
