"""A seekable, read-only file over `read(offset, n)` of a known size: what pyelftools and a decompressor read from,
so that only the ranges they parse are fetched (a wheel's member by HTTP range reads, a span of a temporary file)."""

from __future__ import annotations

import io
from collections.abc import Callable


class RangeFile(io.RawIOBase):
    def __init__(self, read: Callable[[int, int], bytes], size: int) -> None:
        super().__init__()
        self._read, self._size, self._pos = read, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = offset if whence == 0 else self._pos + offset if whence == 1 else self._size + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int | None = -1) -> bytes:
        n = self._size - self._pos if n is None or n < 0 else min(n, max(0, self._size - self._pos))
        data = self._read(self._pos, n) if n > 0 else b""
        self._pos += len(data)
        return data

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buf))
        buf[:len(data)] = data
        return len(data)
