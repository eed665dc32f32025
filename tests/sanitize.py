"""Build the compiled core with AddressSanitizer and UndefinedBehaviorSanitizer and run tests against it.

    python tests/sanitize.py                       # the core's tests and property-based fuzzing (default)
    python tests/sanitize.py -q tests/engine       # any pytest arguments
    python tests/sanitize.py --werror-only         # only compile every C file with -Wall -Wextra -Werror

What it does: compiles engine/core/*.c into a temporary ``_core`` module with ``-fsanitize=address,undefined
-fno-sanitize-recover=all`` (a report aborts the process), then runs pytest in a child process that has
AddressSanitizer's runtime preloaded (Python itself is not instrumented, but allocates with malloc,
``PYTHONMALLOC=malloc``, so that every array a test hands the core has red zones) and that imports the sanitized
module in place of the installed one before any test runs (the tests call the core through
:func:`bm25lab.engine.core.kernels` as always). Leak detection is off: CPython keeps memory to the end
on purpose. tests/test_sanitizers.py runs a bounded part of this in the suite.

It needs gcc (or $CC) and the Python headers, as ``pip install`` of the core does.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "engine" / "core"
MODULE = "bm25lab.engine.core._core"
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
COMMON = ["-std=c11", "-pthread", "-ffp-contract=off", "-fPIC"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]
DEFAULT_TESTS = ["tests/engine/test_core_fuzz.py", "tests/engine/test_backends.py", "tests/engine/test_build_paths.py",
                 "tests/engine/test_cut_core.py", "tests/engine/test_strings.py",
                 "tests/evaluation/test_compiled_reader.py", "tests/evaluation/test_compiled_qrels.py"]
# The child's first act: the sanitized module in place of the installed one (argv[1]), then pytest.
CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location({module!r}, sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules[{module!r}] = module
import bm25lab.engine.core as core
assert core.kernels() is module, "the sanitized core is not the one the tests use"
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


def compiler() -> str:
    return os.environ.get("CC") or shutil.which("gcc") or "cc"


def sources() -> list[Path]:
    return sorted(CORE.glob("*.c"))


def compile_warning_free() -> None:
    """Compile every C file of the core with -Wall -Wextra -Werror (and -O3, where more is analysed)."""
    include = sysconfig.get_paths()["include"]
    for source in sources():
        subprocess.run([compiler(), *COMMON, *WARNINGS, "-O3", f"-I{include}", "-c", str(source), "-o", os.devnull],
                       check=True)


def build_sanitized(folder: Path) -> Path:
    """The core built with the sanitizers into ``folder``: the module's path."""
    include = sysconfig.get_paths()["include"]
    target = folder / f"_core{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([compiler(), *COMMON, *WARNINGS, *SANITIZE, f"-I{include}", "-shared", *map(str, sources()),
                    "-o", str(target)], check=True)
    return target


def runtime(name: str) -> str:
    """The path of a sanitizer runtime library of the compiler (such as libasan.so)."""
    found = subprocess.run([compiler(), f"-print-file-name={name}"], capture_output=True, text=True, check=True)
    return found.stdout.strip()


def run(pytest_args: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """pytest with the sanitized core: its exit status, output and errors."""
    with tempfile.TemporaryDirectory(prefix="bm25lab-sanitize-") as folder:
        module = build_sanitized(Path(folder))
        env = {**os.environ, "LD_PRELOAD": runtime("libasan.so"), "PYTHONMALLOC": "malloc",
               "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        # --capture=sys: pytest leaves file descriptor 2 alone, so a sanitizer's report reaches stderr
        return subprocess.run([sys.executable, "-c", CHILD.format(module=MODULE), str(module), "--capture=sys",
                               *pytest_args],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def main(argv: list[str]) -> int:
    compile_warning_free()
    if argv[:1] == ["--werror-only"]:
        return 0
    done = run(argv or ["-q", "-p", "no:cacheprovider", *[t for t in DEFAULT_TESTS if (ROOT / t).exists()]])
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
