# Every optional part of allot has a switch here.
option(ALLOT_WERROR "Treat warnings as errors (on in CI)" ON)
option(ALLOT_BUILD_TESTS "Build the GoogleTest suites" ON)
option(ALLOT_BUILD_BENCH "Build the Google Benchmark programs" ON)
option(ALLOT_BUILD_FUZZ "Build libFuzzer targets (needs clang; off with g++)" OFF)
# ALLOT_WITH_CUDA: the only code that uses NCCL is trainer/comm's "nccl" backend (c10d's
# ProcessGroupNCCL); without it, every other part runs as in a CPU build on a CUDA LibTorch.
option(ALLOT_WITH_CUDA
       "Build against a CUDA LibTorch and link NCCL (the learner communicator's nccl backend)" OFF)
# ALLOT_WITH_GLOO: the communicator's gloo backend (CPU data parallelism). Off only for a
# LibTorch that ships no Gloo headers; the nccl backend then carries every collective.
option(ALLOT_WITH_GLOO "Build the communicator's gloo backend (c10d ProcessGroupGloo)" ON)
option(ALLOT_WITH_ONNX "Build ONNX export of the navigator (libonnx-dev)" ON)
option(ALLOT_USE_CCACHE "Use ccache when it is installed" ON)
option(ALLOT_USE_PCH "One shared precompiled header for torch-using targets" ON)

if(ALLOT_USE_CCACHE)
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    message(STATUS "allot: ccache ${CCACHE_PROGRAM}")
  endif()
endif()

set(ALLOT_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(ALLOT_WERROR)
  list(APPEND ALLOT_WARNINGS -Werror)
endif()

# Sanitizer builds (scripts/sanitize.sh, in build-asan/ and build-tsan/): "address" is
# AddressSanitizer + UndefinedBehaviorSanitizer, "thread" is ThreadSanitizer. The tests of such a
# build carry the label asan or tsan beside unit/integration.
set(ALLOT_SANITIZE "" CACHE STRING "address (ASan+UBSan) | thread (TSan) | empty: none")
set(ALLOT_SANITIZE_LABEL "")
if(ALLOT_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  set(ALLOT_SANITIZE_LABEL asan)
elseif(ALLOT_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  set(ALLOT_SANITIZE_LABEL tsan)
elseif(NOT ALLOT_SANITIZE STREQUAL "")
  message(FATAL_ERROR "ALLOT_SANITIZE: '${ALLOT_SANITIZE}' (expected address, thread or empty)")
endif()

if(ALLOT_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ALLOT_BUILD_FUZZ needs clang (CC=clang CXX=clang++); see scripts/fuzz.sh")
  endif()
  # Coverage instrumentation everywhere; the fuzzer's main() only in the fuzz targets.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Every target compiles with -pthread (some dependencies add it through pkg-config): the shared
# precompiled header is only valid where the macros it was built with (_REENTRANT) agree.
add_compile_options(-pthread)
