"""An engine whose parent (the gpu-train worker) is killed exits instead of training on as an orphan."""

import os
import subprocess
import sys
import time
from pathlib import Path

ENGINE_ROOT = Path(__file__).resolve().parents[1]

# The parent starts a child that arms the watchdog (importing the engine takes seconds), waits for it
# to say so, prints its pid and exits; the child would otherwise sleep for a minute.
PARENT = r"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c",
    "import time; from longhaul_engine.train import exit_with_parent; exit_with_parent(0.1); print('armed', flush=True); time.sleep(60)"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
assert child.stdout.readline().strip() == "armed"
print(child.pid, flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): look at its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_engine_exits_when_its_parent_dies():
    out = subprocess.run([sys.executable, "-c", PARENT], cwd=ENGINE_ROOT, capture_output=True, text=True, timeout=60, check=True)
    pid = int(out.stdout.split()[0])
    deadline = time.time() + 10
    while time.time() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid), "the orphaned engine kept running"


def test_the_watchdog_leaves_a_living_parent_alone():
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from longhaul_engine.train import exit_with_parent; exit_with_parent(0.05); time.sleep(1); print('done')",
        ],
        cwd=ENGINE_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    stdout, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and stdout.strip() == "done"
