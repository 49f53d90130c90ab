#include <catch2/catch.hpp>

#include <cstdio>
#include <unistd.h>

#include <fstream>

#include "common/options.h"

namespace crl {
namespace {

struct Opts {
  std::string listen = "127.0.0.1:0";
  int lanes = 2;
  double ratio = 0.5;
  bool verbose = false;
  absl::Duration drain = absl::Seconds(1);
  std::vector<std::string> backends = {"host"};
};

OptionSet Bind(Opts* o) {
  OptionSet set("test");
  set.Add("listen", &o->listen, "address");
  set.Add("lanes", &o->lanes, "lanes");
  set.Add("ratio", &o->ratio, "ratio");
  set.Add("verbose", &o->verbose, "chatty");
  set.Add("drain", &o->drain, "drain delay");
  set.Add("backends", &o->backends, "backends");
  return set;
}

absl::Status ParseArgs(OptionSet* set, std::vector<std::string> args,
                       std::vector<std::string>* positional = nullptr) {
  std::vector<char*> argv;
  std::string prog = "prog";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  return set->Parse(static_cast<int>(argv.size()), argv.data(), positional);
}

TEST_CASE("defaults stay when nothing is given", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  REQUIRE(ParseArgs(&set, {}).ok());
  CHECK(o.lanes == 2);
  CHECK(o.listen == "127.0.0.1:0");
  CHECK(set.Usage().find("--lanes (default 2)") != std::string::npos);
}

TEST_CASE("flags of every kind parse", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  std::vector<std::string> pos;
  REQUIRE(ParseArgs(&set, {"--listen=0.0.0.0:9", "--lanes", "4", "--ratio=0.25", "--verbose",
                           "--drain=250ms", "--backends=host,cuda", "task-dir"},
                    &pos)
              .ok());
  CHECK(o.listen == "0.0.0.0:9");
  CHECK(o.lanes == 4);
  CHECK(o.ratio == 0.25);
  CHECK(o.verbose);
  CHECK(o.drain == absl::Milliseconds(250));
  CHECK(o.backends == std::vector<std::string>{"host", "cuda"});
  CHECK(pos == std::vector<std::string>{"task-dir"});
  REQUIRE(ParseArgs(&set, {"--noverbose"}).ok());
  CHECK_FALSE(o.verbose);
}

TEST_CASE("usage: -h, --h and --help ask for the usage anywhere; -h is never an argument", "[options]") {
  for (const char* help : {"-h", "--h", "--help"}) {
    Opts o;
    OptionSet set = Bind(&o);
    std::vector<std::string> pos;
    REQUIRE(ParseArgs(&set, {"localhost:1", help, "--lanes=3"}, &pos).ok());
    CHECK(set.help_requested());
    CHECK(pos == std::vector<std::string>{"localhost:1"});
  }
  Opts o;
  OptionSet set = Bind(&o);
  REQUIRE(ParseArgs(&set, {"--lanes=3"}).ok());
  CHECK_FALSE(set.help_requested());
  for (const char* word : {"help", "--help", "-h"}) CHECK(IsHelpArg(word));
  for (const char* word : {"list", "-x", "--helpful", ""}) CHECK_FALSE(IsHelpArg(word));
}

TEST_CASE("bad flags name the flag", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  absl::Status s = ParseArgs(&set, {"--lanes=many"});
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("lanes") != std::string::npos);
  CHECK(std::string(s.message()).find("many") != std::string::npos);
  CHECK(std::string(ParseArgs(&set, {"--lans=3"}).message()).find("unknown flag --lans") !=
        std::string::npos);
  CHECK_FALSE(ParseArgs(&set, {"--lanes"}).ok());
}

TEST_CASE("YAML sets options; flags win over the file", "[options]") {
  std::string path = "/tmp/crl_options_test_" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream f(path);
    f << "# worker config\nlanes: 8\nlisten: 10.0.0.1:1\nbackends: [host, cuda]\ndrain: 2s\n";
  }
  Opts o;
  OptionSet set = Bind(&o);
  REQUIRE(ParseArgs(&set, {"--lanes=3", "--config", path}).ok());
  CHECK(o.lanes == 3);               // the flag won, though it came first
  CHECK(o.listen == "10.0.0.1:1");   // from the file
  CHECK(o.backends.size() == 2);
  CHECK(o.drain == absl::Seconds(2));
  std::remove(path.c_str());
}

TEST_CASE("bad YAML names the source, the line and the key", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  absl::Status s = set.LoadYaml("listen: a:1\n\nlanes: lots\n", "worker.yaml");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) == "worker.yaml:3: key 'lanes': expected an integer, got 'lots'");

  s = set.LoadYaml("lanes: 1\nlisen: x\n", "worker.yaml");
  CHECK(std::string(s.message()) == "worker.yaml:2: unknown key 'lisen'");

  s = set.LoadYaml("lanes: [1, 2\n", "broken.yaml");
  CHECK(std::string(s.message()).rfind("broken.yaml:", 0) == 0);
  CHECK(std::string(s.message()).find("invalid YAML") != std::string::npos);

  s = set.LoadYaml("- a\n- b\n", "list.yaml");
  CHECK(std::string(s.message()).find("expected a mapping") != std::string::npos);

  s = set.LoadYaml("listen: {a: 1}\n", "nested.yaml");
  CHECK(std::string(s.message()) == "nested.yaml:1: key 'listen': expected a scalar value");
}

TEST_CASE("a missing config file is a clear error", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  absl::Status s = ParseArgs(&set, {"--config=/nonexistent/x.yaml"});
  CHECK(s.code() == absl::StatusCode::kNotFound);
  CHECK(std::string(s.message()).find("/nonexistent/x.yaml") != std::string::npos);
}

TEST_CASE("a program's own config option is a plain option, not a YAML file", "[options]") {
  Opts o;
  OptionSet set = Bind(&o);
  std::string config;
  set.Add("config", &config, "a model config.json");
  REQUIRE(ParseArgs(&set, {"--config", "/nonexistent/config.json"}).ok());
  CHECK(config == "/nonexistent/config.json");
  CHECK(set.Usage().find("FILE.yaml") == std::string::npos);
}

}  // namespace
}  // namespace crl
