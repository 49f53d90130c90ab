# The sources of common/'s libraries, named once: common/CMakeLists.txt builds
# them, and tools/gpu/CMakeLists.txt builds them again on the GPU machine.
set(CRL_BASE_SOURCES
  clock.cc command.cc content_store.cc context.cc executor.cc file.cc hash.cc logging.cc memory.cc options.cc paths.cc resolve.cc
  status.cc utf8.cc)
set(CRL_HTTP_SOURCES http_client.cc)
set(CRL_COMMON_SOURCES auth.cc client.cc grpc_status.cc http_listen.cc metrics.cc server.cc service_main.cc)
