"""The one exception hierarchy; the CLI (tritonlock.cli) turns these into messages and exit codes."""

from __future__ import annotations


class TritonlockError(Exception):
    """Root of every error tritonlock raises on purpose; `exit_code` is what the CLI exits with."""

    exit_code = 1


class IntentError(ValueError, TritonlockError):
    """triton-env.toml is missing or invalid."""

    exit_code = 2


class MatrixError(ValueError, TritonlockError):
    """compat/ data is missing or invalid."""

    exit_code = 2


class LockfileError(ValueError, TritonlockError):
    """triton-env.lock is missing, unreadable, of an unknown version, or tampered with."""

    exit_code = 2


class ConfigError(ValueError, TritonlockError):
    """The user's pip configuration (PIP_INDEX_URL, pip.conf) holds something tritonlock cannot use."""

    exit_code = 2


class LockfileWarning(UserWarning):
    """A lock that can be read but deserves a word (a newer minor format); the CLI prints it as one line."""


class UsageError(ValueError, TritonlockError):
    """An option or argument asks for what cannot be done as given: a path that is not there, a file that is."""

    exit_code = 2


class WriteError(OSError, TritonlockError):
    """A file could not be written where it was asked for (no such directory, no permission): a bad path."""

    exit_code = 2


class HostError(TritonlockError):
    """Host detection was asked for something it cannot give (bad override value)."""

    exit_code = 2


class ResolveError(TritonlockError):
    """No selection fits one or more targets; the message lists the conflicts."""

    exit_code = 3


class IndexError_(TritonlockError):
    """A package index could not be reached or answered badly."""

    exit_code = 4


class UvMissingError(TritonlockError):
    """uv, which tritonlock drives to resolve and install, is not there: while resolving, exit 4 (uv failed); `sync`
    turns it into a SyncError (exit 5) that says what state the venv is in."""

    exit_code = 4


class ClosureError(TritonlockError):
    """uv could not compute the transitive closure (message carries uv's own words; `uv` holds them alone)."""

    exit_code = 4

    def __init__(self, message: str, *, uv: str = "") -> None:
        super().__init__(message)
        self.uv = uv  # uv's own explanation, as `tritonlock.lock.index.explain` gave it ("" when uv never ran)


class UnknownTargetError(ValueError, TritonlockError):
    """An option names a lock target the lock does not have (bad input: the same code in every command)."""

    exit_code = 2


class NoFittingTargetError(ValueError, TritonlockError):
    """No lock target fits this machine: the lock was not made for it (bad input, the same code in every command —
    sync, verify --record, export); nothing was changed."""

    exit_code = 2


class SyncError(TritonlockError):
    """Installing the lock into the venv failed; the message says, as checked, what state the venv is in."""

    exit_code = 5


class SyncInterrupted(SyncError):
    """Ctrl-C (SIGINT) stopped a sync; the message says, as checked, what state the venv is in."""

    exit_code = 130


class VerifyError(TritonlockError):
    """The verify runner could not be started or answered garbage (a failed check is not an error)."""

    exit_code = 6
