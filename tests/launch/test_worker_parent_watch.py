"""An isolated worker polls for its parent's death only where the kernel cannot kill it with
the parent (launch/worker.py): a polling thread would wake inside the measured windows."""

import subprocess
import sys

CHILD = ("import threading\n"
         "from llmbench.launch.worker import _die_with_parent\n"
         "_die_with_parent()\n"
         "print(threading.active_count())\n")


def test_linux_worker_has_no_polling_thread():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"  # prctl(PR_SET_PDEATHSIG) armed: the main thread alone
