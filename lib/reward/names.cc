#include "lib/reward/names.h"

#include <algorithm>

#include <cctype>

namespace crl {
namespace {

std::string Strip(const std::string& name, const char* prefix, int value) {
  if (name.empty()) return std::to_string(value);
  const std::string p = prefix;
  return name.compare(0, p.size(), p) == 0 ? name.substr(p.size()) : name;
}

}  // namespace

std::string VerdictShortName(v1::Verdict verdict) {
  return Strip(v1::Verdict_Name(verdict), "VERDICT_", verdict);
}

std::string FlagShortName(v1::Flag flag) { return Strip(v1::Flag_Name(flag), "FLAG_", flag); }

void AddFlagNamesOnce(const google::protobuf::RepeatedField<int>& flags, std::vector<std::string>* names) {
  for (int f : flags) {
    std::string name = FlagShortName(static_cast<v1::Flag>(f));
    if (std::find(names->begin(), names->end(), name) == names->end()) names->push_back(std::move(name));
  }
}

std::string StopReasonShortName(v1::StopReason reason) {
  return Strip(v1::StopReason_Name(reason), "STOP_REASON_", reason);
}

std::string LabelValue(const std::string& short_name) {
  std::string out = short_name;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsTrustFlag(v1::Flag flag) {
  return flag != v1::FLAG_NO_CUSTOM_KERNEL && flag != v1::FLAG_UNSPECIFIED;
}

bool IsHonestyFlag(v1::Flag flag) { return IsTrustFlag(flag) && flag != v1::FLAG_NOISY; }

bool IsTrustFlagName(const std::string& name) {
  if (name.empty()) return false;
  v1::Flag flag;
  const std::string full = name.compare(0, 5, "FLAG_") == 0 ? name : "FLAG_" + name;
  if (!v1::Flag_Parse(full, &flag)) return true;
  return IsTrustFlag(flag);
}

void AddFlag(google::protobuf::RepeatedField<int>* flags, v1::Flag flag) {
  if (std::find(flags->begin(), flags->end(), static_cast<int>(flag)) == flags->end()) flags->Add(flag);
}

}  // namespace crl
