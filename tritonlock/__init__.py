"""tritonlock: pinned, verified PyTorch + CUDA + Triton environments."""

from __future__ import annotations

__version__ = "0.1.0"

# triton-env.lock's format version (see lockfile.py for the rules); here so the no-change check reads it cheaply.
LOCK_VERSION = "3.2"
