# Finds every dependency prism builds against; a missing one stops the configure with the
# Debian package that provides it. scripts/install-deps.sh installs them all.

function(prism_missing what package)
  message(FATAL_ERROR "prism: ${what} not found. Install it with:\n  apt-get install ${package}\n"
                      "(or run scripts/install-deps.sh, which installs every dependency)")
endfunction()

find_package(TBB CONFIG QUIET)
if(NOT TBB_FOUND)
  prism_missing("oneTBB" "libtbb-dev")
endif()

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
endif()
if(NOT HWLOC_FOUND)
  prism_missing("hwloc" "libhwloc-dev")
endif()

# Google Highway: the SIMD code of the streaming leaves (lib/leaf/kernels/: one file per kernel family), with
# runtime dispatch to the best instruction set of the CPU. The headers are libhwy-dev's; the
# dispatch (hwy/targets.cc, hwy/per_target.cc) is compiled into each prism library from
# Debian's source package of the same version (scripts/get-highway-source.sh), with hidden
# visibility, instead of linking libhwy.so.1, whose static initializer runs in every process
# that loads it (docs/development.md, "Coexistence with host programs").
if(PkgConfig_FOUND)
  pkg_check_modules(HWY QUIET libhwy)
endif()
if(NOT HWY_FOUND)
  prism_missing("Google Highway" "libhwy-dev")
endif()
set(PRISM_HWY_SOURCE_DIR "/usr/local/share/prism/highway-${HWY_VERSION}" CACHE PATH
  "Directory with hwy/targets.cc and hwy/per_target.cc of Highway ${HWY_VERSION} (scripts/get-highway-source.sh)")
foreach(_f IN ITEMS hwy/targets.cc hwy/per_target.cc)
  if(NOT EXISTS "${PRISM_HWY_SOURCE_DIR}/${_f}")
    message(FATAL_ERROR "prism: ${PRISM_HWY_SOURCE_DIR}/${_f} (Google Highway's runtime dispatch, "
      "compiled into prism) not found. Fetch it from Debian's source package (as root) with:\n"
      "  bash scripts/get-highway-source.sh\n(scripts/install-deps.sh runs it), or set "
      "PRISM_HWY_SOURCE_DIR to a directory holding hwy/targets.cc and hwy/per_target.cc of Highway ${HWY_VERSION}.")
  endif()
endforeach()
if(EXISTS "${PRISM_HWY_SOURCE_DIR}/SOURCE")
  file(READ "${PRISM_HWY_SOURCE_DIR}/SOURCE" _hwy_source)
  if(NOT _hwy_source MATCHES "^highway ${HWY_VERSION}[-+~ ]")
    message(FATAL_ERROR "prism: ${PRISM_HWY_SOURCE_DIR} holds ${_hwy_source} but the headers "
      "(libhwy-dev) are ${HWY_VERSION}; run scripts/get-highway-source.sh for the installed version.")
  endif()
endif()

# The BLAS builds are opened at run time with dlopen (lib/leaf/backend/blas_library.hpp), never
# linked: their paths are recorded here. Debian keeps each build in its own directory.
set(_arch_dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
function(prism_find_blas var dir name package)
  find_file(${var} ${name} PATHS ${_arch_dir}/${dir} /usr/lib/${dir} /usr/lib64/${dir} NO_DEFAULT_PATH)
  if(NOT ${var})
    prism_missing("${dir}/${name}" "${package}")
  endif()
endfunction()
prism_find_blas(PRISM_OPENBLAS_SERIAL_LIB openblas-serial libopenblas.so.0 "libopenblas0-serial")
prism_find_blas(PRISM_OPENBLAS_PTHREAD_LIB openblas-pthread libopenblas.so.0 "libopenblas0-pthread")
prism_find_blas(PRISM_OPENBLAS64_PTHREAD_LIB openblas64-pthread libopenblas64.so.0 "libopenblas64-0-pthread")
prism_find_blas(PRISM_BLIS_SERIAL_LIB blis-serial libblis.so.4 "libblis4-serial")
prism_find_blas(PRISM_BLIS_PTHREAD_LIB blis-pthread libblis.so.4 "libblis4-pthread")

if(PRISM_WITH_TESTS)
  find_package(doctest CONFIG QUIET)
  if(NOT doctest_FOUND)
    prism_missing("doctest" "doctest-dev")
  endif()
  find_package(OpenMP QUIET)
  if(NOT OpenMP_CXX_FOUND)
    prism_missing("OpenMP for C++" "g++ (libgomp)")
  endif()
endif()
if(PRISM_WITH_BENCH)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    prism_missing("Google Benchmark" "libbenchmark-dev")
  endif()
endif()

if(PRISM_WITH_MPI)
  find_package(MPI QUIET COMPONENTS C CXX)
  if(NOT MPI_C_FOUND OR NOT MPI_CXX_FOUND)
    prism_missing("MPI (for the rank level; or configure with -DPRISM_WITH_MPI=OFF)" "libopenmpi-dev openmpi-bin")
  endif()
  find_program(PRISM_MPIEXEC NAMES mpiexec mpirun)
  if(NOT PRISM_MPIEXEC)
    prism_missing("mpiexec" "openmpi-bin")
  endif()
  # The ScaLAPACK drop-in (libprism_scalapack) forwards to, and links, Debian's ScaLAPACK.
  find_library(PRISM_SCALAPACK_LIB NAMES scalapack-openmpi scalapack)
  if(NOT PRISM_SCALAPACK_LIB)
    prism_missing("ScaLAPACK (for libprism_scalapack)" "libscalapack-openmpi-dev")
  endif()
endif()
