# The module layering of the library: the one table that both the CMake targets
# (cmake/elliptica_module.cmake) and the include check (cmake/check_layering.cmake) read.
#
# ELLIPTICA_LAYER_<m> lists every module that module <m> may use (its headers and sources may
# include "elliptica/<x>/..." or the private "<x>/..." of src/ only for <x> = <m> or one listed
# here); the target elliptica_<m> links exactly these, in this order. The list is the full set
# below <m> (written out, not derived), so what a module may see is read in one place:
#
#   core                                  (nothing)
#   krylov     -> core
#   multigrid  -> krylov, core
#   fmm        -> krylov, core
#   ifmm       -> fmm, krylov, core
#   bem        -> ifmm, fmm, krylov, core
#   ewald      -> core
#
# A new module: a line here, a folder src/<m>/ with a CMakeLists.txt calling
# elliptica_add_module(<m> SOURCES ...), headers in include/elliptica/<m>/, and its name in
# ELLIPTICA_MODULES (in an order where each module comes after everything it uses).
# apps/, python/, tests/, bench/ and fuzz/ are not modules: they may include anything.
set(ELLIPTICA_MODULES core krylov multigrid fmm ifmm bem ewald)

set(ELLIPTICA_LAYER_core "")
set(ELLIPTICA_LAYER_krylov core)
set(ELLIPTICA_LAYER_multigrid krylov core)
set(ELLIPTICA_LAYER_fmm krylov core)
set(ELLIPTICA_LAYER_ifmm fmm krylov core)
set(ELLIPTICA_LAYER_bem ifmm fmm krylov core)
set(ELLIPTICA_LAYER_ewald core)
