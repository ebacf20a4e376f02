"""Golomb-coded sets (Golomb-Rice coding of sorted hash differences): how compat/torch-symbols/ ships each torch
build's exported C++ symbols, a few bits per name (tritonlock.native.torchsyms)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["gcs_decode", "gcs_encode", "symbol_hash"]


def symbol_hash(name: bytes) -> int:
    """A symbol name's 64-bit hash (BLAKE2b): what the sets hold instead of the names."""
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big")


def gcs_encode(hashes: Iterable[int], bits: int) -> tuple[bytes, int, int]:
    """(the set, its count of values, the modulus): the N distinct names' hashes reduced modulo N * 2**bits, sorted,
    and their differences coded as a unary quotient and `bits` remainder bits (Golomb-Rice). An absent name matches
    with probability about 1 / 2**bits."""
    hs = set(hashes)
    n = len(hs)
    modulus = n << bits
    values = sorted({h % modulus for h in hs})  # (two names may reduce to one value: it is counted once)
    out: list[str] = []
    last = 0
    mask = (1 << bits) - 1
    for v in values:
        d = v - last
        last = v
        out.append("1" * (d >> bits) + "0" + format(d & mask, f"0{bits}b"))
    text = "".join(out)
    text += "1" * (-len(text) % 8)  # (padding: ones, which no value reads)
    return int(text, 2).to_bytes(len(text) // 8, "big") if text else b"", len(values), modulus


def gcs_decode(data: bytes, n: int, bits: int) -> frozenset[int]:
    """The values of a Golomb-coded set of `n` values (gcs_encode)."""
    text = format(int.from_bytes(data, "big"), f"0{len(data) * 8}b") if data else ""
    out: list[int] = []
    pos, last = 0, 0
    for _ in range(n):
        zero = text.find("0", pos)
        if zero < 0 or zero + 1 + bits > len(text):
            raise ValueError("the set ends early")
        last += ((zero - pos) << bits) | int(text[zero + 1:zero + 1 + bits], 2)
        out.append(last)
        pos = zero + 1 + bits
    return frozenset(out)
