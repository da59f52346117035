# Helpers every host-side target goes through, so that warnings and sanitizers are
# applied uniformly (and never to the freestanding guest build in tests/guest).

set(HVPROF_WARNINGS -Wall -Wextra -Wshadow -Wno-unused-parameter
    -Wmissing-prototypes -Wstrict-prototypes -Wformat=2)
# Warnings are errors in the project's own builds (scripts/build.sh, CI), never in a user's or
# packager's: another compiler or optimisation level may warn where ours does not.
if(HVPROF_WERROR)
  list(APPEND HVPROF_WARNINGS -Werror)
endif()
set(HVPROF_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)

# hvprof_target(<target> [LAYERED]): warnings, frame pointers, optional sanitizers. Executables
# (the CLI, tests, benchmarks, fuzzers) sit above every layer and see the whole source tree;
# LAYERED targets (hvprof_library) see only their own module and what they link.
function(hvprof_target t)
  cmake_parse_arguments(A "LAYERED" "" "" ${ARGN})
  target_compile_options(${t} PRIVATE ${HVPROF_WARNINGS} -fno-omit-frame-pointer)
  target_compile_definitions(${t} PRIVATE _GNU_SOURCE HVPROF_VERSION="${PROJECT_VERSION}")
  if(NOT A_LAYERED)
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR})
  endif()
  if(HVPROF_SANITIZE)
    target_compile_options(${t} PRIVATE ${HVPROF_SAN_FLAGS})
    target_link_options(${t} PRIVATE ${HVPROF_SAN_FLAGS})
  endif()
  if(HVPROF_FUZZ)
    # Coverage instrumentation for everything a fuzz target links.
    target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# hvprof_library(<name> SOURCES ... LIBS ...): a static library of host code, one module (its
# directory) of one layer (docs/architecture.md). The layering is enforced by include paths: a
# library's include directory is a staging directory holding only its own module, as a symlink
# at its path in the tree (build/include/hvprof_vmm/vmm -> vmm/), and it sees other modules
# only through the PUBLIC include directories of the libraries it links. Including a header of
# a layer above (or beside) it is a compile error: "No such file or directory".
function(hvprof_library name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  hvprof_target(${name} LAYERED)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(stage ${PROJECT_BINARY_DIR}/include/${name})
  get_filename_component(parent ${stage}/${rel} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${stage}/${rel} SYMBOLIC)
  target_include_directories(${name} PUBLIC ${stage})
  target_link_libraries(${name} PUBLIC ${A_LIBS})
endfunction()

# hvprof_add_test(<name> SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s]): a cmocka test binary
# registered with ctest. Tests run from the build directory; HVPROF_SOURCE_DIR and
# HVPROF_BINARY_DIR are exported so tests can find fixtures and the built guest.
function(hvprof_add_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  hvprof_target(${name})
  target_link_libraries(${name} PRIVATE ${A_LIBS} PkgConfig::CMOCKA)
  add_test(NAME ${name} COMMAND ${name} ${A_ARGS})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  # 77: the binary skipped itself for a stated reason (tests/common/need_kvm.h); ctest says so.
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT} SKIP_RETURN_CODE 77
    ENVIRONMENT "HVPROF_SOURCE_DIR=${PROJECT_SOURCE_DIR};HVPROF_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(A_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}")
  endif()
endfunction()

# hvprof_add_fuzzer(<name> SOURCES ... LIBS ... [CORPUS dir]): a libFuzzer target, built only
# with -DHVPROF_FUZZ=ON (clang). scripts/fuzz.sh runs each for a bounded time.
function(hvprof_add_fuzzer name)
  cmake_parse_arguments(A "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  if(NOT HVPROF_FUZZ)
    return()
  endif()
  add_executable(${name} ${A_SOURCES})
  hvprof_target(${name})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${A_LIBS})
  set_property(GLOBAL APPEND PROPERTY HVPROF_FUZZERS "${name}:${A_CORPUS}")
endfunction()

# hvprof_recorder_source(<name> SOURCES ... [LIBS ...] [TESTS ...]): one source of the recorder
# (sampler/source/source.h) in its own folder sampler/sources/<name>/, as its own library: its
# include path holds the source interface, the recorder's parts, the exit core's public header
# and what it links, never the recorder core's private header; the core links every one
# (sampler/CMakeLists.txt), and cmake/check_sources.cmake rejects any reference from one
# source to another's symbols or to the core's. Its TESTS (beside it, tests/test_*.c) run it
# alone in a fake environment (sampler/sources/tests/fake_env.h), linking the source and not
# the recorder core.
function(hvprof_recorder_source name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;TESTS" ${ARGN})
  hvprof_library(hvprof_source_${name} SOURCES ${A_SOURCES}
    LIBS hvprof_source_api hvprof_recorder_parts hvprof_sampler_exit hvprof_guestos
         hvprof_schema hvprof_fxt hvprof_guestwalk hvprof_common ${A_LIBS})
  set_property(GLOBAL APPEND PROPERTY HVPROF_RECORDER_SOURCES hvprof_source_${name})
  if(BUILD_TESTING)
    foreach(t IN LISTS A_TESTS)
      get_filename_component(tname ${t} NAME_WE)
      hvprof_add_test(${tname}_source SOURCES ${t}
        ${PROJECT_SOURCE_DIR}/sampler/sources/tests/fake_env.c
        ${PROJECT_SOURCE_DIR}/guestwalk/tests/guest_image.c
        LIBS hvprof_source_${name} LABELS unit)
    endforeach()
  endif()
endfunction()
