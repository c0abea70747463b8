# accept (issue 6): `gpulaunch accept` -- the checks, the bad-node search and the reports as a
# library (what the unit tests link), linked into gpulaunch; launcher/mode_accept.c (the mode)
# is picked up by launcher/CMakeLists.txt. Included after add_executable(gpulaunch) and after
# ops.cmake / bench.cmake, whose libraries it uses when they exist.
set(_acc ${CMAKE_CURRENT_LIST_DIR})
add_library(gpl_accept STATIC
  ${_acc}/accept_report.c ${_acc}/accept_opts.c ${_acc}/accept_node.c ${_acc}/accept_nvml.c
  ${_acc}/accept_net.c ${_acc}/accept_bw.c ${_acc}/accept_measure.c ${_acc}/accept_search.c
  ${_acc}/accept_out_text.c ${_acc}/accept_out_junit.c ${_acc}/accept_out_html.c
  ${_acc}/accept_xml.c)
target_include_directories(gpl_accept PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gpl_accept PUBLIC gpl_launcher gpl_topology gpl_comm gpl_common MPI::MPI_C
                      PkgConfig::CJSON PkgConfig::HWLOC m PRIVATE gpl_flags)
# NVML checks through the GPU monitor's loader (launcher/monitor_nvml.c) when it is built.
if(TARGET gpl_ops)
  target_link_libraries(gpl_accept PUBLIC gpl_ops)
  target_compile_definitions(gpl_accept PRIVATE GPL_ACCEPT_HAVE_MONITOR=1)
endif()
# The bus bandwidth definition of `gpulaunch bench` when it is built.
if(TARGET gpl_bench)
  target_link_libraries(gpl_accept PUBLIC gpl_bench)
  target_compile_definitions(gpl_accept PRIVATE GPL_ACCEPT_HAVE_BENCH=1)
endif()
target_link_libraries(gpulaunch PRIVATE gpl_accept)
