"""The compiled core is C you can trust: every file compiles with -Wall -Wextra -Werror, and the property-based
fuzz tests and hostile-input tests of every entry point (search, building, jieba's cut, the run reader) pass
under AddressSanitizer and UndefinedBehaviorSanitizer (a bounded part of ``python tests/sanitize.py``, which
runs more)."""
from __future__ import annotations

import os
import shutil

import pytest

import sanitize

BOUNDED = ["tests/engine/test_core_fuzz.py",
           "tests/engine/test_build_paths.py::test_the_cores_building_entry_points_refuse_hostile_arrays",
           "tests/engine/test_build_paths.py::test_group_by_term_of_the_core_equals_numpys",
           "tests/engine/test_backends.py::test_the_core_selects_the_top_k_of_any_spread_of_scores",
           "tests/engine/test_backends.py::test_the_core_refuses_arrays_it_cannot_read",
           "tests/engine/test_cut_core.py::test_build_trie_on_random_keys_and_bytes_never_crashes",
           "tests/engine/test_cut_core.py::test_random_bytes_as_text_or_as_a_dictionary_array_never_crash",
           "tests/engine/test_cut_core.py::test_hostile_tables_and_stopwords_never_crash",
           "tests/evaluation/test_compiled_reader.py::test_random_bytes_and_bounds_into_the_reader_never_crash",
           "tests/evaluation/test_compiled_reader.py::test_random_arrays_into_order_run_never_crash",
           "tests/evaluation/test_compiled_reader.py::test_random_bytes_into_the_pieces_never_crash",
           "tests/evaluation/test_compiled_reader.py::test_random_bytes_are_read_or_refused_as_the_usual_readers_do",
           "tests/engine/test_strings.py",
           "tests/evaluation/test_compiled_qrels.py::test_hostile_arguments_are_python_errors",
           "tests/evaluation/test_compiled_qrels.py::test_random_bytes_and_bounds_into_the_reader_never_crash"]


def _needs_a_compiler() -> None:
    if shutil.which(sanitize.compiler()) is None and os.environ.get("CI") != "true":
        pytest.skip("no C compiler on this machine (CI has one: there this test runs)")


def test_every_c_file_compiles_without_a_warning() -> None:
    _needs_a_compiler()
    sanitize.compile_warning_free()


def test_the_cores_fuzz_tests_pass_under_asan_and_ubsan() -> None:
    _needs_a_compiler()
    done = sanitize.run(["-q", "-x", "-p", "no:cacheprovider", *BOUNDED], timeout=1200)
    report = done.stdout[-4000:] + done.stderr[-4000:]
    assert done.returncode == 0, report
    assert "AddressSanitizer" not in done.stderr and "runtime error" not in done.stderr, report
    assert " passed" in done.stdout, report
