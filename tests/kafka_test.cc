// kafka_source end to end against librdkafka's mock cluster (librdkafka/rdkafka_mock.h), run
// inside this test process: the cairn children reach it over localhost like a real cluster,
// and the test takes brokers down and injects request errors through it. Word count from a
// 4-partition topic, bounded with stop_at: latest: SIGKILLs with --restore latest, a rescale
// 2 -> 3 -> 1, a broker down and up mid-run and injected Fetch, ListOffsets and OffsetCommit
// errors, each giving the exactly-once counts. Kills and broker changes follow observed
// completed checkpoints, never a clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

// librdkafka cannot run under ThreadSanitizer here: Debian's build starts its threads with C11
// thrd_create, which glibc implements without pthread_create, and clang 14's TSan intercepts
// only pthread_create, so the first allocation on such a thread crashes in TSan's allocator
// (seen: SEGV in __tsan::user_calloc from a librdkafka thread). So the Kafka tests are left out
// of the TSan build (docs/faults.md, "Sanitizers"); the default suite and ASan run them.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CAIRN_KAFKA_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CAIRN_KAFKA_UNDER_TSAN 1
#endif
#ifndef CAIRN_KAFKA_UNDER_TSAN

namespace cairn::testing {
namespace {

constexpr int16_t kApiProduce = 0, kApiFetch = 1, kApiListOffsets = 2, kApiOffsetCommit = 8, kApiInitProducerId = 22,
                  kApiAddPartitionsToTxn = 24, kApiEndTxn = 26;

// A mock cluster of `brokers` brokers with one topic, and a producer to fill it.
class MockKafka {
 public:
  MockKafka(int brokers, const std::string& topic, int partitions) : topic_(topic), partitions_(partitions) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof(err));
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
    EXPECT_EQ(rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, std::min(brokers, 3)),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(mc_);
  }
  ~MockKafka() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  const std::string& bootstraps() const { return bootstraps_; }
  void CreateTopic(const std::string& name, int partitions) {
    EXPECT_EQ(rd_kafka_mock_topic_create(mc_, name.c_str(), partitions, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  rd_kafka_mock_cluster_t* cluster() { return mc_; }

  // Produces every line of `path` as one record, line i to partition first + i mod count
  // (count 0: every partition), and waits until all are acknowledged.
  void ProduceLines(const std::string& path, int first = 0, int count = 0) {
    if (count == 0) count = partitions_;
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof(err));
    rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
    // Exactly once into the topic: a retried produce never writes a record twice, and a record
    // that could not be delivered fails the test here (rd_kafka_flush does not report it).
    rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
    struct Delivery {
      int failed = 0;
      std::string first_error;
    } delivery;
    rd_kafka_conf_set_opaque(conf, &delivery);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
      auto* d = static_cast<Delivery*>(opaque);
      if (d->failed++ == 0) d->first_error = rd_kafka_err2str(m->err);
    });
    rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    ASSERT_NE(p, nullptr) << err;
    std::ifstream in(path);
    int64_t i = 0;
    for (std::string line; std::getline(in, line); ++i) {
      std::string key = "k" + std::to_string(i);
      rd_kafka_resp_err_t e;
      while ((e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic_.c_str()),
                                    RD_KAFKA_V_PARTITION(static_cast<int32_t>(first + i % count)),
                                    RD_KAFKA_V_VALUE(line.data(), line.size()), RD_KAFKA_V_KEY(key.data(), key.size()),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
             RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(p, 100);
      ASSERT_EQ(e, RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    ASSERT_EQ(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(p);
    ASSERT_EQ(delivery.failed, 0) << "records not delivered to the mock cluster; the first error: "
                                  << delivery.first_error;
  }

 private:
  std::string topic_;
  int partitions_;
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
  std::string bootstraps_;
};

// The word count of jobs/kafka-wordcount.yaml with a file_sink instead of its kafka_sink: the
// committed output files are what the exactly-once check reads (the mock cannot hide aborted
// transactions from a consumer; see KafkaSink below).
std::string FileSinkWordCountJob(const ScratchDir& dir) {
  const std::string path = dir / "wordcount.yaml";
  WriteText(path,
            "job: kafka-wordcount\n"
            "parallelism: 2\n"
            "checkpoint: {interval: 1s, dir: ck}\n"
            "operators:\n"
            "  - {id: source, type: kafka_source, brokers: 'localhost:9092', topic: words, stop_at: latest}\n"
            "  - {id: tokenize, type: tokenize, inputs: [source]}\n"
            "  - {id: count, type: count, key_by: word, inputs: [tokenize]}\n"
            "  - {id: sink, type: file_sink, path: out, inputs: [count]}\n");
  return path;
}

struct KafkaWordCount {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  std::unique_ptr<MockKafka> kafka;

  explicit KafkaWordCount(int words, int brokers = 3) {
    RunResult gen = RunCairn({"generate", "--out", input, "--words", std::to_string(words), "--vocabulary", "500",
                              "--words-per-line", "10", "--seed", "11"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    kafka = std::make_unique<MockKafka>(brokers, "words", 4);
    kafka->ProduceLines(input);
  }
  std::vector<std::string> Args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = {"run", FileSinkWordCountJob(dir), "--quiet", "--restore", "latest",
                                  "--set", "operators.source.brokers=" + kafka->bootstraps(),
                                  "--set", "operators.sink.path=" + dir / "out",
                                  "--set", "checkpoint.dir=" + dir / "ck",
                                  "--set", "checkpoint.interval=50ms"};
    for (const std::string& s : extra) a.insert(a.end(), {"--set", s});
    return a;
  }
};

// Runs `args` until `checkpoints` new checkpoints completed in `ckdir` (or, when `kill` is
// false, to its end), then SIGKILLs it. False when it ended before.
bool RunUntilCheckpoints(const std::vector<std::string>& args, const std::string& logs, const std::string& ckdir,
                         uint64_t checkpoints) {
  const uint64_t target = NewestCompletedCheckpoint(ckdir) + checkpoints;
  CairnProcess p(ResumeArgs(args), logs + "/out.log", logs + "/err.log");
  RunResult r;
  while (NewestCompletedCheckpoint(ckdir) < target)
    if (p.Wait(2, &r)) {
      ADD_FAILURE() << "ended by itself (exit " << r.exit_code << ") before its kill\n" << ReadText(logs + "/err.log");
      return false;
    }
  p.Kill();
  p.Wait(600000, &r);
  return true;
}

// `cairn state dump --json` of the source in the newest completed checkpoint of `ck`.
std::string SourceState(const std::string& ck) {
  RunResult dump = RunCairn({"state", "dump", ck + "/chk-" + std::to_string(NewestCompletedCheckpoint(ck)),
                             "--operator", "source", "--json"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  return dump.out;
}

// The number of partition items of `subtask` in SourceState's output.
size_t PartitionItems(const std::string& dump, int subtask) {
  std::istringstream in(dump);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"subtask\":" + std::to_string(subtask) + ",") == std::string::npos ||
        line.find("\"list_state\":\"partitions\"") == std::string::npos)
      continue;
    size_t n = 0;
    for (size_t at = line.find("partition="); at != std::string::npos; at = line.find("partition=", at + 1)) ++n;
    return n;
  }
  return 0;
}

TEST(KafkaSource, WordCountFromFourPartitionsThroughSigkillsIsExactlyOnce) {
  KafkaWordCount wc(100000);
  // The killed runs read 100 records (lines of 10 words) per second per subtask: 50 s for the
  // topic, so none ends before its kill; the last one reads unpaced.
  KillPlan plan = PacedKillPlan(4, wc.dir / "ck", 50, {"operators.source.rate=100"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(wc.Args(), wc.dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  ExpectExactlyOnce(wc.dir / "out", ExpectedCounts(wc.input));
}

TEST(KafkaSource, RescaleTwoThreeOneRedistributesPartitions) {
  KafkaWordCount wc(60000);
  const std::string ck = wc.dir / "ck";
  ASSERT_TRUE(RunUntilCheckpoints(wc.Args({"parallelism=2", "operators.source.rate=100"}), wc.dir.path(), ck, 2));
  ASSERT_TRUE(RunUntilCheckpoints(wc.Args({"parallelism=3", "operators.source.rate=100"}), wc.dir.path(), ck, 2));
  // At parallelism 3 the four partitions' items were dealt round-robin: 2, 1, 1.
  const std::string at3 = SourceState(ck);
  EXPECT_EQ(PartitionItems(at3, 0), 2u) << at3;
  EXPECT_EQ(PartitionItems(at3, 1), 1u) << at3;
  EXPECT_EQ(PartitionItems(at3, 2), 1u) << at3;
  RunResult r = RunCairn(wc.Args({"parallelism=1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(wc.dir / "out", ExpectedCounts(wc.input));
  // The final checkpoint: all four partitions in the one subtask, each read to its end.
  const std::string at1 = SourceState(ck);
  EXPECT_EQ(PartitionItems(at1, 0), 4u) << at1;
  for (int q = 0; q < 4; ++q) EXPECT_NE(at1.find("partition=" + std::to_string(q) + " "), std::string::npos) << at1;
  if (HasFailure())
    std::cerr << "the killed runs' stderr:\n" << ReadText(wc.dir / "err.log") << "the last run's stderr:\n" << r.err
              << "the checkpoints:\n" << RunCairn({"checkpoints", ck}).out;
}

// Runs `args` until the committed output in `out` holds `lines` lines, then SIGKILLs it.
void RunUntilCommittedLines(const std::vector<std::string>& args, const std::string& logs, const std::string& out,
                            size_t lines) {
  CairnProcess p(ResumeArgs(args), logs + "/out.log", logs + "/err.log");
  RunResult r;
  while (CommittedLines(out).size() < lines)
    ASSERT_FALSE(p.Wait(20, &r)) << "ended by itself (exit " << r.exit_code << ")\n" << ReadText(logs + "/err.log");
  p.Kill();
  p.Wait(600000, &r);
}

// Unbounded: a checkpoint of a 2-partition topic restored (at parallelism 3) against a cluster
// whose topic has 4 partitions, the first two holding the same records: the restore resumes
// partitions 0 and 1 at their offsets and reads the new partitions 2 and 3 from their start.
TEST(KafkaSource, PartitionsAddedSinceTheCheckpointAreReadFromTheirStart) {
  ScratchDir dir;
  const std::string f1 = dir / "f1.txt", f2 = dir / "f2.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", f1, "--words", "20000", "--vocabulary", "300", "--seed", "1"}).exit_code, 0);
  ASSERT_EQ(RunCairn({"generate", "--out", f2, "--words", "20000", "--vocabulary", "300", "--seed", "2"}).exit_code, 0);
  std::map<std::string, int64_t> expected = ExpectedCounts(f1);
  size_t w1 = 0, w2 = 0;
  for (const auto& [w, n] : expected) w1 += static_cast<size_t>(n);
  for (const auto& [w, n] : ExpectedCounts(f2)) {
    expected[w] += n;
    w2 += static_cast<size_t>(n);
  }
  auto args = [&](const std::string& brokers, const std::string& parallelism) {
    return std::vector<std::string>{"run", FileSinkWordCountJob(dir), "--quiet", "--restore", "latest",
                                    "--set", "operators.source.brokers=" + brokers,
                                    "--set", "operators.source.stop_at=none",
                                    "--set", "parallelism=" + parallelism,
                                    "--set", "operators.sink.path=" + dir / "out",
                                    "--set", "checkpoint.dir=" + dir / "ck",
                                    "--set", "checkpoint.interval=50ms"};
  };
  {
    MockKafka a(1, "words", 2);
    a.ProduceLines(f1);
    RunUntilCommittedLines(args(a.bootstraps(), "2"), dir.path(), dir / "out", w1);
  }
  MockKafka b(1, "words", 4);
  b.ProduceLines(f1, 0, 2);
  b.ProduceLines(f2, 2, 2);
  RunUntilCommittedLines(args(b.bootstraps(), "3"), dir.path(), dir / "out", w1 + w2);
  ExpectExactlyOnce(dir / "out", expected);
}

TEST(KafkaSource, BrokerDownAndBackMidRunLosesNothing) {
  KafkaWordCount wc(40000);
  const std::string ck = wc.dir / "ck";
  CairnProcess p(ResumeArgs(wc.Args({"operators.source.rate=200"})), wc.dir / "out.log", wc.dir / "err.log");
  RunResult r;
  bool exited = false;
  while (!exited && NewestCompletedCheckpoint(ck) < 2) exited = p.Wait(2, &r);
  ASSERT_FALSE(exited) << ReadText(wc.dir / "err.log");
  // Broker 1 leads some of the partitions: their fetches stop while it is down, and the job
  // goes on checkpointing the others.
  rd_kafka_mock_broker_set_down(wc.kafka->cluster(), 1);
  const uint64_t down_at = NewestCompletedCheckpoint(ck);
  while (!exited && NewestCompletedCheckpoint(ck) < down_at + 3) exited = p.Wait(2, &r);
  rd_kafka_mock_broker_set_up(wc.kafka->cluster(), 1);
  if (!exited) {
    ASSERT_TRUE(p.Wait(600000, &r));
  }
  ASSERT_EQ(r.exit_code, 0) << ReadText(wc.dir / "err.log");
  ExpectExactlyOnce(wc.dir / "out", ExpectedCounts(wc.input));
}

TEST(KafkaSource, InjectedFetchListOffsetsAndCommitErrorsAreRetried) {
  KafkaWordCount wc(20000);
  rd_kafka_mock_cluster_t* mc = wc.kafka->cluster();
  // Retriable errors on the first requests of each kind the job makes.
  rd_kafka_mock_push_request_errors(mc, kApiListOffsets, 2, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  rd_kafka_mock_push_request_errors(mc, kApiFetch, 4, RD_KAFKA_RESP_ERR__TRANSPORT,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR__TRANSPORT,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  rd_kafka_mock_push_request_errors(mc, kApiOffsetCommit, 2, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                                    RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE);
  RunResult r = RunCairn(ResumeArgs(wc.Args({"operators.source.group=wc-monitor"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(wc.dir / "out", ExpectedCounts(wc.input));
  (void)kApiProduce;
}

// Event time per partition. Each of two partitions holds events 0, 10, ..., 19990 ms in order;
// one subtask reads both, and the consumer hands it whole runs of one partition before the
// other's. A subtask-wide watermark would pass the second partition's events while the first is
// read ahead, dropping them as late; per partition, the watermark is the minimum of the two, so
// with max_out_of_orderness 0 no record is ever late, whatever the interleaving.
std::string WindowJob(const ScratchDir& dir, const std::string& brokers, const std::string& stop_at,
                      const std::string& watermark) {
  const std::string path = dir / "windows.yaml";
  WriteText(path,
            "job: kafka-windows\n"
            "parallelism: 1\n"
            "checkpoint: {interval: 100ms, dir: " + dir.path() + "/ck}\n"
            "operators:\n"
            "  - id: source\n"
            "    type: kafka_source\n"
            "    brokers: '" + brokers + "'\n"
            "    topic: events\n"
            "    stop_at: " + stop_at + "\n"
            "    format: jsonl\n"
            "    schema: {ts: int64}\n"
            "    watermark: " + watermark + "\n"
            "  - {id: window, type: window, time: ts, kind: tumble, size: 1s, aggregates: {n: 'count(*)'}, "
            "inputs: [source]}\n"
            "  - {id: sink, type: file_sink, path: " + dir.path() + "/out, format: jsonl, inputs: [window]}\n");
  return path;
}

// Writes events 0, 10, ..., (n - 1) * 10 ms, one jsonl record per line.
std::string EventsFile(const ScratchDir& dir, const std::string& name, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += "{\"ts\": " + std::to_string(i * 10) + "}\n";
  WriteText(dir / name, text);
  return dir / name;
}

TEST(KafkaSource, WatermarksPerPartitionLeaveNoRecordLateWhenOnePartitionIsReadAhead) {
  ScratchDir dir;
  MockKafka kafka(1, "events", 2);
  const std::string events = EventsFile(dir, "events.jsonl", 2000);
  kafka.ProduceLines(events, 0, 1);
  kafka.ProduceLines(events, 1, 1);
  RunResult r = RunCairn({"run", WindowJob(dir, kafka.bootstraps(), "latest", "{field: ts, max_out_of_orderness: 0ms}"),
                          "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("records late    0 ")) << r.out;
  // 20 one-second windows of 100 events from each partition.
  const std::vector<std::string> lines = CommittedLines(dir / "out");
  EXPECT_EQ(lines.size(), 20u);
  for (const std::string& l : lines) EXPECT_NE(l.find("\"n\":200"), std::string::npos) << l;
}

// An empty partition holds the watermark back until it is idle for idle_timeout; then the other
// partition's windows fire while the unbounded job runs (without idle_timeout none would ever).
TEST(KafkaSource, AnIdlePartitionDoesNotHoldTheWatermarkBack) {
  ScratchDir dir;
  MockKafka kafka(1, "events", 2);
  kafka.ProduceLines(EventsFile(dir, "events.jsonl", 2000), 0, 1);
  const std::string job =
      WindowJob(dir, kafka.bootstraps(), "none", "{field: ts, max_out_of_orderness: 0ms, idle_timeout: 200ms}");
  // Windows [0 s, 1 s) .. [18 s, 19 s) close (the watermark reaches 19989 ms); [19 s, 20 s) not.
  RunUntilCommittedLines({"run", job, "--quiet"}, dir.path(), dir / "out", 19);
  const std::vector<std::string> lines = CommittedLines(dir / "out");
  EXPECT_EQ(lines.size(), 19u);
  for (const std::string& l : lines) EXPECT_NE(l.find("\"n\":100"), std::string::npos) << l;
}

TEST(KafkaSource, UnknownTopicAndBadParametersAreBadInput) {
  MockKafka kafka(1, "words", 2);
  ScratchDir dir;
  std::vector<std::string> base = {"run", FileSinkWordCountJob(dir), "--quiet",
                                   "--set", "operators.source.brokers=" + kafka.bootstraps(),
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck"};
  auto with = [&](const std::string& s) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--set", s});
    return a;
  };
  RunResult r = RunCairn(with("operators.source.start=newest"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("start must be one of earliest, latest, committed"), std::string::npos) << r.err;
  r = RunCairn(with("operators.source.start=committed"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("start: committed needs a group"), std::string::npos) << r.err;
  r = RunCairn(with("operators.source.properties.fetch.wait.max.ms=soon"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("fetch.wait.max.ms"), std::string::npos) << r.err;
}

TEST(KafkaMock, PrintsBootstrapsAndServesUntilSigterm) {
  ScratchDir dir;
  CairnProcess p({"kafka", "mock", "--brokers", "2", "--topic", "t:3"}, dir / "out", dir / "err");
  RunResult r;
  while (ReadText(dir / "out").find('\n') == std::string::npos) ASSERT_FALSE(p.Wait(2, &r)) << ReadText(dir / "err");
  const std::string line = ReadText(dir / "out");
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), 1) << line;  // two brokers
  // A consumer reads the topic's metadata from it: three partitions.
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", line.substr(0, line.find('\n')).c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, "t", nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  ASSERT_EQ(rd_kafka_metadata(rk, 0, t, &md, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(md->topic_cnt, 1);
  EXPECT_EQ(md->topics[0].partition_cnt, 3);
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  kill(p.pid(), SIGTERM);
  ASSERT_TRUE(p.Wait(60000, &r));
  EXPECT_EQ(r.exit_code, 0);
  RunResult bad = RunCairn({"kafka", "mock", "--topic", "t"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("NAME:PARTITIONS"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

// kafka_sink. The mock cluster keeps the records of open and aborted transactions visible to
// every consumer (read_committed included: librdkafka 2.0.2's mock sends no aborted-transaction
// list), so these tests prove the protocol from what the sink did and what the cluster holds:
// the sink's transaction calls (CAIRN_KAFKA_SINK_TRACE) and the commit markers in the consumer
// groups. Consuming the output proves exactly-once counts only for runs without failures. The
// 2.0.2 mock does not enforce producer epochs either (a SIGSTOPped job resumed after a restore
// fenced its ids still committed), so fencing of a live zombie is documented (docs/kafka.md)
// for a real broker, and here only the restore's fencing calls are checked.

struct TraceLine {
  std::string pid, subtask, call, id;
  uint64_t checkpoint = 0;
};

std::vector<TraceLine> ReadTrace(const std::string& path) {
  std::vector<TraceLine> out;
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    TraceLine t;
    std::string id, ck;
    f >> t.pid >> t.subtask >> t.call >> id >> ck;
    t.id = id.substr(3);
    t.checkpoint = std::stoull(ck.substr(11));
    out.push_back(t);
  }
  return out;
}

// Every record of `topic` from the beginning: "key TAB value" is not needed, the value
// (word TAB count) is what the word count writes.
// Every record's value, from the start of each partition; with `keys`, each record's key too
// ("<none>" for a record without one).
std::vector<std::string> ConsumeAll(const std::string& bootstraps, const std::string& topic, int partitions,
                                    std::vector<std::string>* keys = nullptr) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", "test-reader", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  std::vector<std::string> values;
  for (int eof = 0; eof < partitions;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 1000);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) ++eof;
    else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      values.emplace_back(static_cast<const char*>(m->payload), m->len);
      if (keys != nullptr)
        keys->push_back(m->key == nullptr ? "<none>" : std::string(static_cast<const char*>(m->key), m->key_len));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return values;
}

// The offset committed to group `group` for `partition` of `topic` (partition 0: the sink's
// marker); -1 none.
int64_t Marker(const std::string& bootstraps, const std::string& group, const std::string& topic, int partition = 0) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
  EXPECT_EQ(rd_kafka_committed(rk, list, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  int64_t offset = list->elems[0].offset;
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return offset < 0 ? -1 : offset;
}

struct KafkaToKafka {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  std::string trace = dir / "trace";
  std::unique_ptr<MockKafka> kafka;

  explicit KafkaToKafka(int words) {
    EXPECT_EQ(RunCairn({"generate", "--out", input, "--words", std::to_string(words), "--vocabulary", "300",
                        "--words-per-line", "10", "--seed", "5"}).exit_code, 0);
    kafka = std::make_unique<MockKafka>(3, "words", 4);
    kafka->CreateTopic("counts", 3);
    kafka->ProduceLines(input);
  }
  std::vector<std::string> Args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = {"run", SourceDir() + "/jobs/kafka-wordcount.yaml", "--quiet", "--restore", "latest",
                                  "--set", "operators.source.brokers=" + kafka->bootstraps(),
                                  "--set", "operators.sink.brokers=" + kafka->bootstraps(),
                                  "--set", "checkpoint.dir=" + dir / "ck",
                                  "--set", "checkpoint.retain=1000",
                                  "--set", "checkpoint.interval=50ms"};
    for (const std::string& s : extra) a.insert(a.end(), {"--set", s});
    return a;
  }
  std::vector<std::string> Env() const { return {"CAIRN_KAFKA_SINK_TRACE=" + trace}; }
  // The consumed output as a file_sink's committed file, for ExpectExactlyOnce.
  std::string OutputAsFiles() const {
    const std::string out = dir / "consumed";
    std::filesystem::create_directories(out);
    std::string text;
    for (const std::string& v : ConsumeAll(kafka->bootstraps(), "counts", 3)) text += v + "\n";
    WriteText(out + "/part-0", text);
    return out;
  }
};

// Per (transactional id, checkpoint): how often it was committed, in the run or by a restore.
// A commit whose marker the mock never got (killed between the transaction's commit and the
// plain marker commit, see kafka_sink.cc) is not counted when a restore rewrote it: the one
// duplicate the mock allows, which a broker (atomic marker) does not.
std::map<std::pair<std::string, uint64_t>, int> Commits(const std::vector<TraceLine>& trace) {
  std::map<std::pair<std::string, uint64_t>, int> n;
  std::set<std::pair<std::string, uint64_t>> marked;
  for (const TraceLine& t : trace)
    if (t.call == "marked") marked.insert({t.id, t.checkpoint});
  std::set<std::pair<std::string, uint64_t>> unmarked_commit;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceLine& t = trace[i];
    if (t.call != "commit" && t.call != "recommit") continue;
    const std::pair<std::string, uint64_t> key{t.id, t.checkpoint};
    bool got_marker = false;  // a "marked" line of this commit follows it in its process
    for (size_t j = i + 1; j < trace.size() && !got_marker; ++j)
      got_marker = trace[j].pid == t.pid && trace[j].call == "marked" && trace[j].checkpoint == t.checkpoint;
    if (t.call == "commit" && !got_marker) {
      unmarked_commit.insert(key);
      continue;
    }
    ++n[key];
  }
  for (const auto& key : unmarked_commit)
    if (n[key] == 0) n[key] = 1;  // committed, not rewritten (the run ended or its restore saw it otherwise)
  // A run killed after a commit and its marker, before it traced the commit: the next run's
  // restore found the marker and left the transaction alone.
  for (const TraceLine& t : trace)
    if (t.call == "committed-before" && n[{t.id, t.checkpoint}] == 0) n[{t.id, t.checkpoint}] = 1;
  return n;
}

TEST(KafkaSink, ExactlyOnceCommitsEachCheckpointsTransactionOnceItCompleted) {
  KafkaToKafka j(30000);
  RunResult r = RunCairn(ResumeArgs(j.Args()), j.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(j.OutputAsFiles(), ExpectedCounts(j.input));
  const std::vector<TraceLine> trace = ReadTrace(j.trace);
  const std::set<uint64_t> completed = CompletedCheckpointIds(j.dir / "ck");
  std::map<std::string, uint64_t> last_commit;
  int prepares = 0;
  for (const TraceLine& t : trace) {
    if (t.call == "prepare") {
      ++prepares;
      EXPECT_EQ(Commits(trace)[std::make_pair(t.id, t.checkpoint)], 1) << t.id << " " << t.checkpoint;
    }
    if (t.call == "commit") {
      EXPECT_TRUE(completed.count(t.checkpoint)) << "committed checkpoint " << t.checkpoint << " never completed";
      last_commit[t.id] = std::max(last_commit[t.id], t.checkpoint);
    }
  }
  EXPECT_GT(prepares, 0);
  // The marker of every transactional id is the last checkpoint it committed.
  for (const auto& [id, ck] : last_commit) EXPECT_EQ(Marker(j.kafka->bootstraps(), id, "counts"), int64_t(ck)) << id;
}

TEST(KafkaSink, SigkillsThenRestoresCommitEveryCompletedCheckpointsTransactionOnceAndFenceTheRest) {
  KafkaToKafka j(100000);
  KillPlan plan = PacedKillPlan(4, j.dir / "ck", 50, {"operators.source.rate=100"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  plan.env = j.Env();
  KillRun kr = RunWithKills(j.Args(), j.dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  const std::vector<TraceLine> trace = ReadTrace(j.trace);
  const std::set<uint64_t> completed = CompletedCheckpointIds(j.dir / "ck");
  auto commits = Commits(trace);
  for (const TraceLine& t : trace) {
    if (t.call != "prepare") continue;
    // A transaction is committed exactly once, by its run or by a restore, when its checkpoint
    // completed; never when it did not (its records are aborted by the next run's fencing).
    EXPECT_EQ(commits[std::make_pair(t.id, t.checkpoint)], completed.count(t.checkpoint) ? 1 : 0)
        << t.id << " of checkpoint " << t.checkpoint;
  }
  for (const auto& [key, n] : commits) EXPECT_TRUE(completed.count(key.second)) << key.first << " " << key.second;
  // Every id a killed run began a transaction under is fenced by the next run before it begins one.
  std::vector<std::string> runs;
  for (const TraceLine& t : trace)
    if (runs.empty() || runs.back() != t.pid) runs.push_back(t.pid);
  for (size_t r = 0; r + 1 < runs.size(); ++r) {
    std::set<std::string> begun, fenced;
    for (const TraceLine& t : trace) {
      if (t.pid == runs[r] && t.call == "begin") begun.insert(t.id);
      if (t.pid == runs[r + 1] && t.call == "fence") fenced.insert(t.id);
    }
    for (const std::string& id : begun) EXPECT_TRUE(fenced.count(id)) << id << " of run " << r;
  }
  // What the cluster holds: every count at least once (aborted records stay visible in the mock).
  ExpectExactlyOnce(j.OutputAsFiles(), ExpectedCounts(j.input), /*at_least_once=*/true);
}

// `group`: the offsets of the completed checkpoints are committed to it (for monitoring); a
// fresh start with `start: committed` then begins where they point, here at the end.
TEST(KafkaSource, GroupOffsetsFollowCompletedCheckpointsAndStartCommittedResumesThere) {
  KafkaWordCount wc(20000);  // 2000 lines, 500 in each of the 4 partitions
  RunResult r = RunCairn(ResumeArgs(wc.Args({"operators.source.group=monitor"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int p = 0; p < 4; ++p) EXPECT_EQ(Marker(wc.kafka->bootstraps(), "monitor", "words", p), 500) << p;
  r = RunCairn({"run", FileSinkWordCountJob(wc.dir), "--set", "operators.source.brokers=" + wc.kafka->bootstraps(),
                "--set", "operators.source.group=monitor", "--set", "operators.source.start=committed",
                "--set", "operators.sink.path=" + wc.dir / "out2", "--set", "checkpoint.dir=" + wc.dir / "ck2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source records  0 "), std::string::npos) << r.out;
  EXPECT_TRUE(CommittedLines(wc.dir / "out2").empty());
}

TEST(KafkaSink, InjectedProduceErrorsAreRetriedWithoutDuplicates) {
  KafkaToKafka j(20000);
  rd_kafka_mock_push_request_errors(j.kafka->cluster(), kApiProduce, 4, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT,
                                    RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
  RunResult r = RunCairn(ResumeArgs(j.Args()), j.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(j.OutputAsFiles(), ExpectedCounts(j.input));
}

TEST(KafkaSink, InjectedTransactionRequestErrorsAreRetried) {
  KafkaToKafka j(20000);
  rd_kafka_mock_cluster_t* mc = j.kafka->cluster();
  rd_kafka_mock_push_request_errors(mc, kApiInitProducerId, 2, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  rd_kafka_mock_push_request_errors(mc, kApiAddPartitionsToTxn, 2, RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                                    RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS);
  rd_kafka_mock_push_request_errors(mc, kApiEndTxn, 2, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  RunResult r = RunCairn(ResumeArgs(j.Args()), j.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(j.OutputAsFiles(), ExpectedCounts(j.input));
  const std::vector<TraceLine> trace = ReadTrace(j.trace);
  auto commits = Commits(trace);
  for (const TraceLine& t : trace) {
    if (t.call == "prepare") {
      EXPECT_EQ(commits[std::make_pair(t.id, t.checkpoint)], 1) << t.id << " " << t.checkpoint;
    }
  }
}

// `key`: an expression over the sink's input, its value as text; a bad one is exit 2 naming it.
TEST(KafkaSink, KeyIsAnExpressionOfTheRecord) {
  KafkaToKafka j(5000);
  RunResult r = RunCairn(ResumeArgs(j.Args({"operators.sink.delivery=at_least_once",
                                            "operators.sink.key=word || ':' || CAST(count * 2 AS string)"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> keys;
  const std::vector<std::string> values = ConsumeAll(j.kafka->bootstraps(), "counts", 3, &keys);
  ASSERT_EQ(keys.size(), values.size());
  ASSERT_FALSE(values.empty());
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t tab = values[i].find('\t');
    ASSERT_NE(tab, std::string::npos) << values[i];
    EXPECT_EQ(keys[i], values[i].substr(0, tab) + ":" + std::to_string(2 * std::stoll(values[i].substr(tab + 1))));
  }
  RunResult bad = RunCairn(j.Args({"operators.sink.key=nosuch + 1"}));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--set operators.sink.key: operator 'sink' (type kafka_sink): key, column 1: "), std::string::npos)
      << bad.err;
}

TEST(KafkaSink, AtLeastOnceAndNoneDeliverEveryRecord) {
  for (const char* delivery : {"at_least_once", "none"}) {
    SCOPED_TRACE(delivery);
    KafkaToKafka j(20000);
    RunResult r = RunCairn(ResumeArgs(j.Args({std::string("operators.sink.delivery=") + delivery})), j.Env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ExpectExactlyOnce(j.OutputAsFiles(), ExpectedCounts(j.input));
    EXPECT_EQ(ReadText(j.trace), "");  // no transactions
  }
}

}  // namespace
}  // namespace cairn::testing

#endif  // CAIRN_KAFKA_UNDER_TSAN
