"""One network link, two kinds of transfer on it: the reads a decision waits for (a wheel's binary facts, by range
requests or whole: the next uv compile starts once they are in) and the downloads only the written lock waits for
(the integrity check's whole files, up to 64 MB each where the index lists no PEP 658 hash: 760 MB for a vLLM
closure). Started together, 32 downloads took the link from the reads: a cold vllm + xformers resolve waited 4.3 s
for ten reads that take 0.1 s alone (measured on a 2-core box beside PyPI's CDN). So while any read is in flight, at
most FEW downloads start; the others wait their turn — until the lock waits for them (`hurried`), then all go. A
download already running is never paused (a stalled connection may be dropped by the server)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

FEW = 2  # downloads that may run beside the decision's reads (each alone fills most of the link)
_POLL_S = 0.25  # how often a waiting download looks at its `hurried` event (set without notifying this condition)


class Link:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.reads = 0  # reads in flight that a decision waits for
        self.downloads = 0  # downloads running that only a lock waits for

    @contextmanager
    def read(self) -> Iterator[None]:
        """A read the decision waits for: downloads give way while it runs."""
        with self._cond:
            self.reads += 1
        try:
            yield
        finally:
            with self._cond:
                self.reads -= 1
                self._cond.notify_all()

    @contextmanager
    def download(self, hurried: threading.Event | None = None) -> Iterator[None]:
        """A download only the lock waits for: it starts once no read is in flight or fewer than FEW downloads run,
        or at once when `hurried` is set (the lock waits for it now)."""
        with self._cond:
            while self.reads and self.downloads >= FEW and not (hurried is not None and hurried.is_set()):
                self._cond.wait(_POLL_S)
            self.downloads += 1
        try:
            yield
        finally:
            with self._cond:
                self.downloads -= 1
                self._cond.notify_all()


LINK = Link()
