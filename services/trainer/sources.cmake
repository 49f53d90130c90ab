# The sources of crl-trainer's libraries, named once: services/trainer/CMakeLists.txt
# builds them, and tools/gpu/CMakeLists.txt builds them again on the GPU machine.
set(CRL_TRAINER_CLIENT_SOURCES trainer_client.cc)
set(CRL_TRAINER_CORE_SOURCES
  batch.cc checkpoint_dirs.cc distributed.cc grad_buckets.cc objective.cc rendezvous.cc step_runner.cc trainer.cc
  trainer_state.cc)
set(CRL_TRAINER_LIB_SOURCES
  intake.cc local_trainer.cc offline.cc trainer_metrics.cc trainer_service.cc trainer_setup.cc journal.cc training_loop.cc)
