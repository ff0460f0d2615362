"""Start-up figures: what the coze_lab extension adds to ``jupyter server``, and imports.

1. A ``jupyter server`` started until every extension has started (then stopped at once),
   with the coze_lab extension and without it, alternating A/B/A/B; CPU (user + system,
   from the kernel's accounting of each finished process) and wall time per start.
   The studio itself loads on first use: a third kind of start makes one request to it
   (``/coze_lab/api/health``), which opens the database and builds the services and
   handlers; its CPU over a plain start with the extension is the first request's cost.
2. ``import coze_lab.server`` in a fresh interpreter: CPU, and whether the ``openai`` SDK
   was imported (it should not be: it loads on first use only).

    python bench/startup.py [--rounds 3] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROUNDS, Figures, banner

PROBE = """
import sys
from jupyter_server.serverapp import ServerApp
from tornado.httpclient import AsyncHTTPClient
root, data, without, first = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[3] == "2"
argv = ["--port=0", "--ServerApp.open_browser=False", "--ServerApp.token=probe",
        "--allow-root", f"--ServerApp.root_dir={root}", f"--CozeLab.data_dir={data}"]
if without:
    argv.append('--ServerApp.jpserver_extensions={"coze_lab": False}')
app = ServerApp.instance()
app.initialize(argv=argv)
app.start_app()
async def started():
    await app._post_start()  # the extensions' own start hooks, as start_ioloop runs them
    linked = "coze_lab.extension" in sys.modules
    if linked == without or "coze_lab.services" in sys.modules:
        raise SystemExit(f"coze_lab linked: {linked}; its services loaded at start-up")
    if first:  # the studio's first request: it loads (database, services, handlers)
        url = f"{app.connection_url}coze_lab/api/health?token=probe"
        response = await AsyncHTTPClient().fetch(url)
        if response.code != 200 or "coze_lab.services" not in sys.modules:
            raise SystemExit(f"the first request got {response.code}")
    app.stop()
app.io_loop.add_callback(started)
app.io_loop.start()
"""


def run(args: list[str]) -> tuple[float, float]:
    """CPU seconds (the process and its children) and wall seconds of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{args[:3]} exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--runs", type=int, default=3, help="starts of each kind per round")
    options = parser.parse_args()
    banner(
        "start-up of jupyter server with and without the coze_lab extension",
        "the same jupyter server started until its extensions have started, with vs without "
        f"coze_lab, alternating, {options.runs} starts of each per round; import of "
        "coze_lab.server in a fresh interpreter",
    )
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(PROBE)
        root, data = Path(tmp) / "root", Path(tmp) / "data"
        root.mkdir()
        command = [sys.executable, str(probe), str(root), str(data)]
        run([*command, "2"])  # warm-up: creates and migrates the database, fills caches
        run([*command, "1"])
        cpu: dict[str, list[float]] = {"with": [], "without": [], "added": [], "first": []}
        wall: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(options.rounds):
            trios = [
                (run([*command, "0"]), run([*command, "1"]), run([*command, "2"]))
                for _ in range(options.runs)
            ]
            cpu["with"].append(statistics.median(a[0] for a, _, _ in trios))
            cpu["without"].append(statistics.median(b[0] for _, b, _ in trios))
            cpu["added"].append(statistics.median(a[0] - b[0] for a, b, _ in trios))
            cpu["first"].append(statistics.median(c[0] - a[0] for a, _, c in trios))
            wall["with"].append(statistics.median(a[1] for a, _, _ in trios))
            wall["without"].append(statistics.median(b[1] for _, b, _ in trios))
        imports = []
        code = "import sys, coze_lab.server; sys.exit('openai' in sys.modules)"
        for _ in range(options.rounds):
            imports.append(statistics.median(run([sys.executable, "-c", code])[0]
                                             for _ in range(options.runs)))  # fmt: skip
    figures = Figures(options.rounds)
    figures.add("jupyter server start, CPU, with coze_lab", cpu["with"], "s")
    figures.add("jupyter server start, CPU, without coze_lab", cpu["without"], "s")
    figures.add("CPU added by coze_lab, paired (target <= 0.3 s)", cpu["added"], "s")
    figures.add("CPU of the studio's first request (it loads then)", cpu["first"], "s")
    figures.add("jupyter server start, wall, with coze_lab", wall["with"], "s")
    figures.add("jupyter server start, wall, without coze_lab", wall["without"], "s")
    figures.add("import coze_lab.server, CPU (openai not imported)", imports, "s")
    figures.print()


if __name__ == "__main__":
    main()
