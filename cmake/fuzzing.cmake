# KILN_FUZZ=ON: a clang build of the libFuzzer targets in tests/fuzz, every library they link
# instrumented for coverage and built with AddressSanitizer and UBSan (UB aborts, so libFuzzer
# reports it with the input). GCC builds stay the default; deploy/lib/common.sh kiln_build_fuzz
# configures this in build-fuzz/ (CC=clang CXX=clang++) and builds only `kiln_fuzzers`.
option(KILN_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; see deploy/fuzz.sh)" OFF)
# Where the default build's `ctest -L fuzz` finds the clang-built targets.
set(KILN_FUZZ_BINARY_DIR "${PROJECT_BINARY_DIR}-fuzz" CACHE PATH "build dir of the KILN_FUZZ=ON build")

if(KILN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KILN_FUZZ needs clang (Debian: clang, libfuzzer-14-dev): CXX=clang++ cmake -DKILN_FUZZ=ON ...")
  endif()
  # -O1 and line tables only: quicker to build (deploy/test.sh builds this every run), enough
  # for stack traces; asserts stay on (no NDEBUG), so Result's checks fire under the fuzzer too.
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only" CACHE STRING "" FORCE)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  # Clang warns about other things than GCC; the GCC build keeps -Werror, this one reports.
  list(REMOVE_ITEM KILN_WARNINGS -Werror -Wno-maybe-uninitialized)
endif()
