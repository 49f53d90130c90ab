// runner/protocol.cc — see protocol.h.
#include "runner/protocol.h"

#include <cstring>
#include <limits>

#include "crl/kernel.h"
#include "runner/dtype.h"
#include "runner/wire.h"

namespace crl::runner {

const char* MessageTypeName(uint32_t type) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kLoadRequest: return "LoadRequest";
    case MessageType::kLoadResult: return "LoadResult";
    case MessageType::kCallRequest: return "CallRequest";
    case MessageType::kCallResult: return "CallResult";
    case MessageType::kTimedCallRequest: return "TimedCallRequest";
    case MessageType::kTimedCallResult: return "TimedCallResult";
    case MessageType::kShutdown: return "Shutdown";
    case MessageType::kTimedGo: return "TimedGo";
    case MessageType::kKbLoad: return "KbLoad";
    case MessageType::kKbLoaded: return "KbLoaded";
    case MessageType::kKbCall: return "KbCall";
    case MessageType::kKbCallResult: return "KbCallResult";
    case MessageType::kKbFetch: return "KbFetch";
    case MessageType::kKbOutputs: return "KbOutputs";
    case MessageType::kKbWarm: return "KbWarm";
    case MessageType::kKbWarmed: return "KbWarmed";
  }
  return "unknown";
}

const char* RunStatusName(int32_t status) {
  switch (status) {
    case kOk: return "OK";
    case kCandidateError: return "CANDIDATE_ERROR";
    case kCudaError: return "CUDA_ERROR";
    case kBadRequest: return "BAD_REQUEST";
    case kLoadFailed: return "LOAD_FAILED";
  }
  return "UNKNOWN";
}

void PoisonHost(void* data, int32_t dtype, uint64_t bytes) {
  unsigned char* p = static_cast<unsigned char*>(data);
  uint64_t word = 0;
  size_t width = 1;
  switch (dtype) {
    case CRL_FLOAT32: word = kPoisonFloat32; width = 4; break;
    case CRL_FLOAT64: word = kPoisonFloat64; width = 8; break;
    case CRL_FLOAT16: word = kPoisonFloat16; width = 2; break;
    case CRL_BFLOAT16: word = kPoisonBfloat16; width = 2; break;
    default: std::memset(p, kPoisonByte, bytes); return;
  }
  unsigned char pattern[8];
  for (size_t i = 0; i < width; ++i) pattern[i] = (word >> (8 * i)) & 0xFF;  // LE
  uint64_t whole = bytes / width * width;
  for (uint64_t off = 0; off < whole; off += width) std::memcpy(p + off, pattern, width);
  std::memset(p + whole, kPoisonByte, bytes - whole);
}

bool SpecNumel(const TensorSpec& spec, int64_t* numel) {
  if (spec.shape.size() > CRL_MAX_DIMS) return false;
  const int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : spec.shape) {
    if (d < 0) return false;
    if (d != 0 && n > kLimit / d) return false;
    n *= d;
  }
  *numel = n;
  return true;
}

bool SpecBytes(const TensorSpec& spec, uint64_t* bytes) {
  int64_t n;
  size_t w = DtypeSize(spec.dtype);
  if (w == 0 || !SpecNumel(spec, &n)) return false;
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 62) / w) return false;
  *bytes = static_cast<uint64_t>(n) * w;
  return true;
}

namespace {

void PutSpec(WireWriter* w, const TensorSpec& s) {
  w->PutString(s.name);
  w->PutI32(s.dtype);
  w->PutI64Vector(s.shape);
}

void PutSpecs(WireWriter* w, const std::vector<TensorSpec>& v) {
  w->PutU64(v.size());
  for (const auto& s : v) PutSpec(w, s);
}

bool GetSpecs(WireReader* r, std::vector<TensorSpec>* v) {
  uint64_t n;
  // A spec takes at least 8 (name length) + 4 (dtype) + 8 (dim count) bytes.
  if (!r->GetCount(&n, 20)) return false;
  v->clear();
  v->resize(n);
  for (auto& s : *v) {
    if (!r->GetString(&s.name) || !r->GetI32(&s.dtype) || !r->GetI64Vector(&s.shape)) {
      return false;
    }
  }
  return true;
}

bool Done(WireReader* r, bool fields_ok, const char* what, std::string* error) {
  std::string e;
  if (fields_ok && r->Finish(&e)) return true;
  if (error) {
    if (e.empty()) e = r->error();
    *error = std::string("decoding ") + what + ": " + e;
  }
  return false;
}

// One field on the wire, by its C++ type: each type has one encoding.
void Put(WireWriter* w, const std::string& v) { w->PutString(v); }
void Put(WireWriter* w, int32_t v) { w->PutI32(v); }
void Put(WireWriter* w, uint64_t v) { w->PutU64(v); }
void Put(WireWriter* w, bool v) { w->PutBool(v); }
void Put(WireWriter* w, double v) { w->PutF64(v); }
void Put(WireWriter* w, const std::vector<double>& v) { w->PutF64Vector(v); }
void Put(WireWriter* w, const std::vector<int64_t>& v) { w->PutI64Vector(v); }
void Put(WireWriter* w, const std::vector<std::string>& v) { w->PutStringVector(v); }
void Put(WireWriter* w, const std::vector<TensorSpec>& v) { PutSpecs(w, v); }
bool Get(WireReader* r, std::string* v) { return r->GetString(v); }
bool Get(WireReader* r, int32_t* v) { return r->GetI32(v); }
bool Get(WireReader* r, uint64_t* v) { return r->GetU64(v); }
bool Get(WireReader* r, bool* v) { return r->GetBool(v); }
bool Get(WireReader* r, double* v) { return r->GetF64(v); }
bool Get(WireReader* r, std::vector<double>* v) { return r->GetF64Vector(v); }
bool Get(WireReader* r, std::vector<int64_t>* v) { return r->GetI64Vector(v); }
bool Get(WireReader* r, std::vector<std::string>* v) { return r->GetStringVector(v); }
bool Get(WireReader* r, std::vector<TensorSpec>* v) { return GetSpecs(r, v); }

// Each message's fields in wire order, the one place they are listed:
// Fields(m, f) calls f on each (m const when encoding) while f returns true.
template <typename T>
struct Wire;

template <>
struct Wire<LoadRequest> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.library_path) && f(m.backend) && f(m.device) && f(m.l2_flush_bytes) && f(m.warm_only) &&
           f(m.library_bytes);
  }
};

template <>
struct Wire<LoadResult> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.ok) && f(m.error) && f(m.device_name);
  }
};

template <>
struct Wire<CallRequest> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.call_id) && f(m.inputs) && f(m.outputs) && f(m.scalars) && f(m.input_data) &&
           f(m.return_inputs) && f(m.reuse_buffers);
  }
};

template <>
struct Wire<CallResult> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.call_id) && f(m.status) && f(m.error) && f(m.output_data) && f(m.input_data_after) &&
           f(m.host_seconds) && f(m.threads_before) && f(m.threads_after);
  }
};

template <>
struct Wire<TimedCallRequest> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.call_id) && f(m.inputs) && f(m.outputs) && f(m.scalars) && f(m.seed) && f(m.distributions) &&
           f(m.flush_l2) && f(m.return_outputs) && f(m.staged);
  }
};

template <>
struct Wire<TimedCallResult> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.call_id) && f(m.status) && f(m.error) && f(m.stream_event_seconds) && f(m.device_sync_seconds) &&
           f(m.host_seconds) && f(m.output_data) && f(m.threads_before) && f(m.threads_after) &&
           f(m.input_addresses) && f(m.output_addresses);
  }
};

template <>
struct Wire<TimedGo> {
  template <typename M, typename F>
  static bool Fields(M& m, F&& f) {
    return f(m.call_id);
  }
};

template <typename T>
std::string EncodeFields(const T& m) {
  WireWriter w;
  Wire<T>::Fields(m, [&w](const auto& field) {
    Put(&w, field);
    return true;
  });
  return w.Take();
}

template <typename T>
bool DecodeFields(std::string_view payload, T* m, std::string* error) {
  WireReader r(payload);
  const bool ok = Wire<T>::Fields(*m, [&r](auto& field) { return Get(&r, &field); });
  return Done(&r, ok, MessageTypeName(static_cast<uint32_t>(T::kType)), error);
}

}  // namespace

std::string Encode(const LoadRequest& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, LoadRequest* m, std::string* error) { return DecodeFields(payload, m, error); }
std::string Encode(const LoadResult& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, LoadResult* m, std::string* error) { return DecodeFields(payload, m, error); }
std::string Encode(const CallRequest& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, CallRequest* m, std::string* error) { return DecodeFields(payload, m, error); }
std::string Encode(const CallResult& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, CallResult* m, std::string* error) { return DecodeFields(payload, m, error); }
std::string Encode(const TimedCallRequest& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, TimedCallRequest* m, std::string* error) {
  return DecodeFields(payload, m, error);
}
std::string Encode(const TimedCallResult& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, TimedCallResult* m, std::string* error) {
  return DecodeFields(payload, m, error);
}
std::string Encode(const TimedGo& m) { return EncodeFields(m); }
bool Decode(std::string_view payload, TimedGo* m, std::string* error) { return DecodeFields(payload, m, error); }

std::string Encode(const Shutdown&) { return std::string(); }

bool Decode(std::string_view payload, Shutdown*, std::string* error) {
  if (!payload.empty()) {
    if (error) *error = "decoding Shutdown: payload must be empty";
    return false;
  }
  return true;
}

}  // namespace crl::runner
