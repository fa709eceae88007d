"""Stores: where assets live (local folder, GitHub Releases, S3, HTTP mirrors).

``open_store(url)`` (``schemes``) picks the backend by URL scheme; every backend implements
``prebake.store.base.Store``.
"""

from prebake.store.base import DEFAULT_RELEASE, Store, local_path
from prebake.store.schemes import BACKENDS, open_store

__all__ = ["BACKENDS", "DEFAULT_RELEASE", "Store", "local_path", "open_store"]
