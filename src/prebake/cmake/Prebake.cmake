# Prebake.cmake — fetch a pinned prebake asset at configure time so find_package() finds it.
#
#   execute_process(COMMAND prebake cmake-module-path OUTPUT_VARIABLE _pb_dir
#                   OUTPUT_STRIP_TRAILING_WHITESPACE)
#   list(APPEND CMAKE_MODULE_PATH "${_pb_dir}")
#   include(Prebake)
#   prebake_fetch(onnxruntime 1.27.0 linux-x86_64)     # [STORE url] [INTO dir] [RELEASE tag]
#                                                      # [CONTRACT file] [LOCK file]
#   find_package(onnxruntime 1.27.0 CONFIG REQUIRED)
#
# prebake_fetch runs `prebake fetch NAME==VERSION --platform PLATFORM` in the calling source
# folder (so the consumer's own prebake.toml supplies the store and the contract the asset is
# re-checked against), verifies the sha256, unpacks safely and writes prebake.lock next to the
# top-level CMakeLists.txt (commit it: later configures reproduce exactly the locked bytes).
# It then puts the prefix first on CMAKE_PREFIX_PATH (and, under a cross toolchain file such as
# Emscripten's, on CMAKE_FIND_ROOT_PATH, so `emcmake cmake` finds it) and sets <NAME>_ROOT and
# PREBAKE_<NAME>_PREFIX in the caller's scope. Any failure stops the configure with prebake's
# one-line reason.

include_guard(GLOBAL)

if(NOT PREBAKE_EXECUTABLE)
  find_program(PREBAKE_EXECUTABLE NAMES prebake DOC "the prebake command")
endif()

function(prebake_fetch NAME VERSION PLATFORM)
  cmake_parse_arguments(PARSE_ARGV 3 _pb "" "STORE;INTO;RELEASE;CONTRACT;LOCK" "")
  if(_pb_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "prebake_fetch: unexpected arguments: ${_pb_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT PREBAKE_EXECUTABLE)
    message(FATAL_ERROR "prebake_fetch: the prebake command was not found; install prebake "
                        "or set PREBAKE_EXECUTABLE")
  endif()
  if(NOT _pb_INTO)
    set(_pb_INTO "${CMAKE_BINARY_DIR}/_prebake/${NAME}-${PLATFORM}")
  endif()
  if(NOT _pb_LOCK)
    set(_pb_LOCK "${CMAKE_SOURCE_DIR}/prebake.lock")
  endif()
  set(_cmd "${PREBAKE_EXECUTABLE}" fetch "${NAME}==${VERSION}" --platform "${PLATFORM}"
           --into "${_pb_INTO}" --lock "${_pb_LOCK}")
  foreach(_opt STORE RELEASE CONTRACT)
    if(_pb_${_opt})
      string(TOLOWER "${_opt}" _flag)
      list(APPEND _cmd "--${_flag}" "${_pb_${_opt}}")
    endif()
  endforeach()
  execute_process(
    COMMAND ${_cmd}
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    RESULT_VARIABLE _rc
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _err
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "prebake_fetch(${NAME} ${VERSION} ${PLATFORM}) failed (exit ${_rc}):\n"
                        "${_err}")
  endif()
  message(STATUS "prebake: ${_out}")
  list(PREPEND CMAKE_PREFIX_PATH "${_pb_INTO}")
  set(CMAKE_PREFIX_PATH "${CMAKE_PREFIX_PATH}" PARENT_SCOPE)
  # A cross toolchain file (Emscripten's sets CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY) confines
  # find_package() to the root paths: the fetched prefix must be one of them, or the package
  # is not found. A search path already inside a root path is not re-rooted, so the prefix is
  # searched as it is.
  if(CMAKE_CROSSCOMPILING OR CMAKE_FIND_ROOT_PATH_MODE_PACKAGE OR CMAKE_FIND_ROOT_PATH)
    list(APPEND CMAKE_FIND_ROOT_PATH "${_pb_INTO}")
    set(CMAKE_FIND_ROOT_PATH "${CMAKE_FIND_ROOT_PATH}" PARENT_SCOPE)
  endif()
  set(${NAME}_ROOT "${_pb_INTO}" PARENT_SCOPE)
  set(PREBAKE_${NAME}_PREFIX "${_pb_INTO}" PARENT_SCOPE)
endfunction()
