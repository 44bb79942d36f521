#include "bench/throughput_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cairn {

namespace {

std::string Num(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over `range`.
double NiceStep(double range, int ticks) {
  if (range <= 0) return 1;
  double raw = range / ticks;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "start", int size = 12,
                 const char* extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + std::to_string(size) + "\" text-anchor=\"" +
         anchor + "\"" + extra + ">" + Escape(s) + "</text>\n";
}

}  // namespace

std::string ThroughputSvg(const std::string& title, const std::string& subtitle, const std::vector<PlotPanel>& panels) {
  const double width = 960, left = 70, right = 20, top = 84, panel_h = 230, gap = 50, bottom = 40;
  const double plot_w = width - left - right;
  const double height = top + panels.size() * panel_h + (panels.empty() ? 0 : (panels.size() - 1) * gap) + bottom;
  double max_t = 0, shared_max_y = 0;
  auto panel_max_y = [](const PlotPanel& p) {
    double m = 0;
    for (const PlotSeries& s : p.series)
      for (const auto& pt : s.points) m = std::max(m, pt.second);
    return m;
  };
  for (const PlotPanel& p : panels) {
    for (const PlotSeries& s : p.series)
      for (const auto& pt : s.points) max_t = std::max(max_t, pt.first);
    if (p.y_label.empty()) shared_max_y = std::max(shared_max_y, panel_max_y(p));
    for (const PlotCheckpoint& c : p.checkpoints) max_t = std::max(max_t, c.trigger + c.duration);
  }
  if (max_t <= 0) max_t = 1;
  const double t_step = NiceStep(max_t, 10);
  max_t = std::ceil(max_t / t_step) * t_step;

  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
       "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\" font-family=\"sans-serif\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += Text(left, 24, title, "start", 16, " font-weight=\"bold\"");
  o += Text(left, 44, subtitle, "start", 12, " fill=\"#555\"");

  for (size_t pi = 0; pi < panels.size(); ++pi) {
    const PlotPanel& p = panels[pi];
    const bool own_axis = !p.y_label.empty();
    double max_y = own_axis ? panel_max_y(p) : shared_max_y;
    if (max_y <= 0) max_y = 1;
    const double y_step = NiceStep(max_y * 1.05, 5);
    max_y = std::ceil(max_y * 1.05 / y_step) * y_step;
    const double y_div = own_axis ? 1 : 1e6;
    const double y0 = top + pi * (panel_h + gap);
    const double y1 = y0 + panel_h;
    auto X = [&](double t) { return left + t / max_t * plot_w; };
    auto Y = [&](double v) { return y1 - v / max_y * panel_h; };
    o += "<g>\n";
    o += Text(left, y0 - 8, p.title, "start", 13, " font-weight=\"bold\"");
    // Checkpoint bands and trigger lines, under the data.
    for (const PlotCheckpoint& c : p.checkpoints) {
      const char* color = c.final ? "#d62728" : "#ff7f0e";
      double w = std::max(1.0, X(c.trigger + c.duration) - X(c.trigger));
      o += "<rect x=\"" + Num(X(c.trigger)) + "\" y=\"" + Num(y0) + "\" width=\"" + Num(w) + "\" height=\"" +
           Num(panel_h) + "\" fill=\"" + color + "\" fill-opacity=\"0.12\"/>\n";
      o += "<line x1=\"" + Num(X(c.trigger)) + "\" y1=\"" + Num(y0) + "\" x2=\"" + Num(X(c.trigger)) + "\" y2=\"" +
           Num(y1) + "\" stroke=\"" + color + "\" stroke-width=\"1\" stroke-dasharray=\"3,2\"/>\n";
    }
    // Grid and axes.
    for (double v = 0; v <= max_y + 1e-9; v += y_step) {
      o += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(Y(v)) + "\" x2=\"" + Num(left + plot_w) + "\" y2=\"" +
           Num(Y(v)) + "\" stroke=\"#e5e5e5\"/>\n";
      char lbl[32];
      snprintf(lbl, sizeof lbl, "%g", v / y_div);
      o += Text(left - 6, Y(v) + 4, lbl, "end", 11);
    }
    for (double t = 0; t <= max_t + 1e-9; t += t_step) {
      o += "<line x1=\"" + Num(X(t)) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(X(t)) + "\" y2=\"" + Num(y1 + 4) +
           "\" stroke=\"#333\"/>\n";
      char lbl[32];
      snprintf(lbl, sizeof lbl, "%g", t);
      o += Text(X(t), y1 + 16, lbl, "middle", 11);
    }
    o += "<rect x=\"" + Num(left) + "\" y=\"" + Num(y0) + "\" width=\"" + Num(plot_w) + "\" height=\"" + Num(panel_h) +
         "\" fill=\"none\" stroke=\"#333\"/>\n";
    o += Text(18, y0 + panel_h / 2, own_axis ? p.y_label : "M words/s", "middle", 11,
              (" transform=\"rotate(-90 18 " + Num(y0 + panel_h / 2) + ")\"").c_str());
    // Data.
    for (const PlotSeries& s : p.series) {
      if (s.points.empty()) continue;
      o += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\" points=\"";
      for (const auto& [t, v] : s.points) o += Num(X(t)) + "," + Num(Y(v)) + " ";
      o += "\"/>\n";
      if (own_axis)  // a value per point (e.g. per checkpoint): mark each
        for (const auto& [t, v] : s.points)
          o += "<circle cx=\"" + Num(X(t)) + "\" cy=\"" + Num(Y(v)) + "\" r=\"2.5\" fill=\"" + s.color + "\"/>\n";
    }
    // Legend.
    double lx = left + plot_w - 10;
    double ly = y0 + 16;
    std::vector<std::pair<std::string, std::string>> legend;
    for (const PlotSeries& s : p.series) legend.emplace_back(s.label, s.color);
    if (!p.checkpoints.empty()) legend.emplace_back("checkpoint: trigger and duration", "#ff7f0e");
    for (const auto& [label, color] : legend) {
      o += Text(lx - 24, ly + 4, label, "end", 11);
      o += "<line x1=\"" + Num(lx - 20) + "\" y1=\"" + Num(ly) + "\" x2=\"" + Num(lx) + "\" y2=\"" + Num(ly) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
      ly += 16;
    }
    o += "</g>\n";
  }
  o += Text(left + plot_w / 2, height - 8, "seconds since the process started", "middle", 12);
  o += "</svg>\n";
  return o;
}

}  // namespace cairn
