"""Packaging: deterministic ``tar.xz`` assets with manifest, CMake and pkg-config files."""
