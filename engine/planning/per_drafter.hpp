#pragma once
// One estimator per drafter kind: a lookup row and a draft-model row of the same text
// behave very differently, so engine-wide estimates (acceptance, tree gain) keep one each.
#include <array>
#include <cstddef>
#include <utility>

#include "engine/request/spec_settings.hpp"

namespace specd {

template <class Estimator>
class PerDrafter {
 public:
  explicit PerDrafter(const Estimator& each) : by_drafter_{each, each} {}
  // Passes a row's outcome to its drafter's estimator.
  template <class... Outcome>
  void observe(DrafterKind drafter, Outcome&&... outcome) {
    by_drafter_[index(drafter)].observe(std::forward<Outcome>(outcome)...);
  }
  double estimate(DrafterKind drafter) const { return by_drafter_[index(drafter)].estimate(); }

 private:
  static size_t index(DrafterKind drafter) { return drafter == DrafterKind::model ? 0 : 1; }
  std::array<Estimator, 2> by_drafter_;
};

}  // namespace specd
