# ops (issue 7): GPU utilisation monitor, audit log, redaction and `gpulaunch diag`.
# Included from launcher/CMakeLists.txt after add_executable(gpulaunch): the static library gpl_ops
# (what the unit tests link) and the conf/hook glue it adds to gpulaunch.
# SHA-256 of the config file in the audit log (Debian: libssl-dev).
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET GLOBAL libcrypto)
set(_ops ${CMAKE_CURRENT_LIST_DIR})
add_library(gpl_ops STATIC
  ${_ops}/monitor.c ${_ops}/monitor_sample.c ${_ops}/monitor_replay.c ${_ops}/monitor_nvml.c
  ${_ops}/monitor_out.c ${_ops}/monitor_summary.c ${_ops}/monitor_oom.c
  ${_ops}/audit.c ${_ops}/diag_redact.c
  ${_ops}/diag_bundle.c ${_ops}/diag_collect.c ${_ops}/diag_sys.c ${_ops}/diag_verdict.c)
target_include_directories(gpl_ops PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gpl_ops PUBLIC gpl_common gpl_topology gpl_flags PkgConfig::CJSON
                      PkgConfig::HWLOC PkgConfig::LIBCRYPTO MPI::MPI_C ${CMAKE_DL_LIBS} m)
target_compile_definitions(gpl_ops PRIVATE GPULAUNCH_VERSION="${PROJECT_VERSION}")

target_sources(gpulaunch PRIVATE ${_ops}/monitor_conf.c ${_ops}/monitor_hooks.c)
target_link_libraries(gpulaunch PRIVATE gpl_ops)
