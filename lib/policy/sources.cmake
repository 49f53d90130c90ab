# The sources of lib/policy's libraries, named once: lib/policy/CMakeLists.txt
# builds them, and tools/gpu/CMakeLists.txt builds them again on the GPU machine.
set(CRL_POLICY_FORMAT_SOURCES config.cc safetensors.cc)
set(CRL_POLICY_TEXT_SOURCES bpe_trainer.cc tokenizer.cc)
set(CRL_POLICY_TORCH_SOURCES
  decode_graphs.cc engine.cc generate.cc loader.cc logprobs.cc lora.cc model.cc sampling.cc tensor_io.cc)
