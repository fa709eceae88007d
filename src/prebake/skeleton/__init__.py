"""``prebake init``: a working workspace for the platforms this machine can build (``scaffold``;
the candidates are ``platforms.toml``, the files are templates in ``files/``)."""

from prebake.skeleton.scaffold import check_project, detect, project_name, render, write

__all__ = ["check_project", "detect", "project_name", "render", "write"]
