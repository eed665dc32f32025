"""The pseudo-relevance feedback options shared by `search`, `run`, `experiment` and `tune`
(engine/feedback.py): --rm3, --bo1, --rocchio and their parameters."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from ..engine.errors import ParameterError

if TYPE_CHECKING:
    from ..engine.feedback import Feedback

RM3_OPT = typer.Option("--rm3", help="Pseudo-relevance feedback with RM3, as Anserini (defaults: 10 documents, 10 terms, original query weight 0.5).")
BO1_OPT = typer.Option("--bo1", help="Pseudo-relevance feedback with Bo1, as Terrier (defaults: 3 documents, 10 terms).")
ROCCHIO_OPT = typer.Option("--rocchio", help="Pseudo-relevance feedback with Rocchio, as Anserini (BM25 term weights of the feedback documents).")
FB_DOCS_OPT = typer.Option("--fb-docs", help="Feedback documents (default: the method's).", min=1)
FB_TERMS_OPT = typer.Option("--fb-terms", help="Feedback terms (default: the method's).", min=1)
OQW_OPT = typer.Option("--original-query-weight", help="RM3/Rocchio: weight of the original query in the interpolation, 0..1.", min=0.0, max=1.0)


def chosen_feedback(rm3: bool, bo1: bool, rocchio: bool, fb_docs: Optional[int], fb_terms: Optional[int],
                    original_query_weight: Optional[float]) -> Optional["Feedback"]:
    """The feedback the options ask for, or None; one method at most, its parameters only with a method."""
    methods = [name for name, on in (("rm3", rm3), ("bo1", bo1), ("rocchio", rocchio)) if on]
    if len(methods) > 1:
        raise ParameterError(f"choose one feedback method, not {' and '.join('--' + m for m in methods)}")
    if not methods:
        if fb_docs is not None or fb_terms is not None or original_query_weight is not None:
            raise ParameterError("--fb-docs, --fb-terms and --original-query-weight go with --rm3, --bo1 or --rocchio")
        return None
    from ..engine.feedback import Feedback

    return Feedback(methods[0], fb_docs, fb_terms, original_query_weight).resolved()
