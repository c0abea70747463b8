# ops (issue 7): GPU utilisation monitor, audit log, redaction and `gpulaunch diag`.
# Included from launcher/CMakeLists.txt after add_executable(gpulaunch). Defines the static
# library gpl_ops (what the unit tests link) and adds the conf/mode glue to gpulaunch.
# Setting GPL_OPS_LIBRARY_ONLY before including defines the library alone (tests/ops does that
# when the launcher has not included this file yet).
if(NOT TARGET gpl_ops)
  find_package(PkgConfig REQUIRED)
  # SHA-256 of the config file in the audit log (Debian: libssl-dev).
  pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET GLOBAL libcrypto)
  set(_ops ${CMAKE_CURRENT_LIST_DIR})
  add_library(gpl_ops STATIC
    ${_ops}/monitor.c ${_ops}/monitor_sample.c ${_ops}/monitor_replay.c ${_ops}/monitor_nvml.c
    ${_ops}/monitor_out.c ${_ops}/monitor_summary.c ${_ops}/monitor_oom.c
    ${_ops}/audit.c ${_ops}/diag_redact.c
    ${_ops}/diag_bundle.c ${_ops}/diag_collect.c ${_ops}/diag_sys.c ${_ops}/diag_verdict.c)
  target_include_directories(gpl_ops PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(gpl_ops PUBLIC gpl_common gpl_flags PkgConfig::CJSON PkgConfig::HWLOC
                        PkgConfig::LIBCRYPTO MPI::MPI_C ${CMAKE_DL_LIBS} m)
  target_compile_definitions(gpl_ops PRIVATE GPULAUNCH_VERSION="${PROJECT_VERSION}")
  # diag writes the placement plan when the topology module is a real library.
  if(TARGET gpl_topology)
    get_target_property(_topo_type gpl_topology TYPE)
    if(NOT _topo_type STREQUAL "INTERFACE_LIBRARY")
      target_link_libraries(gpl_ops PUBLIC gpl_topology)
      target_compile_definitions(gpl_ops PRIVATE GPL_OPS_HAVE_TOPOLOGY=1)
    endif()
  endif()
endif()

if(NOT GPL_OPS_LIBRARY_ONLY AND NOT GPL_OPS_GLUE_ADDED)
  if(NOT TARGET gpulaunch)
    message(FATAL_ERROR "launcher/ops.cmake: include it after add_executable(gpulaunch ...)")
  endif()
  set(GPL_OPS_GLUE_ADDED ON)
  target_sources(gpulaunch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/monitor_conf.c
                                   ${CMAKE_CURRENT_LIST_DIR}/monitor_hooks.c)
  # launcher/CMakeLists.txt may already list mode_diag.c among the modes it finds.
  get_target_property(_gpl_srcs gpulaunch SOURCES)
  if(NOT "mode_diag.c" IN_LIST _gpl_srcs AND
     NOT "${CMAKE_CURRENT_LIST_DIR}/mode_diag.c" IN_LIST _gpl_srcs)
    target_sources(gpulaunch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/mode_diag.c)
  endif()
  target_link_libraries(gpulaunch PRIVATE gpl_ops)
endif()
