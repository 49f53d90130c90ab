#include "lib/kernelbench/files.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace crl::kb {

namespace {

namespace fs = std::filesystem;

// A positive decimal integer that fits in int; the whole of `s`.
std::optional<int> ParsePositiveInt(absl::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return std::nullopt;
  return v;
}

// Consumes "<prefix><int>" from the front of *s.
std::optional<int> ConsumeNumbered(absl::string_view* s, absl::string_view prefix) {
  if (!absl::ConsumePrefix(s, prefix)) return std::nullopt;
  size_t n = 0;
  while (n < s->size() && absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) ++n;
  auto v = ParsePositiveInt(s->substr(0, n));
  s->remove_prefix(n);
  return v;
}

absl::Status CheckDirectory(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(absl::StrCat(what, " ", dir, " does not exist"));
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

// Directory entries sorted by name, so listings (and "first seen" in
// duplicate errors) do not depend on the file system's order.
std::vector<fs::directory_entry> SortedEntries(const fs::path& dir, std::error_code* ec) {
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(dir, *ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

}  // namespace

std::string LevelKey(int level) { return absl::StrCat("level", level); }


std::optional<int> ParseTaskFileName(const std::string& file_name) {
  absl::string_view s = file_name;
  if (!absl::ConsumeSuffix(&s, ".py")) return std::nullopt;
  size_t underscore = s.find('_');
  if (underscore == absl::string_view::npos || underscore + 1 == s.size()) return std::nullopt;
  return ParsePositiveInt(s.substr(0, underscore));
}

absl::StatusOr<std::vector<TaskFile>> ListTasks(const std::string& dir) {
  CRL_RETURN_IF_ERROR(CheckDirectory(dir, "tasks directory"));
  std::error_code ec;
  std::vector<TaskFile> tasks;
  int levels = 0;
  for (const auto& level_entry : SortedEntries(dir, &ec)) {
    std::string level_name = level_entry.path().filename().string();
    absl::string_view rest = level_name;
    auto level = ConsumeNumbered(&rest, "level");
    if (!level || !rest.empty() || !level_entry.is_directory()) continue;
    ++levels;
    std::map<int, std::string> seen;  // problem -> file name
    std::error_code level_ec;
    for (const auto& e : SortedEntries(level_entry.path(), &level_ec)) {
      if (!e.is_regular_file()) continue;
      std::string name = e.path().filename().string();
      auto problem = ParseTaskFileName(name);
      if (!problem) continue;
      auto [it, inserted] = seen.emplace(*problem, name);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tasks directory ", dir, ": problem ", *problem,
                                                       " of ", level_name, " appears twice: ",
                                                       it->second, " and ", name));
      }
      tasks.push_back({*level, *problem, name, e.path().string()});
    }
    if (level_ec) {
      return absl::InternalError(
          absl::StrCat("listing ", level_entry.path().string(), ": ", level_ec.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  if (tasks.empty()) {
    return absl::InvalidArgumentError(
        levels == 0 ? absl::StrCat("tasks directory ", dir, " has no level<N>/ subdirectory")
                    : absl::StrCat("tasks directory ", dir, ": no <id>_<Name>.py file in its ",
                                   levels, " level directories"));
  }
  std::sort(tasks.begin(), tasks.end(), [](const TaskFile& a, const TaskFile& b) {
    return std::tie(a.level, a.problem) < std::tie(b.level, b.problem);
  });
  return tasks;
}

std::map<int, int> TasksPerLevel(const std::vector<TaskFile>& tasks) {
  std::map<int, int> counts;
  for (const auto& t : tasks) ++counts[t.level];
  return counts;
}

std::string GenerationFileName(int level, int problem, int sample) {
  return absl::StrCat("level_", level, "_problem_", problem, "_sample_", sample, "_kernel.py");
}

std::optional<GenerationFile> ParseGenerationFileName(const std::string& file_name) {
  absl::string_view s = file_name;
  GenerationFile g;
  auto level = ConsumeNumbered(&s, "level_");
  auto problem = level ? ConsumeNumbered(&s, "_problem_") : std::nullopt;
  if (!problem || !absl::ConsumePrefix(&s, "_sample_")) return std::nullopt;
  // Sample 0 is the first sample, so this number may be zero.
  size_t n = 0;
  while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
  int sample = 0;
  if (n == 0 || n > 9 || !absl::SimpleAtoi(s.substr(0, n), &sample)) return std::nullopt;
  s.remove_prefix(n);
  if (s != "_kernel.py") return std::nullopt;
  g.level = *level;
  g.problem = *problem;
  g.sample = sample;
  return g;
}

absl::StatusOr<std::vector<GenerationFile>> ListGenerations(const std::string& dir) {
  CRL_RETURN_IF_ERROR(CheckDirectory(dir, "generations directory"));
  std::vector<GenerationFile> out;
  std::map<std::tuple<int, int, int>, std::string> seen;
  auto add = [&](const fs::directory_entry& e) -> absl::Status {
    auto g = ParseGenerationFileName(e.path().filename().string());
    if (!g || !e.is_regular_file()) return absl::OkStatus();
    g->path = e.path().string();
    auto [it, inserted] = seen.emplace(std::make_tuple(g->level, g->problem, g->sample), g->path);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("generations directory ", dir, ": level ", g->level,
                                                     " problem ", g->problem, " sample ", g->sample,
                                                     " appears twice: ", it->second, " and ", g->path));
    }
    out.push_back(std::move(*g));
    return absl::OkStatus();
  };
  std::error_code ec;
  for (const auto& e : SortedEntries(dir, &ec)) {
    if (e.is_directory()) {
      std::error_code sub_ec;
      for (const auto& inner : SortedEntries(e.path(), &sub_ec)) CRL_RETURN_IF_ERROR(add(inner));
      if (sub_ec) return absl::InternalError(absl::StrCat("listing ", e.path().string(), ": ", sub_ec.message()));
    } else {
      CRL_RETURN_IF_ERROR(add(e));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  std::sort(out.begin(), out.end(), [](const GenerationFile& a, const GenerationFile& b) {
    return std::tie(a.level, a.problem, a.sample) < std::tie(b.level, b.problem, b.sample);
  });
  return out;
}

}  // namespace crl::kb
