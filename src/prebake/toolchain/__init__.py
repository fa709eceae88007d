"""Toolchains: the family table, asking compilers what they are, pin verification, provisioning."""
