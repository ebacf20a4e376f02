"""A keyring backend for tests (PYTHON_KEYRING_BACKEND=keyring_backend_for_tests.Backend): credentials from the
TL_TEST_KEYRING variable ("service user password"), and a log of what was asked."""

from __future__ import annotations

import os

from keyring.backend import KeyringBackend
from keyring.credentials import SimpleCredential

ASKED: list[str] = []


class Backend(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def _entry(self, service: str) -> tuple[str, str] | None:
        ASKED.append(service)
        want, user, password = os.environ.get("TL_TEST_KEYRING", "  ").split(" ", 2)
        return (user, password) if want and service == want else None

    def get_password(self, service: str, username: str) -> str | None:
        found = self._entry(service)
        return found[1] if found and found[0] == username else None

    def get_credential(self, service: str, username: str | None) -> SimpleCredential | None:
        found = self._entry(service)
        return SimpleCredential(found[0], found[1]) if found else None

    def set_password(self, service: str, username: str, password: str) -> None:
        raise NotImplementedError

    def delete_password(self, service: str, username: str) -> None:
        raise NotImplementedError
