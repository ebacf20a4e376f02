"""Where the shipped compat/ data lives: a leaf module, so that `matrix` and `_fast` share it without an import circle."""

from __future__ import annotations

from pathlib import Path


def compat_root() -> Path | None:
    """The shipped compat/ data: tritonlock/_compat_data in a wheel, ../compat in a checkout."""
    here = Path(__file__).parent
    for candidate in (here / "_compat_data", here.parent / "compat"):
        if (candidate / "meta.toml").is_file():
            return candidate
    return None
