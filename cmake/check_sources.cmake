# The recorder's rule for its sources (sampler/source/source.h), checked on their archives: a
# source reaches the core and the other sources only through the ops tables of the source
# interface, never by name. So no source may reference a symbol that the core's archive or
# another source's archive defines. A source that calls, say, the core's sampler_drain_may_work
# or the kernel source's tables fails the build here (the include path already keeps the core's
# private header away from it: sampler/sampler_priv.h).
#
#   cmake -DCORE=libhvprof_sampler.a "-DSOURCES=libhvprof_source_a.a;..." -DNM=nm \
#         -P check_sources.cmake
if(NOT CORE OR NOT SOURCES OR NOT NM)
  message(FATAL_ERROR "check_sources: CORE, SOURCES and NM are required")
endif()

# The global symbols an archive defines, or references (nm's posix format: "name T ...").
function(symbols_of lib mode out)
  if(mode STREQUAL "defined")
    set(flags --defined-only --extern-only)
  else()
    set(flags -u)
  endif()
  execute_process(COMMAND ${NM} ${flags} --format=posix ${lib}
    OUTPUT_VARIABLE text RESULT_VARIABLE rc ERROR_VARIABLE nm_err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_sources: ${NM} ${lib}: ${nm_err}")
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([A-Za-z0-9_.$]+) ([A-Za-z])")
      # copied first: the next MATCHES resets CMAKE_MATCH_<n>
      set(sym "${CMAKE_MATCH_1}")
      set(type "${CMAKE_MATCH_2}")
      if(mode STREQUAL "defined")
        if(NOT type MATCHES "^[UuVvWw]$")
          list(APPEND names "${sym}")
        endif()
      elseif(type MATCHES "^[Uw]$")
        list(APPEND names "${sym}")
      endif()
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

symbols_of(${CORE} defined core_defs)
set(bad "")
foreach(src IN LISTS SOURCES)
  get_filename_component(src_name ${src} NAME_WE)
  symbols_of(${src} undefined refs)
  set(others "${core_defs}")
  foreach(other IN LISTS SOURCES)
    if(NOT other STREQUAL src)
      symbols_of(${other} defined defs)
      list(APPEND others ${defs})
    endif()
  endforeach()
  foreach(ref IN LISTS refs)
    list(FIND others "${ref}" at)
    if(NOT at EQUAL -1)
      list(APPEND bad "${src_name} references ${ref}")
    endif()
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" "; " bad "${bad}")
  message(FATAL_ERROR "the recorder's sources reach past the source interface: ${bad} "
                      "(sampler/source/source.h: only the ops tables and rec_env)")
endif()
