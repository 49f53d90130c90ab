// The parent's preparation of a sandboxed child (runner/sandbox.cc): a
// SandboxPolicy and argv checked, and turned into the ChildPlan that the
// child follows after fork() (runner/sandbox_child.h), with every string
// and array it points into owned here. Internal to crl_runner.
#ifndef CRL_RUNNER_SANDBOX_PLAN_H_
#define CRL_RUNNER_SANDBOX_PLAN_H_

#include <string>
#include <vector>

#include "runner/sandbox.h"
#include "runner/sandbox_child.h"

namespace crl::runner {

// What a ChildPlan points into. Neither copied nor moved: the plan holds
// pointers into its members.
struct ChildPlanStore {
  ChildPlanStore() = default;
  ChildPlanStore(const ChildPlanStore&) = delete;
  ChildPlanStore& operator=(const ChildPlanStore&) = delete;

  sandbox_child::ChildPlan plan;
  std::vector<const char*> argv, env, masks;
  std::string cwd, tmp_options;
  std::vector<SeccompInstruction> seccomp;
  std::vector<std::string> devices, writable;
  std::vector<sandbox_child::BindPlan> binds;
  std::vector<char> mountinfo;
};

// Fills `store` for running `argv` (which must outlive it) under `policy`.
// False with *error set when the request is malformed (argv[0] not
// absolute, a relative path, a device node outside /dev/, the runner's
// seccomp profile, which forbids execve) or the seccomp program cannot be
// built.
bool PlanChild(const SandboxPolicy& policy, const std::vector<std::string>& argv, ChildPlanStore* store,
               std::string* error);

}  // namespace crl::runner

#endif  // CRL_RUNNER_SANDBOX_PLAN_H_
