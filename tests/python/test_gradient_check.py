"""samples/python/gradient_check.py runs and passes every check."""

import os
import subprocess
import sys

import blockflow
from conftest import SOURCE_DIR


def test_gradient_check_sample_passes():
    script = SOURCE_DIR / "samples" / "python" / "gradient_check.py"
    # The module this test imported, wherever it came from.
    package_parent = os.path.dirname(os.path.dirname(blockflow.__file__))
    env = dict(os.environ, PYTHONPATH=package_parent)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith(", 0 failed") and "FAIL" not in done.stdout
    assert sum(line.endswith(" pass") for line in lines) >= 20
