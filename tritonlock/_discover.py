"""Find the project a command works on: the nearest directory, from here up, that holds triton-env.toml or
triton-env.lock — as uv finds pyproject.toml and git finds .git. Standard library only: every command runs it."""

from __future__ import annotations

import os

PROJECT_FILES = ("triton-env.toml", "triton-env.lock")


def find_project(start: str = ".") -> str:
    """The project directory for a command run in `start`, as a path relative to it ("." here, ".." one level
    up, …), so that messages stay short; `start` itself when no directory up to the root holds a project file."""
    here = os.path.abspath(start)
    up = 0
    while True:
        if any(os.path.isfile(os.path.join(here, name)) for name in PROJECT_FILES):
            return os.path.normpath(os.path.join(start, *([os.pardir] * up))) if up else start
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here, up = parent, up + 1
