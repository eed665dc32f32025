"""Every system against every other (``bm25lab compare --pairs all``): ranx's report, a table of means with
superscripts naming the systems each one is significantly better than.

:func:`all_pairs` takes per-query values ``{system: {qid: {measure: value}}}`` and returns a
:class:`PairwiseReport`. Rules (those of :func:`bm25lab.evaluation.compare.compare` where they apply):

- Queries: those present in every system; per measure, those where every system has a value.
- Systems get letters a, b, c, ... in the order given. For each measure, every unordered pair (i < j) is
  tested once with the chosen test (:data:`~bm25lab.evaluation.significance.FAMILY_TESTS`; a paired test
  pair by pair with the same seed, Tukey's HSD over all systems at once); the p-values of one measure form
  the family of the correction (:data:`~bm25lab.evaluation.corrections.CORRECTIONS`; none for Tukey).
- System i's cell on a measure carries the letter of every system j it beats: adjusted p < alpha and
  mean_i > mean_j (ranx marks ``p <= max_p``; here, as in ``compare``, ``p < alpha``).

Renderers are pure: :func:`to_markdown`, :func:`to_latex` (booktabs; superscripts in math mode, ranx's
style), :func:`to_json` return text, :func:`to_rich_table` a ``rich`` table.
"""
from __future__ import annotations

import itertools
import json
import math
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ..engine.errors import BM25LabError
from .corrections import CORRECTION_TITLES, get_correction
from .significance import ADJUSTED, DEFAULT_TRIALS, RESAMPLED, TEST_TITLES, get_family_test

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["PairTest", "PairwiseReport", "all_pairs", "to_json", "to_latex", "to_markdown", "to_rich_table",
           "TEXT_RENDERERS"]

PerQuery = Mapping[str, Mapping[str, float]]
_SUPERSCRIPTS = dict(zip(string.ascii_lowercase, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))


@dataclass(frozen=True, slots=True)
class PairTest:
    """One pair of systems on one measure: ``first`` against ``second`` (``first`` comes first in the order
    given), their means, the p-value and the adjusted one (None where no correction applies)."""

    measure: str
    first: str
    second: str
    first_mean: float
    second_mean: float
    p_value: float
    p_adjusted: float | None
    significant: bool


@dataclass(frozen=True)
class PairwiseReport:
    """Means per (system, measure), the pairs' tests, and the settings they were made with."""

    systems: tuple[str, ...]
    measures: tuple[str, ...]
    means: Mapping[str, Mapping[str, float]]  # means[system][measure]
    pairs: tuple[PairTest, ...]
    queries_per_measure: Mapping[str, int]
    test: str
    correction: str
    alpha: float
    trials: int
    seed: int

    @property
    def letters(self) -> dict[str, str]:
        """Each system's letter: a, b, c, ... in order."""
        return {system: _letter(i) for i, system in enumerate(self.systems)}

    def beaten(self, system: str, measure: str) -> list[str]:
        """The systems ``system`` is significantly better than on ``measure``, in order."""
        out = []
        for pair in self.pairs:
            if pair.measure != measure or not pair.significant or system not in (pair.first, pair.second):
                continue
            mine, theirs, other = ((pair.first_mean, pair.second_mean, pair.second) if pair.first == system
                                   else (pair.second_mean, pair.first_mean, pair.first))
            if mine > theirs:
                out.append(other)
        return sorted(out, key=self.systems.index)


def _letter(i: int) -> str:
    return string.ascii_lowercase[i] if i < 26 else f"s{i + 1}"


def all_pairs(
    systems: Mapping[str, PerQuery],
    measures: Sequence[str],
    test: str = "t",
    correction: str = "holm",
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    alpha: float = 0.05,
) -> PairwiseReport:
    """Test every pair of ``systems`` on every measure (see the module docstring)."""
    from .compare import _check_measure_present, _common_queries, _measure_matrix, _validate

    names = list(systems)
    if len(names) < 2:
        raise BM25LabError("an all-pairs comparison needs at least 2 systems")
    _validate({n: systems[n] for n in names[1:]}, measures, alpha, 0.95)
    family_test, correct = get_family_test(test), get_correction(correction)
    qids = _common_queries(systems[names[0]], {n: systems[n] for n in names[1:]})
    pairs: list[PairTest] = []
    means: dict[str, dict[str, float]] = {n: {} for n in names}
    counts: dict[str, int] = {}
    index_pairs = list(itertools.combinations(range(len(names)), 2))
    for measure in measures:
        for name in names:
            _check_measure_present(name, systems[name], measure)
        kept, matrix = _measure_matrix(systems, qids, measure)
        if len(kept) < 2:
            raise BM25LabError(f"measure {measure!r} is defined on {len(kept)} queries common to every system; "
                               f"need at least 2")
        counts[measure] = len(kept)
        samples = [matrix[n] for n in names]
        for n in names:
            means[n][measure] = float(matrix[n].mean())
        results = family_test(samples, index_pairs, trials, seed)
        corrected = correction != "none" and test not in ADJUSTED and len(index_pairs) > 1
        adjusted = correct([r.p_value for r in results]) if corrected else [None] * len(results)
        for (i, j), result, p_adj in zip(index_pairs, results, adjusted):
            deciding = result.p_value if p_adj is None else p_adj
            pairs.append(PairTest(measure, names[i], names[j], means[names[i]][measure], means[names[j]][measure],
                                  result.p_value, p_adj, deciding < alpha))
    return PairwiseReport(tuple(names), tuple(measures), means, tuple(pairs), counts, test, correction, alpha,
                          trials, seed)


# --------------------------------------------------------------------------- rendering


def notes(report: PairwiseReport) -> list[str]:
    """Plain-text lines: what the letters mean, the test and the correction."""
    r = report
    resampled = f" ({r.trials} trials, seed {r.seed})" if r.test in RESAMPLED else ""
    family = ("" if r.test in ADJUSTED or r.correction == "none"
              else f", {CORRECTION_TITLES[r.correction]} over the {math.comb(len(r.systems), 2)} pairs of each measure")
    counts = ", ".join(f"{m}: {n}" for m, n in r.queries_per_measure.items())
    return [f"A letter marks a system the one in its row is significantly better than (two-sided {TEST_TITLES[r.test]}"
            f"{resampled}{family}, alpha = {r.alpha:g}).", f"Queries compared per measure: {counts}."]


def _cells(report: PairwiseReport, mark: Callable[[str], str]) -> list[list[str]]:
    letters = report.letters
    rows = []
    for system in report.systems:
        row = [letters[system], system]
        for measure in report.measures:
            beaten = "".join(letters[s] for s in report.beaten(system, measure))
            row.append(f"{report.means[system][measure]:.4f}" + (mark(beaten) if beaten else ""))
        rows.append(row)
    return rows


def to_markdown(report: PairwiseReport) -> str:
    """A Markdown table, superscripts as ``<sup>``, notes below."""
    headers = ["#", "system", *report.measures]
    lines = ["| " + " | ".join(headers) + " |", "|---|---|" + "---:|" * len(report.measures)]
    for row in _cells(report, lambda s: f"<sup>{s}</sup>"):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join([*lines, "", *notes(report)]) + "\n"


def to_latex(report: PairwiseReport) -> str:
    """A booktabs ``tabular``; superscripts as ``$^{ab}$`` (ranx's LaTeX report)."""
    from .compare import _latex_escape

    headers = ["\\#", "system", *(_latex_escape(m) for m in report.measures)]
    lines = [f"\\begin{{tabular}}{{ll{'r' * len(report.measures)}}}", "\\toprule", " & ".join(headers) + " \\\\",
             "\\midrule"]
    for row in _cells(report, lambda s: f"\x00{s}\x00"):
        cells = [_latex_escape(c.split("\x00")[0]) + (f"$^{{{c.split(chr(0))[1]}}}$" if "\x00" in c else "") for c in row]
        lines.append(" & ".join(cells) + " \\\\")
    lines.append("\\bottomrule")
    for line in notes(report):
        lines.append(f"\\multicolumn{{{len(headers)}}}{{l}}{{\\footnotesize {_latex_escape(line)}}} \\\\")
    return "\n".join([*lines, "\\end{tabular}"]) + "\n"


def to_json(report: PairwiseReport) -> str:
    """``{"systems", "letters", "means", "pairs": [...], "test", "correction", "alpha"}``."""
    return json.dumps({
        "systems": list(report.systems), "letters": report.letters, "means": report.means,
        "pairs": [{"measure": p.measure, "first": p.first, "second": p.second, "first_mean": p.first_mean,
                   "second_mean": p.second_mean, "p_value": p.p_value, "p_adjusted": p.p_adjusted,
                   "significant": p.significant} for p in report.pairs],
        "test": report.test, "correction": report.correction, "alpha": report.alpha,
    }, indent=2, ensure_ascii=False)


def to_rich_table(report: PairwiseReport) -> Table:
    """A ``rich`` table: superscript letters (Unicode) after each mean, notes as the caption."""
    from rich.table import Table

    table = Table(title="All pairs", caption="\n".join(notes(report)), caption_justify="left")
    table.add_column("#")
    table.add_column("system")
    for measure in report.measures:
        table.add_column(measure, justify="right", no_wrap=True)
    for row in _cells(report, lambda s: "".join(_SUPERSCRIPTS.get(ch, f"^{ch}") for ch in s)):
        table.add_row(*row)
    return table


TEXT_RENDERERS: dict[str, Callable[[PairwiseReport], str]] = {
    "json": to_json,
    "markdown": to_markdown,
    "latex": to_latex,
}


def p_matrix(report: PairwiseReport, measure: str, adjusted: bool = True) -> np.ndarray:
    """The (systems x systems) matrix of p-values of one measure (adjusted where a correction applied;
    1 on the diagonal)."""
    at = {s: i for i, s in enumerate(report.systems)}
    out = np.ones((len(at), len(at)))
    for p in report.pairs:
        if p.measure == measure:
            value = p.p_adjusted if adjusted and p.p_adjusted is not None else p.p_value
            out[at[p.first], at[p.second]] = out[at[p.second], at[p.first]] = value
    return out
