"""A wheel on an index, read without downloading it: HTTP Range reads of the zip central directory and single
members."""

from __future__ import annotations

import re
from collections.abc import Iterator
import struct
import zlib


class RemoteZip:
    """A wheel on an index, read without downloading it: the central directory, then only the members asked for."""

    def __init__(self, session: object, url: str, size: int | None) -> None:
        self.session, self.url = session, url
        self.size = size if size is not None else self._length()
        self.bytes_read = 0
        self._members: dict[str, tuple[int, int, int, int]] | None = None  # name -> (method, csize, usize, offset)

    def _length(self) -> int:
        resp = self.session.head(self.url, allow_redirects=True, timeout=60)  # type: ignore[attr-defined]
        return int(resp.headers["Content-Length"])

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of the file."""
        return self._get(start, end)

    def stream(self, start: int, end: int, *, chunk: int = 1 << 20) -> Iterator[bytes]:
        """Bytes start..end (inclusive) in pieces as they arrive, in one request (many members at once cost one
        round trip, not several each)."""
        from tritonlock.errors import IndexError_

        resp = self.session.get(self.url, headers={"Range": f"bytes={start}-{end}"},  # type: ignore[attr-defined]
                                timeout=120, stream=True)
        with resp:
            if resp.status_code != 206:
                raise IndexError_(f"cannot read bytes {start}-{end} of {self.url} (HTTP {resp.status_code}) — the "
                                  "index must answer HTTP Range requests")
            got = 0
            for piece in resp.iter_content(chunk):
                got += len(piece)
                if got > end - start + 1:
                    raise IndexError_(f"{self.url}: the index answered more bytes than the range asked for")
                self.bytes_read += len(piece)
                yield piece
            if got != end - start + 1:
                raise IndexError_(f"{self.url}: the answer was cut off ({got} of {end - start + 1} bytes)")

    def download(self, *, chunk: int = 1 << 20) -> Iterator[bytes]:
        """The whole file in pieces as they arrive, in one plain GET (as an installer downloads it)."""
        from tritonlock.errors import IndexError_

        with self.session.get(self.url, timeout=120, stream=True) as resp:  # type: ignore[attr-defined]
            if resp.status_code != 200:
                raise IndexError_(f"cannot download {self.url} (HTTP {resp.status_code})")
            got = 0
            for piece in resp.iter_content(chunk):
                got += len(piece)
                if got > self.size:
                    raise IndexError_(f"{self.url}: the index answered more bytes than the file has")
                self.bytes_read += len(piece)
                yield piece
            if got != self.size:
                raise IndexError_(f"{self.url}: the answer was cut off ({got} of {self.size} bytes)")

    def _get(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive)."""
        from tritonlock.errors import IndexError_

        last = ""
        for _ in range(3):
            try:
                resp = self.session.get(self.url, headers={"Range": f"bytes={start}-{end}"},  # type: ignore[attr-defined]
                                        timeout=120)
            except OSError as err:  # requests' errors derive from IOError
                last = str(err)
                continue
            if resp.status_code == 206:
                self.bytes_read += len(resp.content)
                return bytes(resp.content)
            last = f"HTTP {resp.status_code}"
        raise IndexError_(f"cannot read bytes {start}-{end} of {self.url} ({last}) — the index must answer HTTP "
                          "Range requests for the inside-the-wheel checks (--wheels none skips them)")

    def members(self) -> dict[str, tuple[int, int, int, int]]:
        if self._members is not None:
            return self._members
        # One read of the file's end for the end record and, mostly, the whole central directory with it (0.4%
        # of a large wheel): a second read only for what that did not reach
        tail_at = max(0, self.size - max(22 + 0xFFFF, min(self.size // 256, 1 << 20)))  # (the longest comment)
        tail = self._get(tail_at, self.size - 1)
        end = tail.rfind(b"PK\x05\x06")
        if end < 0:
            raise ValueError(f"{self.url}: no zip end-of-central-directory record")
        cd_size, cd_off = struct.unpack("<II", tail[end + 12:end + 20])
        if cd_off == 0xFFFFFFFF:  # zip64: the real values are in the zip64 end record
            z64 = tail.rfind(b"PK\x06\x06")
            cd_size, cd_off = struct.unpack("<QQ", tail[z64 + 40:z64 + 56])
        if cd_off >= tail_at:
            cd = tail[cd_off - tail_at:cd_off - tail_at + cd_size]
        else:
            cd = (self._get(cd_off, tail_at - 1) + tail)[:cd_size]
        out: dict[str, tuple[int, int, int, int]] = {}
        pos = 0
        while cd[pos:pos + 4] == b"PK\x01\x02":
            method, = struct.unpack("<H", cd[pos + 10:pos + 12])
            csize, usize = struct.unpack("<II", cd[pos + 20:pos + 28])
            nlen, elen, clen = struct.unpack("<HHH", cd[pos + 28:pos + 34])
            offset, = struct.unpack("<I", cd[pos + 42:pos + 46])
            name = cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
            extra, q = cd[pos + 46 + nlen:pos + 46 + nlen + elen], 0
            while q + 4 <= len(extra):  # zip64 extended information: the 0xFFFFFFFF fields, in this order
                hid, hlen = struct.unpack("<HH", extra[q:q + 4])
                if hid == 1:
                    vals, k = extra[q + 4:q + 4 + hlen], 0
                    if usize == 0xFFFFFFFF:
                        usize, = struct.unpack("<Q", vals[k:k + 8])
                        k += 8
                    if csize == 0xFFFFFFFF:
                        csize, = struct.unpack("<Q", vals[k:k + 8])
                        k += 8
                    if offset == 0xFFFFFFFF:
                        offset, = struct.unpack("<Q", vals[k:k + 8])
                q += 4 + hlen
            out[name] = (method, csize, usize, offset)
            pos += 46 + nlen + elen + clen
        self._members = out
        return out

    def get(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of the wheel file itself."""
        return self._get(start, end)

    def span(self, name: str) -> tuple[int, int, int, int]:
        """(compression method, where the member's data starts in the wheel, its compressed and its real size)."""
        method, csize, usize, offset = self.members()[name]
        head = self._get(offset, offset + 29)
        nlen, elen = struct.unpack("<HH", head[26:30])
        return method, offset + 30 + nlen + elen, csize, usize

    def read(self, name: str, until: re.Pattern[bytes] | None = None, chunk: int = 1 << 20) -> bytes:
        """A member's bytes; with `until`, stream it and stop at the first match (returning that match only)."""
        method, csize, _, offset = self.members()[name]
        head = self._get(offset, offset + 29)
        nlen, elen = struct.unpack("<HH", head[26:30])
        pos, end = offset + 30 + nlen + elen, offset + 30 + nlen + elen + csize
        inflate = zlib.decompressobj(-15) if method == 8 else None
        data = b""
        while pos < end:
            raw = self._get(pos, min(end, pos + chunk) - 1)
            pos += len(raw)
            data += inflate.decompress(raw) if inflate else raw
            if until is not None:
                m = until.search(data)
                if m:
                    return m.group(0)
                data = data[-256:]  # a match may straddle two chunks
        return b"" if until is not None else data




def wheel_metadata(index: object, file: object, deep: bool) -> str | None:
    """A wheel's METADATA: the PEP 658 file beside it on the index, else (deep) the member read from inside the wheel
    with Range requests. `index` is an IndexClient and `file` one of its IndexFiles."""
    meta: str | None = index.metadata(file)  # type: ignore[attr-defined]
    if meta is None and deep:
        z = RemoteZip(index.session, file.url, file.size)  # type: ignore[attr-defined]
        name = next((n for n in z.members() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        meta = z.read(name).decode("utf-8", "replace") if name else None
    return meta
