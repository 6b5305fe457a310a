#include "tools/statistics.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace allot::tools::stats {
namespace {

Status CheckFinite(const std::vector<double>& xs, const char* name) {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!std::isfinite(xs[i])) {
      return InvalidArgument(std::string(name) + "[" + std::to_string(i) + "] is not finite");
    }
  }
  return Status::Ok();
}

Status CheckNonEmpty(const std::vector<double>& xs) {
  if (xs.empty()) return InvalidArgument("needs at least one value");
  return CheckFinite(xs, "values");
}

Status CheckProbability(double p) {
  if (!(p >= 0 && p <= 1)) return InvalidArgument("p must lie in [0, 1]");
  return Status::Ok();
}

// log C(n, k) through lgamma: stable for large n.
double LogChoose(long n, long k) {
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
         std::lgamma(static_cast<double>(n - k) + 1);
}

constexpr long kMaxCount = 1'000'000;  // keeps a cdf sum under ~50 ms

}  // namespace

Result<double> Mean(const std::vector<double>& xs) {
  ALLOT_RETURN_IF_ERROR(CheckNonEmpty(xs));
  // Kahan summation keeps long lists of similar values accurate.
  double sum = 0, c = 0;
  for (double x : xs) {
    const double y = x - c;
    const double t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum / static_cast<double>(xs.size());
}

Result<double> Median(std::vector<double> xs) { return Quantile(std::move(xs), 0.5); }

Result<double> Variance(const std::vector<double>& xs, int ddof) {
  ALLOT_ASSIGN_OR_RETURN(double mean, Mean(xs));
  if (ddof < 0 || static_cast<size_t>(ddof) >= xs.size()) {
    return InvalidArgument("variance with ddof=" + std::to_string(ddof) + " needs more than " +
                           std::to_string(ddof) + " values");
  }
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(xs.size() - static_cast<size_t>(ddof));
}

Result<double> StdDev(const std::vector<double>& xs, int ddof) {
  ALLOT_ASSIGN_OR_RETURN(double v, Variance(xs, ddof));
  return std::sqrt(v);
}

Result<double> Quantile(std::vector<double> xs, double q) {
  ALLOT_RETURN_IF_ERROR(CheckNonEmpty(xs));
  if (!(q >= 0 && q <= 1)) return InvalidArgument("quantile q must lie in [0, 1]");
  std::sort(xs.begin(), xs.end());
  const double h = (static_cast<double>(xs.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (h - static_cast<double>(lo)) * (xs[hi] - xs[lo]);
}

Result<LinearFit> LinearRegression(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) {
    return InvalidArgument("x and y differ in length (" + std::to_string(x.size()) + " vs " +
                           std::to_string(y.size()) + ")");
  }
  if (x.size() < 2) return InvalidArgument("regression needs at least two points");
  ALLOT_RETURN_IF_ERROR(CheckFinite(x, "x"));
  ALLOT_RETURN_IF_ERROR(CheckFinite(y, "y"));
  ALLOT_ASSIGN_OR_RETURN(double mx, Mean(x));
  ALLOT_ASSIGN_OR_RETURN(double my, Mean(y));
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0) return InvalidArgument("all x values are equal; the slope is undefined");
  LinearFit fit;
  fit.n = x.size();
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.r_squared = syy == 0 ? 1.0 : (sxy * sxy) / (sxx * syy);
  return fit;
}

Result<double> PearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
  ALLOT_ASSIGN_OR_RETURN(LinearFit fit, LinearRegression(x, y));
  double syy = 0;
  ALLOT_ASSIGN_OR_RETURN(double my, Mean(y));
  for (double v : y) syy += (v - my) * (v - my);
  if (syy == 0) return InvalidArgument("all y values are equal; correlation is undefined");
  return std::copysign(std::sqrt(fit.r_squared), fit.slope);
}

Result<double> NormalPdf(double x, double mean, double std) {
  if (!(std > 0) || !std::isfinite(std)) return InvalidArgument("std must be positive");
  const double z = (x - mean) / std;
  return std::exp(-0.5 * z * z) / (std * std::sqrt(2 * std::numbers::pi));
}

Result<double> NormalCdf(double x, double mean, double std) {
  if (!(std > 0) || !std::isfinite(std)) return InvalidArgument("std must be positive");
  return 0.5 * std::erfc(-(x - mean) / (std * std::numbers::sqrt2));
}

Result<double> BinomialPmf(long k, long n, double p) {
  if (n < 0 || n > kMaxCount) return InvalidArgument("n must lie in [0, 1e6]");
  ALLOT_RETURN_IF_ERROR(CheckProbability(p));
  if (k < 0 || k > n) return 0.0;
  if (p == 0) return k == 0 ? 1.0 : 0.0;
  if (p == 1) return k == n ? 1.0 : 0.0;
  return std::exp(LogChoose(n, k) + static_cast<double>(k) * std::log(p) +
                  static_cast<double>(n - k) * std::log1p(-p));
}

Result<double> BinomialCdf(long k, long n, double p) {
  if (n < 0 || n > kMaxCount) return InvalidArgument("n must lie in [0, 1e6]");
  ALLOT_RETURN_IF_ERROR(CheckProbability(p));
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  double total = 0;
  for (long i = 0; i <= k; ++i) {
    ALLOT_ASSIGN_OR_RETURN(double pmf, BinomialPmf(i, n, p));
    total += pmf;
  }
  return std::min(total, 1.0);
}

Result<double> PoissonPmf(long k, double lambda) {
  if (!(lambda >= 0) || !std::isfinite(lambda)) return InvalidArgument("lambda must be >= 0");
  if (k < 0) return 0.0;
  if (k > kMaxCount) return InvalidArgument("k too large");
  if (lambda == 0) return k == 0 ? 1.0 : 0.0;
  return std::exp(static_cast<double>(k) * std::log(lambda) - lambda -
                  std::lgamma(static_cast<double>(k) + 1));
}

Result<double> PoissonCdf(long k, double lambda) {
  if (!(lambda >= 0) || !std::isfinite(lambda)) return InvalidArgument("lambda must be >= 0");
  if (k < 0) return 0.0;
  if (k > kMaxCount) return InvalidArgument("k too large");
  double total = 0;
  for (long i = 0; i <= k; ++i) {
    ALLOT_ASSIGN_OR_RETURN(double pmf, PoissonPmf(i, lambda));
    total += pmf;
  }
  return std::min(total, 1.0);
}

}  // namespace allot::tools::stats
