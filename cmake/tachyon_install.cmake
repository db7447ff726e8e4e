# `cmake --install`: the static libraries, the C++ SDK's public headers, the
# tachyon CLI, and a CMake package so that an outside project needs only
#
#   find_package(tachyon CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE tachyon::tachyon)
#
# The package re-finds what the static libraries link (Boost.System,
# simdjson, oneTBB, Threads). Install from the release or portable preset:
# a sanitizer build's libraries need the sanitizer runtime at link time.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TACHYON_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tachyon)

install(TARGETS tachyon_base tachyon_inference tachyon_tools tachyon_runtime tachyon_sdk
        EXPORT tachyon_targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tachyon RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tachyon
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "README.md")
install(EXPORT tachyon_targets NAMESPACE tachyon:: FILE tachyonTargets.cmake DESTINATION ${TACHYON_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tachyonConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tachyonConfig.cmake
                              INSTALL_DESTINATION ${TACHYON_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tachyonConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tachyonConfig.cmake ${PROJECT_BINARY_DIR}/tachyonConfigVersion.cmake
        DESTINATION ${TACHYON_INSTALL_CMAKEDIR})
