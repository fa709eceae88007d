# The consumer cross-built for windows-x86_64 with Debian's MinGW-w64, the compiler the
# workspace's windows-x86_64 platform pins (x86_64-w64-mingw32-gcc):
#   cmake -S . -B b -DCMAKE_TOOLCHAIN_FILE=mingw-w64.cmake -DCMAKE_PREFIX_PATH=ASSET
# then run b/ort_check.exe on Windows, or here under Wine (python -m prebake.link.wine).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
# the build machine's programs, MinGW's headers and libraries, packages where the caller says
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
