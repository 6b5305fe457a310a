# All dependencies come from Debian 12's main archive (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(CURL REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(GINAC REQUIRED IMPORTED_TARGET ginac)
# Debian's cpp-httplib is a compiled library (libcpp-httplib.so), found through pkg-config.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
if(ALLOT_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(ALLOT_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# LibTorch: Debian's libtorch-dev (CPU, Gloo inside), or the wheel's on a GPU machine
# (pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).
find_package(Torch REQUIRED)
# Torch's exported flags include -D_GLIBCXX_USE_CXX11_ABI; keep them, but its include dirs
# go in as SYSTEM so that torch's own warnings stay out of ours.
add_library(allot_torch INTERFACE)
target_include_directories(allot_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_libraries(allot_torch INTERFACE ${TORCH_LIBRARIES})
separate_arguments(ALLOT_TORCH_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(allot_torch INTERFACE ${ALLOT_TORCH_FLAGS})

# GPU build: a CUDA LibTorch (the PyTorch wheel's, on a GPU machine) and NCCL, which only the
# communicator's nccl backend (trainer/comm) calls.
if(ALLOT_WITH_CUDA)
  if(NOT TARGET c10_cuda AND NOT "${TORCH_LIBRARIES}" MATCHES "cuda")
    message(FATAL_ERROR "ALLOT_WITH_CUDA=ON needs a CUDA LibTorch: configure with "
            "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')")
  endif()
  find_library(ALLOT_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ENV NCCL_HOME PATH_SUFFIXES lib)
  if(NOT ALLOT_NCCL_LIBRARY)
    message(FATAL_ERROR "ALLOT_WITH_CUDA=ON needs NCCL (set NCCL_HOME, e.g. the wheel's nvidia/nccl)")
  endif()
  find_path(ALLOT_NCCL_INCLUDE_DIR nccl.h HINTS ENV NCCL_HOME PATH_SUFFIXES include)
  if(NOT ALLOT_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "ALLOT_WITH_CUDA=ON needs nccl.h (set NCCL_HOME to the folder above include/)")
  endif()
  target_include_directories(allot_torch SYSTEM INTERFACE ${ALLOT_NCCL_INCLUDE_DIR})
  target_link_libraries(allot_torch INTERFACE ${ALLOT_NCCL_LIBRARY})
  # c10/cuda's headers include the CUDA runtime's (TorchConfig found the toolkit).
  if(TARGET CUDA::cudart)
    target_link_libraries(allot_torch INTERFACE CUDA::cudart)
  endif()
  target_compile_definitions(allot_torch INTERFACE ALLOT_WITH_CUDA=1)
endif()
