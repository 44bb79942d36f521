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
  std::vector<std::pair<double, double>> points;  // (time s, records/s or the panel's y_label)
};

struct PlotPanel {
  std::string title;
  // Empty: the series are records/s, drawn in M on a y axis shared with the other such panels.
  // Else the series' y values in these units (e.g. checkpoint duration in ms), on an axis of
  // the panel's own.
  std::string y_label;
  std::vector<PlotSeries> series;
  std::vector<PlotCheckpoint> checkpoints;
};

std::string ThroughputSvg(const std::string& title, const std::string& subtitle, const std::vector<PlotPanel>& panels);

}  // namespace cairn
