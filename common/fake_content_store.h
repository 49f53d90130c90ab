// An in-memory ContentStoreInterface for unit tests, with failure injection.
#ifndef CRL_COMMON_FAKE_CONTENT_STORE_H_
#define CRL_COMMON_FAKE_CONTENT_STORE_H_

#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/content_store.h"

namespace crl {

class FakeContentStore : public ContentStoreInterface {
 public:
  absl::StatusOr<std::string> Put(const std::string& data) override {
    absl::MutexLock l(&mu_);
    ++puts_;
    if (!put_error_.ok()) return put_error_;
    const std::string address = ContentAddress(data);
    blobs_[address] = data;
    return address;
  }
  absl::StatusOr<std::string> Get(const std::string& address) override {
    absl::MutexLock l(&mu_);
    ++gets_;
    if (!get_error_.ok()) return get_error_;
    auto it = blobs_.find(address);
    if (it == blobs_.end()) return absl::NotFoundError("fake content store: no " + address);
    return it->second;
  }

  // Every later Put fails with `s` (OK: they succeed again).
  void FailPuts(absl::Status s) {
    absl::MutexLock l(&mu_);
    put_error_ = std::move(s);
  }
  // Every later Get fails with `s` (OK: they succeed again).
  void FailGets(absl::Status s) {
    absl::MutexLock l(&mu_);
    get_error_ = std::move(s);
  }
  int size() const {
    absl::MutexLock l(&mu_);
    return static_cast<int>(blobs_.size());
  }
  int puts() const {
    absl::MutexLock l(&mu_);
    return puts_;
  }
  int gets() const {
    absl::MutexLock l(&mu_);
    return gets_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> blobs_;
  absl::Status put_error_;
  absl::Status get_error_;
  int puts_ = 0;
  int gets_ = 0;
};

}  // namespace crl

#endif  // CRL_COMMON_FAKE_CONTENT_STORE_H_
