"""Where the shipped compat/ data lives: a leaf module, so that `matrix` and `_fast` share it without an import circle."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (pathlib and typing are imported only when a Path is asked for: the no-op sync reads this)
if TYPE_CHECKING:
    from pathlib import Path


def compat_dir() -> str | None:
    """compat_root() as a string path, found with os.path alone."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "_compat_data"), os.path.join(os.path.dirname(here), "compat")):
        if os.path.isfile(os.path.join(candidate, "meta.toml")):
            return candidate
    return None


def compat_root() -> Path | None:
    """The shipped compat/ data: tritonlock/_compat_data in a wheel, ../compat in a checkout."""
    from pathlib import Path

    found = compat_dir()
    return Path(found) if found is not None else None
