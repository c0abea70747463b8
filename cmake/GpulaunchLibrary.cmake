# libgpulaunch: the public API (include/gpulaunch/*.h) as one shared library, and what installs it:
# the library, the public headers only (internals stay internal, libuv's rule), a pkg-config file
# and a CMake package with the imported target gpulaunch::gpulaunch.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GPL_PUBLIC_HEADERS
    ${PROJECT_SOURCE_DIR}/include/gpulaunch/gpulaunch.h
    ${PROJECT_SOURCE_DIR}/include/gpulaunch/comm.h
    ${PROJECT_SOURCE_DIR}/include/gpulaunch/error.h
    ${PROJECT_SOURCE_DIR}/include/gpulaunch/types.h
    ${PROJECT_BINARY_DIR}/include/gpulaunch/version.h)

# The code is the static libraries the launcher links (built position-independent), taken whole;
# the headers are the target's only sources. The version script exports gpl_* and nothing else.
add_library(gpl_shared SHARED ${GPL_PUBLIC_HEADERS})
target_link_libraries(gpl_shared PRIVATE
  -Wl,--whole-archive gpl_comm gpl_kernels gpl_mpix gpl_common -Wl,--no-whole-archive gpl_flags)
target_link_options(gpl_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libgpulaunch.map)
if(NOT GPULAUNCH_ASAN AND NOT GPULAUNCH_UBSAN)
  # Every symbol resolved at link time: a program needs nothing but -lgpulaunch. (Sanitizer
  # runtimes are resolved in the program instead.)
  target_link_options(gpl_shared PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(gpl_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# 0.x promises no ABI between minor versions: the soname carries the minor too until 1.0.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_gpl_soversion ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  set(_gpl_compat SameMinorVersion)
else()
  set(_gpl_soversion ${PROJECT_VERSION_MAJOR})
  set(_gpl_compat SameMajorVersion)
endif()
set_target_properties(gpl_shared PROPERTIES
  OUTPUT_NAME gpulaunch EXPORT_NAME gpulaunch LINKER_LANGUAGE C
  VERSION ${PROJECT_VERSION} SOVERSION ${_gpl_soversion}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libgpulaunch.map
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
add_library(gpulaunch::gpulaunch ALIAS gpl_shared)

install(TARGETS gpl_shared EXPORT gpulaunchTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${GPL_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpulaunch)

set(_gpl_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/gpulaunch)
install(EXPORT gpulaunchTargets NAMESPACE gpulaunch:: DESTINATION ${_gpl_cmakedir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpulaunchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpulaunchConfig.cmake INSTALL_DESTINATION ${_gpl_cmakedir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpulaunchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_gpl_compat})
install(FILES ${PROJECT_BINARY_DIR}/gpulaunchConfig.cmake
              ${PROJECT_BINARY_DIR}/gpulaunchConfigVersion.cmake DESTINATION ${_gpl_cmakedir})

# pkg-config: prefix relative to the .pc file, so `cmake --install --prefix DIR` anywhere works.
file(RELATIVE_PATH GPL_PC_PREFIX_FROM_PCDIR
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" GPL_PC_PREFIX_FROM_PCDIR "${GPL_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/gpulaunch.pc.in ${PROJECT_BINARY_DIR}/gpulaunch.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpulaunch.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
