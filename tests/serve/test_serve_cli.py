"""``bm25lab serve`` as a user runs it: a process on 127.0.0.1 and a free port (``--port 0``, printed),
serving the API and the page until SIGTERM, then gone; FastAPI and uvicorn imported by this command only;
bad arguments in one line."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bm25lab.cli import app as cli


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture()
def server(served_files, tmp_path):
    """``bm25lab serve`` in a process of its own; stopped by SIGTERM and waited for."""
    command = [sys.executable, "-m", "bm25lab", "serve", f"cran={served_files['index']}", "--port", "0",
               "--runs", str(served_files["run"]), "--qrels", "cranfield"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env={**os.environ, "COLUMNS": "300"})
    try:
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert found, (line, process.stderr.read() if process.poll() is not None else "")
        yield process, found.group(0)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise


def test_the_command_serves_the_api_and_the_page_and_stops_on_sigterm(server, served_files) -> None:
    process, url = server
    status, body = _get(url + "/search?q=boundary+layer&k=3")
    assert status == 200
    expected = json.loads(CliRunner().invoke(cli, ["search", str(served_files["index"]), "boundary layer", "-k", "3",
                                                   "--format", "json"]).stdout)
    assert [(h["doc_id"], h["score"]) for h in json.loads(body)["hits"]] == [(r["doc_id"], r["score"]) for r in expected]
    status, page = _get(url + "/")
    assert status == 200 and b"<title>bm25lab</title>" in page
    assert _get(url + "/evaluation/sources")[1] and _get(url + "/search?q=x&k=0")[0] == 422
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def test_serve_alone_imports_the_web_framework(tmp_path) -> None:
    code = ("import sys\nsys.argv = ['bm25lab', 'serve', '--help']\nfrom bm25lab.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'pydantic', 'starlette') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.splitlines()[-1] == "[]"  # not even for its help
    code = code.replace("'serve', '--help'", "'search', '--help'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.splitlines()[-1] == "[]"


def _one_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bm25lab: error: "), result.stderr
    return lines[0]


def test_bad_arguments_are_one_line(served_files, tmp_path: Path, monkeypatch) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["serve", str(tmp_path / "none"), "--port", "0"])
    assert result.exit_code == 1 and "index" in _one_error(result)
    result = runner.invoke(cli, ["serve", str(served_files["index"]), "--runs", str(tmp_path / "x.run"), "--port", "0"])
    assert result.exit_code == 1 and "no such file" in _one_error(result)
    result = runner.invoke(cli, ["serve", str(served_files["index"]), str(served_files["index"]), "--port", "0"])
    assert result.exit_code == 2 and "named 'cran'" in _one_error(result)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # the serve extra not installed
    result = runner.invoke(cli, ["serve", str(served_files["index"])])
    assert result.exit_code == 1 and "pip install 'bm25lab[serve]'" in _one_error(result)


def test_the_listening_socket_is_tcp_so_that_answers_are_not_held_back() -> None:
    """asyncio turns Nagle's algorithm off only on sockets whose proto is IPPROTO_TCP: on a socket made
    without it, a keep-alive client waited its delayed ACK (40 ms) for every answer (measured: 48 ms a
    request against 1.2 ms)."""
    import socket

    from bm25lab.serve.server import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP and sock.getsockname()[0] == "127.0.0.1" and sock.getsockname()[1] > 0
    finally:
        sock.close()
