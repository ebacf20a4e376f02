"""The stamp of this tritonlock's own code and data (a leaf module: os alone): what a cached answer — the no-op
sync's, a passing check's — must have been given by."""

from __future__ import annotations

import os


def code_stamp() -> list[object]:
    """This tritonlock's version and the stats of its modules and of its compat/ data: a new release, an edited
    checkout or new compatibility data may judge locks and venvs otherwise, so the first sync after takes the full
    path."""
    from tritonlock import __version__
    from tritonlock._data import compat_dir

    import tritonlock

    stats: list[object] = [__version__]
    for d in (os.path.dirname(os.path.abspath(tritonlock.__file__)), compat_dir()):
        if d is None:
            stats.append(None)
            continue
        found: list[tuple[str, int, int]] = []
        # the whole package, its sub-packages too (sorted paths: the same tree gives the same stamp)
        todo = [""]
        while todo:
            rel = todo.pop()
            try:
                entries = list(os.scandir(os.path.join(d, rel) if rel else d))
            except OSError:
                continue
            for e in entries:
                name = f"{rel}/{e.name}" if rel else e.name
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            todo.append(name)
                    elif e.name.endswith((".py", ".toml")):
                        st = e.stat()
                        found.append((name, st.st_mtime_ns, st.st_size))
                except OSError:
                    continue
        stats += [list(x) for x in sorted(found)]
    return stats
