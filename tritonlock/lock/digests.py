"""The digests a lock carries (of each target, decision and closure, of its header, of a target's packages): what
the writer stamps and the reader checks, computed the same way on both sides."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest_of(doc: Any) -> str:
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def order_free(items: Any) -> Any:
    """A list of tables in a canonical order (by content), so reordering entries changes no digest."""
    if not isinstance(items, list):
        return items
    return sorted(items, key=lambda x: json.dumps(x, sort_keys=True, ensure_ascii=False, default=str))


def target_digest(raw: dict[str, Any]) -> str:
    """The digest of one [[targets]] table as parsed: every key (constraints, decision, packages and whatever a
    later version adds) except `digest` itself; the order of packages and of their files does not count."""
    body = {k: v for k, v in raw.items() if k != "digest"}
    if isinstance(body.get("packages"), list):
        body["packages"] = order_free([
            {**p, "wheels": order_free(p["wheels"])} if isinstance(p, dict) and "wheels" in p else p
            for p in body["packages"]])
    return digest_of(body)


def header_digest(data: dict[str, Any], target_digests: list[str], decision_ids: list[str] | None = None,
                  closure_ids: list[str] | None = None) -> str:
    """The digest of the lock's top-level keys and its targets (by their digests, in order); from 3.0 also of its
    decisions and closures (by their ids, in order)."""
    shared = {} if decision_ids is None else {"decisions": decision_ids, "closures": closure_ids or []}
    return digest_of({**{k: v for k, v in data.items() if k not in ("digest", "targets", "decisions", "closures")},
                 "targets": target_digests, **shared})


def closure_digest(raw_packages: list[Any]) -> str:
    """A closure's id: the digest of its packages as parsed (their order, and their files', does not count)."""
    return digest_of(order_free([{**p, "wheels": order_free(p["wheels"])} if isinstance(p, dict) and "wheels" in p
                             else p for p in raw_packages]))


def decision_digest(raw: dict[str, Any]) -> str:
    """A decision's id: the digest of its table as parsed, `id` aside."""
    return digest_of({k: v for k, v in raw.items() if k != "id"})
