// Staged timing of a KernelBench side on a host lane: what the side's own
// process reports decides nothing. For each timed sample
//
//   Stage   the reference makes the sample's inputs from its seed (the task's
//           get_inputs, run by the trusted reference process) and says where
//           they are; the worker reads them. The candidate allocates empty
//           tensors of the same shapes and says where they are.
//   Timed   the side stopped, the worker writes the sample's inputs into it
//           (both sides alike: the same bytes, written by the same hand, just
//           before the clock starts), starts its own clock, lets the side go
//           and asks it to run the calls; its answer (where each output is)
//           stops the clock and the side.
//   LastOutputs  the outputs, read from the stopped process; the inputs read
//           back (a call that modified them is caught here), and outputs that
//           share an input's memory where the reference's do not.
//
// So a candidate never sees a sample's inputs before the clock starts, can
// neither finish work after its answer (it is stopped) nor make an output
// compute itself when read (it is read from outside: no torch method, no
// harness function, no fault handler of the candidate's runs), and cannot
// move the clock: what it patches in its process is never consulted.
#ifndef CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_STAGED_H_
#define CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_STAGED_H_

#include <memory>
#include <string>
#include <vector>

#include "services/worker/formats/kernelbench/kb_session.h"
#include "services/worker/formats/task_format.h"

namespace crl {

// Not thread-safe: the session's thread drives it.
class KbStagedSide {
 public:
  KbStagedSide(KbSession* session, Side side) : session_(session), side_(side) {}

  RunnerEvent Stage(const TimedRequest& request, double timeout, const std::shared_ptr<StagedSample>& sample);
  // Whether the next Timed() of `seed` is a staged one.
  bool Ready(uint64_t seed) const { return sample_ && sample_->seed == seed && sample_->unstaged.empty(); }
  RunnerEvent Timed(const TimedRequest& request, double timeout, TimedResult* result);
  RunnerEvent LastOutputs(int call, const OutputSample& sample, std::vector<OutputTensor>* outputs);

 private:
  // An input or output of a call: a tensor where it is, or a plain value
  // (inputs only: an int or float argument, as JSON text).
  struct Tensor {
    runner::TensorSpec spec;
    uint64_t address = 0;
    uint64_t bytes = 0;
    bool is_value = false;
    std::string value;
  };
  // A harness's list of {dtype, shape, address, bytes} (or {value}) per call.
  static bool Describe(const nlohmann::json& calls, std::vector<std::vector<Tensor>>* out, std::string* error);

  KbSession* session_;
  const Side side_;
  std::shared_ptr<StagedSample> sample_;
  std::vector<std::vector<Tensor>> inputs_;   // where this side's inputs are, per call
  std::vector<std::vector<Tensor>> outputs_;  // where the last sample's outputs are, per call
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_STAGED_H_
