# Helpers that give every allot target the same flags.

# allot_library(NAME SOURCES a.cc b.cc DEPS x y [TORCH])
# One static library per folder. TORCH marks a target whose sources use LibTorch: it links
# allot_torch and reuses the shared precompiled header.
function(allot_library name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  allot_target_defaults(${name})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_TORCH)
    allot_use_torch(${name})
  endif()
endfunction()

function(allot_target_defaults name)
  target_include_directories(${name} PUBLIC ${ALLOT_ROOT} ${CMAKE_BINARY_DIR})
  target_compile_options(${name} PRIVATE ${ALLOT_WARNINGS})
  target_compile_definitions(${name} PUBLIC ALLOT_VERSION="${PROJECT_VERSION}")
endfunction()

# The one precompiled header of the project: every torch-using target reuses it, so torch's
# headers are parsed once per build instead of once per file.
if(NOT TARGET allot_torch_pch)
  file(WRITE ${CMAKE_BINARY_DIR}/allot_torch_pch.cc "// precompiled header carrier\n")
  add_library(allot_torch_pch STATIC ${CMAKE_BINARY_DIR}/allot_torch_pch.cc)
  allot_target_defaults(allot_torch_pch)
  target_link_libraries(allot_torch_pch PUBLIC allot_torch)
  if(ALLOT_USE_PCH)
    target_precompile_headers(allot_torch_pch PRIVATE <torch/torch.h>)
  endif()
endif()

function(allot_use_torch name)
  target_link_libraries(${name} PUBLIC allot_torch)
  if(ALLOT_USE_PCH)
    target_precompile_headers(${name} REUSE_FROM allot_torch_pch)
  endif()
endfunction()
