"""Contracts: the ABI facts a binary for a platform must have (data, not code).

``model`` loads and validates them, ``rules`` holds one small function per contract key, and
``check`` runs the rules over files, folders and assets (``check_paths``).
"""

from prebake.contract.terms import Contract, load_contract_file, parse_contract

__all__ = ["Contract", "load_contract_file", "parse_contract"]
