// The OpenAI HTTP API's JSON, in one place for both directions: crl-sampler
// as a client of vLLM / SGLang / hosted endpoints (requests out, responses
// and server-sent-event streams in) and as a server of its own policy
// (requests in, responses out). Chat completions (/v1/chat/completions) and
// completions (/v1/completions), n, log-probabilities, vLLM's
// return_tokens_as_token_ids ("token_id:123" tokens).
#ifndef CRL_SERVICES_SAMPLER_OPENAI_FORMAT_H_
#define CRL_SERVICES_SAMPLER_OPENAI_FORMAT_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/sampler.pb.h"

namespace crl::sampler {

enum class ApiKind { kChat, kCompletions };

// One choice of a response.
struct ApiChoice {
  int index = 0;
  std::string text;
  // The server's tokens as it named them, and their ids when it gave them
  // (vLLM's "token_id:N" form); ids empty otherwise.
  std::vector<std::string> tokens;
  std::vector<int> token_ids;
  std::vector<float> logprobs;
  // Per token, when asked for (top_logprobs): the most likely tokens there,
  // as the server named them, most likely first.
  std::vector<std::vector<std::pair<std::string, float>>> top;
  std::string finish_reason;
};

struct ApiResult {
  std::string model;
  std::vector<ApiChoice> choices;
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// The request body for `model`. `extensions`: send the parameters vLLM and
// SGLang accept beyond OpenAI's (top_k, return_tokens_as_token_ids).
std::string BuildApiRequest(const v1::SampleRequest& request, const std::string& model, ApiKind kind,
                            bool stream, bool extensions, int default_max_tokens);

// A complete (non-streamed) response body; DATA_LOSS naming what is wrong
// for a malformed one (the endpoint misbehaved: retrying elsewhere may help).
absl::StatusOr<ApiResult> ParseApiResponse(const std::string& body, ApiKind kind);

// A server-sent-event stream, fed as bytes arrive: "data: {...}\n\n" chunks
// merged per choice, ended by "data: [DONE]". Finish() is DATA_LOSS for a
// stream cut before [DONE] or a malformed chunk.
class ApiStream {
 public:
  explicit ApiStream(ApiKind kind) : kind_(kind) {}
  void Feed(const char* data, size_t size);
  absl::StatusOr<ApiResult> Finish();
  bool done() const { return done_; }

 private:
  void Line(const std::string& line);
  ApiKind kind_;
  std::string buffer_;
  ApiResult result_;
  bool done_ = false;
  absl::Status error_;
};

// "token_id:123" -> 123; false for other text.
bool ParseTokenIdName(const std::string& token, int* id);

// ---- Server side ----------------------------------------------------------------

// What a request asked beyond the SampleRequest.
struct ApiRequestOptions {
  std::string model;
  bool stream = false;
  bool logprobs = false;
  bool token_ids = false;  // return_tokens_as_token_ids
};

// A request body to a SampleRequest; INVALID_ARGUMENT naming the field.
absl::StatusOr<v1::SampleRequest> ParseApiRequest(const std::string& body, ApiKind kind,
                                                  ApiRequestOptions* options);
// How a token is named in logprobs: its bytes as the tokenizer decodes it
// (possibly part of a UTF-8 character: the response's "token" then shows
// U+FFFD, its "bytes" the bytes themselves), or "token_id:N" when the
// client asked for return_tokens_as_token_ids.
using TokenNamer = std::function<std::string(int id)>;

// What every part of one reply carries.
struct ApiReply {
  ApiKind kind = ApiKind::kChat;
  std::string model;
  std::string id;
  int64_t created = 0;
  // Include each token's log-probability (and its top tokens where the
  // completion has them).
  bool logprobs = false;
  TokenNamer name;
};

// The response body.
nlohmann::json ApiResponseJson(const v1::SampleResponse& response, const ApiReply& reply);
// A streamed piece of choice `index` (SamplerBackendInterface::SampleStream)
// as server-sent events ("data: {...}\n\n"): its text, tokens and
// log-probabilities, then the finish reason when the piece has one; `first`:
// the choice's first piece (a chat delta names the role).
std::string ApiStreamEvents(const v1::Completion& piece, int index, bool first, const ApiReply& reply);
// After the last piece: the usage event and "data: [DONE]".
std::string ApiStreamEnd(const v1::SampleResponse& response, const ApiReply& reply);
// A failure once the stream has begun (ApiError's object), as the event
// that ends it.
std::string ApiStreamError(const nlohmann::json& error);
// {"error": {"message", "type", "param", "code"}}.
nlohmann::json ApiError(const std::string& message, const std::string& type, const std::string& param);

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_OPENAI_FORMAT_H_
