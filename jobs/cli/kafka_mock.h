// `cairn kafka mock`: librdkafka's in-process mock cluster (librdkafka/rdkafka_mock.h) served
// until SIGINT or SIGTERM, for trying Kafka jobs without a broker and for tests (docs/kafka.md).
#pragma once

#include <string>
#include <vector>

namespace cairn {

// args: [--brokers N] [--topic NAME:PARTITIONS]... Prints the bootstrap servers on one line of
// stdout, then serves. Exit 0 after a signal, 2 on bad arguments.
int CmdKafka(const std::vector<std::string>& args);

}  // namespace cairn
