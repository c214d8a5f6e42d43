"""traces/forked.py: whether a child forked now may call SQLite (`alone`)."""

import subprocess
import sys
from pathlib import Path

# Run in a process of its own: this one has pytest-xdist's thread beside it.
PROBE = """
import _thread, threading, time
from traces import forked
print(forked.alone())
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
print(forked.alone())
stop.set()
other.join()
for _ in range(200):  # the OS thread ends a moment after join returns
    if forked.alone():
        break
    time.sleep(0.01)
print(forked.alone())
ran = threading.Event()
_thread.start_new_thread(lambda: (ran.set(), stop.clear(), stop.wait()), ())
ran.wait()
print(forked.alone())
stop.set()
"""


def test_a_process_is_alone_only_while_no_other_thread_runs():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=Path(__file__).resolve().parent.parent,
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.split()  # fmt: skip
    # Alone; a threading.Thread; alone again once it ends; a thread threading never saw.
    assert out == ["True", "False", "True", "False"]
