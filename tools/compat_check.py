"""Check compat/ against the live default index: `python tools/compat_check.py [--versions 2.6.0,3.2.0]`.

The same check as `tritonlock compat check`; the code lives in tritonlock/maintain/compat_check.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tritonlock.maintain.compat_check import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
