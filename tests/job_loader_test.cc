// Tests for the job loader: every validation rule as a table of (YAML, --set, expected message
// fragments), and the values of jobs that load.
#include "jobs/job_loader.h"

#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "engine/runtime/execution_plan.h"
#include "jobs/job_graph.h"
#include "jobs/registry.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

// A valid job; error cases below are small edits of it. Lines:
//  1 job: wc              6   type: tokenize      11   inputs: [tok]
//  2 operators:           7   inputs: [src]       12 - id: out
//  3 - id: src            8 - id: cnt             13   type: discard_sink
//  4   type: generator    9   type: count         14   inputs: cnt
//  5 - id: tok           10   key_by: word
const char* const kBase = R"(job: wc
operators:
  - id: src
    type: generator
  - id: tok
    type: tokenize
    inputs: [src]
  - id: cnt
    type: count
    key_by: word
    inputs: [tok]
  - id: out
    type: discard_sink
    inputs: cnt
)";

// kBase with `from` (which must occur) replaced by `to`.
std::string Edit(const std::string& from, const std::string& to) {
  std::string s = kBase;
  size_t at = s.find(from);
  if (at == std::string::npos) throw std::logic_error("Edit: no '" + from + "' in the base job");
  return s.replace(at, from.size(), to);
}

struct ErrorCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> overrides;
  std::vector<std::string> expected;  // substrings of the message
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) { return os << c.name; }

const std::vector<ErrorCase>& ErrorCases() {
  static const std::vector<ErrorCase> cases = {
      // The file as a whole.
      {"SyntaxError", "job: wc\noperators: [a, b\n", {}, {"t.yaml:3:1: YAML syntax error: end of sequence flow not found"}},
      {"SyntaxErrorTab", "job: wc\n\tparallelism: 2\n", {}, {"t.yaml:2:", "YAML syntax error"}},
      {"EmptyFile", "", {}, {"t.yaml: empty job file"}},
      {"OnlyComments", "# nothing here\n\n", {}, {"t.yaml: empty job file"}},
      {"NotAMap", "- a\n- b\n", {}, {"t.yaml:1:1: a job file must be a map", "got a list"}},
      {"TwoDocuments", std::string(kBase) + "---\njob: other\n", {}, {"t.yaml:16:1:", "one YAML document"}},

      // Unknown and duplicate keys, at every level.
      {"UnknownTopKey", Edit("operators:", "jbo: x\noperators:"), {},
       {"t.yaml:2:1: unknown key 'jbo' at top level (known keys: job, parallelism, max_parallelism, checkpoint, restart, state, operators)"}},
      {"UnknownStateKey", Edit("operators:", "state:\n  backnd: heap\noperators:"), {},
       {"t.yaml:3:3: unknown key 'backnd' in state (known keys: backend, changelog, materialize_interval, materialize_ratio, rocksdb)"}},
      {"BadStateBackend", Edit("operators:", "state:\n  backend: disk\noperators:"), {},
       {"t.yaml:3:12: state.backend must be one of heap, rocksdb, got 'disk'"}},
      {"BadBlockCache", Edit("operators:", "state:\n  rocksdb:\n    block_cache: 64XB\noperators:"), {},
       {"t.yaml:4:18: state.rocksdb.block_cache must be a size in bytes"}},
      {"SmallWriteBuffer", Edit("operators:", "state:\n  rocksdb:\n    write_buffer: 1KB\noperators:"), {},
       {"t.yaml:4:19: state.rocksdb.write_buffer must be a size in bytes", "at least 65536"}},
      {"UnknownStateRocksDbKey", Edit("operators:", "state:\n  rocksdb:\n    cache: 1MB\noperators:"), {},
       {"t.yaml:4:5: unknown key 'cache' in state.rocksdb (known keys: block_cache, write_buffer)"}},
      {"UnknownCheckpointKey", Edit("operators:", "checkpoint:\n  interval: 1s\n  intervall: 2s\noperators:"), {},
       {"t.yaml:4:3: unknown key 'intervall' in checkpoint (known keys: interval, mode, dir, timeout, min_pause, "
        "max_concurrent, tolerable_failures, retain, aligned_timeout, history, max_feedback_backlog, "
        "max_drain_checkpoints, savepoint_dir, inline_state_threshold)"}},
      {"UnknownOperatorKey", Edit("type: generator", "type: generator\n    word: 5"), {},
       {"t.yaml:5:5: unknown key 'word' in operator 'src' of type generator (known keys: id, type, parallelism, "
        "inputs, key_by, watermark, words, words_per_line, vocabulary, zipf, seed, rate)"}},
      {"DuplicateKey", Edit("job: wc", "job: wc\njob: again"), {},
       {"t.yaml:2:1: duplicate key 'job' at top level (first at t.yaml:1:1)"}},
      {"NonScalarKey", Edit("job: wc", "job: wc\n[a]: 1"), {}, {"t.yaml:2:1: a key at top level must be a name"}},

      // Missing required keys: located at the enclosing map.
      {"MissingJob", Edit("job: wc\n", ""), {}, {"t.yaml:1:1: missing required key 'job'"}},
      {"MissingOperators", "job: wc\nparallelism: 2\n", {}, {"t.yaml:1:1: missing required key 'operators'"}},
      {"MissingId", Edit("  - id: tok\n    type: tokenize", "  - type: tokenize"), {},
       {"t.yaml:5:5: operator of type tokenize is missing required key 'id'"}},
      {"MissingType", Edit("    type: tokenize\n", ""), {},
       {"t.yaml:5:5: operator 'tok' is missing required key 'type' (known types: aggregate, bank_accounts, bank_requests, "
        "count, discard_sink, file_sink, file_source, filter, flat_map, generator, join, kafka_sink, kafka_source, map, nexmark, throttle, tokenize, window)"}},
      {"MissingRequiredParam", Edit("type: discard_sink", "type: file_sink"), {},
       {"t.yaml:12:5: operator 'out' (type file_sink) is missing required parameter 'path' (string: output directory)"}},
      {"EmptyRequiredParam", Edit("type: discard_sink", "type: file_sink\n    path: ''"), {},
       {"t.yaml:14:11: parameter 'path' of operator 'out' must be a non-empty string, got ''"}},

      // Wrong kinds of values.
      {"JobNotString", Edit("job: wc", "job: [a]"), {}, {"t.yaml:1:6: job must be a non-empty string, got a list"}},
      {"JobNull", Edit("job: wc", "job:"), {}, {"t.yaml:1:1: job must be a non-empty string, got nothing"}},
      {"OperatorsEmpty", "job: wc\noperators: []\n", {}, {"t.yaml:2:12: operators must be a non-empty list", "got an empty list"}},
      {"OperatorsNotList", "job: wc\noperators: {id: a}\n", {}, {"t.yaml:2:12: operators must be a non-empty list", "got a map"}},
      {"OperatorNotMap", Edit("  - id: src\n    type: generator", "  - src"), {},
       {"t.yaml:3:5: an operator must be a map", "got 'src'"}},
      {"CheckpointNotMap", Edit("operators:", "checkpoint: 5s\noperators:"), {},
       {"t.yaml:2:13: checkpoint must be a map"}},
      {"IntNotANumber", Edit("type: generator", "type: generator\n    rate: abc"), {},
       {"t.yaml:5:11: parameter 'rate' of operator 'src' must be an integer >= 0, got 'abc'"}},
      {"IntFraction", Edit("type: generator", "type: generator\n    rate: 1.5"), {},
       {"t.yaml:5:11: parameter 'rate' of operator 'src' must be an integer >= 0, got '1.5'"}},
      {"IntNegative", Edit("type: generator", "type: generator\n    rate: -1"), {},
       {"t.yaml:5:11: parameter 'rate' of operator 'src' must be an integer >= 0, got '-1'"}},
      {"IntBelowMin", Edit("type: generator", "type: generator\n    words_per_line: 0"), {},
       {"parameter 'words_per_line' of operator 'src' must be an integer >= 1, got '0'"}},
      {"IntIsMap", Edit("type: generator", "type: generator\n    seed: {a: 1}"), {},
       {"t.yaml:5:11: parameter 'seed' of operator 'src' must be an integer >= 0, got a map"}},
      {"IntOverflow", Edit("type: generator", "type: generator\n    seed: 99999999999999999999"), {},
       {"parameter 'seed' of operator 'src' must be an integer"}},
      {"DoubleNotANumber", Edit("type: generator", "type: generator\n    zipf: steep"), {},
       {"t.yaml:5:11: parameter 'zipf' of operator 'src' must be a number, got 'steep'"}},
      {"DoubleInfinite", Edit("type: generator", "type: generator\n    zipf: 1e999"), {},
       {"parameter 'zipf' of operator 'src' must be a number"}},
      {"InputsIsMap", Edit("inputs: [src]", "inputs: {src: 1}"), {},
       {"t.yaml:7:13: inputs of operator 'tok' must be an operator id or a list of operator ids, got a map"}},
      {"InputItemIsList", Edit("inputs: [src]", "inputs: [[src]]"), {},
       {"t.yaml:7:14: inputs of operator 'tok' must be operator ids, got a list"}},

      // Operators: type and id.
      {"UnknownType", Edit("type: tokenize", "type: tokenise"), {},
       {"t.yaml:6:11: operator 'tok' has unknown type 'tokenise' (known types: aggregate, bank_accounts, bank_requests, "
        "count, discard_sink, file_sink, file_source, filter, flat_map, generator, join, kafka_sink, kafka_source, map, nexmark, throttle, tokenize, window)"}},
      {"BadId", Edit("id: tok", "id: to.k"), {}, {"t.yaml:5:9: an operator id must be made of letters, digits"}},
      {"DuplicateId", Edit("id: out", "id: src"), {},
       {"t.yaml:12:9: duplicate operator id 'src' (first defined at t.yaml:3:9)"}},

      // Inputs.
      {"UnknownInput", Edit("inputs: [tok]", "inputs: [tok, tokk]"), {},
       {"t.yaml:11:19: operator 'cnt' has input 'tokk', which is not an operator id in this job"}},
      {"SelfInputOnly", Edit("inputs: [tok]", "inputs: [cnt]"), {},
       {"operator 'cnt' is not reachable from any source"}},
      {"DuplicateInput", Edit("inputs: [src]", "inputs: [src, src]"), {},
       {"t.yaml:7:19: operator 'tok' lists input 'src' more than once"}},
      {"SourceWithInputs", Edit("type: generator", "type: generator\n    inputs: [tok]"), {},
       {"t.yaml:5:13: operator 'src' is a source (type generator) and cannot have inputs"}},
      {"TransformWithoutInputs", Edit("    inputs: [src]\n", ""), {},
       {"t.yaml:5:5: operator 'tok' (type tokenize) needs inputs"}},
      {"TransformWithEmptyInputs", Edit("inputs: [src]", "inputs: []"), {},
       {"t.yaml:7:13: operator 'tok' (type tokenize) needs inputs"}},
      {"SinkAsInput", Edit("inputs: [src]", "inputs: [out]"), {},
       {"t.yaml:7:14: operator 'tok' has input 'out', which is a sink (type discard_sink) and emits nothing"}},
      {"NoSource",
       "job: wc\noperators:\n  - {id: a, type: tokenize, inputs: b}\n  - {id: b, type: tokenize, inputs: a}\n", {},
       {"t.yaml:3:3: the job has no source operator (source types: bank_requests, file_source, generator, kafka_source, nexmark)"}},
      {"UnreachableCycle",
       "job: wc\noperators:\n  - {id: s, type: generator}\n  - {id: a, type: tokenize, inputs: [s]}\n"
       "  - {id: b, type: tokenize, inputs: c}\n  - {id: c, type: tokenize, inputs: b}\n",
       {},
       {"t.yaml:5:5: operator 'b' is not reachable from any source"}},

      {"RebalanceClosesACycle",
       "job: wc\noperators:\n  - {id: s, type: generator}\n"
       "  - {id: a, type: tokenize, inputs: [s, {from: b, partition: rebalance}]}\n  - {id: b, type: tokenize, inputs: a}\n",
       {},
       {"t.yaml:4:62: operator 'a' reads input 'b' with partition: rebalance, but that edge closes a cycle"}},

      // Parallelism.
      {"ParallelismZero", Edit("type: tokenize", "type: tokenize\n    parallelism: 0"), {},
       {"t.yaml:7:18: parallelism of operator 'tok' must be an integer >= 1, got '0'"}},
      {"ParallelismNegative", Edit("job: wc", "job: wc\nparallelism: -2"), {},
       {"t.yaml:2:14: parallelism must be an integer >= 1, got '-2'"}},
      {"ParallelismAboveMax", Edit("type: generator", "type: generator\n    parallelism: 9"), {"max_parallelism=8"},
       {"t.yaml:5:18: operator 'src' has parallelism 9, greater than max_parallelism 8"}},
      {"JobParallelismAboveMax", Edit("job: wc", "job: wc\nparallelism: 200"), {},
       {"t.yaml:2:14: parallelism 200 is greater than max_parallelism 128"}},
      {"MaxParallelismZero", Edit("job: wc", "job: wc\nmax_parallelism: 0"), {},
       {"t.yaml:2:18: max_parallelism must be an integer from 1 to 32768, got '0'"}},
      {"MaxParallelismTooLarge", Edit("job: wc", "job: wc\nmax_parallelism: 32769"), {},
       {"max_parallelism must be an integer from 1 to 32768, got '32769'"}},
      {"ForwardEdgeParallelism", Edit("type: tokenize", "type: tokenize\n    parallelism: 2"), {},
       {"t.yaml:8:14: operator 'tok' has parallelism 2 but its input 'src' has 1; add key_by or make them equal"}},
      {"ForwardEdgeParallelismBareId", Edit("type: discard_sink", "type: discard_sink\n    parallelism: 3"), {},
       {"t.yaml:15:13: operator 'out' has parallelism 3 but its input 'cnt' has 1"}},

      // key_by.
      {"KeyByOnNonKeyed", Edit("type: tokenize", "type: tokenize\n    key_by: line"), {},
       {"t.yaml:7:13: operator 'tok' has key_by, but its type tokenize is not keyed"}},
      {"KeyByMissing", Edit("    key_by: word\n", ""), {},
       {"t.yaml:8:5: operator 'cnt' (type count) is keyed and needs key_by"}},
      {"KeyByWrongField", Edit("key_by: word", "key_by: line"), {},
       {"t.yaml:10:13: operator 'cnt' has key_by 'line', but its input 'tok' emits (word string), which has no field 'line'"}},
      {"KeyByWrongFieldOfSecondInput", Edit("inputs: [tok]", "inputs: [tok, src]"), {},
       {"t.yaml:10:13: operator 'cnt' has key_by 'word', but its input 'src' emits (line string), which has no field 'word'"}},

      // checkpoint.*
      {"CheckpointMode", Edit("operators:", "checkpoint:\n  mode: exactly_once\noperators:"), {},
       {"t.yaml:3:9: checkpoint.mode must be one of aligned, unaligned, at_least_once, got 'exactly_once'"}},
      {"CheckpointMaxConcurrentZero", Edit("operators:", "checkpoint:\n  max_concurrent: 0\noperators:"), {},
       {"t.yaml:3:19: checkpoint.max_concurrent must be an integer >= 1, got '0'"}},
      {"CheckpointRetainZero", Edit("operators:", "checkpoint:\n  retain: 0\noperators:"), {},
       {"t.yaml:3:11: checkpoint.retain must be an integer >= 1, got '0'"}},
      {"CheckpointTimeoutZero", Edit("operators:", "checkpoint:\n  timeout: 0ms\noperators:"), {},
       {"t.yaml:3:12: checkpoint.timeout must be a duration", "> 0, got '0ms'"}},
      {"CheckpointTolerableNegative", Edit("operators:", "checkpoint:\n  tolerable_failures: -1\noperators:"), {},
       {"t.yaml:3:23: checkpoint.tolerable_failures must be an integer >= 0, got '-1'"}},
      {"CheckpointIntervalNegative", Edit("operators:", "checkpoint:\n  interval: -1s\noperators:"), {},
       {"t.yaml:3:13: checkpoint.interval must be a duration", "got '-1s'"}},
      {"CheckpointIntervalWord", Edit("operators:", "checkpoint:\n  min_pause: soon\noperators:"), {},
       {"t.yaml:3:14: checkpoint.min_pause must be a duration", "got 'soon'"}},
      {"CheckpointIntervalFraction", Edit("operators:", "checkpoint:\n  aligned_timeout: 1.5s\noperators:"), {},
       {"checkpoint.aligned_timeout must be a duration", "got '1.5s'"}},
      {"CheckpointIntervalMap", Edit("operators:", "checkpoint:\n  interval: {s: 1}\noperators:"), {},
       {"t.yaml:3:13: checkpoint.interval must be a duration", "got a map"}},
      {"CheckpointDirEmpty", Edit("operators:", "checkpoint:\n  dir: \"\"\noperators:"), {},
       {"t.yaml:3:8: checkpoint.dir must be a non-empty string"}},
      {"CheckpointHistoryZero", Edit("operators:", "checkpoint:\n  history: 0\noperators:"), {},
       {"t.yaml:3:12: checkpoint.history must be an integer >= 1, got '0'"}},
      {"CheckpointFeedbackBacklogZero", Edit("operators:", "checkpoint:\n  max_feedback_backlog: 0\noperators:"), {},
       {"t.yaml:3:25: checkpoint.max_feedback_backlog must be an integer >= 1, got '0'"}},
      {"CheckpointDrainCheckpointsZero", Edit("operators:", "checkpoint:\n  max_drain_checkpoints: 0\noperators:"), {},
       {"t.yaml:3:26: checkpoint.max_drain_checkpoints must be an integer >= 1, got '0'"}},
      {"CheckpointInlineThresholdNotASize", Edit("operators:", "checkpoint:\n  inline_state_threshold: 1 KB\noperators:"), {},
       {"t.yaml:3:27: checkpoint.inline_state_threshold must be a size in bytes"}},
      {"SetCheckpointInlineThresholdNegative", kBase, {"checkpoint.inline_state_threshold=-1"},
       {"--set checkpoint.inline_state_threshold: checkpoint.inline_state_threshold must be a size in bytes"}},
      {"SetCheckpointFeedbackBacklogWord", kBase, {"checkpoint.max_feedback_backlog=many"},
       {"--set checkpoint.max_feedback_backlog: checkpoint.max_feedback_backlog must be an integer >= 1, got 'many'"}},

      // --set: malformed paths and values, found at once.
      {"SetNoEquals", kBase, {"parallelism"}, {"--set parallelism: expected KEY=VALUE"}},
      {"SetUnknownTopKey", kBase, {"paralelism=2"},
       {"--set paralelism: unknown key 'paralelism' (known: job, parallelism, max_parallelism, checkpoint.<key>, "
        "state.<key>, operators.<id>.<key>)"}},
      {"SetBadStateBackend", kBase, {"state.backend=disk"}, {"--set state.backend: state.backend must be one of heap, rocksdb"}},
      {"SetUnknownStateKey", kBase, {"state.rocksdb.cache=1MB"},
       {"--set state.rocksdb.cache: unknown key 'cache' in state (known keys: backend, changelog, "
        "materialize_interval, materialize_ratio, rocksdb.block_cache, rocksdb.write_buffer)"}},
      {"SetUnknownCheckpointKey", kBase, {"checkpoint.intervall=1s"},
       {"--set checkpoint.intervall: unknown key 'intervall' in checkpoint (known keys: interval, mode, dir,"}},
      {"SetCheckpointWithoutKey", kBase, {"checkpoint=1s"}, {"--set checkpoint: expected checkpoint.<key>"}},
      {"SetScalarWithSubkey", kBase, {"job.name=x"}, {"--set job.name: 'job' is a single value, not a map"}},
      {"SetUnknownOperator", kBase, {"operators.source.rate=5"},
       {"--set operators.source.rate: unknown operator id 'source' (operators: src, tok, cnt, out)"}},
      {"SetUnknownOperatorKey", kBase, {"operators.src.path=x"},
       {"--set operators.src.path: unknown key 'path' for operator 'src' of type generator (known keys: id, type, "
        "parallelism, inputs, key_by, watermark, words, words_per_line, vocabulary, zipf, seed, rate)"}},
      {"SetOperatorWithoutKey", kBase, {"operators.src=x"}, {"--set operators.src: expected operators.<id>.<key>"}},
      {"SetInvalidYaml", kBase, {"job=[a"}, {"--set job: value is not valid YAML"}},
      {"SetEmptyInputId", kBase, {"operators.tok.inputs=src,,x"}, {"--set operators.tok.inputs: empty operator id"}},
      {"SetCheckpointNotMap", Edit("operators:", "checkpoint: 1s\noperators:"), {"checkpoint.retain=2"},
       {"--set checkpoint.retain: checkpoint at t.yaml:2:13 is not a map"}},

      // --set: errors found later in overridden values name the override, not a file position.
      {"SetBadParallelism", kBase, {"parallelism=0"}, {"--set parallelism: parallelism must be an integer >= 1, got '0'"}},
      {"SetBadValueOverFileValue", Edit("type: generator", "type: generator\n    rate: 1"), {"operators.src.rate=-5"},
       {"--set operators.src.rate: parameter 'rate' of operator 'src' must be an integer >= 0, got '-5'"}},
      {"SetBadParam", kBase, {"operators.src.rate=fast"},
       {"--set operators.src.rate: parameter 'rate' of operator 'src' must be an integer >= 0, got 'fast'"}},
      {"SetBadDuration", kBase, {"checkpoint.interval=1.5s"},
       {"--set checkpoint.interval: checkpoint.interval must be a duration", "got '1.5s'"}},
      {"SetEmptyValue", kBase, {"checkpoint.interval="},
       {"--set checkpoint.interval: checkpoint.interval must be a duration", "got nothing"}},
      {"SetMapValue", kBase, {"job={a: 1}"}, {"--set job: job must be a non-empty string, got a map"}},
      {"SetBadInput", kBase, {"operators.tok.inputs=src,zzz"},
       {"--set operators.tok.inputs: operator 'tok' has input 'zzz', which is not an operator id in this job"}},
      {"SetBadKeyBy", kBase, {"operators.cnt.key_by=line"},
       {"--set operators.cnt.key_by: operator 'cnt' has key_by 'line'"}},
      {"SetBadMode", kBase, {"checkpoint.mode=exactly_once"},
       {"--set checkpoint.mode: checkpoint.mode must be one of aligned, unaligned, at_least_once"}},
  };
  return cases;
}

class JobLoaderErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(JobLoaderErrorTest, Rejects) {
  const ErrorCase& c = GetParam();
  JobSpec spec;
  spec.name = "untouched";
  Status s = LoadJobFromString(c.yaml, "t.yaml", c.overrides, &spec);
  ASSERT_FALSE(s.ok()) << "YAML:\n" << c.yaml;
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  for (const std::string& e : c.expected) EXPECT_NE(s.message().find(e), std::string::npos) << "expected: " << e << "\ngot:      " << s.message();
  // Every message starts with where: the file, or the override.
  EXPECT_TRUE(s.message().rfind("t.yaml", 0) == 0 || s.message().rfind("--set ", 0) == 0) << s.message();
  EXPECT_EQ(spec.name, "untouched") << "a failed load must not fill the spec";
}

INSTANTIATE_TEST_SUITE_P(JobLoader, JobLoaderErrorTest, ::testing::ValuesIn(ErrorCases()),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

// ---- Jobs that load ---------------------------------------------------------------------------

const char* const kExample = R"(job: wordcount                 # required string: the job name
parallelism: 2                 # default parallelism of operators (default 1, >= 1)
max_parallelism: 128           # number of key groups (default 128, 1..32768), >= every parallelism
checkpoint:
  interval: 1s                 # default 1s; 0 = no periodic checkpoints
  mode: aligned                # aligned | unaligned | at_least_once (default aligned)
  dir: checkpoints/wordcount   # default "checkpoints"
  timeout: 10m                 # default 10m; must be > 0
  min_pause: 0ms               # default 0
  max_concurrent: 1            # default 1, >= 1
  tolerable_failures: 0        # default 0, >= 0
  retain: 3                    # default 3, >= 1
  aligned_timeout: 0           # default 0 = never
operators:                     # required, non-empty list, in file order
  - id: source                 # required, unique, [A-Za-z0-9_-]+
    type: file_source          # required, a type from the registry
    parallelism: 2             # optional, >= 1, default: the job's parallelism
    path: data/input.txt       # the type's own parameters (from the registry)
  - id: tokenize
    type: tokenize
    inputs: [source]           # operator ids; a single id string is also accepted
  - id: count
    type: count
    key_by: word               # required for keyed types (registry `keyed`), forbidden otherwise
    inputs: [tokenize]
  - id: sink
    type: file_sink
    inputs: [count]
    path: out/wordcount
)";

JobSpec MustLoad(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  JobSpec spec;
  Status s = LoadJobFromString(yaml, "t.yaml", overrides, &spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return spec;
}

TEST(JobLoader, FullExampleFromFile) {
  testing::ScratchDir dir;
  const std::string path = dir / "wordcount.yaml";
  testing::WriteText(path, kExample);
  JobSpec spec;
  Status s = LoadJob(path, {}, &spec);
  ASSERT_TRUE(s.ok()) << s.ToString();

  EXPECT_EQ(spec.name, "wordcount");
  EXPECT_EQ(spec.source_file, path);
  EXPECT_EQ(spec.parallelism, 2u);
  EXPECT_EQ(spec.max_parallelism, 128u);
  EXPECT_EQ(spec.checkpoint.interval, Millis(1000));
  EXPECT_EQ(spec.checkpoint.mode, CheckpointMode::kAligned);
  EXPECT_EQ(spec.checkpoint.dir, "checkpoints/wordcount");
  EXPECT_EQ(spec.checkpoint.timeout, Millis(600000));
  EXPECT_EQ(spec.checkpoint.min_pause, Millis(0));
  EXPECT_EQ(spec.checkpoint.max_concurrent, 1u);
  EXPECT_EQ(spec.checkpoint.tolerable_failures, 0u);
  EXPECT_EQ(spec.checkpoint.retain, 3u);
  EXPECT_EQ(spec.checkpoint.aligned_timeout, Millis(0));
  EXPECT_EQ(spec.checkpoint.history, 10u);
  EXPECT_EQ(spec.checkpoint.max_feedback_backlog, 1000000u);
  EXPECT_EQ(spec.checkpoint.max_drain_checkpoints, 20u);

  ASSERT_EQ(spec.operators.size(), 4u);
  const OperatorConfig& src = spec.operators[0];
  EXPECT_EQ(src.id, "source");
  EXPECT_EQ(src.type, "file_source");
  EXPECT_EQ(src.parallelism, 2u);
  EXPECT_TRUE(src.inputs.empty());
  EXPECT_TRUE(src.key_by.empty());
  EXPECT_EQ(src.GetString("path"), "data/input.txt");
  EXPECT_EQ(src.GetInt("rate"), 0);  // the default
  EXPECT_EQ(src.params.size(), FindOperatorType("file_source")->params.size());  // every one, given or default
  EXPECT_EQ(src.location, path + ":15:5");

  EXPECT_EQ(spec.operators[1].id, "tokenize");
  EXPECT_EQ(spec.operators[1].parallelism, 2u);  // the job's
  EXPECT_EQ(spec.operators[1].inputs, std::vector<std::string>{"source"});
  EXPECT_TRUE(spec.operators[1].params.empty());
  EXPECT_EQ(spec.operators[2].key_by, std::vector<std::string>{"word"});
  EXPECT_EQ(spec.operators[2].inputs, std::vector<std::string>{"tokenize"});
  EXPECT_EQ(spec.operators[3].GetString("path"), "out/wordcount");
  EXPECT_EQ(spec.operators[3].location, path + ":26:5");
  ASSERT_NE(spec.Find("count"), nullptr);
  EXPECT_EQ(spec.Find("count")->type, "count");
}

TEST(JobLoader, DefaultsFilled) {
  JobSpec spec = MustLoad(kBase);
  const CheckpointConfig defaults;
  EXPECT_EQ(spec.name, "wc");
  EXPECT_EQ(spec.source_file, "t.yaml");
  EXPECT_EQ(spec.parallelism, 1u);
  EXPECT_EQ(spec.max_parallelism, 128u);
  EXPECT_EQ(spec.checkpoint.interval, defaults.interval);
  EXPECT_EQ(spec.checkpoint.interval, Millis(1000));
  EXPECT_EQ(spec.checkpoint.mode, CheckpointMode::kAligned);
  EXPECT_EQ(spec.checkpoint.dir, "checkpoints");
  EXPECT_EQ(spec.checkpoint.timeout, Millis(600000));
  EXPECT_EQ(spec.checkpoint.retain, 3u);
  EXPECT_EQ(spec.checkpoint.max_concurrent, 1u);
  EXPECT_EQ(spec.checkpoint.inline_state_threshold, 1024u);
  EXPECT_EQ(spec.state.kind, StateBackendOptions::Kind::kHeap);
  EXPECT_EQ(spec.state.block_cache, 64u << 20);
  EXPECT_EQ(spec.state.write_buffer, 16u << 20);

  // Every declared parameter is present, so the getters never fail.
  const OperatorConfig& gen = spec.operators[0];
  EXPECT_EQ(gen.params.size(), 6u);
  EXPECT_EQ(gen.GetInt("words"), 10000000);
  EXPECT_EQ(gen.GetInt("words_per_line"), 10);
  EXPECT_EQ(gen.GetInt("vocabulary"), 100000);
  EXPECT_DOUBLE_EQ(gen.GetDouble("zipf"), 1.0);
  EXPECT_EQ(gen.GetInt("seed"), 42);
  EXPECT_EQ(gen.GetInt("rate"), 0);
  EXPECT_EQ(gen.location, "t.yaml:3:5");
  EXPECT_EQ(spec.operators[3].location, "t.yaml:12:5");
}

TEST(JobLoader, BareIdStringAsInputs) {
  JobSpec spec = MustLoad(kBase);
  EXPECT_EQ(spec.operators[3].inputs, std::vector<std::string>{"cnt"});  // "inputs: cnt"
}

TEST(JobLoader, CheckpointModesAndValues) {
  for (const char* mode : {"aligned", "unaligned", "at_least_once"}) {
    SCOPED_TRACE(mode);
    JobSpec spec = MustLoad(Edit("operators:", std::string("checkpoint:\n  mode: ") + mode +
                                                   "\n  interval: 250ms\n  timeout: 2m\n  min_pause: 100\n"
                                                   "  max_concurrent: 2\n  tolerable_failures: 5\n  retain: 1\n"
                                                   "  aligned_timeout: \"30s\"\n  dir: /tmp/ck\n  history: 3\n"
                                                   "  max_feedback_backlog: 5000000000\n  max_drain_checkpoints: 7\noperators:"));
    EXPECT_STREQ(CheckpointModeName(spec.checkpoint.mode), mode);
    EXPECT_EQ(spec.checkpoint.interval, Millis(250));
    EXPECT_EQ(spec.checkpoint.timeout, Millis(120000));
    EXPECT_EQ(spec.checkpoint.min_pause, Millis(100));
    EXPECT_EQ(spec.checkpoint.max_concurrent, 2u);
    EXPECT_EQ(spec.checkpoint.tolerable_failures, 5u);
    EXPECT_EQ(spec.checkpoint.retain, 1u);
    EXPECT_EQ(spec.checkpoint.aligned_timeout, Millis(30000));
    EXPECT_EQ(spec.checkpoint.dir, "/tmp/ck");
    EXPECT_EQ(spec.checkpoint.history, 3u);
    EXPECT_EQ(spec.checkpoint.max_feedback_backlog, 5000000000u);  // past 32 bits
    EXPECT_EQ(spec.checkpoint.max_drain_checkpoints, 7u);
  }
  EXPECT_EQ(MustLoad(Edit("operators:", "checkpoint:\n  interval: 0\noperators:")).checkpoint.interval, Millis(0));
}

TEST(JobLoader, ParamValuesAreTyped) {
  JobSpec spec = MustLoad(Edit("type: generator", "type: generator\n    rate: \"7\"\n    zipf: 0.5\n    seed: +3"));
  EXPECT_EQ(spec.operators[0].GetInt("rate"), 7);  // a quoted integer is still an integer
  EXPECT_DOUBLE_EQ(spec.operators[0].GetDouble("zipf"), 0.5);
  EXPECT_EQ(spec.operators[0].GetString("seed"), "3");
}

TEST(JobLoader, InputsMayNameLaterOperators) {
  JobSpec spec = MustLoad("job: j\noperators:\n  - {id: sink, type: discard_sink, inputs: src}\n"
                          "  - {id: src, type: generator}\n");
  EXPECT_EQ(spec.operators[0].id, "sink");
  EXPECT_EQ(spec.operators[0].location, "t.yaml:3:5");
}

TEST(JobLoader, KeyedEdgeMayChangeParallelism) {
  JobSpec spec = MustLoad(Edit("    key_by: word\n", "    key_by: word\n    parallelism: 3\n"),
                          {"operators.out.parallelism=3"});
  EXPECT_EQ(spec.Find("tok")->parallelism, 1u);
  EXPECT_EQ(spec.Find("cnt")->parallelism, 3u);
}

TEST(JobLoader, RebalanceInputsMayChangeParallelismAndAreNeverChained) {
  JobSpec spec = MustLoad("job: j\noperators:\n  - {id: src, type: generator}\n"
                          "  - {id: tok, type: tokenize, parallelism: 3, inputs: [{from: src, partition: rebalance}]}\n"
                          "  - {id: tok2, type: tokenize, inputs: [{from: src, partition: forward}]}\n"
                          "  - {id: out, type: discard_sink, inputs: [{from: tok, partition: rebalance}, tok2]}\n");
  EXPECT_EQ(spec.Find("tok")->inputs, std::vector<std::string>{"src"});
  EXPECT_TRUE(spec.Find("tok")->Rebalanced(0));
  EXPECT_FALSE(spec.Find("tok2")->Rebalanced(0));  // partition: forward is a plain id
  EXPECT_TRUE(spec.Find("out")->Rebalanced(0));
  EXPECT_FALSE(spec.Find("out")->Rebalanced(1));
  ExecutionPlan plan = ExecutionPlan::Build(spec);
  int rebalance = 0;
  for (const PlanEdge& e : plan.edges) {
    if (!e.rebalance) continue;
    ++rebalance;
    EXPECT_FALSE(e.hash);
    EXPECT_NE(plan.ChainName(spec, e.to_chain).find(plan.ChainName(spec, e.from_chain)), 0u);  // not chained
  }
  EXPECT_EQ(rebalance, 2);
}

TEST(JobLoader, FindCycle) {
  auto op = [](std::string id, std::vector<std::string> inputs) {
    OperatorConfig c;
    c.id = std::move(id);
    c.inputs = std::move(inputs);
    return c;
  };
  EXPECT_TRUE(FindCycle({op("s", {}), op("a", {"s"}), op("b", {"s", "a"})}).empty());
  EXPECT_EQ(FindCycle({op("s", {}), op("a", {"s", "b"}), op("b", {"a"})}), (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(FindCycle({op("a", {"a"})}), (std::vector<std::string>{"a", "a"}));
  EXPECT_EQ(FindCycle({op("x", {"z"}), op("y", {"x"}), op("z", {"y"})}), (std::vector<std::string>{"x", "y", "z", "x"}));
}

TEST(JobLoader, SetOnEveryKindOfPath) {
  JobSpec spec = MustLoad(kBase, {
                                     "job=renamed",
                                     "max_parallelism=64",
                                     "parallelism=4",
                                     "checkpoint.interval=100ms",
                                     "checkpoint.mode=unaligned",
                                     "checkpoint.dir=ck dir",
                                     "operators.src.rate=5",
                                     "operators.src.zipf=1.25",
                                     "operators.out.parallelism=4",
                                     "state.backend=rocksdb",
                                     "state.rocksdb.block_cache=1MB",
                                     "state.rocksdb.write_buffer=128KB",
                                     "state.changelog=true",
                                     "state.materialize_interval=2s",
                                     "state.materialize_ratio=0.5",
                                     "checkpoint.inline_state_threshold=0",
                                 });
  EXPECT_EQ(spec.state.kind, StateBackendOptions::Kind::kRocksDb);  // state: was absent, --set made it
  EXPECT_TRUE(spec.state.changelog);
  EXPECT_EQ(spec.state.materialize_interval_ms, 2000u);
  EXPECT_EQ(spec.state.materialize_ratio, 0.5);
  EXPECT_EQ(spec.checkpoint.inline_state_threshold, 0u);
  EXPECT_EQ(spec.state.block_cache, 1u << 20);
  EXPECT_EQ(spec.state.write_buffer, 128u << 10);
  EXPECT_EQ(spec.name, "renamed");
  EXPECT_EQ(spec.max_parallelism, 64u);
  EXPECT_EQ(spec.parallelism, 4u);
  EXPECT_EQ(spec.checkpoint.interval, Millis(100));  // checkpoint: was absent, --set made it
  EXPECT_EQ(spec.checkpoint.mode, CheckpointMode::kUnaligned);
  EXPECT_EQ(spec.checkpoint.dir, "ck dir");
  EXPECT_EQ(spec.operators[0].GetInt("rate"), 5);
  EXPECT_DOUBLE_EQ(spec.operators[0].GetDouble("zipf"), 1.25);
  for (const auto& op : spec.operators) EXPECT_EQ(op.parallelism, 4u) << op.id;
}

TEST(JobLoader, SetReplacesFileValuesAndLastWins) {
  JobSpec spec = MustLoad(Edit("operators:", "checkpoint:\n  interval: 5s\n  retain: 9\noperators:"),
                          {"checkpoint.interval=2s", "checkpoint.interval=3s"});
  EXPECT_EQ(spec.checkpoint.interval, Millis(3000));
  EXPECT_EQ(spec.checkpoint.retain, 9u);  // untouched
}

TEST(JobLoader, SetOperatorInputsAndKeyBy) {
  const std::string yaml = Edit("  - id: out", "  - id: gen2\n    type: generator\n  - id: out");
  JobSpec spec = MustLoad(yaml, {"operators.tok.inputs=src, gen2", "operators.out.inputs=tok",
                                 "operators.cnt.key_by=word"});
  EXPECT_EQ(spec.Find("tok")->inputs, (std::vector<std::string>{"src", "gen2"}));
  EXPECT_EQ(spec.Find("out")->inputs, std::vector<std::string>{"tok"});
  EXPECT_EQ(spec.Find("cnt")->key_by, std::vector<std::string>{"word"});
  EXPECT_TRUE(MustLoad(kBase, {"operators.src.inputs="}).operators[0].inputs.empty());
}

TEST(JobLoader, SetValueIsParsedAsYamlScalar) {
  JobSpec spec = MustLoad(kBase, {"job='quoted name'", "operators.src.rate=12  # comment"});
  EXPECT_EQ(spec.name, "quoted name");
  EXPECT_EQ(spec.operators[0].GetInt("rate"), 12);
}

TEST(JobLoader, SetOneEntryOfAWatermarkOrAMapParameter) {
  const std::string yaml =
      "job: j\noperators:\n"
      "  - id: ev\n    type: nexmark\n    watermark: {field: date_time, max_out_of_orderness: 4s}\n"
      "  - {id: w, type: window, inputs: [ev], time: date_time, kind: tumble, size: 10s, aggregates: {n: count(*)}}\n"
      "  - {id: out, type: discard_sink, inputs: [w]}\n";
  JobSpec spec = MustLoad(yaml, {"operators.ev.watermark.max_out_of_orderness=2s",
                                 "operators.ev.watermark.idle_timeout=1s", "operators.w.aggregates.top=max(price)"});
  const WatermarkSpec& wm = spec.Find("ev")->watermark;
  EXPECT_TRUE(wm.enabled);
  EXPECT_EQ(wm.field, "date_time");  // untouched
  EXPECT_EQ(wm.max_out_of_orderness, Millis(2000));
  EXPECT_EQ(wm.idle_timeout, Millis(1000));
  const std::vector<ParamEntry>& aggs = spec.Find("w")->GetEntries("aggregates");
  ASSERT_EQ(aggs.size(), 2u);
  EXPECT_EQ(aggs[1].key, "top");
  EXPECT_EQ(aggs[1].value, "max(price)");
  // A watermark that the file does not have: --set makes it.
  const std::string none = yaml.substr(0, yaml.find("    watermark:")) + yaml.substr(yaml.find("  - {id: w"));
  JobSpec made = MustLoad(none, {"operators.ev.watermark.field=date_time"});
  EXPECT_TRUE(made.Find("ev")->watermark.enabled);
  EXPECT_EQ(made.Find("ev")->watermark.field, "date_time");
  // Wrong entries are refused naming them.
  struct Bad {
    const char* set;
    const char* says;
  } bad[] = {
      {"operators.ev.watermark.idle=1s", "unknown key 'idle' in watermark (known keys: field, max_out_of_orderness, idle_timeout)"},
      {"operators.ev.events.x=1", "'events' of operator 'ev' is a single value, not a map"},
      {"operators.ev.watermark.max_out_of_orderness=soon", "--set operators.ev.watermark.max_out_of_orderness"},
      {"operators.w.size.x=1", "'size' of operator 'w' is a single value, not a map"},
      {"operators.w.a.b.c=1", "expected operators.<id>.<key>"},
  };
  for (const Bad& b : bad) {
    JobSpec spec2;
    Status st = LoadJobFromString(yaml, "t.yaml", {b.set}, &spec2);
    EXPECT_FALSE(st.ok()) << b.set;
    EXPECT_NE(st.message().find(b.says), std::string::npos) << b.set << ": " << st.message();
  }
}

TEST(JobLoader, SetAppliesBeforeValidation) {
  // The file alone is invalid (parallelism 0), the override repairs it.
  JobSpec spec = MustLoad(Edit("job: wc", "job: wc\nparallelism: 0"), {"parallelism=1"});
  EXPECT_EQ(spec.parallelism, 1u);
}

TEST(JobLoader, StateSectionFromFile) {
  JobSpec spec = MustLoad(std::string("state:\n  backend: rocksdb\n  rocksdb:\n    block_cache: 3GB\n    write_buffer: 65536\n") + kBase);
  EXPECT_EQ(spec.state.kind, StateBackendOptions::Kind::kRocksDb);
  EXPECT_EQ(spec.state.block_cache, 3ull << 30);
  EXPECT_EQ(spec.state.write_buffer, 65536u);
  EXPECT_EQ(MustLoad(std::string("state:\n  backend: heap\n") + kBase).state.kind, StateBackendOptions::Kind::kHeap);
}

TEST(JobLoader, ParseBytes) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseBytes("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(ParseBytes("512", &v));
  EXPECT_EQ(v, 512u);
  EXPECT_TRUE(ParseBytes("7B", &v));
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(ParseBytes("64KB", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(ParseBytes("64MiB", &v));
  EXPECT_EQ(v, 64u << 20);
  EXPECT_TRUE(ParseBytes("2GB", &v));
  EXPECT_EQ(v, 2ull << 30);
  for (const char* bad : {"", "MB", "-1", "1.5MB", "1 MB", "1mb", "1TB", "99999999999999999999", "4294967297GB"})
    EXPECT_FALSE(ParseBytes(bad, &v)) << bad;
}

TEST(JobLoader, ParseDuration) {
  struct Case {
    const char* text;
    int64_t ms;  // -1: malformed
  };
  const Case cases[] = {
      {"0", 0},        {"250", 250},    {"250ms", 250},   {"1s", 1000},   {"2m", 120000}, {"1h", 3600000},
      {"0ms", 0},      {"0s", 0},       {"10m", 600000},  {"", -1},       {"ms", -1},     {"-1s", -1},
      {"1.5s", -1},    {"1 s", -1},     {" 1s", -1},      {"1sec", -1},   {"1d", -1},     {"1S", -1},
      {"+1s", -1},     {"abc", -1},     {"1s2", -1},      {"99999999999999999999", -1},
      {"9223372036854775807h", -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Millis d{-7};
    bool ok = ParseDuration(c.text, &d);
    EXPECT_EQ(ok, c.ms >= 0);
    if (c.ms >= 0) {
      EXPECT_EQ(d.count(), c.ms);
    }
  }
}

TEST(JobLoader, DurationParamsAcceptIntsAndStrings) {
  // The registry has no duration parameter yet; checkpoint keys use the same rules.
  for (const char* v : {"1500", "\"1500\"", "1500ms"}) {
    SCOPED_TRACE(v);
    JobSpec spec = MustLoad(Edit("operators:", std::string("checkpoint:\n  interval: ") + v + "\noperators:"));
    EXPECT_EQ(spec.checkpoint.interval, Millis(1500));
  }
}

TEST(JobLoader, MissingFileIsNotFound) {
  testing::ScratchDir dir;
  JobSpec spec;
  Status s = LoadJob(dir / "nope.yaml", {}, &spec);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(s.message(), dir / "nope.yaml" + ": cannot read: No such file or directory");
}

TEST(JobLoader, UnreadableFileIsInvalidArgument) {
  testing::ScratchDir dir;
  JobSpec spec;
  Status s = LoadJob(dir.path(), {}, &spec);  // a directory
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(s.message(), dir.path() + ": cannot read: Is a directory");
}

TEST(JobLoader, FileErrorsNameThePath) {
  testing::ScratchDir dir;
  const std::string path = dir / "bad.yaml";
  testing::WriteText(path, Edit("operators:", "checkpoint:\n  intervall: 1s\noperators:"));
  JobSpec spec;
  Status s = LoadJob(path, {}, &spec);
  EXPECT_EQ(s.message().rfind(path + ":3:3: unknown key 'intervall' in checkpoint (known keys: interval,", 0), 0u)
      << s.message();
}

// ---- docs/configuration.md ------------------------------------------------------------------

// The operator type reference as docs/configuration.md shows it, rendered from the registry.
std::string RenderOperatorReference() {
  std::ostringstream md;
  for (const OperatorType& t : OperatorTypes()) {
    const char* role = t.role == OperatorRole::kSource ? "source" : t.role == OperatorRole::kSink ? "sink" : "transform";
    md << "### `" << t.name << "`\n\n" << t.doc << "\n\n";
    md << "- Role: " << role << ".";
    if (t.role == OperatorRole::kSource) md << " Takes no `inputs`.";
    if (t.role == OperatorRole::kSink) md << " Emits nothing; no operator may read from it.";
    md << "\n";
    if (t.input_keys)
      md << "- Keyed: yes, each input by the key fields its parameters name. `key_by` is not allowed.\n";
    else if (t.keyed && t.key_by_optional)
      md << "- Keyed: yes. `key_by` (the key field(s), in every input) is optional: without it, every record has "
            "the one empty key.\n";
    else
      md << (t.keyed ? "- Keyed: yes. REQUIRES: `key_by`, the key field(s), in every input.\n"
                     : "- Keyed: no. `key_by` is not allowed.\n");
    if (t.timers) md << "- Timers: yes (event time needs watermarks: a source's `watermark`).\n";
    md << "\n";
    if (t.params.empty()) md << "No parameters.\n\n";
    for (const ParamSpec& p : t.params) {
      std::string doc = p.doc;
      if (!doc.empty()) doc[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(doc[0])));
      md << "#### `" << t.name << "." << p.name << "` (" << ParamTypeName(p.type) << ")\n\n" << doc << ".\n\n";
      if (p.required) md << "Required, no default.";
      else if (p.default_value.empty()) md << "Default: none.";
      else md << "Default: `" << p.default_value << "`.";
      switch (p.type) {
        case ParamType::kString: md << (p.required ? " REQUIRES: not empty." : ""); break;
        case ParamType::kInt: md << " REQUIRES: an integer >= " << p.min_int << "."; break;
        case ParamType::kDouble: md << " REQUIRES: a finite number."; break;
        case ParamType::kDuration: md << " REQUIRES: a duration."; break;
        case ParamType::kBool: md << " REQUIRES: `true` or `false`."; break;
        case ParamType::kMap:
        case ParamType::kList:
        case ParamType::kMapOfLists: break;
      }
      md << "\n\n";
    }
  }
  return md.str();
}

TEST(JobLoaderDocs, OperatorReferenceMatchesRegistry) {
  const std::string begin = "<!-- BEGIN operator types: generated from the operator registry, by name -->\n";
  const std::string end = "<!-- END operator types -->";
  const std::string doc = testing::ReadText(testing::SourceDir() + "/docs/configuration.md");
  size_t b = doc.find(begin);
  size_t e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/configuration.md lacks the line " << begin;
  ASSERT_NE(e, std::string::npos) << "docs/configuration.md lacks the line " << end;
  b += begin.size();
  ASSERT_LE(b, e);
  const std::string expected = RenderOperatorReference();
  EXPECT_EQ(doc.substr(b, e - b), "\n" + expected) << "Replace the block between the markers with:\n\n" << expected;
}

TEST(JobLoaderDocs, EveryKeyIsDocumented) {
  const std::string doc = testing::ReadText(testing::SourceDir() + "/docs/configuration.md");
  for (const char* key : {"`job`", "`parallelism`", "`max_parallelism`", "`checkpoint`", "`operators`",
                          "`checkpoint.interval`", "`checkpoint.mode`", "`checkpoint.dir`", "`checkpoint.timeout`",
                          "`checkpoint.min_pause`", "`checkpoint.max_concurrent`", "`checkpoint.tolerable_failures`",
                          "`checkpoint.retain`", "`checkpoint.aligned_timeout`", "`checkpoint.history`",
                          "`checkpoint.max_feedback_backlog`", "`checkpoint.max_drain_checkpoints`",
                          "`checkpoint.inline_state_threshold`", "`state`", "`state.backend`",
                          "`state.changelog`", "`state.materialize_interval`", "`state.materialize_ratio`",
                          "`state.rocksdb.block_cache`", "`state.rocksdb.write_buffer`", "`id`", "`type`", "`inputs`",
                          "`key_by`", "`watermark`", "`watermark.field`", "`watermark.max_out_of_orderness`",
                          "`watermark.idle_timeout`", "`--set"}) {
    EXPECT_NE(doc.find(std::string("### ") + key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace cairn
