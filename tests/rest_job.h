// A job run as a child process with `--http 127.0.0.1:0`, for the REST API's end-to-end tests
// (tests/savepoint_rest_test.cc in one process, tests/local_workers_rest_test.cc with worker
// processes): starts it, reads the port it bound from its stderr, and talks to the API. Every
// wait polls a condition, bounded only by a generous hang guard.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace cairn::testing {

class RestJobTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  // Starts `cairn args...` (stdout and stderr in dir_/job.out, job.err) and waits for its
  // "REST API at http://127.0.0.1:PORT/" line.
  void StartWith(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    job_ = std::make_unique<CairnProcess>(args, dir_ / "job.out", dir_ / "job.err", env);
    const std::regex url_re("REST API at http://127\\.0\\.0\\.1:([0-9]+)/");
    std::smatch m;
    ASSERT_TRUE(PollUntil([&] {
      std::string err = ReadText(dir_ / "job.err");
      if (!std::regex_search(err, m, url_re)) return false;
      port_ = std::stoi(m[1].str());
      return true;
    })) << ReadText(dir_ / "job.err");
    url_ = "http://127.0.0.1:" + std::to_string(port_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(std::chrono::seconds(120));
  }

  json Get(const std::string& path, int expect_status = 200) {
    auto res = client_->Get(path);
    EXPECT_TRUE(res) << path << ": " << httplib::to_string(res.error()) << " (" << url_ << ")";
    if (!res) return json();
    EXPECT_EQ(res->status, expect_status) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  json Post(const std::string& path, const std::string& body, int expect_status = 200) {
    auto res = client_->Post(path, body, "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, expect_status) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  void WaitForCompletedCheckpoint() {
    ASSERT_TRUE(PollUntil([&] {
      json c = Get("/api/checkpoints");
      return c.is_object() && c["counts"]["completed"].get<int>() >= 1;
    }));
  }

  RunResult WaitJob() {
    RunResult r;
    EXPECT_TRUE(job_->Wait(120000, &r));
    r.out = ReadText(dir_ / "job.out");
    r.err = ReadText(dir_ / "job.err");
    return r;
  }

  ScratchDir dir_;
  std::unique_ptr<CairnProcess> job_;
  std::unique_ptr<httplib::Client> client_;
  int port_ = 0;
  std::string url_;
};

}  // namespace cairn::testing
