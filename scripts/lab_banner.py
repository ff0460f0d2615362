"""Print where to open JupyterLab and how to stop it, once it answers (used by ``make lab``).

``make lab`` runs this in the background next to ``jupyter lab``: it waits until the server
answers at the URL, then prints a short banner below Jupyter's own start-up log.

Example:
    python scripts/lab_banner.py http://127.0.0.1:8888/lab?token=abc --demo-model
"""

from __future__ import annotations

import argparse
import time
import urllib.error
import urllib.request


def wait_until_up(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answered
        except OSError:
            time.sleep(0.5)
    return False


def banner(url: str, demo_model: bool) -> str:
    lines = [
        "Coze Lab is running. Open:",
        f"    {url}",
        "Start with 00_welcome.ipynb (or the Coze Lab tile in the Launcher).",
    ]
    if demo_model:
        lines.append("Model: the offline demo model ([demo model] replies).")
        lines.append("For a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL) first.")
    lines.append("Stop: press Ctrl-C twice in this terminal.")
    width = max(len(line) for line in lines)
    rule = "=" * width
    return "\n".join(["", rule, *lines, rule, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--demo-model", action="store_true")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    if wait_until_up(args.url, args.timeout):
        time.sleep(1)  # after Jupyter's own "To access the server..." lines
        print(banner(args.url, args.demo_model), flush=True)


if __name__ == "__main__":
    main()
