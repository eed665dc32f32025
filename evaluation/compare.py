"""Compare runs with a baseline, query by query: means, differences, significance, win/tie/loss.

Input is per-query values ``{qid: {measure: value}}`` for the baseline and for each run (the shape of
``evaluate(...).per_query``). :func:`compare` returns a :class:`Comparison` holding one
:class:`CompareRow` per (measure, run), measure-major, runs in the order given. Rules:

- **Queries.** Only queries present in the baseline and in every run are compared
  (``Comparison.num_queries``). Within one measure, a query whose value is missing or NaN in any
  system (e.g. AUC, undefined without both relevant and judged non-relevant documents) is left out
  of that measure; ``Comparison.queries_per_measure`` says how many remained. Queries are processed
  in sorted id order, so resampling results do not depend on dict order.
- **Means** are over the compared queries, so ``delta = mean - baseline_mean`` is the mean of the
  per-query differences ``run - baseline``.
- **p-value**: the chosen two-sided test (:data:`bm25lab.evaluation.significance.FAMILY_TESTS`) of run
  against baseline. Every (run, measure) uses the same ``seed``, so adding a run never changes the
  others' figures (the paired tests; Tukey's HSD is computed over the baseline and all the runs at once).
- **Correction.** When more than one run is compared, ``p_adjusted`` is the chosen correction
  (:data:`bm25lab.evaluation.corrections.CORRECTIONS`: Holm by default) across the runs, separately for
  each measure (the family is "these runs against this baseline on this measure"); it is ``None`` with a
  single run, with ``correction="none"``, and for Tukey's HSD, whose p-values hold for the family already.
- **Confidence interval**: percentile bootstrap of the mean difference (``ci_level``, default 95%),
  ``trials`` resamples, ``seed``.
- **Wins/ties/losses**: exact float comparison of the two values of each query (run > baseline is a
  win). No tolerance: both values come from the same measure code on the same judgments, so equal
  rankings give bit-identical values.
- **significant**: ``p_adjusted < alpha`` when a correction applies, else ``p_value < alpha``.

Renderers are pure: :func:`to_json`, :func:`to_markdown`, :func:`to_latex` return text
(registry :data:`TEXT_RENDERERS`), :func:`to_rich_table` a ``rich`` table.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ..engine.errors import BM25LabError
from .corrections import CORRECTION_TITLES, get_correction
from .significance import ADJUSTED, DEFAULT_TRIALS, RESAMPLED, TEST_TITLES, bootstrap_ci, get_family_test

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "CompareRow",
    "Comparison",
    "JSON_KEYS",
    "compare",
    "rows_as_dicts",
    "to_json",
    "to_markdown",
    "to_latex",
    "to_rich_table",
    "notes",
    "TEXT_RENDERERS",
]

PerQuery = Mapping[str, Mapping[str, float]]

# what ``bm25lab compare`` compares when no measure is named
DEFAULT_MEASURES = ("nDCG@10", "AP")

JSON_KEYS = (
    "run", "measure", "mean", "baseline_mean", "delta", "p_value", "p_adjusted",
    "ci_low", "ci_high", "wins", "ties", "losses",
)  # fmt: skip

UP, DOWN = "▲", "▼"


@dataclass(frozen=True, slots=True)
class CompareRow:
    """One run against the baseline on one measure. The fields but ``significant`` are the JSON keys."""

    run: str
    measure: str
    mean: float
    baseline_mean: float
    delta: float
    p_value: float
    p_adjusted: float | None
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int
    significant: bool

    @property
    def marker(self) -> str:
        """``▲`` significantly better, ``▼`` significantly worse, ``""`` otherwise."""
        if not self.significant:
            return ""
        return UP if self.delta > 0 else DOWN

    def as_dict(self) -> dict[str, object]:
        """The row with exactly the keys of :data:`JSON_KEYS`, in that order."""
        return {key: getattr(self, key) for key in JSON_KEYS}


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`; ``differences[measure][run][qid]`` is run minus baseline."""

    baseline: str
    runs: tuple[str, ...]
    measures: tuple[str, ...]
    rows: tuple[CompareRow, ...]
    num_queries: int
    queries_per_measure: Mapping[str, int]
    test: str
    trials: int
    seed: int
    alpha: float
    ci_level: float
    differences: Mapping[str, Mapping[str, Mapping[str, float]]]
    correction: str = "holm"

    @property
    def corrected(self) -> bool:
        """A correction applies: more than one run compared with the baseline, a correction chosen, and a
        test whose p-values are not adjusted for the family already (Tukey's are)."""
        return len(self.runs) > 1 and self.correction != "none" and self.test not in ADJUSTED

    def deltas(self, measure: str) -> dict[str, dict[str, float]]:
        """Per-query differences ``{run: {qid: run - baseline}}`` on ``measure``."""
        if measure not in self.differences:
            raise BM25LabError(f"measure {measure!r} was not compared; compared: {', '.join(self.measures)}")
        return {run: dict(values) for run, values in self.differences[measure].items()}


# --------------------------------------------------------------------------- computation


def _value(per_query: PerQuery, qid: str, measure: str) -> float | None:
    """The query's value on ``measure`` as a float, or ``None`` when missing or NaN (undefined)."""
    value = per_query[qid].get(measure)
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _check_measure_present(name: str, per_query: PerQuery, measure: str) -> None:
    if not any(measure in values for values in per_query.values()):
        available = sorted({m for values in per_query.values() for m in values})
        raise BM25LabError(
            f"measure {measure!r} has no values in {name}; available: {', '.join(available) or 'none'}"
        )


def _common_queries(baseline: PerQuery, runs: Mapping[str, PerQuery]) -> list[str]:
    """Ids of the queries present in the baseline and every run, sorted."""
    common = set(baseline)
    for per_query in runs.values():
        common &= set(per_query)
    return sorted(common)


def _measure_matrix(
    systems: Mapping[str, PerQuery], qids: Sequence[str], measure: str
) -> tuple[list[str], dict[str, np.ndarray]]:
    """The queries where every system has a defined value, and each system's values on them."""
    values = {name: [_value(pq, qid, measure) for qid in qids] for name, pq in systems.items()}
    keep = [i for i in range(len(qids)) if all(v[i] is not None for v in values.values())]
    kept_qids = [qids[i] for i in keep]
    return kept_qids, {name: np.array([v[i] for i in keep], dtype=np.float64) for name, v in values.items()}


def _win_tie_loss(run: np.ndarray, base: np.ndarray) -> tuple[int, int, int]:
    """Counts of queries where run > base, run == base, run < base (exact float comparison)."""
    return int(np.sum(run > base)), int(np.sum(run == base)), int(np.sum(run < base))


def _validate(runs: Mapping[str, PerQuery], measures: Sequence[str], alpha: float, ci_level: float) -> None:
    if not runs:
        raise BM25LabError("compare needs at least one run besides the baseline")
    if not measures:
        raise BM25LabError("compare needs at least one measure")
    from .errors import MeasureError
    from .measures import numeric_measure, parse_measure

    for measure in measures:
        try:
            parse_measure(measure)
        except MeasureError:  # per-query values under a name of the caller's own
            continue
        numeric_measure(measure)  # a measure whose values are text cannot be compared
    if not 0.0 < alpha < 1.0:
        raise BM25LabError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not 0.0 < ci_level < 1.0:
        raise BM25LabError(f"confidence level must lie strictly between 0 and 1, got {ci_level}")


def compare(
    baseline: PerQuery,
    runs: Mapping[str, PerQuery],
    measures: Sequence[str],
    test: str = "t",
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    alpha: float = 0.05,
    *,
    baseline_name: str = "baseline",
    ci_level: float = 0.95,
    correction: str = "holm",
) -> Comparison:
    """Compare every run in ``runs`` ({name: per-query values}) with ``baseline`` on ``measures``.

    See the module docstring for which queries count, how the correction is applied and how wins are counted.
    Raises :class:`BM25LabError` for an unknown test, a measure absent from a system, or fewer
    than two comparable queries.
    """
    _validate(runs, measures, alpha, ci_level)
    family_test = get_family_test(test)
    correct = get_correction(correction)
    systems: dict[str, PerQuery] = {baseline_name: baseline, **{name: runs[name] for name in runs}}
    qids = _common_queries(baseline, runs)
    if len(qids) < 2:
        raise BM25LabError(
            f"compare needs at least 2 queries evaluated in the baseline and every run; found {len(qids)}"
        )
    rows: list[CompareRow] = []
    per_measure: dict[str, int] = {}
    differences: dict[str, dict[str, dict[str, float]]] = {}
    for measure in measures:
        for name, per_query in systems.items():
            _check_measure_present(name, per_query, measure)
        kept, matrix = _measure_matrix(systems, qids, measure)
        if len(kept) < 2:
            raise BM25LabError(
                f"measure {measure!r} is defined on {len(kept)} of the {len(qids)} common queries; need at least 2"
            )
        per_measure[measure] = len(kept)
        base = matrix[baseline_name]
        samples = [matrix[name] for name in systems]
        tested = family_test(samples, [(i, 0) for i in range(1, len(samples))], trials, seed)
        results = dict(zip(runs, tested))
        corrected = len(runs) > 1 and correction != "none" and test not in ADJUSTED
        adjusted = correct([r.p_value for r in tested]) if corrected else [None] * len(runs)
        differences[measure] = {}
        for name, p_adjusted in zip(runs, adjusted):
            diff = matrix[name] - base
            differences[measure][name] = dict(zip(kept, (float(x) for x in diff)))
            low, high = bootstrap_ci(diff, trials=trials, seed=seed, level=ci_level)
            p_value = results[name].p_value
            deciding = p_value if p_adjusted is None else p_adjusted
            wins, ties, losses = _win_tie_loss(matrix[name], base)
            rows.append(
                CompareRow(
                    run=name,
                    measure=measure,
                    mean=float(matrix[name].mean()),
                    baseline_mean=float(base.mean()),
                    delta=float(diff.mean()),
                    p_value=p_value,
                    p_adjusted=p_adjusted,
                    ci_low=low,
                    ci_high=high,
                    wins=wins,
                    ties=ties,
                    losses=losses,
                    significant=deciding < alpha,
                )
            )
    return Comparison(
        baseline=baseline_name,
        runs=tuple(runs),
        measures=tuple(measures),
        rows=tuple(rows),
        num_queries=len(qids),
        queries_per_measure=per_measure,
        test=test,
        trials=trials,
        seed=seed,
        alpha=alpha,
        ci_level=ci_level,
        differences=differences,
        correction=correction,
    )


# --------------------------------------------------------------------------- rendering


def _fmt_p(p: float | None) -> str:
    """p-values with four decimals, or two significant digits below 1e-4; ``-`` for None."""
    if p is None:
        return "-"
    if p == 0.0:
        return "0"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _fmt_ci(row: CompareRow) -> str:
    return f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]"


def _wtl(row: CompareRow) -> str:
    return f"{row.wins}/{row.ties}/{row.losses}"


def _headers(comparison: Comparison) -> list[str]:
    level = f"{comparison.ci_level * 100:g}% CI"
    adjusted_column = [f"p ({comparison.correction})"] if comparison.corrected else []
    return ["run", "measure", "mean", "baseline", "delta", "p", *adjusted_column, level, "W/T/L", "sig"]


def _cells(comparison: Comparison, row: CompareRow, up: str, down: str) -> list[str]:
    adjusted_cell = [_fmt_p(row.p_adjusted)] if comparison.corrected else []
    marker = {UP: up, DOWN: down, "": ""}[row.marker]
    return [
        row.run, row.measure, f"{row.mean:.4f}", f"{row.baseline_mean:.4f}", f"{row.delta:+.4f}",
        _fmt_p(row.p_value), *adjusted_cell, _fmt_ci(row), _wtl(row), marker,
    ]  # fmt: skip


def notes(comparison: Comparison, up: str = UP, down: str = DOWN) -> list[str]:
    """Plain-text lines saying how many queries were compared and what the test and markers mean."""
    c = comparison
    lines = [f"{c.num_queries} queries evaluated in the baseline and every run were compared."]
    lines += [
        f"{measure}: {n} of them have a defined value in every run."
        for measure, n in c.queries_per_measure.items()
        if n != c.num_queries
    ]
    resampled = f" ({c.trials} trials, seed {c.seed}, p = (count + 1)/(trials + 1))" if c.test in RESAMPLED else ""
    lines.append(
        f"p: two-sided {TEST_TITLES[c.test]}{resampled}; CI: percentile bootstrap of the mean difference "
        f"({c.trials} trials, seed {c.seed})."
    )
    family = (f" after {CORRECTION_TITLES[c.correction]} over the {len(c.runs)} runs, per measure" if c.corrected
              else "")
    lines.append(f"{up}/{down}: significantly better/worse than {c.baseline} at alpha = {c.alpha:g}{family}.")
    return lines


def rows_as_dicts(comparison: Comparison) -> list[dict[str, object]]:
    """The rows as dicts with exactly the keys of :data:`JSON_KEYS`."""
    return [row.as_dict() for row in comparison.rows]


def to_json(comparison: Comparison) -> str:
    """A JSON list of rows (keys :data:`JSON_KEYS`; ``p_adjusted`` is null where no correction applies)."""
    return json.dumps(rows_as_dicts(comparison), indent=2, ensure_ascii=False)


def _markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def to_markdown(comparison: Comparison) -> str:
    """A GitHub-flavoured Markdown table followed by the notes."""
    headers = _headers(comparison)
    right = {"mean", "baseline", "delta", "p", f"p ({comparison.correction})", "W/T/L"}
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if h in right else "---" for h in headers) + "|",
    ]
    for row in comparison.rows:
        cells = [_markdown_escape(cell) for cell in _cells(comparison, row, UP, DOWN)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [_markdown_escape(line) for line in notes(comparison)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip
_LATEX_UP, _LATEX_DOWN = r"$\uparrow$", r"$\downarrow$"
_SENTINEL_UP, _SENTINEL_DOWN = "\x00up\x00", "\x00down\x00"


def _latex_escape(text: str) -> str:
    """Escape LaTeX's special characters; the marker sentinels become arrows."""
    escaped = "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)
    return escaped.replace(_SENTINEL_UP, _LATEX_UP).replace(_SENTINEL_DOWN, _LATEX_DOWN)


def to_latex(comparison: Comparison) -> str:
    """A LaTeX ``tabular`` in booktabs style (needs ``\\usepackage{booktabs}``), notes below the rule."""
    headers = ["$\\Delta$" if h == "delta" else _latex_escape(h) for h in _headers(comparison)]
    spec = "ll" + "r" * (len(headers) - 4) + "rc"
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(headers) + " \\\\", "\\midrule"]
    for row in comparison.rows:
        cells = [_latex_escape(cell) for cell in _cells(comparison, row, _SENTINEL_UP, _SENTINEL_DOWN)]
        lines.append(" & ".join(cells) + " \\\\")
    lines.append("\\bottomrule")
    for line in notes(comparison, _SENTINEL_UP, _SENTINEL_DOWN):
        lines.append(f"\\multicolumn{{{len(headers)}}}{{l}}{{\\footnotesize {_latex_escape(line)}}} \\\\")
    lines.append("\\end{tabular}")
    return "\n".join(lines) + "\n"


def to_rich_table(comparison: Comparison) -> Table:
    """A ``rich`` table for the terminal: green ▲ / red ▼ on significant rows, notes as the caption."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=f"Runs against {comparison.baseline}",
        caption="\n".join(notes(comparison)),
        caption_justify="left",
    )
    for header in _headers(comparison):
        numeric = header not in {"run", "measure", "sig"}
        table.add_column(header, justify="right" if numeric else "left", no_wrap=numeric)
    style = {UP: "bold green", DOWN: "bold red", "": ""}
    for row in comparison.rows:
        cells = _cells(comparison, row, UP, DOWN)
        table.add_row(*cells[:-1], Text(cells[-1], style=style[row.marker]))
    return table


TEXT_RENDERERS: dict[str, Callable[[Comparison], str]] = {
    "json": to_json,
    "markdown": to_markdown,
    "latex": to_latex,
}
