// cairn-bench kafka: records/s of a pass-through job Kafka -> Kafka (kafka_source to an
// exactly-once kafka_sink) through librdkafka's mock cluster, beside the same job file -> file,
// both with checkpoints every second (docs/benchmarks.md, "Kafka").
#pragma once

#include <string>
#include <vector>

namespace cairn {

// args: [--reps N] [--lines N] [--cairn PATH] [--data-dir DIR]. Exit 0, 1 on a failed run, 2 on
// bad arguments.
int KafkaBenchMain(const std::vector<std::string>& args);

}  // namespace cairn
