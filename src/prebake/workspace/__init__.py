"""The workspace: ``prebake.toml`` loaded into frozen, validated data (see ``model``)."""

from prebake.workspace.loader import WORKSPACE_FILE, load_workspace, resolve_store_url
from prebake.workspace.model import (
    DEFAULT_STORE_URL,
    CiConfig,
    LinkTest,
    PackageMode,
    Platform,
    Project,
    Stage,
    StoreConfig,
    Toolchain,
    Workspace,
    expand_argv,
)

__all__ = [
    "DEFAULT_STORE_URL",
    "WORKSPACE_FILE",
    "CiConfig",
    "LinkTest",
    "PackageMode",
    "Platform",
    "Project",
    "Stage",
    "StoreConfig",
    "Toolchain",
    "Workspace",
    "expand_argv",
    "load_workspace",
    "resolve_store_url",
]
