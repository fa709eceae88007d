"""CMake: the module shipped as package data (``Prebake.cmake``, see ``prebake cmake-module-path``)
and CMake's quoting (``quoting``)."""
