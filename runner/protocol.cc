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

}  // namespace

std::string Encode(const LoadRequest& m) {
  WireWriter w;
  w.PutString(m.library_path);
  w.PutString(m.backend);
  w.PutI32(m.device);
  w.PutU64(m.l2_flush_bytes);
  w.PutBool(m.warm_only);
  w.PutString(m.library_bytes);
  return w.Take();
}

bool Decode(std::string_view payload, LoadRequest* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetString(&m->library_path) && r.GetString(&m->backend) &&
            r.GetI32(&m->device) && r.GetU64(&m->l2_flush_bytes) && r.GetBool(&m->warm_only) &&
            r.GetString(&m->library_bytes);
  return Done(&r, ok, "LoadRequest", error);
}

std::string Encode(const LoadResult& m) {
  WireWriter w;
  w.PutBool(m.ok);
  w.PutString(m.error);
  w.PutString(m.device_name);
  return w.Take();
}

bool Decode(std::string_view payload, LoadResult* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetBool(&m->ok) && r.GetString(&m->error) && r.GetString(&m->device_name);
  return Done(&r, ok, "LoadResult", error);
}

std::string Encode(const CallRequest& m) {
  WireWriter w;
  w.PutU64(m.call_id);
  PutSpecs(&w, m.inputs);
  PutSpecs(&w, m.outputs);
  w.PutF64Vector(m.scalars);
  w.PutStringVector(m.input_data);
  w.PutBool(m.return_inputs);
  w.PutBool(m.reuse_buffers);
  return w.Take();
}

bool Decode(std::string_view payload, CallRequest* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetU64(&m->call_id) && GetSpecs(&r, &m->inputs) &&
            GetSpecs(&r, &m->outputs) && r.GetF64Vector(&m->scalars) &&
            r.GetStringVector(&m->input_data) && r.GetBool(&m->return_inputs) &&
            r.GetBool(&m->reuse_buffers);
  return Done(&r, ok, "CallRequest", error);
}

std::string Encode(const CallResult& m) {
  WireWriter w;
  w.PutU64(m.call_id);
  w.PutI32(m.status);
  w.PutString(m.error);
  w.PutStringVector(m.output_data);
  w.PutStringVector(m.input_data_after);
  w.PutF64(m.host_seconds);
  w.PutI32(m.threads_before);
  w.PutI32(m.threads_after);
  return w.Take();
}

bool Decode(std::string_view payload, CallResult* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetU64(&m->call_id) && r.GetI32(&m->status) && r.GetString(&m->error) &&
            r.GetStringVector(&m->output_data) &&
            r.GetStringVector(&m->input_data_after) && r.GetF64(&m->host_seconds) &&
            r.GetI32(&m->threads_before) && r.GetI32(&m->threads_after);
  return Done(&r, ok, "CallResult", error);
}

std::string Encode(const TimedCallRequest& m) {
  WireWriter w;
  w.PutU64(m.call_id);
  PutSpecs(&w, m.inputs);
  PutSpecs(&w, m.outputs);
  w.PutF64Vector(m.scalars);
  w.PutU64(m.seed);
  w.PutStringVector(m.distributions);
  w.PutBool(m.flush_l2);
  w.PutBool(m.return_outputs);
  w.PutBool(m.staged);
  return w.Take();
}

bool Decode(std::string_view payload, TimedCallRequest* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetU64(&m->call_id) && GetSpecs(&r, &m->inputs) &&
            GetSpecs(&r, &m->outputs) && r.GetF64Vector(&m->scalars) &&
            r.GetU64(&m->seed) && r.GetStringVector(&m->distributions) &&
            r.GetBool(&m->flush_l2) && r.GetBool(&m->return_outputs) && r.GetBool(&m->staged);
  return Done(&r, ok, "TimedCallRequest", error);
}

std::string Encode(const TimedCallResult& m) {
  WireWriter w;
  w.PutU64(m.call_id);
  w.PutI32(m.status);
  w.PutString(m.error);
  w.PutF64(m.stream_event_seconds);
  w.PutF64(m.device_sync_seconds);
  w.PutF64(m.host_seconds);
  w.PutStringVector(m.output_data);
  w.PutI32(m.threads_before);
  w.PutI32(m.threads_after);
  w.PutI64Vector(m.input_addresses);
  w.PutI64Vector(m.output_addresses);
  return w.Take();
}

bool Decode(std::string_view payload, TimedCallResult* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetU64(&m->call_id) && r.GetI32(&m->status) && r.GetString(&m->error) &&
            r.GetF64(&m->stream_event_seconds) && r.GetF64(&m->device_sync_seconds) &&
            r.GetF64(&m->host_seconds) && r.GetStringVector(&m->output_data) &&
            r.GetI32(&m->threads_before) && r.GetI32(&m->threads_after) &&
            r.GetI64Vector(&m->input_addresses) && r.GetI64Vector(&m->output_addresses);
  return Done(&r, ok, "TimedCallResult", error);
}

std::string Encode(const TimedGo& m) {
  WireWriter w;
  w.PutU64(m.call_id);
  return w.Take();
}

bool Decode(std::string_view payload, TimedGo* m, std::string* error) {
  WireReader r(payload);
  bool ok = r.GetU64(&m->call_id);
  return Done(&r, ok, "TimedGo", error);
}

std::string Encode(const Shutdown&) { return std::string(); }

bool Decode(std::string_view payload, Shutdown*, std::string* error) {
  if (!payload.empty()) {
    if (error) *error = "decoding Shutdown: payload must be empty";
    return false;
  }
  return true;
}

}  // namespace crl::runner
