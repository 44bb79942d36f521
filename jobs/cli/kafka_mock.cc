#include "jobs/cli/kafka_mock.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace cairn {
namespace {

constexpr const char* kKafkaUsage =
    "usage: cairn kafka mock [--brokers N] [--topic NAME:PARTITIONS]...\n"
    "  starts librdkafka's mock cluster of N brokers (default 3), creates the topics, prints the\n"
    "  bootstrap servers on one line and serves until SIGINT or SIGTERM\n";

int KafkaUsage(const std::string& msg) {
  fprintf(stderr, "cairn: %s\n%s", msg.c_str(), kKafkaUsage);
  return 2;
}

bool ParsePositive(const std::string& s, long* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::strtol(s.c_str(), nullptr, 10);
  return *out > 0;
}

}  // namespace

int CmdKafka(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "mock") return KafkaUsage("kafka takes: mock");
  long brokers = 3;
  std::vector<std::pair<std::string, long>> topics;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string flag = a, value;
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return KafkaUsage("flag " + a + " needs a value");
    }
    if (flag == "--brokers") {
      if (!ParsePositive(value, &brokers) || brokers > 64)
        return KafkaUsage("--brokers must be a number of brokers from 1 to 64, got '" + value + "'");
    } else if (flag == "--topic") {
      size_t colon = value.rfind(':');
      long partitions = 0;
      if (colon == std::string::npos || colon == 0 || !ParsePositive(value.substr(colon + 1), &partitions) ||
          partitions > 10000)
        return KafkaUsage("--topic must be NAME:PARTITIONS (1 to 10000 partitions), got '" + value + "'");
      topics.emplace_back(value.substr(0, colon), partitions);
    } else {
      return KafkaUsage("unknown flag '" + flag + "'");
    }
  }
  // librdkafka's threads inherit this mask, so the signals reach sigwait below only.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  (void)rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    fprintf(stderr, "cairn: error: cannot create a librdkafka handle: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, static_cast<int>(brokers));
  if (mc == nullptr) {
    rd_kafka_destroy(rk);
    fprintf(stderr, "cairn: error: cannot start the mock cluster\n");
    return 1;
  }
  for (const auto& [name, partitions] : topics) {
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name.c_str(), static_cast<int>(partitions),
                                                       static_cast<int>(std::min(brokers, 3L)));
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "cairn: error: cannot create topic '%s': %s\n", name.c_str(), rd_kafka_err2str(e));
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 1;
    }
  }
  printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}

}  // namespace cairn
