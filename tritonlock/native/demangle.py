"""C++ symbol names as a reader knows them ("c10::TensorImpl::release()" for "_ZN3c1010TensorImpl7releaseEv"): the
C++ runtime's own demangler (__cxa_demangle, the Itanium C++ ABI's, in libstdc++ or libc++abi — present wherever
torch runs), called through ctypes; where none is found, the mangled name is given as it is."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()


def _named(*names: str) -> Iterator[str]:
    """The libraries as named, then as ctypes.util.find_library finds them — only once those fail: it runs
    ldconfig and the C compiler (0.1-0.2 s, in a resolve that demangles one name)."""
    yield from names
    for short in ("stdc++", "c++abi"):
        found = ctypes.util.find_library(short)
        if found:
            yield found


def _free() -> Any:
    """libc's free: from the process's own symbols (libc is loaded in every Python), else libc by name, else as
    ctypes.util.find_library finds it."""
    for name in (None, "libc.so.6"):
        try:
            return ctypes.CDLL(name).free
        except (OSError, AttributeError, TypeError):
            continue
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").free
    except (OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=1)
def _runtime() -> tuple[Any, Any] | None:
    """(__cxa_demangle, free), or None where no C++ runtime with a demangler is found."""
    for name in _named("libstdc++.so.6", "libc++abi.so.1", "libc++abi.dylib"):
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free = _free()
        if free is None:
            return None
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        return fn, free
    return None


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """The C++ name a mangled symbol stands for; the symbol itself where it is no mangled name or no demangler is
    here."""
    if not name.startswith("_Z") or len(name) > 4096:
        return name
    rt = _runtime()
    if rt is None:
        return name
    fn, free = rt
    status = ctypes.c_int(0)
    with _LOCK:
        ptr = fn(name.encode("ascii", "replace"), None, None, ctypes.byref(status))
        if not ptr:
            return name
        try:
            out = ctypes.string_at(ptr)
        finally:
            free(ptr)
    return out.decode("utf-8", "replace") if status.value == 0 and out else name


def shown(name: str) -> str:
    """A symbol for a message: its C++ name, with the mangled one beside it (what the loader's error quotes)."""
    plain = demangle(name)
    return plain if plain == name else f"{plain} ({name})"
