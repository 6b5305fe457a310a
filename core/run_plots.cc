#include "core/run_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace allot {
namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// A gnuplot single-quoted string: '' stands for one quote.
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string Cell(double v) { return std::isnan(v) ? "?" : fmt::format("{:.9g}", v); }

// Runs gnuplot on `script` when it is installed; false when it is not or it fails.
bool Render(const std::string& script) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) return false;
  return std::system(("gnuplot " + Quoted(script) + " > /dev/null 2>&1").c_str()) == 0;
}

Result<PlotFiles> WriteAndRender(const std::string& out_dir, const std::string& name,
                                 const std::string& data, const std::string& script_body) {
  PlotFiles f{out_dir + "/" + name + ".dat", out_dir + "/" + name + ".gp",
              out_dir + "/" + name + ".png", false};
  std::ofstream(f.data) << data;
  std::ofstream gp(f.script);
  gp << "# Renders " << f.png << " from " << f.data << ": gnuplot " << f.script << "\n"
     << "set output " << Quoted(f.png) << "\n"
     << script_body;
  gp.close();
  if (!gp) return Unavailable(f.script + ": cannot write");
  f.rendered = Render(f.script);
  return f;
}

struct Series {
  std::string key;     // in metrics.jsonl
  std::string ylabel;  // with its unit
  std::string title;
  std::string format;  // of the y tics
};

}  // namespace

// About a tenth of the run per span: smooth enough to read a trend, short enough to follow it.
int MovingAverageSpan(size_t steps) { return std::max<int>(2, static_cast<int>(steps / 10)); }

std::vector<double> ExponentialMovingAverage(const std::vector<double>& values, double alpha) {
  std::vector<double> out;
  out.reserve(values.size());
  std::optional<double> ema;
  for (double v : values) {
    if (std::isnan(v)) {
      out.push_back(kMissing);
      continue;
    }
    ema = ema ? alpha * v + (1 - alpha) * *ema : v;
    out.push_back(*ema);
  }
  return out;
}

std::vector<std::pair<double, double>> UpperHull(std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : points) {
    // Pop while the last two vertices and p turn left (counter-clockwise) or run straight.
    while (hull.size() >= 2) {
      const auto& a = hull[hull.size() - 2];
      const auto& b = hull.back();
      const double cross =
          (b.first - a.first) * (p.second - a.second) - (b.second - a.second) * (p.first - a.first);
      if (cross < 0) break;
      hull.pop_back();
    }
    hull.push_back(p);
  }
  // Past the most accurate vertex the hull only gives up accuracy for cost.
  auto best = std::max_element(hull.begin(), hull.end(),
                               [](const auto& l, const auto& r) { return l.second < r.second; });
  if (best != hull.end()) hull.erase(best + 1, hull.end());
  return hull;
}

Result<PlotFiles> PlotTrainingCurves(const std::string& metrics_path, const std::string& out_dir) {
  const std::vector<Series> all = {
      {"reward/mean", "reward (mean per episode)", "reward", "%g"},
      {"accuracy", "accuracy (fraction correct)", "accuracy of the sampled episodes", "%.2f"},
      {"cost_usd_per_episode", "cost per episode (USD)", "API cost", "%.1e"},
  };
  std::ifstream in(metrics_path);
  if (!in) return NotFound(metrics_path + ": cannot read");
  std::vector<int64_t> steps;
  std::vector<std::vector<double>> raw(all.size());
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("reward/mean")) continue;
    steps.push_back(j.value("step", static_cast<int64_t>(steps.size())));
    for (size_t s = 0; s < all.size(); ++s) {
      const auto it = j.find(all[s].key);
      raw[s].push_back(it != j.end() && it->is_number() ? it->get<double>() : kMissing);
    }
  }
  if (steps.empty()) return NotFound(metrics_path + ": no record with reward/mean");
  const int span = MovingAverageSpan(steps.size());
  const double alpha = 2.0 / (span + 1);
  std::vector<size_t> shown;
  std::vector<std::vector<double>> ema(all.size());
  for (size_t s = 0; s < all.size(); ++s) {
    ema[s] = ExponentialMovingAverage(raw[s], alpha);
    if (std::any_of(raw[s].begin(), raw[s].end(), [](double v) { return !std::isnan(v); })) {
      shown.push_back(s);
    }
  }
  std::ostringstream data;
  data << "# step";
  for (const Series& s : all) data << " " << s.key << " " << s.key << "(ema)";
  data << "\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    data << steps[i];
    for (size_t s = 0; s < all.size(); ++s)
      data << " " << Cell(raw[s][i]) << " " << Cell(ema[s][i]);
    data << "\n";
  }
  const std::string dat = out_dir + "/curves.dat";
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1000," << 60 + 300 * shown.size()
     << " noenhanced font 'sans,11'\n"
     << "set datafile missing '?'\n"
     << "set multiplot layout " << shown.size() << ",1 title "
     << Quoted(fmt::format("training curves: per step (light) and moving average (solid, EMA "
                           "span {} steps)",
                           span))
     << "\n"
     << "set grid lc rgb '#e0e0e0'\nset border lc rgb '#606060'\n"
     << "set xlabel 'training step'\nset lmargin 14\nset rmargin 4\n"
     << "set autoscale xfix\nset offsets graph 0.01, graph 0.01, 0, 0\nset key tmargin right "
        "horizontal\n";
  for (size_t k = 0; k < shown.size(); ++k) {
    const Series& s = all[shown[k]];
    const int col = 2 + 2 * static_cast<int>(shown[k]);
    if (k == 1) gp << "unset key\n";  // the first panel's key says it for all
    gp << "set title " << Quoted(s.title) << "\nset ylabel " << Quoted(s.ylabel)
       << "\nset format y " << Quoted(s.format) << "\n"
       << "plot " << Quoted(dat) << " using 1:" << col
       << " with points pt 7 ps 0.7 lc rgb '#a8b8d8' title 'per step', \\\n"
       << "     '' using 1:" << col + 1
       << " with lines lw 2.5 lc rgb '#1f4e9c' title 'moving average'\n";
  }
  gp << "unset multiplot\n";
  return WriteAndRender(out_dir, "curves", data.str(), gp.str());
}

Result<PlotFiles> PlotShares(const std::string& metrics_path, const std::string& out_dir) {
  std::ifstream in(metrics_path);
  if (!in) return NotFound(metrics_path + ": cannot read");
  // key -> value -> share per record (records without the key: missing).
  struct KeyShares {
    std::map<std::string, std::vector<double>> values;
    std::vector<bool> reported;
  };
  std::map<std::string, KeyShares> keys;
  std::vector<int64_t> steps;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    const size_t row = steps.size();
    bool any = false;
    for (const auto& [name, v] : j.items()) {
      if (name.rfind("share/", 0) != 0 || !v.is_number()) continue;
      const std::string rest = name.substr(6);
      const size_t slash = rest.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) continue;
      KeyShares& k = keys[rest.substr(0, slash)];
      std::vector<double>& xs = k.values[rest.substr(slash + 1)];
      xs.resize(row + 1, 0.0);
      xs[row] = v.get<double>();
      k.reported.resize(row + 1, false);
      k.reported[row] = true;
      any = true;
    }
    if (any) steps.push_back(j.value("step", static_cast<int64_t>(row)));
  }
  if (steps.empty()) return NotFound(metrics_path + ": no record with a share/<key>/<value>");
  const double alpha = 2.0 / (MovingAverageSpan(steps.size()) + 1);
  // Per key, per value (sorted, "none" last): the smoothed share, stacked; a record that does not
  // report the key is a gap.
  std::ostringstream data, gp;
  data << "# step";
  std::vector<std::vector<double>> columns;  // lower and upper edge of each band, in order
  struct Band {
    std::string key, value;
    int lower_col;
  };
  std::vector<Band> bands;
  for (auto& [key, k] : keys) {
    k.reported.resize(steps.size(), false);
    std::vector<std::string> order;
    for (const auto& [value, _] : k.values) {
      if (value != "none") order.push_back(value);
    }
    if (k.values.count("none")) order.push_back("none");
    std::vector<double> below(steps.size(), 0.0);
    for (const std::string& value : order) {
      std::vector<double> xs = k.values[value];
      xs.resize(steps.size(), 0.0);
      for (size_t i = 0; i < xs.size(); ++i) {
        if (!k.reported[i]) xs[i] = kMissing;
      }
      const std::vector<double> smooth = ExponentialMovingAverage(xs, alpha);
      std::vector<double> upper(steps.size());
      for (size_t i = 0; i < upper.size(); ++i) upper[i] = below[i] + smooth[i];
      bands.push_back({key, value, 2 + static_cast<int>(columns.size())});
      columns.push_back(below);
      columns.push_back(upper);
      data << " " << key << "=" << value << "(from) " << key << "=" << value << "(to)";
      below = upper;
    }
  }
  data << "\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    data << steps[i];
    for (const auto& c : columns) data << " " << Cell(c[i]);
    data << "\n";
  }
  static const char* kColors[] = {"#1f4e9c", "#4f8fd8", "#8fc0e8", "#f0a050",
                                  "#d05a3a", "#8a5ab0", "#60a060", "#b0b0b0"};
  const std::string dat = out_dir + "/shares.dat";
  gp << "set terminal pngcairo size 1000," << 80 + 300 * keys.size()
     << " noenhanced font 'sans,11'\n"
     << "set datafile missing '?'\n"
     << "set multiplot layout " << keys.size() << ",1 title "
     << Quoted(fmt::format("share of each step's episodes (moving average, EMA span {} steps)",
                           MovingAverageSpan(steps.size())))
     << "\n"
     << "set grid lc rgb '#e0e0e0'\nset border lc rgb '#606060'\n"
     << "set xlabel 'training step'\nset lmargin 14\nset rmargin 16\n"
     << "set autoscale xfix\nset yrange [0:100]\nset format y '%.0f'\n"
     << "set key outside right top vertical\nset style fill solid 0.85 noborder\n";
  for (const auto& [key, k] : keys) {
    gp << "set title " << Quoted("share of episodes by " + key) << "\nset ylabel "
       << Quoted("share of episodes (%)") << "\nplot ";
    bool first = true;
    int n = 0;
    for (const Band& b : bands) {
      if (b.key != key) continue;
      gp << (first ? "" : ", \\\n     ") << Quoted(dat) << " using 1:(100*$" << b.lower_col
         << "):(100*$" << b.lower_col + 1 << ") with filledcurves lc rgb '"
         << kColors[n++ % (sizeof(kColors) / sizeof(kColors[0]))] << "' title " << Quoted(b.value);
      first = false;
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  return WriteAndRender(out_dir, "shares", data.str(), gp.str());
}

Result<PlotFiles> PlotCostAccuracy(const nlohmann::json& rows, const std::string& out_dir) {
  struct Point {
    std::string label;
    std::string method;
    std::string phase;
    double cost;
    double accuracy;
  };
  std::vector<Point> points;
  if (rows.is_array()) {
    for (const auto& r : rows) {
      if (!r.is_object() || !r.contains("mean_cost_usd") || !r.contains("accuracy")) continue;
      const double cost = r["mean_cost_usd"].get<double>();
      if (!(cost > 0)) continue;  // a log axis has no zero; a free method has no cost to weigh
      points.push_back({r.value("label", r.value("method", "?")), r.value("method", ""),
                        r.value("phase", ""), cost, r["accuracy"].get<double>()});
    }
  }
  if (points.empty()) {
    return InvalidArgument("cost-accuracy plot: no row with accuracy and mean_cost_usd > 0");
  }
  // The hull of what needs no training: the fixed levels and random routing (CogER Sec. 5's
  // baselines). A router above it beats every mixture of them.
  std::vector<std::pair<double, double>> base;
  double lo = points.front().cost, hi = lo, top = 0;
  for (const Point& p : points) {
    if (p.method != "router") base.emplace_back(p.cost, p.accuracy);
    lo = std::min(lo, p.cost);
    hi = std::max(hi, p.cost);
    top = std::max(top, p.accuracy);
  }
  const bool log_x = hi > 10 * lo;
  std::ostringstream data;
  // One block per row (gnuplot's `index i`), then the hull, sampled densely so that a mixture's
  // straight segment draws true on a log axis.
  for (const Point& p : points) {
    data << "# " << p.label << "\n" << Cell(p.cost) << " " << Cell(p.accuracy) << "\n\n\n";
  }
  const auto hull = UpperHull(base);
  data << "# upper convex hull of the fixed levels and random routing\n";
  for (size_t i = 0; i < hull.size(); ++i) {
    const int samples = i + 1 < hull.size() ? 32 : 1;
    for (int k = 0; k < samples; ++k) {
      const double t = static_cast<double>(k) / samples;
      const auto& a = hull[i];
      const auto& b = hull[std::min(i + 1, hull.size() - 1)];
      data << Cell(a.first + t * (b.first - a.first)) << " "
           << Cell(a.second + t * (b.second - a.second)) << "\n";
    }
  }
  const std::string dat = out_dir + "/cost_accuracy.dat";
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1100,620 noenhanced font 'sans,11'\n"
     << "set title 'accuracy against cost per query (test items)'\n"
     << "set xlabel "
     << Quoted(log_x ? "mean cost per query (USD, log scale)" : "mean cost per query (USD)")
     << "\nset ylabel 'accuracy (fraction of test items correct)'\n"
     << "set grid lc rgb '#e0e0e0'\nset border lc rgb '#606060'\n"
     << "set key outside right top spacing 1.4 box lc rgb '#c0c0c0'\n"
     << (log_x ? "" : "set format x '%.1e'\n")
     << "set yrange [0:" << Cell(std::min(1.0, top * 1.2 + 0.02)) << "]\n";
  if (log_x) {
    // Tics at 1, 2 and 5 of every decade: a decade's single tic leaves the axis unreadable.
    const double x0 = lo / 1.6, x1 = hi * 1.6;
    std::string tics;
    for (double decade = std::pow(10.0, std::floor(std::log10(x0))); decade <= x1; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double t = m * decade;
        if (t < x0 || t > x1) continue;
        tics += (tics.empty() ? "" : ", ") + Quoted(fmt::format("{:g}", t)) + " " + Cell(t);
      }
    }
    gp << "set logscale x\nset mxtics 10\nset xtics (" << tics << ")\nset xrange [" << Cell(x0)
       << ":" << Cell(x1) << "]\n";
  } else {
    const double pad = std::max(hi - lo, hi * 0.1) * 0.1;
    gp << "set xrange [" << Cell(std::max(0.0, lo - pad)) << ":" << Cell(hi + pad) << "]\n";
  }
  bool fixed_titled = false;
  gp << "plot ";
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const bool fixed = p.label.rfind("fixed", 0) == 0;
    std::string style = "pt 7 ps 1.6 lc rgb '#303030'";
    std::string title = " title " + Quoted(p.label);
    if (p.method == "router") {
      style = p.phase == "after" ? "pt 13 ps 2.6 lc rgb '#c0392b'" : "pt 9 ps 2 lc rgb '#e08a2c'";
    } else if (p.method == "random") {
      style = p.label.find("expected") != std::string::npos ? "pt 6 ps 2 lw 2 lc rgb '#7f7f7f'"
                                                            : "pt 2 ps 1.8 lw 2 lc rgb '#7f7f7f'";
    } else if (fixed) {
      style = "pt 5 ps 1.6 lc rgb '#2f6db5'";
      // One legend entry for the levels; each carries its name at its point (below).
      title = fixed_titled ? " notitle" : " title 'fixed levels'";
      fixed_titled = true;
    }
    gp << Quoted(dat) << " index " << i << " using 1:2 with points " << style << title
       << ", \\\n     ";
    if (fixed) {
      gp << "'' index " << i << " using 1:2:(" << Quoted(p.method)
         << ") with labels offset 0,1.1 tc rgb '#2f6db5' notitle, \\\n     ";
    }
  }
  // The untrained router once more, on top: it often sits where the trained one does, under
  // its larger marker.
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].method == "router" && points[i].phase != "after") {
      gp << "'' index " << i
         << " using 1:2 with points pt 9 ps 2 lc rgb '#e08a2c' notitle, \\\n     ";
    }
  }
  gp << "'' index " << points.size()
     << " using 1:2 with lines dt 2 lw 1.5 lc rgb '#7f7f7f' "
        "title 'hull of fixed levels + random'\n";
  return WriteAndRender(out_dir, "cost_accuracy", data.str(), gp.str());
}

}  // namespace allot
