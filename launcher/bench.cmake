# bench (issue 5): the `gpulaunch bench` engine as a library (what the unit tests link) and its
# link into gpulaunch; launcher/mode_bench.c (the mode itself) is picked up by CMakeLists.txt.
# Included from launcher/CMakeLists.txt after add_executable(gpulaunch).
set(_bench ${CMAKE_CURRENT_LIST_DIR})
set(_bench_sources ${_bench}/bench_progress.c ${_bench}/bench_geom.c ${_bench}/bench_data.c ${_bench}/bench_run.c
    ${_bench}/bench_out.c ${_bench}/bench_timer.c)
if(GPULAUNCH_HAVE_CUDA)
  list(APPEND _bench_sources ${_bench}/bench_cuda.c)
else()
  list(APPEND _bench_sources ${_bench}/bench_cuda_stub.c)
endif()
add_library(gpl_bench STATIC ${_bench_sources})
target_include_directories(gpl_bench PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gpl_bench PUBLIC gpl_comm gpl_kernels gpl_common MPI::MPI_C PkgConfig::CJSON m
                      PRIVATE gpl_flags)
if(GPULAUNCH_HAVE_CUDA)
  # cuda_runtime.h as a system header: our -Wstrict-prototypes is not its business.
  target_include_directories(gpl_bench SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(gpl_bench PRIVATE CUDA::cudart)
endif()
target_link_libraries(gpulaunch PRIVATE gpl_bench)
