"""The installed script builds only the command it runs (bm25lab.cli.main): the same command line as the
whole app, with the other commands' modules left unimported."""
from __future__ import annotations

import subprocess
import sys

import pytest
from bm25lab.cli import COMMANDS, app, build_app, requested
from typer.testing import CliRunner

runner = CliRunner()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_built_alone_is_the_whole_apps_command(name):
    whole = runner.invoke(app, [name, "--help"])
    alone = runner.invoke(build_app([name]), [name, "--help"])
    assert whole.exit_code == alone.exit_code == 0
    assert alone.output == whole.output


@pytest.mark.parametrize(("args", "expected"), [
    (["evaluate", "q", "r"], ["evaluate"]),
    (["--debug", "search", "--index", "x"], ["search"]),
    (["--help"], list(COMMANDS)),
    (["--version"], list(COMMANDS)),
    (["evalute", "q"], list(COMMANDS)),  # misspelt: click names the commands it has
    ([], list(COMMANDS)),
])
def test_the_commands_a_command_line_needs(args, expected):
    assert requested(args) == expected


def test_running_a_command_imports_only_its_module():
    code = ("import sys\nsys.argv = ['bm25lab', 'measures']\nfrom bm25lab.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('bm25lab.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.splitlines()[-1]
    assert "bm25lab.cli.evaluate_cmds" in loaded
    for other in ("engine_cmds", "search_cmds", "compare_cmds", "corpora_cmds", "growth_cmds", "tune_cmds"):
        assert f"bm25lab.cli.{other}" not in loaded


def test_a_misspelt_command_is_named_with_the_nearest_ones():
    result = runner.invoke(build_app(requested(["evalute"])), ["evalute"])
    assert result.exit_code == 2
    assert "No such command 'evalute'" in result.output and "evaluate" in result.output


EVALUATE_LEAVES = ("pyarrow", "rich", "bm25lab.evaluation.compare", "bm25lab.evaluation.significance",
                   "bm25lab.evaluation.corrections", "bm25lab.cli.compare_cmds", "bm25lab.engine.sources",
                   "bm25lab.engine.index", "bm25lab.corpora.irds", "jieba", "scipy")
"""What a new ``bm25lab evaluate`` of TREC files leaves unimported: pyarrow (the compiled readers read them,
the ids stay numpy string columns), rich (its output is not a terminal: laid out by bm25lab.cli.plain), the
comparisons' statistics, the engine."""


def _modules_after(argv: list[str], cwd) -> tuple[str, set[str]]:
    """The output of ``main()`` run with ``argv`` in a new process, and the modules it imported."""
    code = ("import sys\nsys.argv = " + repr(argv) + "\nfrom bm25lab.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sorted(sys.modules)), file=open('modules.txt', 'w'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    return done.stdout, set((cwd / "modules.txt").read_text().split())


@pytest.mark.parametrize("form", [[], ["--format", "trec"], ["--format", "json"], ["-q", "-m", "all_trec"]])
def test_a_new_evaluate_process_imports_only_what_it_needs(tmp_path, form):
    from bm25lab.engine.core import kernels

    if kernels() is None:
        pytest.skip("without the compiled core, files are read by pyarrow")
    (tmp_path / "qrels.trec").write_text("".join(f"q{i % 3} 0 d{i} {i % 4}\n" for i in range(30)))
    (tmp_path / "run.trec").write_text("".join(f"q{i % 3} Q0 d{i} {i} {50 - i}.5 t\n" for i in range(45)))
    output, loaded = _modules_after(["bm25lab", "evaluate", "qrels.trec", "run.trec", *form], tmp_path)
    assert "nDCG@10" in output or "ndcg_cut_10" in output or "P_5" in output
    assert "bm25lab.cli.evaluate_cmds" in loaded
    assert not [m for m in loaded if m.split(".")[0] in EVALUATE_LEAVES or m in EVALUATE_LEAVES]


SEARCH_LEAVES = ("pyarrow", "rich", "jieba", "scipy", "bm25lab.evaluation", "bm25lab.engine.sources",
                 "bm25lab.cli.inputs", "bm25lab.cli.engine_cmds", "bm25lab.corpora", "bm25lab.engine.feedback",
                 "bm25lab.engine.backends.numpy_backend")
"""What a new ``bm25lab search`` of an English index leaves unimported: the readers of documents, queries and runs
(its own module, not `index`'s and `run`'s), the evaluation, rich (its output is not a terminal), jieba, the
backend it does not use (numpy's, where the compiled core searches)."""


@pytest.fixture(scope="module")
def english_index(tmp_path_factory):
    from bm25lab.engine import Index, Tokenizer

    folder = tmp_path_factory.mktemp("search") / "idx"
    docs = [{"id": f"d{i}", "title": f"boundary layer {i}", "text": f"transition of the boundary layer, case {i}"}
            for i in range(20)]
    Index.build(docs, tokenizer=Tokenizer("en"), workers=1).save(folder)
    return folder


@pytest.mark.parametrize("form", [[], ["--format", "json"], ["-k", "3"]])
def test_a_new_search_process_imports_only_what_it_needs(tmp_path, english_index, form):
    from bm25lab.engine.core import kernels

    if kernels() is None:
        pytest.skip("without the compiled core, numpy's backend searches")
    output, loaded = _modules_after(["bm25lab", "search", str(english_index), "boundary transition", *form], tmp_path)
    assert "results for 'boundary transition'" in output or '"doc_id"' in output
    assert "bm25lab.cli.search_cmds" in loaded and "bm25lab.engine.index" in loaded
    assert not [m for m in loaded if m.split(".")[0] in SEARCH_LEAVES or m in SEARCH_LEAVES
                or m.startswith(tuple(f"{leaf}." for leaf in SEARCH_LEAVES))]
