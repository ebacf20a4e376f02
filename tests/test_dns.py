"""tritonlock._dns: a host looked up once a process, a stalled lookup asked again beside it (a resolver that drops
one query in many answers it only after its 5 s retry), a name that does not exist said at once. The resolver is the
one thing faked here: a function standing for the C library's getaddrinfo, whose calls the test holds or answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tritonlock import _dns

ADDR = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 443))]


class Resolver:
    """Each call answers by its turn in `plan`: "ok", "stall" (waits until released), "again" (EAI_AGAIN), "noname"."""

    def __init__(self, *plan: str) -> None:
        self.plan = list(plan)
        self.calls: list[tuple[Any, ...]] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, *key: Any) -> list[Any]:
        with self._lock:
            self.calls.append(key)
            turn = self.plan[len(self.calls) - 1] if len(self.calls) <= len(self.plan) else "ok"
        if turn == "stall":
            self.release.wait(120)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.9.9", 443))]
        if turn == "again":
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if turn == "noname":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(ADDR)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(_dns, "_kept", {})
    monkeypatch.setattr(_dns, "_asking", {})
    holder: dict[str, Resolver] = {}

    def use(*plan: str) -> Resolver:
        holder["r"] = Resolver(*plan)
        monkeypatch.setattr(_dns, "_real", holder["r"])
        return holder["r"]

    yield use
    if "r" in holder:
        holder["r"].release.set()


def _release_at(r: Resolver, calls: int) -> None:
    """Release the stalled lookups once `calls` have been made (a watcher thread)."""
    def watch() -> None:
        for _ in range(6000):
            if len(r.calls) >= calls:
                break
            threading.Event().wait(0.01)
        r.release.set()

    threading.Thread(target=watch, daemon=True).start()


def _in_thread(fn: Any) -> Any:
    """fn() in a thread, joined for up to a minute (a lookup that never returns fails the test, never hangs it)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001
            out["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the lookup did not return"
    return out


def test_a_name_is_looked_up_once_and_its_answer_reused(fake: Any) -> None:
    r = fake("ok")
    assert _dns.getaddrinfo("files.example", 443, 0, socket.SOCK_STREAM) == ADDR
    assert _dns.getaddrinfo("files.example", 443, 0, socket.SOCK_STREAM) == ADDR
    assert len(r.calls) == 1
    _dns.getaddrinfo("files.example", 80, 0, socket.SOCK_STREAM)  # another port is another question
    _dns.getaddrinfo("other.example", 443, 0, socket.SOCK_STREAM)
    assert [c[:2] for c in r.calls] == [("files.example", 443), ("files.example", 80), ("other.example", 443)]


def test_an_answer_past_its_time_is_asked_again(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    r = fake("ok", "ok")
    _dns.getaddrinfo("files.example", 443)
    monkeypatch.setattr(_dns, "KEEP_S", 0.0)
    _dns._kept.clear()
    _dns.getaddrinfo("files.example", 443)
    _dns.getaddrinfo("files.example", 443)
    assert len(r.calls) == 3  # (kept for no time: each asks)


def test_a_stalled_lookup_is_asked_again_and_the_first_answer_taken(fake: Any) -> None:
    r = fake("stall", "ok")
    out = _in_thread(lambda: _dns.getaddrinfo("files.example", 443, 0, socket.SOCK_STREAM))
    assert out.get("value") == ADDR, out  # the second's answer, while the first still waits
    assert len(r.calls) == 2 and not r.release.is_set()


def test_three_stalled_lookups_wait_for_the_first_to_answer_and_no_fourth_is_asked(fake: Any) -> None:
    r = fake("stall", "stall", "stall")
    _release_at(r, 3)
    out = _in_thread(lambda: _dns.getaddrinfo("files.example", 443))
    assert out.get("value") == [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.9.9", 443))], out
    assert len(r.calls) == 3


def test_a_failure_that_may_pass_is_asked_again_at_once(fake: Any) -> None:
    r = fake("again", "ok")
    assert _dns.getaddrinfo("files.example", 443) == ADDR
    assert len(r.calls) == 2


def test_three_failures_that_may_pass_raise_the_last(fake: Any) -> None:
    r = fake("again", "again", "again", "ok")
    with pytest.raises(socket.gaierror) as err:
        _dns.getaddrinfo("files.example", 443)
    assert err.value.errno == socket.EAI_AGAIN and len(r.calls) == 3
    assert _dns.getaddrinfo("files.example", 443) == ADDR  # (a failure is not kept: the next call asks)


def test_a_name_that_does_not_exist_is_said_at_once_and_not_kept(fake: Any) -> None:
    r = fake("noname", "ok")
    with pytest.raises(socket.gaierror) as err:
        _dns.getaddrinfo("nosuch.example", 443)
    assert err.value.errno == socket.EAI_NONAME and len(r.calls) == 1
    assert _dns.getaddrinfo("nosuch.example", 443) == ADDR and len(r.calls) == 2


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "fe80::1%eth0", b"10.0.0.1", "", None])
def test_numeric_addresses_and_empty_hosts_go_straight_to_the_resolver(fake: Any, host: Any) -> None:
    r = fake("ok", "ok")
    _dns.getaddrinfo(host, 443)
    _dns.getaddrinfo(host, 443)
    assert len(r.calls) == 2 and _dns._kept == {}


def test_threads_asking_for_one_name_at_once_share_one_lookup(fake: Any) -> None:
    r = fake("stall", "stall", "stall")
    outs: list[Any] = []
    threads = [threading.Thread(target=lambda: outs.append(_dns.getaddrinfo("files.example", 443)), daemon=True)
               for _ in range(8)]
    for t in threads:
        t.start()
    _release_at(r, 3)
    for t in threads:
        t.join(60)
    assert len(outs) == 8 and len(r.calls) == 3  # one hedged lookup (3 asks), not 8 x 3


def test_install_replaces_socket_getaddrinfo_once(monkeypatch: pytest.MonkeyPatch) -> None:
    original = _dns._real or socket.getaddrinfo  # (an earlier test's session may have installed it)
    monkeypatch.setattr(_dns, "_real", None)
    monkeypatch.setattr(socket, "getaddrinfo", original)
    _dns.install()
    _dns.install()
    assert socket.getaddrinfo is _dns.getaddrinfo and _dns._real is original
