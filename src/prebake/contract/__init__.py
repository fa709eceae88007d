"""Contracts: the ABI facts a binary for a platform must have (data, not code)."""

from prebake.contract.model import Contract, parse_contract

__all__ = ["Contract", "parse_contract"]
