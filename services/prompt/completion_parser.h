// ParseCompletion's logic, free of gRPC: a model's completion split into the
// performance analysis, the algorithm design and the code, or a typed reject
// (prompt.proto ParseError) that says what is wrong. A reject never reaches a
// worker.
//
// Code blocks are Markdown fences (``` or ~~~, three or more, closed by the
// same character at least as long; CRLF accepted); a fence left open is a
// cut-off completion. With several blocks, the answer is the one block under
// the "Code" heading, else the one block that holds the entry point in the
// task's language; otherwise MULTIPLE_CODE_BLOCKS.
#ifndef CRL_SERVICES_PROMPT_COMPLETION_PARSER_H_
#define CRL_SERVICES_PROMPT_COMPLETION_PARSER_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "crl/v1/prompt.pb.h"
#include "lib/task/backend.h"

namespace crl::prompt {

struct ParseOptions {
  TaskFormat format = TaskFormat::kNative;
  // Native tasks: the language expected (C++ for host, CUDA for cuda).
  BackendKind backend = BackendKind::kCuda;
  // "length": the sampler stopped at its token limit (TRUNCATED).
  std::string finish_reason;
  bool require_analysis = false;
  size_t max_completion_bytes = 1 << 20;
  size_t max_code_bytes = 256 << 10;
};

// A ParseCompletion request: INVALID_ARGUMENT for unknown format or backend
// values, otherwise ParseCompletion with the request's options.
absl::StatusOr<v1::ParseCompletionResponse> ParseRequest(
    const v1::ParseCompletionRequest& request);

// Total: every input, however malformed, gives a response (error set, or the
// parts and a ready Candidate). Text fields of the response are valid UTF-8.
v1::ParseCompletionResponse ParseCompletion(const std::string& completion,
                                            const ParseOptions& options);

// A short name for a parse error ("NO_CODE_BLOCK"; "OK" for none).
std::string ParseErrorShortName(v1::ParseError error);

}  // namespace crl::prompt

#endif  // CRL_SERVICES_PROMPT_COMPLETION_PARSER_H_
