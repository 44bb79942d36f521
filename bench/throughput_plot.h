// ThroughputPlot draws throughput over time as a self-contained SVG (no dependencies): one
// panel per run, sharing the time axis, with each checkpoint marked by a line at its trigger
// instant and a band as long as it took.
//
// Contract: pure formatting; the caller computes the rates. Times are seconds since the
// process started.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cairn {

struct PlotCheckpoint {
  double trigger = 0;    // s
  double duration = 0;   // s
  bool final = false;    // the checkpoint after the input ended
};

struct PlotSeries {
  std::string label;
  std::string color;                              // an SVG colour
  std::vector<std::pair<double, double>> points;  // (time s, records/s)
};

struct PlotPanel {
  std::string title;
  std::vector<PlotSeries> series;
  std::vector<PlotCheckpoint> checkpoints;
};

std::string ThroughputSvg(const std::string& title, const std::string& subtitle, const std::vector<PlotPanel>& panels);

}  // namespace cairn
