"""Link-prediction evaluation (article 003): one rank per test positive -> MR, MRR and Hits@k.

Knowledge-graph embedding evaluations rank each test triple (a positive) against its corrupted
candidates and report, over the positives, the mean rank (MR), the mean reciprocal rank (MRR) and
Hits@k, the share of positives ranked in the top k (Bordes et al. 2013; article 003: two positives
ranked 2nd and 1st give Hits@1 = 0.5, Hits@3 = 1.0). The input is what those evaluations produce: the
rank of each positive, 1 for the best. A rank may be fractional when an evaluation averages over
tied candidates (2.5 for a positive tied with the 2nd and 3rd).

File format (:func:`read_ranks`): one positive per line, its rank as the last whitespace-separated
field (anything before it, such as a triple or an id, is kept as the positive's name); blank lines
and lines starting with ``#`` are skipped. A rank that is not a finite number >= 1 is an
:class:`~bm25lab.engine.errors.InputError` naming the file and the line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..engine.errors import InputError, ParameterError

__all__ = ["DEFAULT_HITS", "LinkPrediction", "link_prediction", "read_ranks"]

DEFAULT_HITS = (1, 3, 10)
"""The cutoffs of Hits@k reported when none are given (the usual 1, 3, 10)."""


@dataclass(frozen=True)
class LinkPrediction:
    """MR, MRR and Hits@k over ``count`` positives (``hits[k]`` for each cutoff)."""

    count: int
    mr: float
    mrr: float
    hits: dict[int, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        """``{"MR": ..., "MRR": ..., "Hits@1": ..., ...}``."""
        return {"MR": self.mr, "MRR": self.mrr, **{f"Hits@{k}": v for k, v in self.hits.items()}}


def mean_rank(ranks: Sequence[float]) -> float:
    """MR = the mean of the positives' ranks (lower is better)."""
    return math.fsum(ranks) / len(ranks)


def mean_reciprocal_rank(ranks: Sequence[float]) -> float:
    """MRR = the mean of 1 / rank over the positives."""
    return math.fsum(1.0 / r for r in ranks) / len(ranks)


def hits_at(ranks: Sequence[float], k: int) -> float:
    """Hits@k = the share of positives ranked k or better."""
    return sum(1 for r in ranks if r <= k) / len(ranks)


def link_prediction(ranks: Iterable[float], ks: Sequence[int] = DEFAULT_HITS) -> LinkPrediction:
    """MR, MRR and Hits@k (for each k of ``ks``) of the positives' ``ranks`` (each a number >= 1)."""
    values = [float(r) for r in ranks]
    if not values:
        raise InputError("no ranks to evaluate")
    bad = [r for r in values if not (math.isfinite(r) and r >= 1.0)]
    if bad:
        raise InputError(f"a rank must be a number >= 1 (1 is the best), got {bad[0]!r}")
    cutoffs = list(dict.fromkeys(ks))
    if not cutoffs or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in cutoffs):
        raise ParameterError(f"Hits@k cutoffs must be positive integers, got {list(ks)!r}")
    return LinkPrediction(len(values), mean_rank(values), mean_reciprocal_rank(values),
                          {k: hits_at(values, k) for k in cutoffs})


def read_ranks(path: str | Path) -> list[float]:
    """The ranks of a file of one positive per line (see the module's docstring)."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path) from None
    ranks: list[float] = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        try:
            rank = float(fields[-1]) if "_" not in fields[-1] else math.nan
        except ValueError:
            rank = math.nan
        if not (math.isfinite(rank) and rank >= 1.0):
            raise InputError(f"rank {fields[-1]!r} is not a number >= 1", path, number)
        ranks.append(rank)
    if not ranks:
        raise InputError("no ranks in the file", path)
    return ranks
