"""MkDocs hook: the references that must not go stale are written from the code at every build.

A page holding ``<!-- bm25lab:commands -->`` gets every command of the typer app (usage, help, arguments
and options with their defaults and choices); ``<!-- bm25lab:measures -->`` gets the measure registry
(``bm25lab.evaluation.measures.MEASURES``: names, aliases, trec_eval names, range, definition and the
formula from each measure function's docstring). Nothing generated is committed.
"""
from __future__ import annotations

import inspect
import re
from typing import Any

from mkdocs.plugins import event_priority

COMMANDS_MARK = "<!-- bm25lab:commands -->"
MEASURES_MARK = "<!-- bm25lab:measures -->"


@event_priority(100)  # before mkdocstrings reads its handlers' configuration
def on_config(config: Any) -> Any:
    """Let mkdocstrings read the sources as installed: ``bm25lab.engine`` is the top-level folder ``engine/``
    (pyproject.toml's package-dir), so a temporary folder lays out a ``bm25lab`` package of copies of the
    Python files (links would not do: griffe follows them back to the checkout's layout)."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    root = Path(config["config_file_path"]).resolve().parent
    laid = Path(tempfile.mkdtemp(prefix="bm25lab-docs-"))
    atexit.register(shutil.rmtree, laid, True)
    package = laid / "bm25lab"
    package.mkdir()
    for source, target in ((root / "bm25lab", package), *((root / f, package / f) for f in ("engine", "evaluation",
                                                                                             "corpora"))):
        for path in source.rglob("*.py"):
            copy = target / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    handler = config["plugins"]["mkdocstrings"].config["handlers"].setdefault("python", {})
    handler["paths"] = [str(laid)]
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if COMMANDS_MARK in markdown:
        markdown = markdown.replace(COMMANDS_MARK, commands_reference())
    if MEASURES_MARK in markdown:
        markdown = markdown.replace(MEASURES_MARK, measures_reference())
    return markdown


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _click() -> Any:
    """The click typer builds its commands with (typer 0.28 carries its own copy)."""
    try:
        from typer import _click as click  # type: ignore[attr-defined]
    except ImportError:
        import click
    return click


def commands_reference() -> str:
    """Every command of ``bm25lab``, in the order the help lists them, from the click commands typer builds."""
    import typer

    click = _click()

    from bm25lab.cli import COMMANDS, build_app

    group = typer.main.get_command(build_app())
    context = click.Context(group, info_name="bm25lab")
    out = [_global_options(group, context)]
    for name in COMMANDS:
        command = group.get_command(context, name)  # type: ignore[attr-defined]
        out.append(_command(name, command, click.Context(command, info_name=name, parent=context)))
    return "\n".join(out)


def _global_options(group: Any, context: Any) -> str:
    rows = [f"| {_code(', '.join(p.opts))} | {_cell(p.help or '')} |" for p in group.params]
    return "\n".join(["## bm25lab", "", "```text", group.get_usage(context), "```", "",
                      "| option | meaning |", "|---|---|", *rows, ""])


def _command(name: str, command: Any, context: Any) -> str:
    help_text = inspect.cleandoc(command.help or "")
    summary, _, rest = help_text.partition("\n\n")
    lines = [f"## {name}", "", _cell(summary), "", "```text", command.get_usage(context), "```", ""]
    if rest.strip():
        lines += [line.replace("Example: ", "Example: `", 1) + "`" if line.startswith("Example: ") else line
                  for line in rest.strip().splitlines()] + [""]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    if arguments:
        lines += ["| argument | meaning |", "|---|---|"]
        lines += [f"| {_code(p.human_readable_name)} | {_cell(getattr(p, 'help', '') or '')} |" for p in arguments]
        lines.append("")
    options = [p for p in command.params if p.param_type_name == "option" and p.name != "help"]
    if options:
        lines += ["| option | meaning | default |", "|---|---|---|"]
        for p in options:
            names = ", ".join(p.opts + p.secondary_opts)
            meaning = _cell(p.help or "")
            if getattr(p.type, "choices", None):
                meaning += f" One of: {', '.join(f'`{c}`' for c in p.type.choices)}."
            lines.append(f"| {_code(names)} | {meaning} | {_default(p)} |")
        lines.append("")
    return "\n".join(lines)


def _default(option: Any) -> str:
    value = option.default
    if value is None or option.is_flag and value is False or value == () or value == []:
        return ""
    if hasattr(value, "value"):
        value = value.value
    return _code(str(value))


def measures_reference() -> str:
    """The registry as a table, and each measure's formula as its function's docstring states it."""
    from bm25lab.evaluation.measures import DEFAULT_MEASURES, MEASURES, TREC_NICKNAMES, TREC_RENAMED

    def trec_eval_names(pattern: str | None, symbol: str) -> str:
        text = (pattern or "").strip("|").replace("|", ", ")
        for mark in ("{k}", "{r}", "{text}"):
            text = text.replace(mark, "k" if mark == "{k}" else symbol)
        return ", ".join(_code(n.strip()) for n in text.split(",") if n.strip())

    rows = ["| measure | also written | trec_eval | range | definition |", "|---|---|---|---|---|"]
    formulas = []
    for d in MEASURES.values():
        kind = "text" if d.text else "0..1" if d.bounded else "count" if d.total or d.count else "number"
        forms = ", ".join(_code(f.strip()) for f in d.forms().split(", "))
        also = ", ".join(_code(a) for a in d.aliases)
        rows.append(f"| {forms} | {also} | {trec_eval_names(d.trec_eval, d.symbol)} | {kind} | "
                    f"{_cell(d.description)} |")
        first = re.split(r"\n\s*\n", inspect.getdoc(d.compute) or "")[0]
        formulas.append(f"- **{d.name}**: {_cell(first)}")
    renamed = "; ".join(f"trec_eval's `{theirs}` is `{ours}`" for theirs, ours in TREC_RENAMED.items())
    nicknames = "; ".join(f"`{n}`: {', '.join(members)}" for n, members in TREC_NICKNAMES.items())
    return "\n".join([
        f"{len(MEASURES)} measure families; `bm25lab evaluate` reports {', '.join(map(_code, DEFAULT_MEASURES))} "
        f"when no `-m` is given.", "", *rows, "",
        f"trec_eval's nicknames ({renamed}, printed `{next(iter(TREC_RENAMED))}` in the trec layout): {nicknames}.", "",
        "### Formulas", "", "Each measure is one function over the judged ranking; its docstring states it:", "",
        *formulas, ""])
