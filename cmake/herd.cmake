# herd_library(NAME SOURCES ... DEPS ...): one static library per source folder.
# DEPS lists the herd libraries this folder may use (see docs/ARCHITECTURE.md);
# tools/check_layers.py verifies that includes agree with it.
function(herd_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;EXTERNAL" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} ${ARG_EXTERNAL})
endfunction()

# herd_test(NAME SOURCES ... DEPS ...): a GoogleTest executable registered with CTest.
# LABELS may tag slow suites (e.g. "slow") that the default `make test` excludes.
function(herd_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT HERD_BUILD_TESTS)
    return()
  endif()
  foreach(src ${ARG_SOURCES})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${src})
      # A half-written change in a working tree; CI (HERD_WERROR) treats it as an error.
      if(HERD_WERROR)
        message(FATAL_ERROR "${name}: missing test source ${src}")
      endif()
      message(WARNING "${name}: missing test source ${src}; test not built")
      return()
    endif()
  endforeach()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    HERD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    HERD_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
