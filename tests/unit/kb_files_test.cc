// What a KernelBench side's load carries into its sandbox: the task, the
// candidate and the build's files, and never a file the build's manifest
// (written where candidate code ran) points at outside the build directory.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "services/worker/formats/kernelbench/kb_session.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

struct BuildDir {
  fs::path root = fs::temp_directory_path() / ("crl-kb-files-" + std::to_string(::getpid()));
  BuildDir() {
    fs::remove_all(root);
    fs::create_directories(root / "build" / "ext" / "0_k");
    Write("task.py", "class Model: pass\n");
    Write("build/candidate.py", "class ModelNew: pass\n");
    Write("build/ext/0_k/k.so", "ELF");
    Write("secret", "token");
  }
  ~BuildDir() { fs::remove_all(root); }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(root / rel) << text; }
  void Manifest(const std::string& so) {
    Write("build/manifest.json", "{\"extensions\": [{\"key\": \"0_k\", \"so\": \"" + so + "\"}]}");
  }
  KbLoad Load() const {
    return {"candidate", (root / "task.py").string(), (root / "build/candidate.py").string(),
            (root / "build/manifest.json").string()};
  }
};

TEST_CASE("a load carries the task, the candidate and its built extensions", "[kb]") {
  BuildDir d;
  d.Manifest("ext/0_k/k.so");
  KbLoadFiles files;
  RunnerEvent event;
  REQUIRE(CollectKbFiles(d.Load(), 1 << 20, &files, &event));
  CHECK(files.names == std::vector<std::string>{"task.py", "candidate.py", "manifest.json", "ext/0_k/k.so"});
  CHECK(files.contents[3] == "ELF");

  KbLoadFiles reference;
  REQUIRE(CollectKbFiles({"reference", (d.root / "task.py").string(), "", ""}, 1 << 20, &reference, &event));
  CHECK(reference.names == std::vector<std::string>{"task.py"});

  KbLoadFiles small;
  CHECK_FALSE(CollectKbFiles(d.Load(), 8, &small, &event));
  CHECK(event.verdict == v1::VERDICT_RESOURCE_LIMIT);
}

TEST_CASE("a manifest pointing outside its build directory is a sandbox violation", "[kb]") {
  BuildDir d;
  RunnerEvent event;
  for (const std::string so : {"../secret", "ext/../../secret", "/etc/passwd"}) {
    d.Manifest(so);
    KbLoadFiles files;
    INFO(so);
    CHECK_FALSE(CollectKbFiles(d.Load(), 1 << 20, &files, &event));
    CHECK(event.verdict == v1::VERDICT_SANDBOX_VIOLATION);
  }
  // A link inside the directory to a file outside it.
  fs::create_symlink(d.root / "secret", d.root / "build/ext/0_k/link.so");
  d.Manifest("ext/0_k/link.so");
  KbLoadFiles files;
  CHECK_FALSE(CollectKbFiles(d.Load(), 1 << 20, &files, &event));
  CHECK(event.verdict == v1::VERDICT_SANDBOX_VIOLATION);
  CHECK_THAT(event.message, Catch::Contains("not a regular file inside the build directory"));
  // A rewritten manifest with no list.
  d.Write("build/manifest.json", "{\"extensions\": 3}");
  CHECK_FALSE(CollectKbFiles(d.Load(), 1 << 20, &files, &event));
  CHECK(event.verdict == v1::VERDICT_SANDBOX_VIOLATION);
  // A missing extension is the build's loss, not the candidate's doing.
  d.Manifest("ext/0_k/gone.so");
  CHECK_FALSE(CollectKbFiles(d.Load(), 1 << 20, &files, &event));
  CHECK(event.verdict == v1::VERDICT_INFRA_ERROR);
}

TEST_CASE("a constant probe travels as one value and stays one value standing for the output's shape", "[kb]") {
  const float value = 1.5f;
  const std::string one(reinterpret_cast<const char*>(&value), sizeof value);
  KbReply reply;
  reply.header = {{"outputs",
                   {{{"dtype", "float32"}, {"shape", {2, 3}}},
                    {{"dtype", "float32"}, {"shape", {2, 3}}, {"probe", "mean"}, {"fill", true}},
                    {{"dtype", "float32"}, {"shape", {0}}, {"probe", "zeros"}, {"fill", true}}}}};
  reply.blobs = {std::string(6 * sizeof(float), '\0'), one, one};
  auto decoded = DecodeKbTensors(KbReply(reply), /*allow_fill=*/true);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->size() == 3);
  CHECK_FALSE((*decoded)[0].constant);
  CHECK((*decoded)[1].constant);
  CHECK((*decoded)[1].data == one);  // never expanded (TensorWithin compares it as it is)
  CHECK((*decoded)[1].spec.shape == std::vector<int64_t>{2, 3});
  CHECK((*decoded)[2].data.empty());  // a shape of no elements: nothing stands for them
  CHECK_FALSE((*decoded)[2].constant);
  // Only from the reference (a candidate's reply is never expanded) ...
  auto candidate = DecodeKbTensors(KbReply(reply));
  CHECK(candidate.status().code() == absl::StatusCode::kDataLoss);
  // ... never larger than an output the reply carries in full (a forged
  // shape of 2^40 elements is not allocated) ...
  reply.header["outputs"][1]["shape"] = {int64_t{1} << 20, int64_t{1} << 20};
  auto huge = DecodeKbTensors(KbReply(reply), true);
  CHECK(huge.status().code() == absl::StatusCode::kDataLoss);
  reply.header["outputs"][1]["shape"] = {2, 3};
  // ... and only a probe: an output must carry all of its bytes.
  reply.header["outputs"][0]["fill"] = true;
  reply.blobs[0] = one;
  auto refused = DecodeKbTensors(KbReply(reply), true);
  CHECK(refused.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("do not match its dtype and shape"));
}

}  // namespace
TEST_CASE("a KB payload decodes to what was encoded; the last blob keeps the buffer; malformed ones fail",
          "[kernelbench]") {
  for (const std::vector<std::string>& blobs :
       std::vector<std::vector<std::string>>{{}, {"x"}, {"first", "", std::string(1 << 20, '\7')}}) {
    const nlohmann::json header = {{"ok", true}, {"n", blobs.size()}};
    KbReply reply;
    std::string error;
    REQUIRE(DecodeKbPayload(EncodeKbPayload(header, blobs), &reply, &error));
    CHECK(reply.header == header);
    CHECK(reply.blobs == blobs);
  }
  const std::string good = EncodeKbPayload({{"ok", true}}, {"abc", "defg"});
  KbReply reply;
  std::string error;
  CHECK_FALSE(DecodeKbPayload(good.substr(0, good.size() - 1), &reply, &error));
  CHECK(error == "blob length exceeds payload");
  CHECK_FALSE(DecodeKbPayload(good + "z", &reply, &error));
  CHECK(error == "bytes left after the blobs");
  CHECK_FALSE(DecodeKbPayload(EncodeKbPayload(nlohmann::json::array({1}), {}), &reply, &error));
  CHECK(error == "reply header is not a JSON object");
  std::string forged = EncodeKbPayload({{"ok", true}}, {});
  forged.replace(forged.size() - 8, 8, std::string(8, '\xff'));  // 2^64-1 blobs
  error.clear();
  CHECK_FALSE(DecodeKbPayload(std::move(forged), &reply, &error));
  CHECK_FALSE(error.empty());
}

}  // namespace crl
