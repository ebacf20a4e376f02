# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""tritonlock's verify runner, run as `python -I path/to/runner --json-args '{...}'` by the environment under test.

This folder is shipped as it is (and copied into exported images): Python runs a folder's __main__.py with the
folder first on sys.path, so `tlverify` below is the package beside this file. It imports only torch, triton and
the standard library, never tritonlock. It prints exactly one JSON document on stdout.
"""

# mypy: disable-error-code="import-not-found,import-untyped,unused-ignore"

import sys

from tlverify.harness import main

if __name__ == "__main__":
    sys.exit(main())
