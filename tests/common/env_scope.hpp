#pragma once
// EnvScope: environment variables set (or unset, value nullptr) for a test's scope and restored
// afterwards, with a callback run after each change so that the library reads them again (the
// per-process state of the Ewald cost model or FFT wisdom cache, for instance).
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace elliptica::testcommon {

class EnvScope {
 public:
  EnvScope(std::initializer_list<std::pair<std::string, const char*>> vars, std::function<void()> reread)
      : reread_(std::move(reread)) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      if (v)
        ::setenv(k.c_str(), v, 1);
      else
        ::unsetenv(k.c_str());
    }
    if (reread_) reread_();
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
  ~EnvScope() {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
    if (reread_) reread_();
  }

 private:
  std::function<void()> reread_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace elliptica::testcommon
