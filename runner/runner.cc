// runner/runner.cc — see runner.h.
#include "runner/runner.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "crl/kernel.h"
#include "runner/dtype.h"
#include "runner/inputs.h"
#include "runner/seccomp.h"
#include "runner/wire.h"

namespace crl::runner {
namespace {

// Threads of this process (advisory; /proc/self/task).
int32_t CountThreads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int32_t n = 0;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

// A request-level failure: status + message.
struct Failure {
  int32_t status = kOk;
  std::string error;
  bool fatal = false;  // backend unusable: report and exit
};

class Runner {
 public:
  explicit Runner(const RunnerOptions& options) : options_(options) {}

  int Serve() {
    for (;;) {
      Frame frame;
      std::string error;
      ReadStatus st = ReadFrame(options_.request_fd, &frame, &error);
      if (st == ReadStatus::kEof) return 0;
      if (st != ReadStatus::kOk) {
        std::fprintf(stderr, "crl-runner: reading request: %s\n", error.c_str());
        return 2;
      }
      int rc = -1;
      switch (static_cast<MessageType>(frame.type)) {
        case MessageType::kLoadRequest: rc = HandleLoad(frame); break;
        case MessageType::kCallRequest: rc = HandleCall(frame); break;
        case MessageType::kTimedCallRequest: rc = HandleTimedCall(frame); break;
        case MessageType::kTimedGo: rc = HandleTimedGo(frame); break;
        case MessageType::kShutdown: return 0;
        default:
          std::fprintf(stderr, "crl-runner: unexpected frame type %u\n", frame.type);
          return 2;
      }
      if (rc >= 0) return rc;
    }
  }

 private:
  // Each handler returns -1 to keep serving, or an exit code.
  int HandleLoad(const Frame& frame) {
    LoadRequest req;
    LoadResult res;
    std::string error;
    if (!DecodeFrame(frame, &req, &error)) {
      res.error = error;
    } else if (entry_ != nullptr || (backend_ != nullptr && (req.warm_only || !warm_))) {
      res.error = "already loaded";
    } else if (backend_ != nullptr && req.backend != backend_->Name()) {
      res.error = "warmed for the " + std::string(backend_->Name()) + " backend, asked to load for " + req.backend;
    } else if (req.warm_only) {
      warm_ = Init(req, &res);
      if (warm_) {
        res.ok = true;
        res.device_name = backend_->DeviceName();
      }
    } else if (backend_ != nullptr || Init(req, &res)) {
      Load(req, &res);
    }
    if (!Send(res)) return 2;
    return backend_fatal_ ? kCudaErrorExitCode : -1;
  }

  // Creates and initialises the backend; false with res->error set.
  bool Init(const LoadRequest& req, LoadResult* res) {
    std::string error;
    backend_ = options_.backend_factory(req.backend, &error);
    if (backend_ == nullptr) {
      res->error = error;
      return false;
    }
    BackendResult br = backend_->Init(req.device, req.l2_flush_bytes, &error);
    if (br != BackendResult::kOk) {
      res->error = std::string(backend_->Name()) + " backend init: " + error;
      backend_fatal_ = br == BackendResult::kFatal;
      backend_.reset();
      return false;
    }
    return true;
  }

  // An anonymous in-memory file holding `bytes` (made before seccomp: the
  // filter allows no memfd_create); its /proc path, or "" with *error set.
  static std::string InMemoryLibrary(const std::string& bytes, std::string* error) {
    const int fd = memfd_create("crl-library", MFD_CLOEXEC);
    if (fd < 0) {
      *error = std::string("memfd_create: ") + std::strerror(errno);
      return "";
    }
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *error = std::string("writing the library: ") + std::strerror(errno);
        close(fd);
        return "";
      }
      done += static_cast<size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd);  // stays open: dlopen maps it
  }

  // Loads the library into an initialised backend: seccomp first (library
  // constructors are candidate code), then dlopen.
  void Load(const LoadRequest& req, LoadResult* res) {
    std::string error;
    std::string path = req.library_path;
    if (!req.library_bytes.empty()) {
      path = InMemoryLibrary(req.library_bytes, &error);
      if (path.empty()) {
        res->error = error;
        backend_.reset();
        return;
      }
    }
    if (options_.install_seccomp && !InstallSeccomp(SeccompProfile::kRunner, &error)) {
      res->error = "seccomp: " + error;
      backend_.reset();
      return;
    }
    dlerror();
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      res->error = std::string("dlopen: ") + (e != nullptr ? e : "unknown error");
      backend_.reset();
      return;
    }
    void* sym = dlsym(handle_, CRL_ENTRY_SYMBOL);
    if (sym == nullptr) {
      res->error = std::string("symbol ") + CRL_ENTRY_SYMBOL + " not found in " +
                   req.library_path;
      backend_.reset();
      return;
    }
    entry_ = reinterpret_cast<crl_run_fn>(sym);
    res->ok = true;
    res->device_name = backend_->DeviceName();
  }

  template <typename Result>
  bool Send(const Result& res) {
    std::string error;
    if (!WriteMessage(options_.response_fd, res, &error)) {
      std::fprintf(stderr, "crl-runner: writing response: %s\n", error.c_str());
      return false;
    }
    return true;
  }

  // Maps a backend result to a Failure. True if ok.
  bool Check(BackendResult r, const std::string& error, Failure* f) {
    if (r == BackendResult::kOk) return true;
    f->fatal = r == BackendResult::kFatal;
    f->status = f->fatal ? kCudaError : kBadRequest;
    f->error = error;
    return false;
  }

  static bool CheckSpecs(const std::vector<TensorSpec>& specs, const char* what,
                         std::vector<uint64_t>* bytes, Failure* f) {
    bytes->clear();
    for (size_t i = 0; i < specs.size(); ++i) {
      uint64_t b = 0;
      if (!DtypeIsValid(specs[i].dtype) || !SpecBytes(specs[i], &b)) {
        f->status = kBadRequest;
        f->error = std::string("bad ") + what + " spec #" + std::to_string(i) + " '" +
                   specs[i].name + "' (dtype or shape)";
        return false;
      }
      bytes->push_back(b);
    }
    if (specs.size() > (1u << 16)) {
      f->status = kBadRequest;
      f->error = std::string("too many ") + what + "s";
      return false;
    }
    return true;
  }

  static crl_tensor MakeTensor(const TensorSpec& spec, void* data) {
    crl_tensor t;
    std::memset(&t, 0, sizeof(t));
    t.data = data;
    t.dtype = spec.dtype;
    t.ndim = static_cast<int32_t>(spec.shape.size());
    for (size_t d = 0; d < spec.shape.size(); ++d) t.shape[d] = spec.shape[d];
    return t;
  }

  // Fresh buffers for one call. Previous call's buffers are freed after the
  // new ones are allocated.
  bool AllocateAll(const std::vector<uint64_t>& sizes, std::vector<void*>* ptrs, Failure* f) {
    for (uint64_t b : sizes) {
      void* p = nullptr;
      std::string error;
      if (!Check(backend_->Allocate(b, &p, &error), error, f)) return false;
      ptrs->push_back(p);
    }
    return true;
  }

  void ReleaseRetired(Failure* f) {
    for (void* p : retired_) {
      std::string error;
      if (!Check(backend_->Free(p, &error), error, f) && f->fatal) break;
    }
    retired_.clear();
  }

  // Calls crl_run once on the given buffers (a device sync after it); the
  // timing and thread counts are the runner's own (advisory).
  void Invoke(const std::vector<TensorSpec>& in_specs, const std::vector<TensorSpec>& out_specs,
              const std::vector<double>& scalars, const std::vector<void*>& in_ptrs,
              const std::vector<void*>& out_ptrs, Failure* f, CallTiming* timing, int32_t* threads_before,
              int32_t* threads_after) {
    std::string error;
    // The candidate gets copies; nothing below reads them back.
    std::vector<crl_tensor> in_t, out_t;
    for (size_t i = 0; i < in_specs.size(); ++i) in_t.push_back(MakeTensor(in_specs[i], in_ptrs[i]));
    for (size_t i = 0; i < out_specs.size(); ++i) {
      out_t.push_back(MakeTensor(out_specs[i], out_ptrs[i]));
    }
    std::vector<double> scalar_copy = scalars;
    crl_args args;
    std::memset(&args, 0, sizeof(args));
    args.inputs = in_t.empty() ? nullptr : in_t.data();
    args.num_inputs = static_cast<int32_t>(in_t.size());
    args.outputs = out_t.empty() ? nullptr : out_t.data();
    args.num_outputs = static_cast<int32_t>(out_t.size());
    args.scalars = scalar_copy.empty() ? nullptr : scalar_copy.data();
    args.num_scalars = static_cast<int32_t>(scalar_copy.size());

    *threads_before = CountThreads();
    int rc = 0;
    crl_run_fn entry = entry_;
    // An exception escaping crl_run (e.g. std::bad_alloc under RLIMIT_AS) is
    // the candidate's failure, not the runner's.
    std::string thrown;
    BackendResult br = backend_->Invoke(
        [&args, entry, &thrown](void* stream) {
          args.stream = stream;
          try {
            return entry(&args);
          } catch (const std::exception& e) {
            thrown = std::string("crl_run threw ") + e.what();
          } catch (...) {
            thrown = "crl_run threw a non-standard exception";
          }
          return -1;
        },
        &rc, timing, &error);
    *threads_after = CountThreads();
    if (!Check(br, error, f)) return;
    if (!thrown.empty() || rc != 0) {
      f->status = kCandidateError;
      f->error = !thrown.empty() ? thrown : "crl_run returned " + std::to_string(rc);
      return;
    }
  }

  // The common body of both call kinds: buffers, poison, invoke, copy back.
  // `inputs` holds the host bytes of every input.
  void Execute(const std::vector<TensorSpec>& in_specs, const std::vector<TensorSpec>& out_specs,
               const std::vector<double>& scalars, const std::vector<std::string>& inputs,
               bool flush_l2, bool copy_outputs, bool copy_inputs, bool reuse, Failure* f,
               CallTiming* timing, std::vector<std::string>* outputs,
               std::vector<std::string>* inputs_after, int32_t* threads_before,
               int32_t* threads_after) {
    std::vector<uint64_t> in_bytes, out_bytes;
    if (!CheckSpecs(in_specs, "input", &in_bytes, f) ||
        !CheckSpecs(out_specs, "output", &out_bytes, f)) {
      return;
    }
    for (size_t i = 0; i < in_specs.size(); ++i) {
      if (inputs[i].size() != in_bytes[i]) {
        f->status = kBadRequest;
        f->error = "input #" + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                   " bytes, its spec needs " + std::to_string(in_bytes[i]);
        return;
      }
    }
    std::vector<void*> in_ptrs, out_ptrs;
    std::vector<uint64_t> all_bytes = in_bytes;
    all_bytes.insert(all_bytes.end(), out_bytes.begin(), out_bytes.end());
    if (reuse && all_bytes == retired_bytes_ && retired_.size() == all_bytes.size()) {
      // Same addresses as the previous call, refilled below.
      in_ptrs.assign(retired_.begin(), retired_.begin() + in_bytes.size());
      out_ptrs.assign(retired_.begin() + in_bytes.size(), retired_.end());
    } else {
      bool ok = AllocateAll(in_bytes, &in_ptrs, f) && AllocateAll(out_bytes, &out_ptrs, f);
      std::vector<void*> mine = in_ptrs;
      mine.insert(mine.end(), out_ptrs.begin(), out_ptrs.end());
      if (!f->fatal) ReleaseRetired(f);
      // From here on this call's buffers are retired at the next call.
      retired_ = mine;
      retired_bytes_ = all_bytes;
      if (!ok || f->status != kOk) return;
    }

    std::string error;
    for (size_t i = 0; i < in_ptrs.size(); ++i) {
      if (!Check(backend_->CopyIn(in_ptrs[i], inputs[i].data(), in_bytes[i], &error), error, f)) {
        return;
      }
    }
    for (size_t i = 0; i < out_ptrs.size(); ++i) {
      if (!Check(backend_->Poison(out_ptrs[i], out_specs[i].dtype, out_bytes[i], &error), error,
                 f)) {
        return;
      }
    }
    if (!Check(backend_->Synchronize(&error), error, f)) return;
    if (flush_l2 && !Check(backend_->FlushL2(&error), error, f)) return;

    Invoke(in_specs, out_specs, scalars, in_ptrs, out_ptrs, f, timing, threads_before, threads_after);
    if (f->status != kOk) return;
    if (copy_outputs) {
      outputs->resize(out_ptrs.size());
      for (size_t i = 0; i < out_ptrs.size(); ++i) {
        (*outputs)[i].resize(out_bytes[i]);
        if (!Check(backend_->CopyOut(&(*outputs)[i][0], out_ptrs[i], out_bytes[i], &error), error,
                   f)) {
          outputs->clear();
          return;
        }
      }
    }
    if (copy_inputs) {
      inputs_after->resize(in_ptrs.size());
      for (size_t i = 0; i < in_ptrs.size(); ++i) {
        (*inputs_after)[i].resize(in_bytes[i]);
        if (!Check(backend_->CopyOut(&(*inputs_after)[i][0], in_ptrs[i], in_bytes[i], &error),
                   error, f)) {
          inputs_after->clear();
          return;
        }
      }
    }
  }

  int HandleCall(const Frame& frame) {
    CallRequest req;
    CallResult res;
    Failure f;
    std::string error;
    // A call reuses or frees the buffers a staged call would run on.
    staged_.ready = false;
    if (!DecodeFrame(frame, &req, &error)) {
      f.status = kBadRequest;
      f.error = error;
    } else if (entry_ == nullptr) {
      f.status = kLoadFailed;
      f.error = "no library loaded";
    } else if (req.input_data.size() != req.inputs.size()) {
      f.status = kBadRequest;
      f.error = "input_data has " + std::to_string(req.input_data.size()) + " entries for " +
                std::to_string(req.inputs.size()) + " inputs";
    }
    res.call_id = req.call_id;
    if (f.status == kOk) {
      CallTiming timing;
      try {
        Execute(req.inputs, req.outputs, req.scalars, req.input_data, /*flush_l2=*/false,
                /*copy_outputs=*/true, req.return_inputs, req.reuse_buffers, &f, &timing, &res.output_data,
                &res.input_data_after, &res.threads_before, &res.threads_after);
      } catch (const std::bad_alloc&) {
        f.status = kBadRequest;
        f.error = "runner out of memory";
      }
      res.host_seconds = timing.host_seconds;
    }
    res.status = f.status;
    res.error = f.error;
    if (f.status != kOk) {
      res.output_data.clear();
      res.input_data_after.clear();
    }
    if (!Send(res)) return 2;
    return f.fatal ? kCudaErrorExitCode : -1;
  }

  int HandleTimedCall(const Frame& frame) {
    TimedCallRequest req;
    TimedCallResult res;
    Failure f;
    std::string error;
    if (!DecodeFrame(frame, &req, &error)) {
      f.status = kBadRequest;
      f.error = error;
    } else if (entry_ == nullptr) {
      f.status = kLoadFailed;
      f.error = "no library loaded";
    } else if (req.distributions.size() != req.inputs.size()) {
      f.status = kBadRequest;
      f.error = "need one distribution per input";
    }
    res.call_id = req.call_id;
    staged_.ready = false;
    if (f.status == kOk && req.staged) {
      try {
        Stage(req, &f, &res);
      } catch (const std::bad_alloc&) {
        f.status = kBadRequest;
        f.error = "runner out of memory";
      }
    } else if (f.status == kOk) {
      try {
        // Inputs are generated before anything is timed.
        std::vector<std::string> inputs(req.inputs.size());
        for (size_t i = 0; i < req.inputs.size() && f.status == kOk; ++i) {
          Distribution dist;
          int64_t numel = 0;
          if (!ParseDistribution(req.distributions[i], &dist, &error) ||
              !CheckDistributionForDtype(dist, req.inputs[i].dtype, &error)) {
            f.status = kBadRequest;
            f.error = "input #" + std::to_string(i) + ": " + error;
          } else if (!SpecNumel(req.inputs[i], &numel)) {
            f.status = kBadRequest;
            f.error = "input #" + std::to_string(i) + ": bad shape";
          } else {
            inputs[i] = Generate(dist, req.inputs[i].dtype, numel, DeriveSeed(req.seed, i));
          }
        }
        if (f.status == kOk) {
          CallTiming timing;
          std::vector<std::string> unused;
          Execute(req.inputs, req.outputs, req.scalars, inputs, req.flush_l2, req.return_outputs,
                  /*copy_inputs=*/false, /*reuse=*/false, &f, &timing, &res.output_data, &unused,
                  &res.threads_before, &res.threads_after);
          res.stream_event_seconds = timing.stream_event_seconds;
          res.device_sync_seconds = timing.device_sync_seconds;
          res.host_seconds = timing.host_seconds;
        }
      } catch (const std::bad_alloc&) {
        f.status = kBadRequest;
        f.error = "runner out of memory";
      }
    }
    res.status = f.status;
    res.error = f.error;
    if (f.status != kOk) res.output_data.clear();
    if (!Send(res)) return 2;
    return f.fatal ? kCudaErrorExitCode : -1;
  }

  // A staged timed call: buffers allocated (outputs poisoned), the L2
  // flushed, the addresses answered; the worker writes the inputs.
  void Stage(const TimedCallRequest& req, Failure* f, TimedCallResult* res) {
    if (std::string(backend_->Name()) != "host") {
      f->status = kBadRequest;
      f->error = "staged timed calls are for the host backend";
      return;
    }
    std::vector<uint64_t> in_bytes, out_bytes;
    if (!CheckSpecs(req.inputs, "input", &in_bytes, f) || !CheckSpecs(req.outputs, "output", &out_bytes, f)) return;
    std::vector<void*> in_ptrs, out_ptrs;
    const bool ok = AllocateAll(in_bytes, &in_ptrs, f) && AllocateAll(out_bytes, &out_ptrs, f);
    std::vector<void*> mine = in_ptrs;
    mine.insert(mine.end(), out_ptrs.begin(), out_ptrs.end());
    if (!f->fatal) ReleaseRetired(f);
    retired_ = mine;
    retired_bytes_ = in_bytes;
    retired_bytes_.insert(retired_bytes_.end(), out_bytes.begin(), out_bytes.end());
    if (!ok || f->status != kOk) return;
    std::string error;
    for (size_t i = 0; i < out_ptrs.size(); ++i) {
      if (!Check(backend_->Poison(out_ptrs[i], req.outputs[i].dtype, out_bytes[i], &error), error, f)) return;
    }
    if (!Check(backend_->Synchronize(&error), error, f)) return;
    if (req.flush_l2 && !Check(backend_->FlushL2(&error), error, f)) return;
    staged_ = {req.inputs, req.outputs, req.scalars, in_ptrs, out_ptrs, true};
    for (void* p : in_ptrs) res->input_addresses.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)));
    for (void* p : out_ptrs) res->output_addresses.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)));
  }

  int HandleTimedGo(const Frame& frame) {
    TimedGo req;
    TimedCallResult res;
    Failure f;
    std::string error;
    if (!DecodeFrame(frame, &req, &error)) {
      f.status = kBadRequest;
      f.error = error;
    } else if (!staged_.ready) {
      f.status = kBadRequest;
      f.error = "TimedGo without a staged timed call";
    }
    res.call_id = req.call_id;
    if (f.status == kOk) {
      staged_.ready = false;
      CallTiming timing;
      Invoke(staged_.inputs, staged_.outputs, staged_.scalars, staged_.in_ptrs, staged_.out_ptrs, &f, &timing,
             &res.threads_before, &res.threads_after);
      res.stream_event_seconds = timing.stream_event_seconds;
      res.device_sync_seconds = timing.device_sync_seconds;
      res.host_seconds = timing.host_seconds;
    }
    res.status = f.status;
    res.error = f.error;
    if (!Send(res)) return 2;
    return f.fatal ? kCudaErrorExitCode : -1;
  }

  struct Staged {
    std::vector<TensorSpec> inputs, outputs;
    std::vector<double> scalars;
    std::vector<void*> in_ptrs, out_ptrs;
    bool ready = false;
  };

  RunnerOptions options_;
  Staged staged_;
  std::unique_ptr<DeviceBackend> backend_;
  bool backend_fatal_ = false;
  // Brought up by a warm_only LoadRequest; the next LoadRequest only loads.
  bool warm_ = false;
  void* handle_ = nullptr;
  crl_run_fn entry_ = nullptr;
  std::vector<void*> retired_;
  std::vector<uint64_t> retired_bytes_;  // sizes of retired_, inputs then outputs
};

}  // namespace

int RunRunner(const RunnerOptions& options) {
  Runner runner(options);
  return runner.Serve();
}

}  // namespace crl::runner
