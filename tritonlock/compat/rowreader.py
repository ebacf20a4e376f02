"""The typed reader compat/'s TOML files are read with: each getter checks a value's type and form and records a
problem under the row's key path (the CUDA rows in tritonlock.compat.matrix, the AMD and Intel rows in matrix_vendor)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritonlock import _toml

PLATFORMS = ("linux_x86_64", "linux_aarch64", "win_amd64", "macos_arm64", "macos_x86_64")
FILES = ("meta.toml", "cuda.toml", "torch.toml", "triton.toml", "gpus.toml")


class _Row:
    """One TOML table being read: typed getters that record problems under the row's key path."""

    def __init__(self, data: dict[str, Any], where: str, file: str, problems: list[str]) -> None:
        self.data, self.where, self.file, self.problems = data, where, file, problems
        self.seen: set[str] = set()

    def bad(self, key: str, what: str) -> None:
        self.problems.append(f"{self.file}: {self.where}.{key}: {what} — fix the row")

    def get(self, key: str, check: re.Pattern[str] | Callable[[str], bool] | None, like: str,
            required: bool = True) -> str | None:
        self.seen.add(key)
        if key not in self.data:
            if required:
                self.bad(key, f"missing (expected a string like {like!r})")
            return None
        val = self.data[key]
        ok = isinstance(val, str) and (check is None or (check.match(val) if isinstance(check, re.Pattern) else check(val)))
        if not ok:
            self.bad(key, f"expected a string like {like!r}, got {val!r}")
            return None
        return str(val)

    def integer(self, key: str, like: int) -> int | None:
        self.seen.add(key)
        val = self.data.get(key)
        if not isinstance(val, int) or isinstance(val, bool):
            self.bad(key, f"expected an integer like {like}, got {val!r}")
            return None
        return val

    def boolean(self, key: str) -> bool:
        """An optional true/false (absent: false)."""
        self.seen.add(key)
        val = self.data.get(key, False)
        if not isinstance(val, bool):
            self.bad(key, f"expected true or false, got {val!r}")
            return False
        return val

    def strings(self, key: str, check: re.Pattern[str] | Callable[[str], bool], like: str,
                required: bool = True) -> tuple[str, ...]:
        self.seen.add(key)
        val = self.data.get(key)
        if val is None and not required:
            return ()
        if not isinstance(val, list) or not all(isinstance(x, str) for x in val) or (required and not val):
            self.bad(key, f"expected a list of strings like [{like!r}], got {val!r}")
            return ()
        wrong = [x for x in val if not (check.match(x) if isinstance(check, re.Pattern) else check(x))]
        if wrong:
            self.bad(key, f"expected entries like {like!r}, got {', '.join(map(repr, wrong))}")
        return tuple(x for x in val if x not in wrong)

    def mapping(self, key: str, value: re.Pattern[str], like: str, required: bool = True) -> dict[str, str]:
        self.seen.add(key)
        val = self.data.get(key)
        if val is None and not required:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ linux_x86_64 = {like!r} }}, got {val!r}")
            return {}
        out: dict[str, str] = {}
        for k, v in val.items():
            if k not in PLATFORMS:
                self.bad(f"{key}.{k}", f"unknown platform (known: {', '.join(PLATFORMS)})")
            elif not isinstance(v, str) or not value.match(v):
                self.bad(f"{key}.{k}", f"expected a string like {like!r}, got {v!r}")
            else:
                out[k] = v
        return out

    def keyed(self, key: str, keys: re.Pattern[str], value: re.Pattern[str], like: str) -> dict[str, str]:
        """An optional table of string -> string whose keys are not platforms: { "3.14" = "14.0" }."""
        self.seen.add(key)
        val = self.data.get(key)
        if val is None:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ \"3.14\" = {like!r} }}, got {val!r}")
            return {}
        out: dict[str, str] = {}
        for k, v in val.items():
            if not keys.match(k):
                self.bad(f"{key}.{k}", "expected a Python minor like \"3.14\" as the key")
            elif not isinstance(v, str) or not value.match(v):
                self.bad(f"{key}.{k}", f"expected a string like {like!r}, got {v!r}")
            else:
                out[k] = v
        return out

    def lists(self, key: str, check: re.Pattern[str], like: str) -> dict[str, tuple[str, ...]]:
        """An optional table of platform -> list of strings: { linux_aarch64 = ["3.12"] }."""
        self.seen.add(key)
        val = self.data.get(key)
        if val is None:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ linux_aarch64 = [{like!r}] }}, got {val!r}")
            return {}
        out: dict[str, tuple[str, ...]] = {}
        for k, v in val.items():
            if k not in PLATFORMS:
                self.bad(f"{key}.{k}", f"unknown platform (known: {', '.join(PLATFORMS)})")
            elif not isinstance(v, list) or not v or not all(isinstance(x, str) and check.match(x) for x in v):
                self.bad(f"{key}.{k}", f"expected a list of strings like [{like!r}], got {v!r}")
            else:
                out[k] = tuple(v)
        return out

    def rows(self, key: str, required: bool = True) -> list[_Row]:
        self.seen.add(key)
        val = self.data.get(key, [] if not required else None)
        if not isinstance(val, list) or not all(isinstance(x, dict) for x in val) or (required and not val):
            self.bad(key, f"expected one or more [[{self.where + '.' if self.where != '' else ''}{key}]] tables, got {val!r}")
            return []
        prefix = f"{self.where}." if self.where else ""
        return [_Row(x, f"{prefix}{key}[{i}]", self.file, self.problems) for i, x in enumerate(val)]

    def source(self, inherited: str | None = None) -> str:
        got = self.get("source", None, "https://...", required=inherited is None)
        if got is not None and not got.strip():
            self.bad("source", "empty — every row names a source a reviewer can open")
        return got or inherited or ""

    def done(self) -> None:
        extra = sorted(set(self.data) - self.seen)
        for key in extra:
            self.bad(key, f"unknown key (known here: {', '.join(sorted(self.seen))})")


# The typed row reader and file reader, for the CUDA rows (tritonlock.compat.matrix) and the AMD/Intel rows
# (tritonlock.compat.matrix_vendor) to read compat/ the same way.
RowReader = _Row


def read_compat_file(root: Path, name: str, problems: list[str]) -> _Row:
    return _read(root, name, problems)


def _read(root: Path, name: str, problems: list[str]) -> _Row:
    label = f"{root.name}/{name}"
    try:
        data = _toml.loads((root / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(f"{label}: missing — the compat data set needs {', '.join(FILES)}")
        data = {}
    except (_toml.TOMLDecodeError, UnicodeDecodeError) as exc:
        line, msg = _toml.decode_error_line(exc)
        problems.append(f"{label}:{line or '?'}: not valid TOML ({msg}) — fix the file")
        data = {}
    return _Row(data, "", label, problems)
