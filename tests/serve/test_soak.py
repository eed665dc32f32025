"""Soak: a server on 127.0.0.1 (uvicorn in a thread, a free port) answers clients searching while another
process commits to the index it serves (adds, deletes and merges, which remove the files of earlier
states): not one request fails, and the server shows each new state without a restart.

Bounded by counts, not by the machine's speed: the writer makes COMMITS commits, and the clients search
until it is done and they have made MIN_REQUESTS requests and searched at least MIN_SECONDS (at most
MAX_SECONDS in all, past which the test fails)."""
from __future__ import annotations

import http.client
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

COMMITS = 12
MIN_REQUESTS = 300
MIN_SECONDS = 2.0
MAX_SECONDS = 240.0
CLIENTS = 4

WRITER = """
import sys, time
from bm25lab.engine import Index
path, commits = sys.argv[1], int(sys.argv[2])
for i in range(commits):
    index = Index.load(path, verify=False)
    index.add([{"id": f"new-{i}", "text": f"soakterm{i} boundary layer flow", "batch": i}], workers=1)
    if i % 3 == 1:
        index.delete([f"d{i}"])
    if i % 4 == 3:
        index.optimize()  # one segment: the files of the states before go
    print(i, flush=True)
    time.sleep(0.05)
"""


def _documents(n: int) -> list[dict]:
    rng = random.Random(5)
    words = ["boundary", "layer", "flow", "wing", "shock", "heat", "jet", "plate", "noise", "wave"]
    return [{"id": f"d{i}", "text": " ".join(rng.choices(words, k=rng.randint(3, 30))), "year": 1950 + i % 30}
            for i in range(n)]


class Client(threading.Thread):
    """Searches until told to stop; keeps every failure (a status other than 200, or no answer)."""

    def __init__(self, url: str, seed: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.address = urlsplit(url)
        self.rng = random.Random(seed)
        self.stop = stop
        self.requests = 0
        self.failures: list[str] = []

    def request(self, connection: http.client.HTTPConnection) -> tuple[int, bytes]:
        kind = self.rng.random()
        if kind < 0.6:
            query = self.rng.choice(["boundary layer", "wing flow", f"soakterm{self.rng.randrange(COMMITS)}", "jet"])
            params = {"q": query, "k": self.rng.choice([5, 10, 100])}
            if self.rng.random() < 0.3:
                params["where"] = "year>=1960"
            connection.request("GET", "/search?" + urlencode(params))
        elif kind < 0.85:
            body = json.dumps({"queries": ["boundary layer", "heat flow", "soakterm3"], "k": 20})
            connection.request("POST", "/search", body=body, headers={"content-type": "application/json"})
        else:
            connection.request("GET", "/info")
        response = connection.getresponse()
        return response.status, response.read()

    def run(self) -> None:
        connection = http.client.HTTPConnection(self.address.hostname, self.address.port, timeout=60)
        try:
            while not self.stop.is_set():
                try:
                    status, body = self.request(connection)
                except (OSError, http.client.HTTPException) as exc:
                    self.failures.append(f"no answer: {exc!r}")
                    connection.close()
                    connection = http.client.HTTPConnection(self.address.hostname, self.address.port, timeout=60)
                    continue
                self.requests += 1
                if status != 200:
                    self.failures.append(f"{status}: {body[:200]!r}")
        finally:
            connection.close()


def test_clients_search_while_another_process_commits_and_no_request_fails(tmp_path: Path) -> None:
    from bm25lab.engine import Index, Tokenizer
    from bm25lab.serve import ServeConfig, create_app, running

    directory = tmp_path / "idx"
    Index.build(_documents(400), tokenizer=Tokenizer("en"), workers=1).save(directory)
    app = create_app(ServeConfig(indexes=(("soak", directory),)))
    with running(app) as url:
        stop = threading.Event()
        clients = [Client(url, seed, stop) for seed in range(CLIENTS)]
        for client in clients:
            client.start()
        started = time.monotonic()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(directory), str(COMMITS)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            while True:
                elapsed = time.monotonic() - started
                done = writer.poll() is not None
                if done and elapsed >= MIN_SECONDS and sum(c.requests for c in clients) >= MIN_REQUESTS:
                    break
                assert elapsed < MAX_SECONDS, "the soak did not reach its counts in time"
                time.sleep(0.05)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=60)
            if writer.poll() is None:
                writer.kill()
            out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert out.split() == [str(i) for i in range(COMMITS)]
        failures = [f for client in clients for f in client.failures]
        assert failures == [], failures[:5]
        # the final state, served without a restart
        expected = Index.load(directory)
        connection = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port, timeout=60)
        connection.request("GET", "/search?" + urlencode({"q": f"soakterm{COMMITS - 1}"}))
        hits = json.loads(connection.getresponse().read())["hits"]
        connection.request("GET", "/info")
        info = json.loads(connection.getresponse().read())
        connection.close()
        assert [h["doc_id"] for h in hits] == [f"new-{COMMITS - 1}"]
        assert info["documents"] == expected.num_docs == 400 + COMMITS - len(range(1, COMMITS, 3))
        assert app.state.catalogue.index("soak").reloads >= 1
