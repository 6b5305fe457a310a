// The plots a person reads instead of a run's numbers, as PNGs rendered by gnuplot (Debian's
// gnuplot-nox): the training curves of metrics.jsonl and the cost-accuracy plane of a CogER
// before/after table (CogER Sec. 5). The one place allot plots: `allot train` (GRPO) writes the
// curves at the end of a run, `allot eval` of a CogER run the plane next to its table.
//
// Each plot writes its data (.dat) and its gnuplot script (.gp) next to the PNG, so that the PNG
// can be re-rendered or restyled by hand; without gnuplot only the PNG is missing.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace allot {

struct PlotFiles {
  std::string data;    // the plotted numbers, whitespace-separated columns
  std::string script;  // the gnuplot script that renders `png` from `data`
  std::string png;     // written only when `rendered`
  bool rendered = false;
};

// `<out_dir>/curves.{dat,gp,png}`: reward, accuracy and cost per episode against the training
// step, one panel each, the raw per-step values drawn light and their exponential moving average
// drawn solid. Panels whose metric no record holds are left out. NotFound when the file holds no
// record with reward/mean.
Result<PlotFiles> PlotTrainingCurves(const std::string& metrics_path, const std::string& out_dir);

// `<out_dir>/shares.{dat,gp,png}`: for each info key whose shares metrics.jsonl holds
// (share/<key>/<value>: the share of a step's episodes per value, e.g. CogER's routed level), a
// stacked area of the values' shares against the training step, each smoothed by the curves'
// moving average (shares that sum to 1 still do). A step that reports some values of a key and
// not others had none of the others. NotFound when no record holds a share.
Result<PlotFiles> PlotShares(const std::string& metrics_path, const std::string& out_dir);

// `<out_dir>/cost_accuracy.{dat,gp,png}`: accuracy against mean cost per query of every row of
// `rows` (the array `allot eval RUN --json` writes: label, method, phase, accuracy,
// mean_cost_usd), with the upper convex hull of the fixed levels and random routing (what
// mixing them reaches) and the router(s) against it. A log cost axis when the costs span more
// than 10x. InvalidArgument when no row has both numbers.
Result<PlotFiles> PlotCostAccuracy(const nlohmann::json& rows, const std::string& out_dir);

// The span (in steps) of the training plots' moving average for a run of `steps` records: about
// a tenth of the run, at least 2.
int MovingAverageSpan(size_t steps);

// The exponential moving average of `values` with smoothing factor `alpha` (0 < alpha <= 1),
// seeded with the first value.
std::vector<double> ExponentialMovingAverage(const std::vector<double>& values, double alpha);

// The vertices of the upper convex hull of `points` (x, y), by increasing x, from the cheapest
// point to the most accurate one: the cost-accuracy pairs that mixing the points' policies
// reaches (a point under the hull is dominated by a mixture).
std::vector<std::pair<double, double>> UpperHull(std::vector<std::pair<double, double>> points);

}  // namespace allot
