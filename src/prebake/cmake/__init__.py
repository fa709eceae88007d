"""Prebake.cmake, the CMake module shipped as package data (see ``prebake cmake-module-path``)."""
