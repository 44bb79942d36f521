// Specification of the built-in operators, each created through the registry and driven
// directly through the Operator API (Open, Process/Poll, SnapshotState,
// NotifyCheckpointComplete), as a task would.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/base/storage_faults.h"
#include "engine/dataflow/operator.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/dataflow/record_codec.h"
#include "jobs/registry.h"
#include "operators/text_params.h"
#include "state/keyed_state.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::ReadText;
using testing::ScratchDir;
using testing::WriteText;

// A config of `type` with every declared parameter set: the value in `params` when given,
// else the registry's default.
OperatorConfig Config(const std::string& type, const std::string& id,
                      const std::map<std::string, std::string>& params = {}) {
  const OperatorType* t = FindOperatorType(type);
  EXPECT_NE(t, nullptr) << type;
  OperatorConfig c;
  c.id = id;
  c.type = type;
  if (t == nullptr) return c;
  for (const ParamSpec& p : t->params) c.params[p.name] = p.default_value;
  if (t->keyed) c.key_by = {"key"};  // the key of KeyValueSchema records
  for (const auto& [name, value] : params) {
    EXPECT_NE(t->FindParam(name), nullptr) << type << " has no parameter " << name;
    c.params[name] = value;
  }
  for (const ParamSpec& p : t->params)
    if (p.required) {
      EXPECT_TRUE(params.count(p.name)) << "required parameter " << p.name << " of " << type;
    }
  return c;
}

// (key string, value int64): what the word count's sink gets.
const SchemaRef& PairSchema() {
  static const SchemaRef schema = MakeSchema({{"key", FieldType::kString}, {"value", FieldType::kInt64}});
  return schema;
}

std::unique_ptr<Operator> Create(const OperatorConfig& c) { return FindOperatorType(c.type)->create(c); }

OperatorContext Context(const std::string& id, uint32_t subtask = 0, uint32_t parallelism = 1) {
  OperatorContext ctx;
  ctx.operator_state = testing::FreshListStates();
  ctx.operator_id = id;
  ctx.job_name = "test";
  ctx.subtask = subtask;
  ctx.parallelism = parallelism;
  ctx.max_parallelism = 128;
  ctx.key_groups = KeyGroupRange::ForSubtask(subtask, 128, parallelism);
  return ctx;
}

std::vector<std::string> Keys(const RecordBatch& b) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < b.size(); ++i) keys.emplace_back(b.key(i));
  return keys;
}

RecordBatch Batch(std::initializer_list<std::string_view> keys) {
  RecordBatch b;
  for (std::string_view k : keys) b.Add(k);
  return b;
}

// Two lists hold the same lines, counted with multiplicity; the message stays short even when
// a line is megabytes long.
::testing::AssertionResult SameMultiset(std::vector<std::string> expected, std::vector<std::string> actual) {
  std::sort(expected.begin(), expected.end());
  std::sort(actual.begin(), actual.end());
  if (expected == actual) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "expected " << expected.size() << " lines, got " << actual.size();
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i)
    if (expected[i] != actual[i])
      return r << "; first difference in sorted order at " << i << ": expected a line of " << expected[i].size()
               << " bytes starting '" << expected[i].substr(0, 40) << "', got one of " << actual[i].size()
               << " bytes starting '" << actual[i].substr(0, 40) << "'";
  return r;
}

// ---------------------------------------------------------------------------------------------
// tokenize

std::vector<std::string> Tokenize(std::initializer_list<std::string_view> lines) {
  auto op = Create(Config("tokenize", "tokenize"));
  OperatorContext ctx = Context("tokenize");
  EXPECT_TRUE(op->Open(ctx).ok());
  RecordBatch in = Batch(lines), out;
  EXPECT_TRUE(op->Process(0, in, &out).ok());
  return Keys(out);
}

TEST(TokenizeTest, SplitsOnEachOfTheSixAsciiWhitespaceBytes) {
  EXPECT_THAT(Tokenize({"a b\tc\nd\re\vf\fg"}), ElementsAre("a", "b", "c", "d", "e", "f", "g"));
}

TEST(TokenizeTest, RunsOfWhitespaceAndLeadingOrTrailingWhitespaceMakeNoEmptyWords) {
  EXPECT_THAT(Tokenize({"  \t lead  and\r\n\r\ntrail \f\v"}), ElementsAre("lead", "and", "trail"));
  EXPECT_THAT(Tokenize({"", " \t\n\r\v\f "}), IsEmpty());
}

TEST(TokenizeTest, PassesUtf8BytesThroughUntouched) {
  EXPECT_THAT(Tokenize({"héllo wörld 日本語 ça\xc2\xa0va"}), ElementsAre("héllo", "wörld", "日本語", "ça\xc2\xa0va"));
}

TEST(TokenizeTest, TreatsNextLineNoBreakSpaceAndNulAsWordBytes) {
  // 0x85 (NEL) and 0xA0 (NBSP) are whitespace in Latin-1 and 0x00 ends C strings; here all three
  // are ordinary bytes of a word.
  const std::string line("x\x85y z\xa0w n\0l", 11);
  EXPECT_THAT(Tokenize({line}), ElementsAre("x\x85y", "z\xa0w", std::string("n\0l", 3)));
}

TEST(TokenizeTest, SplitsEveryLineOfABatch) {
  EXPECT_THAT(Tokenize({"one two", "three", "", "four five"}), ElementsAre("one", "two", "three", "four", "five"));
}

TEST(TokenizeTest, LinesOfEveryLengthSplitAsAByteByByteScanSplitsThem) {
  // tokenize scans 64 bytes at a time: words across block edges, lines ending at, before and
  // after a block's end, runs of whitespace of every kind, against a plain scan.
  std::mt19937 rng(15);
  const std::string alphabet("ab \t\n\r\v\fz\x85\0", 12);
  std::vector<std::string> lines, expected;
  for (size_t len = 0; len <= 300; ++len) {
    for (int rep = 0; rep < 3; ++rep) {
      std::string line;
      for (size_t j = 0; j < len; ++j) line.push_back(alphabet[rng() % (rep == 0 ? 2 : alphabet.size())]);
      lines.push_back(line);
      size_t j = 0;
      while (j < line.size()) {
        while (j < line.size() && kIsAsciiSpace[static_cast<unsigned char>(line[j])]) ++j;
        size_t start = j;
        while (j < line.size() && !kIsAsciiSpace[static_cast<unsigned char>(line[j])]) ++j;
        if (j > start) expected.push_back(line.substr(start, j - start));
      }
    }
  }
  auto op = Create(Config("tokenize", "tokenize"));
  OperatorContext ctx = Context("tokenize");
  ASSERT_TRUE(op->Open(ctx).ok());
  RecordBatch in, out;
  for (const std::string& line : lines) in.Add(line);
  ASSERT_TRUE(op->Process(0, in, &out).ok());
  EXPECT_EQ(Keys(out), expected);
}

// ---------------------------------------------------------------------------------------------
// Sources

// Polls `src` until it is exhausted, appending each record's key to *out.
void PollAll(SourceOperator* src, std::vector<std::string>* out, size_t max_records = 64) {
  for (int polls = 0; polls < 10'000'000; ++polls) {
    RecordBatch b;
    SourceOperator::Clock::time_point resume_at;
    SourceOperator::PollResult r = src->Poll(&b, max_records, &resume_at);
    EXPECT_LE(b.size(), max_records);
    for (size_t i = 0; i < b.size(); ++i) out->emplace_back(b.key(i));
    ASSERT_NE(r, SourceOperator::PollResult::kWait) << "an unlimited source never waits";
    if (r == SourceOperator::PollResult::kExhausted) return;
  }
  FAIL() << "source never reported exhaustion";
}

// Polls `src` until it has emitted exactly `n` records (or is exhausted).
void PollN(SourceOperator* src, size_t n, std::vector<std::string>* out) {
  size_t got = 0;
  while (got < n) {
    RecordBatch b;
    SourceOperator::Clock::time_point resume_at;
    SourceOperator::PollResult r = src->Poll(&b, n - got, &resume_at);
    for (size_t i = 0; i < b.size(); ++i) out->emplace_back(b.key(i));
    got += b.size();
    if (r == SourceOperator::PollResult::kExhausted) return;
  }
}

struct OpenSource {
  std::unique_ptr<Operator> op;
  SourceOperator* source = nullptr;
  Status status;
};

OpenSource OpenSourceAt(const OperatorConfig& config, uint32_t subtask, uint32_t parallelism,
                        std::optional<std::string> restored = std::nullopt) {
  OpenSource s;
  s.op = Create(config);
  s.source = dynamic_cast<SourceOperator*>(s.op.get());
  EXPECT_NE(s.source, nullptr);
  OperatorContext ctx = Context(config.id, subtask, parallelism);
  if (restored) {
    ctx.restored_checkpoint = 1;
    ctx.restored_operator_state = *restored;
  }
  s.status = s.op->Open(ctx);
  return s;
}

std::string Snapshot(Operator* op, CheckpointId id) {
  OperatorSnapshot snap;
  Status s = op->SnapshotState(id, &snap);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (snap.async_part) {
    Status a = snap.async_part();
    EXPECT_TRUE(a.ok()) << a.ToString();
  }
  return snap.operator_state;
}

// ---------------------------------------------------------------------------------------------
// file_source

// Lines of awkward lengths: empty ones, one of 3 MiB (longer than a read), many short ones of
// odd lengths, and UTF-8.
std::vector<std::string> AwkwardLines() {
  std::vector<std::string> lines = {"first", "", "", "a"};
  for (int i = 0; i < 1500; ++i) lines.push_back(std::string(static_cast<size_t>(i % 13), static_cast<char>('a' + i % 26)));
  lines.push_back(std::string(3 << 20, 'x'));
  lines.push_back("");
  for (int i = 0; i < 500; ++i) lines.push_back("line " + std::to_string(i) + (i % 3 ? " ünïcödé" : ""));
  lines.push_back("\tindented and trailing space ");
  lines.push_back("last line without a newline");
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) text += '\n';
    text += lines[i];
  }
  return text;
}

std::vector<std::string> ReadAllSubtasks(const OperatorConfig& config, uint32_t parallelism) {
  std::vector<std::string> all;
  for (uint32_t i = 0; i < parallelism; ++i) {
    OpenSource s = OpenSourceAt(config, i, parallelism);
    EXPECT_TRUE(s.status.ok()) << s.status.ToString();
    if (!s.status.ok()) continue;
    PollAll(s.source, &all);
    EXPECT_TRUE(s.op->Close().ok());
  }
  return all;
}

TEST(FileSourceTest, EmitsEveryLineExactlyOnceAcrossAnyNumberOfSubtasks) {
  ScratchDir dir;
  const std::vector<std::string> lines = AwkwardLines();
  WriteText(dir / "input.txt", Join(lines));  // no newline after the last line
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  for (uint32_t p = 1; p <= 4; ++p) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    EXPECT_TRUE(SameMultiset(lines, ReadAllSubtasks(config, p)));
  }
}

TEST(FileSourceTest, FinalNewlineEndsTheLastLineWithoutAddingAnEmptyOne) {
  ScratchDir dir;
  const std::vector<std::string> lines = AwkwardLines();
  WriteText(dir / "input.txt", Join(lines) + "\n");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  for (uint32_t p = 1; p <= 4; ++p) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    EXPECT_TRUE(SameMultiset(lines, ReadAllSubtasks(config, p)));
  }
}

TEST(FileSourceTest, EmitsEveryLineExactlyOnceEvenWithMoreSubtasksThanBytes) {
  // Every byte offset is some subtask's range boundary for one of these parallelisms.
  ScratchDir dir;
  const std::vector<std::string> lines = {"a", "", "bb", "ccc", "", "", "dddd", "e"};
  const std::string text = Join(lines);
  WriteText(dir / "input.txt", text);
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  for (uint32_t p = 1; p <= text.size() + 3; ++p) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    EXPECT_TRUE(SameMultiset(lines, ReadAllSubtasks(config, p)));
  }
}

TEST(FileSourceTest, OneSubtaskEmitsTheLinesInFileOrder) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "b\n\na\nc");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  EXPECT_THAT(ReadAllSubtasks(config, 1), ElementsAre("b", "", "a", "c"));
}

TEST(FileSourceTest, EmptyFileEmitsNothing) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  for (uint32_t p = 1; p <= 3; ++p) EXPECT_THAT(ReadAllSubtasks(config, p), IsEmpty());
}

TEST(FileSourceTest, MissingInputFailsToOpenNamingThePath) {
  ScratchDir dir;
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "absent.txt"}});
  OpenSource s = OpenSourceAt(config, 0, 1);
  ASSERT_FALSE(s.status.ok());
  EXPECT_NE(s.status.message().find(dir / "absent.txt"), std::string::npos) << s.status.ToString();
}

TEST(FileSourceTest, RestoreResumesAfterTheLastEmittedLine) {
  ScratchDir dir;
  const std::vector<std::string> lines = AwkwardLines();
  WriteText(dir / "input.txt", Join(lines));
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  for (uint32_t p : {1u, 3u}) {
    for (uint32_t i = 0; i < p; ++i) {
      SCOPED_TRACE("subtask " + std::to_string(i) + " of " + std::to_string(p));
      std::vector<std::string> uninterrupted;
      OpenSource whole = OpenSourceAt(config, i, p);
      ASSERT_TRUE(whole.status.ok());
      PollAll(whole.source, &uninterrupted);

      std::vector<std::string> resumed;
      OpenSource first = OpenSourceAt(config, i, p);
      ASSERT_TRUE(first.status.ok());
      // A subtask whose byte range lies inside the 3 MiB line owns no line at all.
      PollN(first.source, 7, &resumed);
      ASSERT_EQ(resumed.size(), std::min<size_t>(7, uninterrupted.size()));
      std::string state = Snapshot(first.op.get(), 1);
      // Lines emitted after the snapshot are not part of the checkpoint.
      std::vector<std::string> lost;
      PollN(first.source, 3, &lost);

      OpenSource second = OpenSourceAt(config, i, p, state);
      ASSERT_TRUE(second.status.ok()) << second.status.ToString();
      PollAll(second.source, &resumed);
      EXPECT_TRUE(resumed == uninterrupted) << "resumed " << resumed.size() << " lines, expected "
                                            << uninterrupted.size();
    }
  }
}

TEST(FileSourceTest, RestoreOfAnExhaustedSourceEmitsNothingMore) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "a\nb\n");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  OpenSource first = OpenSourceAt(config, 0, 1);
  ASSERT_TRUE(first.status.ok());
  std::vector<std::string> lines;
  PollAll(first.source, &lines);
  ASSERT_THAT(lines, ElementsAre("a", "b"));
  OpenSource second = OpenSourceAt(config, 0, 1, Snapshot(first.op.get(), 1));
  ASSERT_TRUE(second.status.ok());
  std::vector<std::string> more;
  PollAll(second.source, &more);
  EXPECT_THAT(more, IsEmpty());
}

TEST(FileSourceTest, RestoreDetectsThatTheInputChangedSize) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "one\ntwo\nthree\n");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  OpenSource first = OpenSourceAt(config, 0, 1);
  ASSERT_TRUE(first.status.ok());
  std::vector<std::string> lines;
  PollN(first.source, 1, &lines);
  std::string state = Snapshot(first.op.get(), 1);

  WriteText(dir / "input.txt", "one\ntwo\nthree\nfour\n");
  OpenSource second = OpenSourceAt(config, 0, 1, state);
  EXPECT_TRUE(second.status.IsInvalidArgument()) << second.status.ToString();
  EXPECT_NE(second.status.message().find(dir / "input.txt"), std::string::npos) << second.status.ToString();
}

TEST(FileSourceTest, RestoreRejectsADamagedPosition) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "one\n");
  OperatorConfig config = Config("file_source", "source", {{"path", dir / "input.txt"}});
  OpenSource s = OpenSourceAt(config, 0, 1, std::string("short"));
  EXPECT_TRUE(s.status.IsCorruption()) << s.status.ToString();
}

// ---------------------------------------------------------------------------------------------
// generator

OperatorConfig GeneratorConfig(int64_t seed) {
  return Config("generator", "gen",
                {{"words", "5000"}, {"words_per_line", "7"}, {"vocabulary", "300"}, {"seed", std::to_string(seed)}});
}

std::vector<std::string> Generate(const OperatorConfig& config, uint32_t subtask, uint32_t parallelism) {
  OpenSource s = OpenSourceAt(config, subtask, parallelism);
  EXPECT_TRUE(s.status.ok()) << s.status.ToString();
  std::vector<std::string> lines;
  PollAll(s.source, &lines);
  return lines;
}

TEST(GeneratorTest, EmitsTheDeclaredNumberOfWords) {
  std::vector<std::string> lines = Generate(GeneratorConfig(11), 0, 1);
  EXPECT_EQ(lines.size(), 715u);  // ceil(5000 / 7)
  size_t words = 0;
  for (const std::string& l : lines) words += static_cast<size_t>(std::count(l.begin(), l.end(), ' ')) + 1;
  EXPECT_EQ(words, 5000u);
}

TEST(GeneratorTest, SameSeedGivesTheSameText) {
  EXPECT_EQ(Generate(GeneratorConfig(11), 0, 1), Generate(GeneratorConfig(11), 0, 1));
}

TEST(GeneratorTest, DifferentSeedsGiveDifferentText) {
  EXPECT_NE(Generate(GeneratorConfig(11), 0, 1), Generate(GeneratorConfig(12), 0, 1));
}

TEST(GeneratorTest, ParallelismDoesNotChangeTheMultisetOfLines) {
  std::vector<std::string> one = Generate(GeneratorConfig(11), 0, 1);
  std::vector<std::string> three;
  for (uint32_t i = 0; i < 3; ++i) {
    std::vector<std::string> part = Generate(GeneratorConfig(11), i, 3);
    EXPECT_FALSE(part.empty());
    three.insert(three.end(), part.begin(), part.end());
  }
  EXPECT_TRUE(SameMultiset(one, three));
}

TEST(GeneratorTest, RestoreContinuesExactlyWhereTheSnapshotWasTaken) {
  const OperatorConfig config = GeneratorConfig(11);
  for (uint32_t p : {1u, 3u}) {
    for (uint32_t i = 0; i < p; ++i) {
      SCOPED_TRACE("subtask " + std::to_string(i) + " of " + std::to_string(p));
      std::vector<std::string> uninterrupted = Generate(config, i, p);

      std::vector<std::string> resumed;
      OpenSource first = OpenSourceAt(config, i, p);
      ASSERT_TRUE(first.status.ok());
      PollN(first.source, 50, &resumed);
      std::string state = Snapshot(first.op.get(), 1);
      std::vector<std::string> lost;
      PollN(first.source, 20, &lost);

      OpenSource second = OpenSourceAt(config, i, p, state);
      ASSERT_TRUE(second.status.ok()) << second.status.ToString();
      PollAll(second.source, &resumed);
      EXPECT_EQ(resumed, uninterrupted);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// count

TEST(CountTest, EmitsTheRunningCountOfEveryWord) {
  auto op = Create(Config("count", "count"));
  OperatorContext ctx = Context("count");
  KeyedInt64State state(128, ctx.key_groups);
  ctx.keyed_state = &state;
  ASSERT_TRUE(op->Open(ctx).ok());

  RecordBatch out;
  ASSERT_TRUE(op->Process(0, Batch({"a", "b", "a"}), &out).ok());
  ASSERT_TRUE(op->Process(0, Batch({"a", "c", "b"}), &out).ok());
  ASSERT_EQ(out.size(), 6u);
  std::vector<std::pair<std::string, int64_t>> got;
  for (size_t i = 0; i < out.size(); ++i) got.emplace_back(out.key(i), out.a(i));
  EXPECT_THAT(got, ElementsAre(std::pair<std::string, int64_t>{"a", 1}, std::pair<std::string, int64_t>{"b", 1},
                               std::pair<std::string, int64_t>{"a", 2}, std::pair<std::string, int64_t>{"a", 3},
                               std::pair<std::string, int64_t>{"c", 1}, std::pair<std::string, int64_t>{"b", 2}));
  int64_t v = 0;
  ASSERT_TRUE(state.Get("a", &v));
  EXPECT_EQ(v, 3);
}

TEST(CountTest, CountsTheSameWithTheHashesAHashEdgeCarriesAndWithout) {
  // With carried hashes (from a hash edge) and without (e.g. restored in-flight records), on
  // both the single-string key path and a composite key.
  for (const std::vector<std::string>& key_by : {std::vector<std::string>{"key"}, std::vector<std::string>{"key", "a"}}) {
    OperatorConfig config = Config("count", "count");
    config.key_by = key_by;
    auto op = Create(config);
    OperatorContext ctx = Context("count");
    KeyedInt64State state(128, ctx.key_groups);
    ctx.keyed_state = &state;
    ASSERT_TRUE(op->Open(ctx).ok());
    KeySelector key;
    ASSERT_TRUE(KeySelector::Make(*KeyValueSchema(), key_by, &key).ok());
    RecordBatch plain = Batch({"a", "b", "a", "c", "a"});
    RecordBatch hashed;
    hashed.set_key_hash_fields(key.fields());
    std::string scratch;
    for (size_t i = 0; i < plain.size(); ++i) hashed.AddFromWithHash(plain, i, key.Hash(plain, i, &scratch));
    ASSERT_TRUE(hashed.HasKeyHashes(key.fields()));
    RecordBatch out;
    ASSERT_TRUE(op->Process(0, hashed, &out).ok());
    ASSERT_TRUE(op->Process(0, plain, &out).ok());
    ASSERT_EQ(out.size(), 10u);
    std::vector<int64_t> counts;
    for (size_t i = 0; i < out.size(); ++i) counts.push_back(out.GetInt64(i, key_by.size()));
    EXPECT_THAT(counts, ElementsAre(1, 1, 2, 1, 3, 4, 2, 5, 2, 6));
    EXPECT_TRUE(state.foreign_key_error().ok());
  }
}

TEST(CountTest, ContinuesFromRestoredCounts) {
  auto op = Create(Config("count", "count"));
  OperatorContext ctx = Context("count");
  KeyedInt64State state(128, ctx.key_groups);
  state.LoadEntry("a", 41);
  ctx.keyed_state = &state;
  ASSERT_TRUE(op->Open(ctx).ok());
  RecordBatch out;
  ASSERT_TRUE(op->Process(0, Batch({"a"}), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.a(0), 42);
}

TEST(CountTest, RefusesToOpenWithoutKeyedState) {
  auto op = Create(Config("count", "count"));
  OperatorContext ctx = Context("count");
  Status s = op->Open(ctx);
  EXPECT_FALSE(s.ok());
}

// ---------------------------------------------------------------------------------------------
// Capabilities: only the operators that need one have it.

TEST(OperatorCapabilitiesTest, CountIsAKeyedSummaryNamingItsLargestKeys) {
  auto op = Create(Config("count", "count"));
  OperatorContext ctx = Context("count");
  KeyedInt64State state(128, ctx.key_groups);
  ctx.keyed_state = &state;
  ASSERT_TRUE(op->Open(ctx).ok());
  RecordBatch out;
  ASSERT_TRUE(op->Process(0, Batch({"b", "a", "c", "a", "b", "a", "d"}), &out).ok());
  const auto* summary = dynamic_cast<const KeyedSummary*>(op.get());
  ASSERT_NE(summary, nullptr);
  std::vector<std::pair<std::string, int64_t>> top;
  summary->TopKeys(3, &top);
  EXPECT_THAT(top, ElementsAre(std::pair<std::string, int64_t>{"a", 3}, std::pair<std::string, int64_t>{"b", 2},
                               std::pair<std::string, int64_t>{"c", 1}));
  EXPECT_EQ(dynamic_cast<FlowControlled*>(op.get()), nullptr);
}

TEST(OperatorCapabilitiesTest, ThrottleIsFlowControlledAndAdmitsOneRecordAtItsFirstAsk) {
  auto op = Create(Config("throttle", "throttle", {{"rate", "1"}}));
  auto* flow = dynamic_cast<FlowControlled*>(op.get());
  ASSERT_NE(flow, nullptr);
  Operator::Clock::time_point resume_at;
  EXPECT_EQ(flow->Admit(100, &resume_at), 1u);  // its budget at the start: one record
  EXPECT_EQ(dynamic_cast<KeyedSummary*>(op.get()), nullptr);
}

TEST(OperatorCapabilitiesTest, OtherOperatorsHaveNoCapability) {
  for (const char* type : {"tokenize", "discard_sink"}) {
    auto op = Create(Config(type, type));
    EXPECT_EQ(dynamic_cast<FlowControlled*>(op.get()), nullptr) << type;
    EXPECT_EQ(dynamic_cast<KeyedSummary*>(op.get()), nullptr) << type;
  }
}

// ---------------------------------------------------------------------------------------------
// file_sink

class FileSinkTest : public ::testing::Test {
 protected:
  std::string out() const { return dir_ / "out"; }

  // A sink subtask, opened fresh or from `restored`.
  std::unique_ptr<Operator> OpenSink(uint32_t subtask = 0, std::optional<std::string> restored = std::nullopt,
                                     Status* status = nullptr) {
    auto op = Create(Config("file_sink", "sink", {{"path", out()}}));
    OperatorContext ctx = Context("sink", subtask, 2);
    if (restored) {
      ctx.restored_checkpoint = 1;
      ctx.restored_operator_state = *restored;
    }
    Status s = op->Open(ctx);
    if (status != nullptr) {
      *status = s;
    } else {
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    return op;
  }

  static void Write(Operator* sink, std::initializer_list<std::pair<std::string_view, int64_t>> records) {
    RecordBatch in(PairSchema()), unused;
    for (const auto& [k, v] : records) in.Add(k, v);
    Status s = sink->Process(0, in, &unused);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<std::string> Committed() const {
    std::vector<std::string> lines = testing::CommittedLines(out());
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  std::vector<std::string> FileNames() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(out())) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  ScratchDir dir_;
};

TEST_F(FileSinkTest, RecordsBeforeASnapshotBecomeVisibleOnlyWhenItsCheckpointCompletes) {
  auto sink = OpenSink();
  Write(sink.get(), {{"apple", 1}, {"pear", 2}});
  Snapshot(sink.get(), 1);
  EXPECT_THAT(Committed(), IsEmpty());

  EXPECT_TRUE(sink->NotifyCheckpointComplete(1).ok());
  EXPECT_THAT(Committed(), ElementsAre("apple\t1", "pear\t2"));
  EXPECT_TRUE(sink->Close().ok());
}

TEST_F(FileSinkTest, PendingFilesAreHiddenByALeadingDot) {
  auto sink = OpenSink();
  Write(sink.get(), {{"apple", 1}});
  Snapshot(sink.get(), 1);
  Write(sink.get(), {{"pear", 1}});
  Snapshot(sink.get(), 2);
  std::vector<std::string> names = FileNames();
  ASSERT_EQ(names.size(), 2u);
  for (const std::string& n : names) EXPECT_EQ(n[0], '.') << n;

  EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
  names = FileNames();
  ASSERT_EQ(names.size(), 2u);
  for (const std::string& n : names) EXPECT_NE(n[0], '.') << n;
}

TEST_F(FileSinkTest, RecordsAfterASnapshotWaitForTheNextCheckpoint) {
  auto sink = OpenSink();
  Write(sink.get(), {{"before", 1}});
  Snapshot(sink.get(), 1);
  Write(sink.get(), {{"after", 1}});
  EXPECT_TRUE(sink->NotifyCheckpointComplete(1).ok());
  EXPECT_THAT(Committed(), ElementsAre("before\t1"));

  Snapshot(sink.get(), 2);
  EXPECT_THAT(Committed(), ElementsAre("before\t1"));
  EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
  EXPECT_THAT(Committed(), ElementsAre("after\t1", "before\t1"));
}

TEST_F(FileSinkTest, NotificationOfALaterCheckpointCommitsEveryEarlierOne) {
  auto sink = OpenSink();
  Write(sink.get(), {{"one", 1}});
  Snapshot(sink.get(), 1);
  Write(sink.get(), {{"two", 1}});
  Snapshot(sink.get(), 2);
  EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
  EXPECT_THAT(Committed(), ElementsAre("one\t1", "two\t1"));
}

TEST_F(FileSinkTest, RestoreCommitsWhatTheCheckpointOwesAndDeletesWritesAfterIt) {
  std::string state_at_1;
  {
    auto sink = OpenSink();
    Write(sink.get(), {{"owed", 1}, {"owed", 2}});
    state_at_1 = Snapshot(sink.get(), 1);
    Write(sink.get(), {{"after-checkpoint", 1}});
    Snapshot(sink.get(), 2);  // checkpoint 2 never completes
    const std::string big(3 << 19, 'b');  // 1.5 MiB: flushed to a file that is still open
    Write(sink.get(), {{big, 1}});
    // The process dies here: no notification, no Close.
  }
  std::vector<std::string> before = FileNames();
  ASSERT_EQ(before.size(), 3u);
  for (const std::string& n : before) ASSERT_EQ(n[0], '.') << n;

  auto restored = OpenSink(0, state_at_1);
  EXPECT_THAT(Committed(), ElementsAre("owed\t1", "owed\t2"));
  for (const std::string& n : FileNames()) EXPECT_NE(n[0], '.') << "left over in-progress file " << n;

  // The restored sink carries on and its new files never bring back the discarded writes.
  Write(restored.get(), {{"new", 1}});
  Snapshot(restored.get(), 2);
  EXPECT_TRUE(restored->NotifyCheckpointComplete(2).ok());
  EXPECT_THAT(Committed(), ElementsAre("new\t1", "owed\t1", "owed\t2"));
}

TEST_F(FileSinkTest, RestoreCommitsPendingFilesOfEveryCheckpointUpToTheRestoredOne) {
  std::string state_at_2;
  {
    auto sink = OpenSink();
    Write(sink.get(), {{"one", 1}});
    Snapshot(sink.get(), 1);
    Write(sink.get(), {{"two", 1}});
    state_at_2 = Snapshot(sink.get(), 2);
  }
  auto restored = OpenSink(0, state_at_2);
  EXPECT_THAT(Committed(), ElementsAre("one\t1", "two\t1"));
}

TEST_F(FileSinkTest, RestoreLeavesFilesOfOtherSubtasksAlone) {
  std::string state_at_1;
  {
    auto sink0 = OpenSink(0);
    auto sink1 = OpenSink(1);
    Write(sink0.get(), {{"zero", 1}});
    state_at_1 = Snapshot(sink0.get(), 1);
    Write(sink1.get(), {{"one", 1}});
    Snapshot(sink1.get(), 1);
  }
  auto restored = OpenSink(0, state_at_1);
  std::vector<std::string> names = FileNames();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(std::count_if(names.begin(), names.end(), [](const std::string& n) { return n[0] == '.'; }), 1)
      << "subtask 1's pending file is still there, still pending";
}

TEST_F(FileSinkTest, RestoreFailsWithCorruptionWhenAnOwedFileIsGone) {
  std::string state_at_1;
  {
    auto sink = OpenSink();
    Write(sink.get(), {{"owed", 1}});
    state_at_1 = Snapshot(sink.get(), 1);
  }
  std::vector<std::string> names = FileNames();
  ASSERT_EQ(names.size(), 1u);
  std::filesystem::remove(out() + "/" + names[0]);

  Status s;
  auto restored = OpenSink(0, state_at_1, &s);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(names[0]), std::string::npos) << s.ToString();
}

TEST_F(FileSinkTest, RestoreOfAnAlreadyCommittedFileIsANoOp) {
  std::string state_at_1;
  {
    auto sink = OpenSink();
    Write(sink.get(), {{"owed", 1}});
    state_at_1 = Snapshot(sink.get(), 1);
    EXPECT_TRUE(sink->NotifyCheckpointComplete(1).ok());  // committed, then the process died
  }
  auto restored = OpenSink(0, state_at_1);
  EXPECT_THAT(Committed(), ElementsAre("owed\t1"));
}


TEST_F(FileSinkTest, ACommitNeverReplacesAnExistingFileAndFailsLoudly) {
  auto sink = OpenSink();
  Write(sink.get(), {{"mine", 1}});
  Snapshot(sink.get(), 1);
  std::vector<std::string> names = FileNames();
  ASSERT_EQ(names.size(), 1u);
  // ".part-<name>.inprogress" commits to "part-<name>": put a foreign file there.
  const std::string target = out() + "/" + names[0].substr(1, names[0].size() - 1 - std::string(".inprogress").size());
  testing::WriteText(target, "foreign\t7\n");
  Status s = sink->NotifyCheckpointComplete(1);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(target + " already exists"), std::string::npos) << s.ToString();
  EXPECT_EQ(testing::ReadText(target), "foreign\t7\n");
  EXPECT_TRUE(std::filesystem::exists(out() + "/" + names[0])) << "the pending file is kept";
  EXPECT_TRUE(sink->Close().ok());
}

TEST_F(FileSinkTest, RestoreOfAnOlderCheckpointSetsAsideLaterCommittedOutputAndNeverReusesANumber) {
  std::string state_at_1;
  std::vector<std::string> committed_later;
  {
    auto sink = OpenSink();
    Write(sink.get(), {{"one", 1}});
    state_at_1 = Snapshot(sink.get(), 1);
    EXPECT_TRUE(sink->NotifyCheckpointComplete(1).ok());
    Write(sink.get(), {{"two", 1}});
    Snapshot(sink.get(), 2);
    EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
    Write(sink.get(), {{"three", 1}});
    Snapshot(sink.get(), 3);
    EXPECT_TRUE(sink->NotifyCheckpointComplete(3).ok());
    Write(sink.get(), {{"four", 1}});
    Snapshot(sink.get(), 4);  // never completes
  }
  ASSERT_THAT(Committed(), ElementsAre("one\t1", "three\t1", "two\t1"));
  std::vector<std::string> before = FileNames();

  auto restored = OpenSink(0, state_at_1);
  EXPECT_THAT(Committed(), ElementsAre("one\t1")) << "output committed after checkpoint 1 is produced again";
  std::vector<std::string> aside;
  for (const auto& e : std::filesystem::directory_iterator(out() + "/_superseded"))
    aside.push_back(e.path().filename().string());
  EXPECT_EQ(aside.size(), 2u);

  Write(restored.get(), {{"two", 1}, {"three", 1}});
  Snapshot(restored.get(), 5);
  EXPECT_TRUE(restored->NotifyCheckpointComplete(5).ok());
  EXPECT_TRUE(restored->Close().ok());
  EXPECT_THAT(Committed(), ElementsAre("one\t1", "three\t1", "two\t1"));
  for (const std::string& n : FileNames()) {
    if (n[0] == '_' || n[0] == '.') continue;
    for (const std::string& a : aside) EXPECT_NE(n, a) << "a set-aside file's name was reused";
  }

  // Restoring checkpoint 1 again sets aside the new lineage's output, not the first one's.
  auto again = OpenSink(0, state_at_1);
  EXPECT_THAT(Committed(), ElementsAre("one\t1"));
  size_t n_aside = 0;
  for (const auto& e : std::filesystem::directory_iterator(out() + "/_superseded")) n_aside += e.is_regular_file();
  EXPECT_EQ(n_aside, 3u);
}

TEST_F(FileSinkTest, ACheckpointFsyncsThePendingFilesOfEarlierCheckpointsWhoseAsyncPartNeverRan) {
  auto sink = OpenSink();
  Write(sink.get(), {{"one", 1}});
  OperatorSnapshot failed;  // checkpoint 1 fails before its async part runs
  ASSERT_TRUE(sink->SnapshotState(1, &failed).ok());
  const std::vector<std::string> pending_of_1 = FileNames();
  ASSERT_EQ(pending_of_1.size(), 1u);
  Write(sink.get(), {{"two", 1}});
  OperatorSnapshot next;
  ASSERT_TRUE(sink->SnapshotState(2, &next).ok());
  ASSERT_TRUE(next.async_part);
  const std::string log = dir_ / "durability.log";
  internal::durability_log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  Status s = next.async_part();
  testing::StopDurabilityLog();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(testing::ReadText(log).find("fsync " + out() + "/" + pending_of_1[0] + "\n"), std::string::npos)
      << testing::ReadText(log);
}


TEST_F(FileSinkTest, AnAsyncPartSucceedsWhenAnEarlierConcurrentCheckpointCommittedItsFileFirst) {
  auto sink = OpenSink();
  Write(sink.get(), {{"one", 1}});
  Snapshot(sink.get(), 1);
  Write(sink.get(), {{"two", 1}});
  OperatorSnapshot second;  // checkpoint 2's async part is still queued ...
  ASSERT_TRUE(sink->SnapshotState(2, &second).ok());
  EXPECT_TRUE(sink->NotifyCheckpointComplete(1).ok());  // ... when checkpoint 1 completes and commits its file
  ASSERT_TRUE(second.async_part);
  Status s = second.async_part();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
  EXPECT_TRUE(sink->Close().ok());
  EXPECT_THAT(Committed(), ElementsAre("one\t1", "two\t1"));
}

TEST_F(FileSinkTest, AFailedWriteIsReturnedByTheProcessCallThatMetIt) {
  auto sink = OpenSink();
  std::filesystem::remove_all(out());  // the in-progress file cannot be created
  RecordBatch in(PairSchema()), unused;
  in.Add(std::string(3 << 19, 'b'), 1);  // 1.5 MiB: written at once
  Status s = sink->Process(0, in, &unused);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("operator sink: cannot create " + out() + "/.part-"), std::string::npos) << s.ToString();
  EXPECT_TRUE(sink->Close().ok()) << "the error was reported once, by Process";
}

TEST_F(FileSinkTest, ASnapshotThatFailedToWriteIsRetriedByTheNextWithoutLosingARecord) {
  auto sink = OpenSink();
  Write(sink.get(), {{"one", 1}});
  std::filesystem::remove_all(out());
  OperatorSnapshot failed;
  Status s = sink->SnapshotState(1, &failed);
  EXPECT_NE(s.message().find("operator sink: cannot create " + out() + "/.part-"), std::string::npos)
      << s.ToString();  // checkpoint 1 is declined; the job goes on
  std::filesystem::create_directories(out());
  Write(sink.get(), {{"two", 1}});
  Snapshot(sink.get(), 2);
  EXPECT_TRUE(sink->NotifyCheckpointComplete(2).ok());
  EXPECT_TRUE(sink->Close().ok());
  EXPECT_THAT(Committed(), ElementsAre("one\t1", "two\t1"));
}

}  // namespace
}  // namespace cairn
