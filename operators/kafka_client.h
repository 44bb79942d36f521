// What kafka_source and kafka_sink share: building a librdkafka configuration from the
// operator's `brokers` and `properties:` (passed to librdkafka as is), with a message naming the
// YAML line of a property librdkafka refuses, and RAII owners of librdkafka handles.
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "jobs/job_spec.h"

namespace cairn {

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;

struct KafkaPartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
using KafkaPartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, KafkaPartitionListDeleter>;

// A configuration with `bootstrap.servers` = the `brokers` parameter, then `defaults` (the
// operator's own settings), then every entry of `properties:` (so a user's property wins).
// InvalidArgument (exit 2) naming the YAML line when librdkafka refuses a property.
inline Status MakeKafkaConf(const OperatorConfig& c, const std::string& what,
                            const std::vector<std::pair<std::string, std::string>>& defaults, rd_kafka_conf_t** out) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v, const std::string& where) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) == RD_KAFKA_CONF_OK) return Status::OK();
    return Status::InvalidArgument(where + ": " + what + ": librdkafka property '" + k + "': " + err);
  };
  Status s = set("bootstrap.servers", c.GetString("brokers"), c.Where("brokers"));
  for (const auto& [k, v] : defaults)
    if (s.ok()) s = set(k, v, c.location);
  for (const ParamEntry& e : c.GetEntries("properties"))
    if (s.ok()) s = set(e.key, e.value, e.location);
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  *out = conf;
  return Status::OK();
}

}  // namespace cairn
