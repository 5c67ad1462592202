# KILN_SANITIZE: build everything (libraries, binaries, tests) under a sanitizer (issue 13).
#   address  AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer; UB aborts the
#            process (-fno-sanitize-recover) so a test that hits it fails instead of logging.
#   thread   ThreadSanitizer.
# Empty (the default) is the normal build. deploy/test.sh --sanitize=address|thread builds in
# build-asan/ or build-tsan/ with this set; runtime options come from there and
# deploy/sanitizers/.
set(KILN_SANITIZE "" CACHE STRING "Build under a sanitizer: empty, address (ASan+UBSan) or thread (TSan)")
set_property(CACHE KILN_SANITIZE PROPERTY STRINGS "" address thread)

if(KILN_SANITIZE STREQUAL "")
  return()
elseif(KILN_SANITIZE STREQUAL "address")
  set(KILN_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(KILN_SANITIZE STREQUAL "thread")
  set(KILN_SANITIZE_FLAGS -fsanitize=thread)
  # GCC's -Wtsan: "atomic_thread_fence is not supported with -fsanitize=thread", raised by
  # Boost.Asio's headers (detail/std_fenced_block.hpp, detail/atomic_count.hpp) in every file
  # that includes Asio. Kiln's own code has no fences. Left a warning, so one of ours would
  # still show; a race report that comes from those fences goes to deploy/sanitizers/tsan.supp.
  list(APPEND KILN_WARNINGS -Wno-error=tsan)
else()
  message(FATAL_ERROR "KILN_SANITIZE must be empty, address or thread, not '${KILN_SANITIZE}'")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KILN_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()

# -fno-omit-frame-pointer for whole stacks in reports. -O1 after the build type's -O2: the
# sanitizers' recommended level (precise stacks, and much quicker to compile on 2 cores).
add_compile_options(${KILN_SANITIZE_FLAGS} -fno-omit-frame-pointer -O1)
add_link_options(${KILN_SANITIZE_FLAGS})
message(STATUS "KILN_SANITIZE=${KILN_SANITIZE}: ${KILN_SANITIZE_FLAGS}")
