"""Stand-in for pip's get-pip.py, which ansible-test downloads from a host our build machines
cannot reach (scripts/collection sanity puts this where ansible-test looks for its cached copy).

ansible-test runs it with a new venv's Python and get-pip's arguments (pip==VERSION, and
--no-setuptools / --no-wheel, which only say what not to add). It seeds pip with the
interpreter's own ensurepip in a child process (ensurepip sets PIP_CONFIG_FILE=/dev/null in its
own process, which would hide the machine's pip configuration, index and certificate, from every
pip run after it), then installs what was asked for with that pip.
"""

import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
wanted = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *wanted]))
