# The sources of crl-sampler's libraries, named once: services/sampler/CMakeLists.txt
# builds them, and tools/gpu/CMakeLists.txt builds them again on the GPU machine.
set(CRL_SAMPLER_CLIENT_SOURCES sampler_client.cc)
set(CRL_SAMPLER_LIB_SOURCES
  openai_backend.cc openai_format.cc openai_server.cc sampler_metrics.cc sampler_service.cc sampler_setup.cc)
set(CRL_SAMPLER_LOCAL_SOURCES local_backend.cc)
