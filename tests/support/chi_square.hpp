#pragma once
// Chi-square goodness of fit for the statistical tests: bins with an expected count
// below 5 are merged (the test's approximation needs it), and the statistic is compared
// with the critical value at alpha = 0.001 for the resulting degrees of freedom.
#include <stdexcept>
#include <vector>

namespace specd::testing {

inline double chi_square_critical_001(int dof) {
  static const double table[] = {10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59,
                                 31.26, 32.91, 34.53, 36.12, 37.70, 39.25, 40.79, 42.31, 43.82, 45.31,
                                 46.80, 48.27, 49.73, 51.18, 52.62, 54.05, 55.48, 56.89, 58.30, 59.70};
  if (dof < 1 || dof > 30) throw std::out_of_range("chi-square table covers 1..30 degrees of freedom");
  return table[dof - 1];
}

struct ChiSquare {
  double statistic = 0;
  int dof = 0;
  double critical = 0;
  bool passes() const { return statistic < critical; }
};

// observed[i] counts against expected[i] (already scaled to the sample size).
inline ChiSquare chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double rest_obs = 0, rest_exp = 0;
  ChiSquare r;
  int bins = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (expected[i] < 5) {
      rest_obs += observed[i];
      rest_exp += expected[i];
      continue;
    }
    r.statistic += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
    ++bins;
  }
  if (rest_exp > 0) {
    r.statistic += (rest_obs - rest_exp) * (rest_obs - rest_exp) / rest_exp;
    ++bins;
  }
  r.dof = bins - 1;
  r.critical = chi_square_critical_001(r.dof);
  return r;
}

}  // namespace specd::testing
