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
  # file(CONFIGURE) leaves an unchanged file alone; file(WRITE) would bump its time stamp on every
  # configure and rebuild the carrier (and everything after it) each time.
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/allot_torch_pch.cc
       CONTENT "// precompiled header carrier\n")
  add_library(allot_torch_pch STATIC ${CMAKE_BINARY_DIR}/allot_torch_pch.cc)
  allot_target_defaults(allot_torch_pch)
  target_link_libraries(allot_torch_pch PUBLIC allot_torch)
  if(ALLOT_USE_PCH)
    target_precompile_headers(allot_torch_pch PRIVATE <torch/torch.h>)
  endif()
endif()

# Whether `file` includes a LibTorch header (<torch/...>, <ATen/...>, <c10/...>), directly or
# through the project's own headers. Answers are memoised per file for the whole configure run.
function(_allot_includes_torch file out)
  get_property(known GLOBAL PROPERTY "ALLOT_TORCH_SCAN:${file}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "ALLOT_TORCH_SCAN:${file}")
    set(${out} ${value} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "ALLOT_TORCH_SCAN:${file}" FALSE)  # guards include cycles
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include")
  get_filename_component(dir "${file}" DIRECTORY)
  set(result FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "<(torch|ATen|c10)/")
      set(result TRUE)
      break()
    endif()
    if(line MATCHES "\"([^\"]+)\"")
      set(header "")
      if(EXISTS "${ALLOT_ROOT}/${CMAKE_MATCH_1}")
        set(header "${ALLOT_ROOT}/${CMAKE_MATCH_1}")
      elseif(EXISTS "${dir}/${CMAKE_MATCH_1}")
        set(header "${dir}/${CMAKE_MATCH_1}")
      endif()
      if(header)
        _allot_includes_torch("${header}" nested)
        if(nested)
          set(result TRUE)
          break()
        endif()
      endif()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "ALLOT_TORCH_SCAN:${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Links LibTorch and reuses the shared precompiled header for the sources that include torch.
# The other sources of the target skip it: loading the ~800 MB header costs a plain file about
# 15 times its own compile time.
function(allot_use_torch name)
  target_link_libraries(${name} PUBLIC allot_torch)
  if(NOT ALLOT_USE_PCH)
    return()
  endif()
  target_precompile_headers(${name} REUSE_FROM allot_torch_pch)
  get_target_property(sources ${name} SOURCES)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE)
    if(NOT path MATCHES "\\.(cc|cpp)$" OR NOT EXISTS "${path}")
      continue()
    endif()
    _allot_includes_torch("${path}" uses_torch)
    if(NOT uses_torch)
      set_source_files_properties(${source} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
