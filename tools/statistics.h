// Numerical and statistical analysis for the RSTKit calculator family (CogER App. D.2,
// "Numerical and Statistical Analysis"): descriptive statistics, quantiles, least squares and
// the normal, binomial and Poisson distributions. Plain doubles; inputs are checked, never
// trusted.
#pragma once

#include <vector>

#include "core/status.h"

namespace allot::tools::stats {

Result<double> Mean(const std::vector<double>& xs);
Result<double> Median(std::vector<double> xs);
// ddof = 1: sample variance (n - 1 denominator); ddof = 0: population variance.
Result<double> Variance(const std::vector<double>& xs, int ddof = 1);
Result<double> StdDev(const std::vector<double>& xs, int ddof = 1);
// Linear interpolation between order statistics (Hyndman-Fan type 7, the NumPy default).
Result<double> Quantile(std::vector<double> xs, double q);

struct LinearFit {
  double slope = 0;
  double intercept = 0;
  double r_squared = 0;
  size_t n = 0;
};
// Ordinary least squares y = slope * x + intercept.
Result<LinearFit> LinearRegression(const std::vector<double>& x, const std::vector<double>& y);
Result<double> PearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y);

Result<double> NormalPdf(double x, double mean, double std);
Result<double> NormalCdf(double x, double mean, double std);
Result<double> BinomialPmf(long k, long n, double p);
Result<double> BinomialCdf(long k, long n, double p);
Result<double> PoissonPmf(long k, double lambda);
Result<double> PoissonCdf(long k, double lambda);

}  // namespace allot::tools::stats
