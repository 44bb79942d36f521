#include "jobs/cli/rest_client.h"

#include <httplib.h>

#include <cstdio>
#include <nlohmann/json.hpp>

namespace cairn {

using nlohmann::json;

namespace {

int ClientUsage(const std::string& msg) {
  fprintf(stderr,
          "cairn: %s\nusage:\n  cairn savepoint JOB_URL [--dir DIR]\n  cairn stop JOB_URL [--savepoint DIR] [--drain]\n"
          "  (JOB_URL: the address `cairn run --http` printed, e.g. http://127.0.0.1:8081)\n",
          msg.c_str());
  return 2;
}

// Splits "http://HOST:PORT[/]" into what httplib::Client takes.
bool ParseUrl(const std::string& url, std::string* base) {
  std::string u = url;
  if (u.rfind("http://", 0) != 0) u = "http://" + u;
  while (u.size() > 7 && u.back() == '/') u.pop_back();
  if (u.find('/', 7) != std::string::npos || u.find(':', 7) == std::string::npos) return false;
  *base = u;
  return true;
}

int Post(const std::string& url, const std::string& path, const json& body) {
  std::string base;
  if (!ParseUrl(url, &base)) return ClientUsage("JOB_URL " + url + ": expected http://HOST:PORT");
  httplib::Client cli(base);
  // A savepoint of a large state may take long; the job answers once it is committed.
  cli.set_read_timeout(std::chrono::hours(24));
  auto res = cli.Post(path, body.dump(), "application/json");
  if (!res) {
    fprintf(stderr, "cairn: error: %s%s: %s (is the job running with --http?)\n", base.c_str(), path.c_str(),
            httplib::to_string(res.error()).c_str());
    return 2;
  }
  json j = json::parse(res->body, nullptr, false);
  if (res->status != 200 || j.is_discarded() || !j.contains("path")) {
    std::string why = !j.is_discarded() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                                         : res->body;
    fprintf(stderr, "cairn: error: %s%s answered %d: %s\n", base.c_str(), path.c_str(), res->status, why.c_str());
    return res->status >= 400 && res->status < 500 && res->status != 409 ? 2 : 1;
  }
  fprintf(stderr, "cairn: savepoint %s committed\n", j["id"].dump().c_str());
  printf("%s\n", j["path"].get<std::string>().c_str());
  return 0;
}

}  // namespace

int CmdSavepoint(const std::vector<std::string>& args) {
  std::string url, dir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--dir" && i + 1 < args.size()) {
      dir = args[++i];
    } else if (a.rfind("--dir=", 0) == 0) {
      dir = a.substr(6);
    } else if (a.size() > 1 && a[0] == '-') {
      return ClientUsage(a == "--dir" ? "--dir needs a directory" : "unknown flag '" + a + "'");
    } else if (url.empty()) {
      url = a;
    } else {
      return ClientUsage("unexpected argument '" + a + "'");
    }
  }
  if (url.empty()) return ClientUsage("missing JOB_URL");
  json body = json::object();
  if (!dir.empty()) body["dir"] = dir;
  return Post(url, "/api/savepoints", body);
}

int CmdStop(const std::vector<std::string>& args) {
  std::string url, dir;
  bool drain = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--savepoint" && i + 1 < args.size()) {
      dir = args[++i];
    } else if (a.rfind("--savepoint=", 0) == 0) {
      dir = a.substr(12);
    } else if (a == "--drain") {
      drain = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return ClientUsage(a == "--savepoint" ? "--savepoint needs a directory" : "unknown flag '" + a + "'");
    } else if (url.empty()) {
      url = a;
    } else {
      return ClientUsage("unexpected argument '" + a + "'");
    }
  }
  if (url.empty()) return ClientUsage("missing JOB_URL");
  json body = {{"drain", drain}};
  if (!dir.empty()) body["savepoint_dir"] = dir;
  return Post(url, "/api/stop", body);
}

}  // namespace cairn
