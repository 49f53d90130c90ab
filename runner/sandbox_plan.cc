// runner/sandbox_plan.cc — a SandboxPolicy checked and turned into the plan
// its child follows (sandbox_plan.h).
#include "runner/sandbox_plan.h"

#include <unistd.h>

namespace crl::runner {

using sandbox_child::BindPlan;

bool PlanChild(const SandboxPolicy& policy, const std::vector<std::string>& argv, ChildPlanStore* store,
               std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return fail("argv[0] must be an absolute path");
  }
  if (policy.seccomp == SeccompProfile::kRunner) {
    return fail("seccomp profile 'runner' forbids execve: crl-runner installs it itself");
  }
  auto absolute = [](const std::string& p) { return !p.empty() && p[0] == '/'; };
  store->writable = policy.writable_paths;
  if (!policy.workdir.empty()) store->writable.insert(store->writable.begin(), policy.workdir);
  for (const auto& p : store->writable) {
    if (!absolute(p)) return fail("writable path must be absolute: " + p);
  }
  for (const auto& p : policy.readonly_paths) {
    if (!absolute(p)) return fail("read-only path must be absolute: " + p);
  }
  for (const auto& p : policy.extra_device_nodes) {
    if (p.rfind("/dev/", 0) != 0) return fail("device node must be under /dev/: " + p);
  }

  sandbox_child::ChildPlan& plan = store->plan;
  for (const auto& a : argv) store->argv.push_back(a.c_str());
  store->argv.push_back(nullptr);
  for (const auto& e : policy.env) store->env.push_back(e.c_str());
  store->env.push_back(nullptr);
  plan.argv = store->argv.data();
  plan.envp = store->env.data();
  plan.isolate = policy.isolate_namespaces;
  plan.parent_pid = getpid();
  const bool root = geteuid() == 0;
  plan.change_ids = root && policy.run_as_uid >= 0 && policy.run_as_gid >= 0;
  plan.uid = plan.change_ids ? static_cast<uid_t>(policy.run_as_uid) : geteuid();
  plan.gid = plan.change_ids ? static_cast<gid_t>(policy.run_as_gid) : getegid();
  store->cwd = !policy.cwd.empty() ? policy.cwd : !policy.workdir.empty() ? policy.workdir : std::string("/tmp");
  plan.cwd = store->cwd.c_str();
  plan.cpu = policy.cpu_seconds;
  plan.as = policy.address_space_bytes;
  plan.fsize = policy.file_size_bytes;
  plan.nofile = policy.open_files;
  plan.nproc = policy.max_processes;
  if (!BuildSeccompProgram(policy.seccomp, &store->seccomp, error)) return false;
  plan.seccomp = store->seccomp.data();
  plan.seccomp_len = store->seccomp.size();

  store->devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  for (const auto& d : policy.extra_device_nodes) store->devices.push_back(d);
  for (const auto& d : store->devices) store->binds.push_back({d.c_str(), BindPlan::kDevice, -1});
  for (const auto& p : policy.readonly_paths) store->binds.push_back({p.c_str(), BindPlan::kReadOnly, -1});
  for (const auto& p : store->writable) store->binds.push_back({p.c_str(), BindPlan::kReadWrite, -1});
  plan.binds = store->binds.data();
  plan.num_binds = store->binds.size();
  for (const auto& m : policy.masked_paths) store->masks.push_back(m.c_str());
  plan.masks = store->masks.data();
  plan.num_masks = store->masks.size();
  store->tmp_options = "size=" + std::to_string(policy.tmpfs_bytes) + ",mode=1777";
  plan.tmp_options = store->tmp_options.c_str();
  plan.shm_options = store->tmp_options.c_str();
  store->mountinfo.resize(policy.isolate_namespaces ? (4u << 20) : 1);
  plan.mountinfo = store->mountinfo.data();
  plan.mountinfo_size = store->mountinfo.size();
  return true;
}

}  // namespace crl::runner
