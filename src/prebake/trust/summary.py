"""Human lines of an asset's trust status for ``prebake inspect`` (the command prints them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def trust_lines(t: Mapping[str, Any]) -> list[str]:
    """Plain lines: provenance (builder, times, parameters, inputs) and the signature."""
    lines = [f"{t['asset']}  sha256 {t['sha256']}"]
    prov = t.get("provenance")
    if t.get("provenance_error"):
        lines.append(f"  provenance: INVALID: {t['provenance_error']}")
    elif prov is None:
        lines.append("  provenance: none")
    else:
        ext = prov.get("externalParameters", {})
        lines.append(f"  provenance ({prov['source']}): unit {ext.get('unit')} "
                     f"platform {ext.get('platform')}")
        if prov.get("builder"):
            lines.append(f"    builder   {prov['builder']}")
        if prov.get("startedOn"):
            lines.append(f"    built     {prov['startedOn']} → {prov.get('finishedOn')}")
        pins = ext.get("pins") or {}
        if pins:
            lines.append("    pins      " + ", ".join(f"{k}={v}" for k, v in pins.items()))
        for d in prov.get("inputs", []):
            where = f" {d['uri']}" if d.get("uri") else ""
            lines.append(f"    input     {d['name']}{where} {d.get('digest') or ''}".rstrip())
    sig = t["signature"]
    status = sig["status"]
    if status == "valid":
        lines.append(f"  signature: valid, signed by {sig['principal']} "
                     f"(allowed by {sig['allowed_signers']})")
    elif status == "invalid":
        lines.append(f"  signature: INVALID: {sig['reason']}")
    elif status == "unchecked":
        lines.append(f"  signature: present, not checked ({sig['reason']}; "
                     "pass --allowed-signers FILE)")
    else:
        lines.append("  signature: none")
    return lines

