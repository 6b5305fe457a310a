// A table of named loss-family variants (advantage_estimators.h, policy_losses.h): a name is
// registered once, looked up by the recipe's choice, and an unknown name is an error that lists
// the names there are. Entries are never removed, so a pointer from Find stays valid.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer::grpo {

// T has a `std::string name`. `what` names the recipe key, e.g. "grpo.policy_loss".
template <typename T>
class VariantRegistry {
 public:
  explicit VariantRegistry(std::string what) : what_(std::move(what)) {}

  Status Register(T entry) {
    if (entry.name.empty()) return InvalidArgument(what_ + ": a variant needs a name");
    if (Lookup(entry.name) != nullptr) {
      return InvalidArgument(what_ + ": '" + entry.name + "' is already registered");
    }
    entries_.push_back(std::move(entry));
    return Status::Ok();
  }

  Result<const T*> Find(const std::string& name) const {
    if (const T* e = Lookup(name); e != nullptr) return e;
    std::string names;
    for (const T& e : entries_) names += (names.empty() ? "" : ", ") + e.name;
    return InvalidArgument(what_ + ": '" + name + "' is not registered (registered: " + names +
                           ")");
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const T& e : entries_) out.push_back(e.name);
    return out;
  }

 private:
  const T* Lookup(const std::string& name) const {
    for (const T& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  std::string what_;
  std::deque<T> entries_;  // stable addresses
};

}  // namespace allot::trainer::grpo
