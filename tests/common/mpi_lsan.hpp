#pragma once
/// @file mpi_lsan.hpp
/// Included once by each test executable that starts Open MPI (through hypre's BoomerAMG):
/// the LeakSanitizer suppressions and options such an executable needs in the ASan build.
#include <cstdlib>

// __SANITIZE_ADDRESS__: GCC; clang 14 (the ASan build of scripts/test.sh) says it through
// __has_feature only.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ELLIPTICA_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ELLIPTICA_TEST_ASAN)
// LeakSanitizer (the ASan build of scripts/test.sh): Open MPI keeps allocations of its own
// initialisation (singleton start, component registry) until process exit, where LSan reports
// them. Only those libraries are suppressed; hypre's and elliptica's allocations are checked. To
// attribute them, the stacks are unwound in full (Open MPI and hypre are built without frame
// pointers) and Open MPI keeps its components loaded at MPI_Finalize (else their frames are
// "<unknown module>"). Both only in this test executable.
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\nleak:libhwloc.so\n"
         "leak:libevent\nleak:mca_\n";
}
namespace {
const bool kOmpiKeepsComponents = [] {
  setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 0);
  return true;
}();
}  // namespace
#endif
