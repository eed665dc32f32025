"""Missing ratings (article 002): what a retrieved document its query (its user) did not rate counts as.

``missing_ratings`` is one of :data:`~bm25lab.evaluation.measures.MISSING_RATINGS`: ``skip`` (the default),
``mean``, ``median`` or ``zero``. A document is *unrated* for a query when the qrels hold no judgment
``>= 0`` of it for that query (absent, or a negative "unjudged" label). The *fill* of a query is the mean
or median of its judgments ``>= 0`` as written (grades, 4.5 as 4.5), or 0; a query without such a
judgment has none.

- MAE and RMSE compare the run's scores with the ratings: ``skip`` compares the rated documents only, the
  others also compare every unrated retrieved document with the fill (:mod:`bm25lab.evaluation.measures`).
- The graded measures :data:`IMPUTED` (CG, DCG, IDCG, nDCG and their ``_exp`` forms; not nDCG with a gain
  map) read qrels extended by :func:`imputed_qrels`: every unrated document the run retrieved for a query
  is judged with the query's fill, as if the user had rated it so. It then gains the fill at its rank and
  takes its place in the ideal ranking, which is made of all the query's judgments, these included, so
  nDCG stays within [0, 1]. ``skip`` and ``zero`` give the same graded figures (an unrated document gains
  0, trec_eval's rule); ``mean`` and ``median`` change them. The binary measures never impute.
"""
from __future__ import annotations

import numpy as np

from .ranking import Qrels, Run, _run_segments, judged_ranking

__all__ = ["IMPUTED", "fills", "imputed_qrels"]

IMPUTED = frozenset({"CG", "DCG", "IDCG", "nDCG", "DCG_exp", "IDCG_exp", "nDCG_exp"})
"""The graded measures ``missing_ratings`` applies to (besides MAE and RMSE)."""


def fills(offsets: np.ndarray, grades: np.ndarray, how: str) -> np.ndarray:
    """Per query (segments ``offsets`` of ``grades``, its judgments >= 0), the rating an unrated document
    gets: their mean, their median, or 0 (NaN for a query without a judgment; ``skip``: NaN everywhere)."""
    count = offsets.size - 1
    if how == "zero":
        return np.zeros(count)
    out = np.full(count, np.nan)
    if how == "skip":
        return out
    centre = np.mean if how == "mean" else np.median
    for q in range(count):
        if offsets[q + 1] > offsets[q]:
            out[q] = centre(grades[offsets[q]:offsets[q + 1]])
    return out


def imputed_qrels(qrels: Qrels, run: Run, qids: tuple[str, ...], how: str, fractions: str = "keep") -> Qrels:
    """``qrels`` with a judgment of the query's fill for every document of ``qids`` the run retrieved without a
    judgment >= 0 (a negative label of such a document is replaced); the others as they are."""
    ranking = judged_ranking(qrels, run, qids, fractions=fractions)
    fill = fills(ranking.judged_offsets, ranking.judged_grade, how)
    rows, num_ret, _ = _run_segments(run, qids)
    starts = np.cumsum(num_ret) - num_ret
    rated = np.zeros(int(num_ret.sum()), dtype=bool)
    rated[starts[ranking.seg] + ranking.rank - 1] = True
    seg = np.repeat(np.arange(len(qids)), num_ret)
    add = np.flatnonzero(~rated & ~np.isnan(fill[seg]))
    if not add.size:
        return qrels
    selected = add if rows is None else rows[add]
    new_docs = run.docs.take(selected).to_pylist()
    new_qids = [qids[q] for q in seg[add].tolist()]
    replaced = set(zip(new_qids, new_docs))
    old_qids = np.repeat(np.array(qrels.qids, dtype=object), np.diff(qrels.offsets)).tolist()
    old_docs = qrels.docs.to_pylist()
    keep = [i for i, pair in enumerate(zip(old_qids, old_docs)) if pair not in replaced]
    grades = np.concatenate((qrels.grade[keep], fill[seg[add]]))
    labels = np.concatenate((qrels.label[keep], np.trunc(fill[seg[add]]).astype(np.int64)))
    return Qrels.from_columns([old_qids[i] for i in keep] + new_qids, [old_docs[i] for i in keep] + new_docs,
                              grades, integer_labels=labels)
