# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""tritonlock's verify runner, run as `python -I path/to/runner --json-args '{...}'` by the environment under test.

This folder is shipped as it is (and copied into exported images): Python runs a folder's __main__.py with the
folder first on sys.path, so `tlverify` below is the package beside this file. It imports only torch, triton and
the standard library, never tritonlock. It prints exactly one JSON document on stdout.
"""

# mypy: disable-error-code="import-not-found,import-untyped,unused-ignore"

import os
import sys

from tlverify.harness import PIPES, main

if __name__ == "__main__":
    code = main()
    # The report is written and every child process waited for: skip the interpreter's teardown of torch and the
    # CUDA context (half a second on a GPU host); the operating system frees what is left. The pipes tritonlock
    # reads to their end (stdout, stderr, the progress pipe) are closed first: an exiting process's memory (CUDA's
    # mappings) is freed before its files are closed, and tritonlock need not wait for that.
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in (1, 2, *PIPES):
        try:
            os.close(fd)
        except OSError:
            pass
    os._exit(code)
