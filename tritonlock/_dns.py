"""Name lookups for tritonlock's own HTTP (index pages, METADATA, wheel reads): each host looked up once a process
and the answer reused, and a lookup that has not answered after HEDGE_S asked again beside it, the first answer
taken.

Why: a resolve opens dozens of connections at once, and the C library asks the name server for each. A resolver that
drops one query in many (a busy cache, the conntrack race of parallel A/AAAA queries that Kubernetes pods are known
for) answers that one only after its retry timeout, 5 s by default — which a resolve then waits for, even at exit.
Asked again, the same name answers at once. Installed by tritonlock.lock.tls.session, for tritonlock's process only
(uv and pip, run as subprocesses, look names up themselves)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

HEDGE_S = 0.4  # a lookup not answered by then is asked again (a healthy resolver answers in milliseconds)
ASKS = 3  # lookups of one name at once, at most
KEEP_S = 300.0  # an answer is reused this long (a process of tritonlock seldom lives longer)

_real: Any = None
_lock = threading.Lock()
_kept: dict[tuple[Any, ...], tuple[float, list[Any]]] = {}
_asking: dict[tuple[Any, ...], threading.Event] = {}


def install() -> None:
    """socket.getaddrinfo replaced by `getaddrinfo` (once; the original is what it asks)."""
    global _real
    with _lock:
        if _real is None:
            _real = socket.getaddrinfo
            socket.getaddrinfo = getaddrinfo


def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> list[Any]:
    """As socket.getaddrinfo; a name's answer is kept (KEEP_S) and shared by the threads asking for it at once;
    numeric addresses and empty hosts go straight to the original. A failed lookup is not kept."""
    real = _real or socket.getaddrinfo
    if not host or _numeric(host):
        return list(real(host, port, family, type, proto, flags))
    key = (host, port, family, type, proto, flags)
    with _lock:
        hit = _kept.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return list(hit[1])
        asking = _asking.get(key)
        mine = asking is None
        if asking is None:
            asking = _asking[key] = threading.Event()
    if not mine:
        asking.wait()  # another thread's lookup of the same name: its answer (or, if it failed, one's own)
        with _lock:
            hit = _kept.get(key)
        return list(hit[1] if hit is not None else _hedged(real, key))
    try:
        answer = _hedged(real, key)
        with _lock:
            _kept[key] = (time.monotonic() + KEEP_S, answer)
        return list(answer)
    finally:
        with _lock:
            _asking.pop(key, None)
        asking.set()


def _hedged(real: Any, key: tuple[Any, ...]) -> list[Any]:
    """The lookup, asked again each HEDGE_S it goes unanswered, and at once after a failure that may pass (3 asked
    at most): the first answer; the error where the name does not exist, or where all three failed."""
    cond = threading.Condition()
    results: list[tuple[bool, Any]] = []
    started, last = 0, 0.0

    def ask() -> None:
        try:
            got: tuple[bool, Any] = (True, list(real(*key)))
        except BaseException as err:  # noqa: BLE001 - handed to the asking thread
            got = (False, err)
        with cond:
            results.append(got)
            cond.notify_all()

    with cond:
        while True:
            answers: list[list[Any]] = [value for ok, value in results if ok]
            if answers:
                return answers[0]
            if results and (_permanent(results[-1][1]) or len(results) == started == ASKS):
                raise results[-1][1]
            if started < ASKS and (started == len(results) or time.monotonic() >= last + HEDGE_S):
                threading.Thread(target=ask, name="tritonlock-dns", daemon=True).start()
                started, last = started + 1, time.monotonic()
            cond.wait(max(0.0, last + HEDGE_S - time.monotonic()) if started < ASKS else None)


def _permanent(err: BaseException) -> bool:
    """An answer, not a silence: the name does not exist (asking again would say the same)."""
    return isinstance(err, socket.gaierror) and err.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5))


def _numeric(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    for fam in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(fam, str(host).split("%", 1)[0])
            return True
        except (OSError, ValueError):
            continue
    return False
