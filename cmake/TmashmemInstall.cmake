# Install rules and the exported package: an outside project does
#   find_package(tmashmem REQUIRED)
#   target_link_libraries(app PRIVATE tmashmem::tmashmem)
include(CMakePackageConfigHelpers)
set(TMASHMEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tmashmem)
install(EXPORT tmashmemTargets NAMESPACE tmashmem:: DESTINATION ${TMASHMEM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tmashmemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tmashmemConfig.cmake INSTALL_DESTINATION ${TMASHMEM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tmashmemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tmashmemConfig.cmake
              ${PROJECT_BINARY_DIR}/tmashmemConfigVersion.cmake
        DESTINATION ${TMASHMEM_CMAKE_DIR})
