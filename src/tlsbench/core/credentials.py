"""When two runs' certificate sets differ: each run stores the digest of every certificate kind
it used (`builds.certs.credentials_record`: {"layout": ..., "kinds": {kind: sha256}}), and a
figure that depends on a key is only comparable between runs whose kinds have the same bytes."""

from __future__ import annotations

from typing import Any


def differing_kinds(record_a: dict[str, Any] | None, record_b: dict[str, Any] | None) -> list[str]:
    """The kinds that both records name with other bytes (none where either record is absent:
    a run made before the records existed is warned about, not refused)."""
    kinds_a = (record_a or {}).get("kinds") or {}
    kinds_b = (record_b or {}).get("kinds") or {}
    return sorted(k for k in set(kinds_a) & set(kinds_b) if kinds_a[k] != kinds_b[k])
