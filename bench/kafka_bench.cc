#include "bench/kafka_bench.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_results.h"
#include "bench/process_runner.h"
#include "engine/base/file_util.h"

namespace cairn {
namespace {

// The mock keeps about 5 MB per partition and deletes older records (its log start moves on):
// the corpus is spread over enough partitions to stay below that (~66-byte lines).
constexpr int kPartitions = 8;

// Produces every line of `path` to `topic`, line i to partition i mod `partitions`.
bool ProduceLines(const std::string& bootstraps, const std::string& topic, int partitions, const std::string& path,
                  uint64_t* lines) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "linger.ms", "20", err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return false;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) return false;
  std::ifstream in(path);
  *lines = 0;
  for (std::string line; std::getline(in, line); ++*lines) {
    rd_kafka_resp_err_t e;
    while ((e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                                  RD_KAFKA_V_PARTITION(static_cast<int32_t>(*lines % partitions)),
                                  RD_KAFKA_V_VALUE(line.data(), line.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(rk, 100);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) break;
  }
  bool ok = rd_kafka_flush(rk, 120000) == RD_KAFKA_RESP_ERR_NO_ERROR;
  rd_kafka_destroy(rk);
  return ok;
}

uint64_t SinkRecordsOf(const std::string& out) {
  size_t at = out.find("sink records");
  return at == std::string::npos ? 0 : strtoull(out.c_str() + at + 12, nullptr, 10);
}

}  // namespace

int KafkaBenchMain(const std::vector<std::string>& args) {
  int reps = 3;
  int64_t lines = 400000;
  std::string cairn = BenchBinaryDir() + "/cairn", data_dir;
  for (size_t i = 0; i < args.size(); ++i) {
    auto next = [&](std::string* v) { return i + 1 < args.size() && (*v = args[++i], true); };
    std::string v;
    if (args[i] == "--reps" && next(&v)) reps = std::max(1, atoi(v.c_str()));
    else if (args[i] == "--lines" && next(&v)) lines = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--cairn" && next(&v)) cairn = v;
    else if (args[i] == "--data-dir" && next(&v)) data_dir = v;
    else {
      fprintf(stderr, "cairn-bench: kafka: unknown or incomplete argument '%s'\n", args[i].c_str());
      return 2;
    }
  }
  std::string scratch, corpus;
  if (Status s = PrepareScratchCorpus(cairn, data_dir, "kafka", lines, &scratch, &corpus); !s.ok())
    return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;

  // The mock cluster lives in this process, as `cairn kafka mock` would in its own.
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  (void)rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) return fprintf(stderr, "cairn-bench: %s\n", err), 1;
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, 3);
  const std::string brokers = rd_kafka_mock_cluster_bootstraps(mc);
  (void)rd_kafka_mock_topic_create(mc, "in", kPartitions, 3);
  uint64_t produced = 0;
  if (!ProduceLines(brokers, "in", kPartitions, corpus, &produced) || produced != static_cast<uint64_t>(lines)) {
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return fprintf(stderr, "cairn-bench: producing the corpus to the mock failed\n"), 1;
  }
  printf("cairn-bench kafka: %" PRId64 " lines (%" PRId64 " words), parallelism 2, checkpoints every 1 s, "
         "%d runs each, interleaved; Kafka: librdkafka's mock cluster (3 brokers, in this process)\n",
         lines, lines * 10, reps);
  std::map<std::string, std::vector<double>> rate, cpu;
  int failed = 0;
  for (int rep = 0; rep < reps; ++rep) {
    for (const std::string& cfg : rep % 2 == 0 ? std::vector<std::string>{"file-file", "kafka-kafka"}
                                              : std::vector<std::string>{"kafka-kafka", "file-file"}) {
      const std::string dir = scratch + "/" + cfg;
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
      (void)CreateDirs(dir);
      const std::string out_topic = "out-" + std::to_string(rep);
      std::string yaml = "job: bench-" + cfg + "\nparallelism: 2\ncheckpoint: {interval: 1s, dir: '" + dir +
                         "/ck', retain: 1000}\noperators:\n";
      if (cfg == "file-file")
        yaml += "  - {id: source, type: file_source, path: '" + corpus + "'}\n"
                "  - {id: sink, type: file_sink, path: '" + dir + "/out', inputs: [source]}\n";
      else
        yaml += "  - {id: source, type: kafka_source, brokers: '" + brokers + "', topic: in, stop_at: latest}\n"
                "  - {id: sink, type: kafka_sink, brokers: '" + brokers + "', topic: " + out_topic +
                ", delivery: exactly_once, inputs: [source]}\n";
      const std::string job = dir + "/job.yaml";
      if (Status w = WriteFileAtomically(job, yaml); !w.ok())
        return fprintf(stderr, "cairn-bench: %s\n", w.message().c_str()), 1;
      ChildResult c;
      Status r = RunChild({cairn, "run", job}, &c, 1800);
      const bool ok = r.ok() && c.ok() && SinkRecordsOf(c.out) == static_cast<uint64_t>(lines);
      if (!ok) {
        ++failed;
        fprintf(stderr, "cairn-bench: kafka rep %d %s FAILED: %s\n", rep + 1, cfg.c_str(),
                !r.ok() ? r.message().c_str()
                : !c.ok() ? c.Describe().c_str()
                          : ("sink records " + std::to_string(SinkRecordsOf(c.out)) + ", expected " +
                             std::to_string(lines) + "\n" + c.out).c_str());
        continue;
      }
      rate[cfg].push_back(static_cast<double>(lines) / c.wall_seconds);
      cpu[cfg].push_back(c.user_seconds + c.sys_seconds);
      fprintf(stderr, "cairn-bench: kafka rep %d %-12s %.3f s  %.0f records/s\n", rep + 1, cfg.c_str(), c.wall_seconds,
              static_cast<double>(lines) / c.wall_seconds);
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
    }
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  RemoveAll(scratch).IgnoreError();  // scratch space: best effort
  for (const std::string cfg : {"file-file", "kafka-kafka"}) {
    if (rate[cfg].empty()) continue;
    Spread r = Spread::Of(rate[cfg]), c = Spread::Of(cpu[cfg]);
    printf("  %-12s %.0f records/s [%.0f-%.0f], CPU %.2f s (engine process only)\n", cfg.c_str(), r.median, r.min,
           r.max, c.median);
  }
  if (!rate["file-file"].empty() && !rate["kafka-kafka"].empty())
    printf("  kafka-kafka / file-file: %.2f\n",
           Spread::Of(rate["kafka-kafka"]).median / Spread::Of(rate["file-file"]).median);
  return failed > 0 ? 1 : 0;
}

}  // namespace cairn
