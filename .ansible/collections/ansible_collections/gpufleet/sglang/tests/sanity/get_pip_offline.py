"""Stand-in for ansible-test's get-pip bootstrap script, whose host is not reachable here.

ansible-test runs it with pip's own install arguments (e.g. ``pip==24.2 --no-setuptools``);
we bootstrap pip from the stdlib's ensurepip and let that pip install them from PyPI.
"""

import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
