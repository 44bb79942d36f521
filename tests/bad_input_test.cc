// Bad input fails closed: every row of the table below is a `cairn` invocation with something
// wrong in it (malformed YAML, unknown keys, wrong types, bad parallelism, unknown operator
// types and ids, bad flags, missing or unreadable paths, bad fault-injection variables). Each
// must exit 2 with a message that names the key or file (and line:col where there is one),
// and must leave an existing checkpoint directory and output directory byte-for-byte as they
// were. The job files and flags point at that real checkpoint and output directory, made by a
// small completed run, so that any change would show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/tree_snapshot.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

// The job file rows edit. Line numbers in the expected messages refer to this text.
constexpr const char* kBaseJob =
    "job: wordcount\n"           // 1
    "parallelism: 2\n"           // 2
    "checkpoint:\n"              // 3
    "  interval: 20ms\n"         // 4
    "  dir: {ck}\n"              // 5
    "operators:\n"               // 6
    "  - id: source\n"           // 7
    "    type: file_source\n"    // 8
    "    path: {in}\n"           // 9
    "  - id: tokenize\n"         // 10
    "    type: tokenize\n"       // 11
    "    inputs: [source]\n"     // 12
    "  - id: count\n"            // 13
    "    type: count\n"          // 14
    "    key_by: word\n"         // 15
    "    inputs: [tokenize]\n"   // 16
    "  - id: sink\n"             // 17
    "    type: file_sink\n"      // 18
    "    path: {out}\n"          // 19
    "    inputs: [count]\n";     // 20

struct BadInput {
  const char* name;
  // The job file {job}: kBaseJob with `find` replaced by `replace` (find "" and replace "":
  // kBaseJob as it is; find "*": the whole file is `replace`).
  std::string find, replace;
  std::vector<std::string> args;  // placeholders {job} {dir} {ck} {in} {out}
  std::vector<std::string> env;
  std::vector<std::string> expect;  // substrings of stderr, same placeholders
  bool unreadable_job = false;      // chmod 000 the job file
};

// gtest prints the row's name rather than its bytes.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

// `cairn run {job} --quiet`
const std::vector<std::string> kRun = {"run", "{job}", "--quiet"};

std::vector<std::string> Run(std::vector<std::string> extra) {
  std::vector<std::string> a = kRun;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// An operator `big` of `type` reading from tokenize, with `param` (one line, "key: value").
// A join `big` of tokenize and count (lines 21-25 after the base job).
std::string Join(const std::string& on, const std::string& select) {
  return "  - id: big\n    type: join\n    inputs: [tokenize, count]\n    on: " + on + "\n    select: " + select + "\n";
}

std::string Big(const std::string& type, const std::string& param) {
  return "  - id: big\n    type: " + type + "\n    inputs: [tokenize]\n    " + param + "\n";
}

const BadInput kTable[] = {
    // ---- YAML syntax
    {"YamlBadIndentation", "  dir: {ck}", "   dir: {ck}", kRun, {}, {"{job}:5:7: YAML syntax error"}},
    {"YamlUnclosedFlowList", "inputs: [source]", "inputs: [source", kRun, {}, {"{job}:13:7: YAML syntax error"}},
    {"YamlTabIndentation", "  interval: 20ms", "\tinterval: 20ms", kRun, {}, {"{job}:4:10: YAML syntax error"}},
    {"YamlTwoDocuments", "    inputs: [count]\n", "    inputs: [count]\n---\njob: x\n", kRun, {},
     {"{job}:22:1: a job file holds one YAML document"}},
    {"EmptyJobFile", "*", "", kRun, {}, {"{job}: empty job file"}},
    {"YamlLoneComma", "*", ",\n", kRun, {}, {"{job}:1:1: YAML syntax error: unexpected ','"}},  // hung in yaml-cpp's LoadAll
    {"JobFileIsAList", "*", "- a\n- b\n", kRun, {}, {"{job}:1:1: a job file must be a map"}},
    // ---- unknown keys
    {"UnknownTopLevelKey", "parallelism: 2", "paralelism: 2", kRun, {},
     {"{job}:2:1: unknown key 'paralelism' at top level", "known keys: job, parallelism"}},
    {"UnknownCheckpointKey", "  interval: 20ms", "  intervall: 20ms", kRun, {},
     {"{job}:4:3: unknown key 'intervall' in checkpoint"}},
    {"UnknownOperatorKey", "    key_by: word\n", "    key_by: word\n    colour: red\n", kRun, {},
     {"{job}:16:5: unknown key 'colour' in operator 'count'"}},
    {"MissingJobKey", "job: wordcount\n", "", kRun, {}, {"{job}:1:1: missing required key 'job'"}},
    {"MissingRequiredParameter", "    path: {in}\n", "", kRun, {},
     {"{job}:7:5: operator 'source' (type file_source) is missing required parameter 'path'"}},
    // ---- wrong types
    {"ParallelismNotANumber", "parallelism: 2", "parallelism: two", kRun, {},
     {"{job}:2:14: parallelism must be an integer >= 1, got 'two'"}},
    {"JobNameIsAList", "job: wordcount", "job: [a, b]", kRun, {}, {"{job}:1:6: job must be a non-empty string, got a list"}},
    {"IntervalNotADuration", "interval: 20ms", "interval: soon", kRun, {},
     {"{job}:4:13: checkpoint.interval must be a duration"}},
    {"UnknownCheckpointMode", "  interval: 20ms\n", "  interval: 20ms\n  mode: exactly\n", kRun, {},
     {"{job}:5:9: checkpoint.mode must be one of aligned, unaligned, at_least_once, got 'exactly'"}},
    {"InputsIsAMap", "    inputs: [count]", "    inputs: {a: b}", kRun, {},
     {"{job}:20:13: inputs of operator 'sink' must be an operator id or a list of operator ids, got a map"}},
    {"RebalanceIntoAKeyedOperator", "    inputs: [tokenize]\n", "    inputs: [{from: tokenize, partition: rebalance}]\n", kRun, {},
     {"{job}:16:42: operator 'count' reads input 'tokenize' with partition: rebalance, but it is keyed"}},
    {"UnknownPartition", "    inputs: [source]\n", "    inputs: [{from: source, partition: shuffle}]\n", kRun, {},
     {"{job}:12:40: partition of an input of operator 'tokenize' must be rebalance or forward, got 'shuffle'"}},
    {"InputMapWithoutFrom", "    inputs: [source]\n", "    inputs: [{partition: rebalance}]\n", kRun, {},
     {"{job}:12:14: an input of operator 'tokenize' is missing required key 'from'"}},
    {"NegativeTolerableFailures", "  interval: 20ms\n", "  interval: 20ms\n  tolerable_failures: -1\n", kRun, {},
     {"{job}:5:23: checkpoint.tolerable_failures must be an integer >= 0, got '-1'"}},
    {"RetainZero", "  interval: 20ms\n", "  interval: 20ms\n  retain: 0\n", kRun, {},
     {"{job}:5:11: checkpoint.retain must be an integer >= 1, got '0'"}},
    // ---- state
    {"UnknownStateBackend", "parallelism: 2\n", "parallelism: 2\nstate:\n  backend: disk\n", kRun, {},
     {"{job}:4:12: state.backend must be one of heap, rocksdb, got 'disk'"}},
    {"UnknownStateKey", "parallelism: 2\n", "parallelism: 2\nstate:\n  backnd: heap\n", kRun, {},
     {"{job}:4:3: unknown key 'backnd' in state (known keys: backend, changelog, materialize_interval, materialize_ratio, rocksdb)"}},
    {"StateIsAList", "parallelism: 2\n", "parallelism: 2\nstate: [heap]\n", kRun, {},
     {"{job}:3:8: state must be a map (keys: backend, changelog, materialize_interval, materialize_ratio, rocksdb), got a list"}},
    {"BlockCacheNotASize", "parallelism: 2\n", "parallelism: 2\nstate:\n  rocksdb:\n    block_cache: lots\n", kRun, {},
     {"{job}:5:18: state.rocksdb.block_cache must be a size in bytes", "got 'lots'"}},
    {"WriteBufferTooSmall", "parallelism: 2\n", "parallelism: 2\nstate:\n  rocksdb:\n    write_buffer: 1KB\n", kRun, {},
     {"{job}:5:19: state.rocksdb.write_buffer must be a size in bytes", "at least 65536, got '1KB'"}},
    {"ChangelogNotABoolean", "parallelism: 2\n", "parallelism: 2\nstate:\n  changelog: maybe\n", kRun, {},
     {"{job}:4:14: state.changelog must be a boolean (true or false), got 'maybe'"}},
    {"MaterializeRatioNegative", "parallelism: 2\n", "parallelism: 2\nstate:\n  materialize_ratio: -1\n", kRun, {},
     {"{job}:4:22: state.materialize_ratio must be a number >= 0", "got '-1'"}},
    {"MaterializeIntervalZero", "parallelism: 2\n", "parallelism: 2\nstate:\n  materialize_interval: 0s\n", kRun, {},
     {"{job}:4:25: state.materialize_interval must be a duration", "got '0s'"}},
    {"SetBadStateBackend", "", "", Run({"--set", "state.backend=memory"}), {},
     {"--set state.backend: state.backend must be one of heap, rocksdb, got 'memory'"}},
    {"SetUnknownStateRocksDbKey", "", "", Run({"--set", "state.rocksdb.cache=1MB"}), {},
     {"--set state.rocksdb.cache: unknown key 'cache' in state"}},
    // ---- parallelism
    {"ParallelismZero", "parallelism: 2", "parallelism: 0", kRun, {},
     {"{job}:2:14: parallelism must be an integer >= 1, got '0'"}},
    {"ParallelismNegative", "parallelism: 2", "parallelism: -1", kRun, {},
     {"{job}:2:14: parallelism must be an integer >= 1, got '-1'"}},
    {"OperatorParallelismZero", "    key_by: word\n", "    key_by: word\n    parallelism: 0\n", kRun, {},
     {"{job}:16:18: parallelism of operator 'count' must be an integer >= 1, got '0'"}},
    {"ParallelismAboveMaxParallelism", "parallelism: 2\n", "parallelism: 2\nmax_parallelism: 1\n", kRun, {},
     {"{job}:2:14: parallelism 2 is greater than max_parallelism 1"}},
    // ---- operators and edges
    {"UnknownOperatorType", "type: count", "type: cuont", kRun, {},
     {"{job}:14:11: operator 'count' has unknown type 'cuont'", "known types:"}},
    {"EdgeToUnknownId", "inputs: [tokenize]", "inputs: [tokenizer]", kRun, {},
     {"{job}:16:14: operator 'count' has input 'tokenizer', which is not an operator id"}},
    {"DuplicateOperatorId", "  - id: tokenize\n    type: tokenize\n    inputs: [source]\n",
     "  - id: source\n    type: tokenize\n    inputs: [source]\n", kRun, {},
     {"{job}:10:9: duplicate operator id 'source' (first defined at {job}:7:9)"}},
    // ---- expressions (filter.where, map.select, flat_map.split): an operator `big` reading from
    // tokenize is added after line 12, its expression the value at line 16, column 12
    {"ExprSyntaxError", "    inputs: [source]\n", "    inputs: [source]\n" + Big("filter", "where: \"word >\""), kRun, {},
     {"{job}:16:12: operator 'big': where, column 7: unexpected end of the expression"}},
    {"ExprUnknownField", "    inputs: [source]\n", "    inputs: [source]\n" + Big("filter", "where: \"wrod = 'a'\""), kRun,
     {}, {"{job}:16:12: operator 'big': where, column 1: unknown field 'wrod' (fields: word)"}},
    {"ExprTypeMismatch", "    inputs: [source]\n", "    inputs: [source]\n" + Big("filter", "where: \"word > 3\""), kRun, {},
     {"{job}:16:12: operator 'big': where, column 6: cannot compare string 'word' with int64"}},
    {"WhereNotBoolean", "    inputs: [source]\n", "    inputs: [source]\n" + Big("filter", "where: \"length(word)\""), kRun,
     {}, {"{job}:16:12: operator 'big': where, column 1: where must be a bool expression (a condition), got int64"}},
    {"ExprUnknownFunction", "    inputs: [source]\n", "    inputs: [source]\n" + Big("filter", "where: \"lenght(word) > 3\""),
     kRun, {}, {"{job}:16:12: operator 'big': where, column 1: unknown function 'lenght' (functions: abs,"}},
    {"ExprWrongArgumentCount", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("filter", "where: \"length(word, 2) > 3\""), kRun, {},
     {"{job}:16:12: operator 'big': where, column 1: function length takes 1 argument, got 2"}},
    {"MapSelectTypeMismatch", "    inputs: [source]\n", "    inputs: [source]\n" + Big("map", "select: {n: \"word + 1\"}"),
     kRun, {}, {"{job}:16:17: operator 'big': select.n, column 6: cannot apply '+' to string 'word' and int64"}},
    {"MapSelectUntypedNull", "    inputs: [source]\n", "    inputs: [source]\n" + Big("map", "select: {n: \"NULL\"}"), kRun,
     {}, {"{job}:16:17: operator 'big': select.n, column 1: the type of NULL is unknown here; write CAST(NULL AS type)"}},
    {"FlatMapSplitUnknownField", "    inputs: [source]\n", "    inputs: [source]\n" + Big("flat_map", "split: text"), kRun,
     {}, {"{job}:16:12: operator 'big' (type flat_map) splits field 'text', which its input does not have (fields: word)"}},
    {"MapSelectEmpty", "    inputs: [source]\n", "    inputs: [source]\n" + Big("map", "select: {}"), kRun, {},
     {"{job}:16:13: operator 'big': select must name at least one field"}},
    {"FlatMapSplitNotAString", "    inputs: [tokenize]\n",
     "    inputs: [tokenize]\n  - id: big\n    type: flat_map\n    inputs: [count]\n    split: count\n", kRun, {},
     {"{job}:20:12: operator 'big' (type flat_map) splits field 'count', which is int64; it must be a string"}},
    {"FlatMapIntoTakenField", "    inputs: [source]\n", "    inputs: [source]\n" + Big("map", "select: {w: word, n: \"length(word)\"}") +
     "  - id: pieces\n    type: flat_map\n    inputs: [big]\n    split: w\n    into: n\n", kRun,
     {}, {"{job}:21:11: operator 'pieces' (type flat_map) names its pieces 'n', but its input already has a field of that name"}},
    // ---- aggregate: an operator `big` keyed by word after tokenize, its aggregates at line 17
    {"AggregateUnknownFunction", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("aggregate", "key_by: word\n    aggregates: {n: \"summ(word)\"}"), kRun, {},
     {"{job}:17:21: operator 'big': aggregate 'n' (\"summ(word)\"): unknown function 'summ' (functions: count(*), count, sum, min, max, avg)"}},
    {"AggregateUnknownField", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("aggregate", "key_by: word\n    aggregates: {n: \"max(wrod)\"}"), kRun, {},
     {"{job}:17:21: operator 'big': aggregate 'n' (\"max(wrod)\"): no field 'wrod' in the input (word string)"}},
    {"AggregateSumOfAString", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("aggregate", "key_by: word\n    aggregates: {n: \"sum(word)\"}"), kRun, {},
     {"{job}:17:21: operator 'big': aggregate 'n' (\"sum(word)\"): sum needs an int64 or double field, and 'word' is string"}},
    {"AggregateBadEmit", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("aggregate", "key_by: word\n    emit: changes\n    aggregates: {n: \"count(*)\"}"), kRun, {},
     {"{job}:17:11: parameter 'emit' of operator 'big' must be updates or final, got 'changes'"}},
    {"AggregateWithoutAggregates", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("aggregate", "key_by: word\n    aggregates: {}"), kRun, {},
     {"{job}:17:17: operator 'big' has no aggregates"}},
    // ---- join: an operator `big` of tokenize (word string) and count (word string, count int64)
    // after the sink, at lines 21-25
    {"JoinOnUnknownInput", "    inputs: [count]\n", "    inputs: [count]\n" + Join("{tokenize: [word], sink: [word]}", "{w: \"tokenize.word\"}"),
     kRun, {}, {"{job}:24:35: operator 'big' (type join): on names 'sink', which is not one of its inputs (tokenize, count)"}},
    {"JoinOnOneSideOnly", "    inputs: [count]\n", "    inputs: [count]\n" + Join("{tokenize: [word]}", "{w: \"tokenize.word\"}"),
     kRun, {}, {"{job}:24:9: operator 'big' (type join): on must name the key fields of input 'count'"}},
    {"JoinOnKeyCountMismatch", "    inputs: [count]\n",
     "    inputs: [count]\n" + Join("{tokenize: [word], count: [word, count]}", "{w: \"tokenize.word\"}"), kRun, {},
     {"{job}:24:9: operator 'big' (type join): on names 1 key fields of 'tokenize' but 2 of 'count'; they pair up in order"}},
    {"JoinOnTypeMismatch", "    inputs: [count]\n",
     "    inputs: [count]\n" + Join("{tokenize: [word], count: [count]}", "{w: \"tokenize.word\"}"), kRun, {},
     {"{job}:24:9: operator 'big' is keyed by 'word', which is string in input 'tokenize', and by 'count', which is int64 in input 'count'"}},
    {"JoinOnUnknownField", "    inputs: [count]\n",
     "    inputs: [count]\n" + Join("{tokenize: [wrod], count: [word]}", "{w: \"tokenize.word\"}"), kRun, {},
     {"{job}:24:9: operator 'big' is keyed by 'wrod', but its input 'tokenize' emits (word string), which has no field 'wrod'"}},
    {"JoinSelectAmbiguousField", "    inputs: [count]\n",
     "    inputs: [count]\n" + Join("{tokenize: [word], count: [word]}", "{w: word}"), kRun, {},
     {"{job}:25:17: operator 'big': select.w, column 1: field 'word' is ambiguous: qualify it with its input (fields: tokenize.word, count.word, count.count)"}},
    {"JoinWithKeyBy", "    inputs: [count]\n",
     "    inputs: [count]\n" + Join("{tokenize: [word], count: [word]}", "{w: \"tokenize.word\"}") + "    key_by: word\n", kRun, {},
     {"{job}:26:13: operator 'big' (type join) names the key fields of each input in its parameters, not in key_by"}},
    // ---- the nexmark source (docs/nexmark.md) in place of the file source, its parameters at line 9
    {"NexmarkEventRateZero", "    type: file_source\n    path: {in}\n", "    type: nexmark\n    event_rate: 0\n", kRun, {},
     {"{job}:9:17: parameter 'event_rate' of operator 'source' must be an integer >= 1, got '0'"}},
    {"NexmarkBidProportionZero", "    type: file_source\n    path: {in}\n", "    type: nexmark\n    bid_proportion: 0\n", kRun,
     {}, {"{job}:9:21: parameter 'bid_proportion' of operator 'source' must be an integer >= 1, got '0'"}},
    {"NexmarkNegativeEvents", "    type: file_source\n    path: {in}\n", "    type: nexmark\n    events: -5\n", kRun, {},
     {"{job}:9:13: parameter 'events' of operator 'source' must be an integer >= 0, got '-5'"}},
    {"NexmarkRateNotAnInteger", "    type: file_source\n    path: {in}\n", "    type: nexmark\n    rate: fast\n", kRun, {},
     {"{job}:9:11: parameter 'rate' of operator 'source' must be an integer >= 0, got 'fast'"}},
    {"NexmarkUnknownParameter", "    type: file_source\n    path: {in}\n", "    type: nexmark\n    evnets: 5\n", kRun, {},
     {"{job}:9:5: unknown key 'evnets'"}},
    {"GenerateNexmarkEventRateZero", "", "", {"generate", "nexmark", "--out", "{in}", "--event-rate", "0"}, {},
     {"--event-rate needs an integer >= 1"}},
    {"GenerateNexmarkWordFlag", "", "", {"generate", "nexmark", "--out", "{in}", "--words", "5"}, {},
     {"unknown argument '--words' for generate nexmark"}},
    {"GenerateNexmarkWithoutOut", "", "", {"generate", "nexmark", "--events", "5"}, {},
     {"generate nexmark needs --out FILE"}},
    // ---- window: an operator `big` keyed by word after tokenize, its parameters from line 16
    {"WindowUnknownKind", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("window", "key_by: word\n    time: word\n    kind: sliding\n    size: 10s\n    aggregates: {n: count(*)}"),
     kRun, {}, {"{job}:18:11: operator 'big': window kind must be tumble, hop or session, got 'sliding'"}},
    {"WindowHopWithoutSlide", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("window", "key_by: word\n    time: word\n    kind: hop\n    size: 10s\n    aggregates: {n: count(*)}"),
     kRun, {}, {"{job}:13:5: operator 'big': a hop window needs slide, a duration > 0"}},
    {"WindowSlideGreaterThanSize", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("window", "key_by: word\n    time: word\n    kind: hop\n    size: 2s\n    slide: 10s\n    aggregates: {n: count(*)}"),
     kRun, {}, {"{job}:20:12: operator 'big': slide 10s is greater than size 2s"}},
    {"WindowSessionWithoutGap", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("window", "key_by: word\n    time: word\n    kind: session\n    aggregates: {n: count(*)}"),
     kRun, {}, {"{job}:13:5: operator 'big': a session window needs gap, a duration > 0"}},
    {"WindowTimeNotATimestamp", "    inputs: [source]\n",
     "    inputs: [source]\n" + Big("window", "key_by: word\n    time: word\n    kind: tumble\n    size: 10s\n    aggregates: {n: count(*)}"),
     kRun, {}, {"{job}:17:11: operator 'big': time field 'word' is string, but it must be a timestamp or an int64 (ms)"}},
    // ---- a source's watermark (line 10)
    {"WatermarkFieldNotATimestamp", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    watermark: {field: line}\n  - id: tokenize", kRun, {},
     {"{job}:10:24: the watermark field 'line' of operator 'source' is string, but event time must be a timestamp or an int64 (ms)"}},
    {"WatermarkUnknownKey", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    watermark: {field: line, lag: 1s}\n  - id: tokenize", kRun, {},
     {"{job}:10:30: unknown key 'lag' in the watermark of operator 'source'"}},
    // ---- file formats (file_source, file_sink: docs/configuration.md, "Formats")
    {"SourceFormatUnknown", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: xml\n  - id: tokenize", kRun, {},
     {"{job}:10:13: operator 'source' (type file_source): format must be one of lines, csv, jsonl, got 'xml'"}},
    {"CsvWithoutSchema", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: csv\n  - id: tokenize", kRun, {},
     {"{job}:10:13: operator 'source' (type file_source): format csv needs a schema"}},
    {"JsonlWithoutSchema", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: jsonl\n  - id: tokenize", kRun, {},
     {"{job}:10:13: operator 'source' (type file_source): format jsonl needs a schema"}},
    {"JsonlWithEmptySchema", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: jsonl\n    schema: {}\n  - id: tokenize", kRun, {},
     {"{job}:11:13: operator 'source' (type file_source): format jsonl needs a schema"}},
    {"SchemaUnknownType", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: jsonl\n    schema: {line: text}\n  - id: tokenize", kRun, {},
     {"{job}:11:20: operator 'source' (type file_source): field 'line' has unknown type 'text'; types "
      "are string, bytes, int64, double, bool, timestamp"}},
    {"SchemaWithLinesFormat", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    schema: {line: string}\n  - id: tokenize", kRun, {},
     {"{job}:10:13: operator 'source' (type file_source): schema is for formats csv and jsonl"}},
    {"SourceOnErrorUnknown", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: jsonl\n    schema: {line: string}\n    on_error: ignore\n  - id: tokenize", kRun, {},
     {"{job}:12:15: operator 'source' (type file_source): on_error must be fail or skip, got 'ignore'"}},
    {"CsvDelimiterTooLong", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: csv\n    schema: {line: string}\n    delimiter: ab\n  - id: tokenize", kRun, {},
     {"{job}:12:16: operator 'source' (type file_source): delimiter must be one character"}},
    {"CsvHeaderWithJsonl", "    path: {in}\n  - id: tokenize",
     "    path: {in}\n    format: jsonl\n    schema: {line: string}\n    header: true\n  - id: tokenize", kRun, {},
     {"{job}:12:13: operator 'source' (type file_source): header is for format csv only, and format is jsonl"}},
    {"OnErrorWithLinesFormat", "    path: {in}\n  - id: tokenize", "    path: {in}\n    on_error: skip\n  - id: tokenize",
     kRun, {}, {"{job}:10:15: operator 'source' (type file_source): on_error is for formats csv and jsonl"}},
    {"SinkFormatUnknown", "    path: {out}\n", "    path: {out}\n    format: parquet\n", kRun, {},
     {"{job}:20:13: operator 'sink' (type file_sink): format must be one of lines, csv, jsonl, got 'parquet'"}},
    {"SinkDelimiterIsAQuote", "    path: {out}\n", "    path: {out}\n    format: csv\n    delimiter: '\"'\n", kRun, {},
     {"{job}:21:16: operator 'sink' (type file_sink): delimiter must be one character other than"}},
    // ---- --set
    {"SetWithoutEquals", "", "", Run({"--set", "checkpoint.interval"}), {}, {"--set checkpoint.interval: expected KEY=VALUE"}},
    {"SetUnknownKey", "", "", Run({"--set", "checkpoint.intervall=1s"}), {},
     {"--set checkpoint.intervall: unknown key 'intervall' in checkpoint"}},
    {"SetUnknownOperator", "", "", Run({"--set", "operators.nosuch.path=x"}), {},
     {"--set operators.nosuch.path: unknown operator id 'nosuch'"}},
    {"SetBadValue", "", "", Run({"--set", "checkpoint.interval=soon"}), {},
     {"--set checkpoint.interval: checkpoint.interval must be a duration"}},
    {"SetParallelismZero", "", "", Run({"--set", "operators.count.parallelism=0"}), {},
     {"--set operators.count.parallelism: parallelism of operator 'count' must be an integer >= 1"}},
    // ---- flags and commands
    {"UnknownFlag", "", "", Run({"--frobnicate"}), {}, {"unknown flag '--frobnicate'", "usage:"}},
    {"RestoreWithoutValue", "", "", Run({"--restore"}), {}, {"--restore needs 'latest' or a checkpoint path"}},
    {"RestoreTwice", "", "", Run({"--restore", "latest", "--restore", "latest"}), {}, {"--restore given twice"}},
    {"ExtraArgument", "", "", Run({"{job}"}), {}, {"unexpected argument '{job}'"}},
    {"RunWithoutJobFile", "", "", {"run", "--quiet"}, {}, {"missing JOB.yaml"}},
    {"RunFlagOnValidate", "", "", {"validate", "{job}", "--restore", "latest"}, {}, {"unknown flag '--restore'"}},
    {"UnknownCommand", "", "", {"frobnicate", "{job}"}, {}, {"unknown command 'frobnicate'"}},
    {"GenerateNegativeWords", "", "", {"generate", "--out", "{in}", "--words", "-5"}, {},
     {"--words needs an integer >= 0"}},
    {"GenerateUnknownFormat", "", "", {"generate", "--out", "{in}", "--format", "csv"}, {},
     {"--format needs words or clicks"}},
    {"GenerateClicksWithAWordFlag", "", "", {"generate", "--format", "clicks", "--out", "{in}", "--words", "5"}, {},
     {"--words is for --format words, not clicks"}},
    {"GenerateWordsWithAClickFlag", "", "", {"generate", "--out", "{in}", "--events", "5"}, {},
     {"--events is for --format clicks"}},
    {"DebugUnknownTopic", "", "", {"debug", "frobnicate"}, {}, {"debug takes: crash-points"}},
    // ---- missing or unreadable paths
    {"MissingJobFile", "", "", {"run", "{dir}/absent.yaml", "--quiet"}, {},
     {"{dir}/absent.yaml: cannot read: No such file or directory"}},
    {"JobFileIsADirectory", "", "", {"run", "{dir}", "--quiet"}, {}, {"{dir}: cannot read: Is a directory"}},
    {"UnreadableJobFile", "", "", kRun, {}, {"{job}: cannot read: Permission denied"}, true},
    {"MissingInputFile", "", "", Run({"--set", "operators.source.path={dir}/absent.txt"}), {},
     {"cannot open input {dir}/absent.txt: No such file or directory"}},
    {"InputIsADirectory", "", "", Run({"--set", "operators.source.path={dir}"}), {},
     {"operator source: input {dir} is not a regular file"}},
    {"RestoreMissingPath", "", "", Run({"--restore", "{dir}/nope"}), {}, {"{dir}/nope: no such file or directory"}},
    {"RestoreAFileThatIsNoCheckpoint", "", "", Run({"--restore", "{in}"}), {}, {"{in}: not a checkpoint"}},
    {"RestoreAnIncompleteCheckpoint", "", "", Run({"--restore", "{ck}/chk-999"}), {},
     {"{ck}/chk-999: not a completed checkpoint (no _metadata file)"}},
    {"RestoreIntoOtherMaxParallelism", "", "", Run({"--restore", "latest", "--set", "max_parallelism=64"}), {},
     {"max_parallelism 128 but the job has 64"}},
    {"CheckpointDirIsAFile", "", "", Run({"--set", "checkpoint.dir={in}"}), {},
     {"checkpoint.dir {in}: {in} exists and is not a directory"}},
    {"CheckpointDirUnderAFile", "", "", Run({"--set", "checkpoint.dir={in}/ck"}), {},
     {"checkpoint.dir {in}/ck: {in} exists and is not a directory"}},
    {"CheckpointsOfAMissingDirectory", "", "", {"checkpoints", "{dir}/nope"}, {}, {"{dir}/nope: no such checkpoint directory"}},
    // ---- fault-injection variables
    {"UnknownCrashPoint", "", "", kRun, {"CAIRN_CRASH_AT=nowhere"}, {"no crash point named 'nowhere'"}},
    {"CrashPointCountZero", "", "", kRun, {"CAIRN_CRASH_AT=checkpoint.committed:0"},
     {"CAIRN_CRASH_AT=checkpoint.committed:0: the count after ':' must be a positive integer"}},
    {"UnknownCrashSignal", "", "", kRun, {"CAIRN_CRASH_AT=restore.midway", "CAIRN_CRASH_SIGNAL=HUP"},
     {"CAIRN_CRASH_SIGNAL=HUP: expected INT, TERM or KILL"}},
    {"CrashSignalWithoutAPoint", "", "", kRun, {"CAIRN_CRASH_SIGNAL=TERM"},
     {"CAIRN_CRASH_SIGNAL=TERM is set without CAIRN_CRASH_AT"}},
    {"SlowSubtaskOutOfRange", "", "", kRun, {"CAIRN_SLOW_SUBTASK=tokenize:2:1000"},
     {"CAIRN_SLOW_SUBTASK=tokenize:2:1000: '2' is not a subtask of 'tokenize'"}},
    {"MalformedStorageFault", "", "", kRun, {"CAIRN_STORAGE_FAULT=eio:_metadata"},
     {"CAIRN_STORAGE_FAULT=eio:_metadata: wrong number of"}},
    {"UnknownStorageFaultKind", "", "", kRun, {"CAIRN_STORAGE_FAULT=full:_metadata:0"}, {"unknown kind 'full'"}},
};

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {
 protected:
  // One small completed run shared by the rows, plus an incomplete checkpoint (which only a
  // job that starts may remove) and an in-progress output file (which only a restore may).
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    RunResult gen = RunCairn({"generate", "--out", In(), "--words", "50000", "--vocabulary", "500"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    RunResult run = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                              "--set", "operators.source.path=" + In(), "--set", "operators.sink.path=" + Out(),
                              "--set", "checkpoint.dir=" + Ck(), "--set", "checkpoint.interval=20ms",
                              "--set", "operators.source.rate=20000"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::filesystem::create_directories(Ck() + "/chk-999/count-0");
    WriteText(Ck() + "/chk-999/count-0/leftover", "an incomplete checkpoint");
    WriteText(Out() + "/.part-0-0-99.inprogress", "an in-progress file");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string In() { return *dir_ / "input.txt"; }
  static std::string Ck() { return *dir_ / "ck"; }
  static std::string Out() { return *dir_ / "out"; }
  static std::string Expand(const std::string& s, const std::string& job) {
    std::string r = Replace(s, "{job}", job);
    r = Replace(r, "{ck}", Ck());
    r = Replace(r, "{in}", In());
    r = Replace(r, "{out}", Out());
    return Replace(r, "{dir}", dir_->path());
  }

  static ScratchDir* dir_;
};

ScratchDir* BadInputTest::dir_ = nullptr;

TEST_P(BadInputTest, ExitsTwoNamingTheProblemAndChangesNothing) {
  const BadInput& c = GetParam();
  ScratchDir job_dir;
  const std::string job = job_dir / "job.yaml";
  std::string text = c.find == "*" ? c.replace : Replace(kBaseJob, c.find, c.replace);
  if (c.find != "*" && !c.find.empty()) {
    ASSERT_NE(text, kBaseJob) << "the row's edit does not apply: " << c.find;
  }
  WriteText(job, Expand(text, job));
  // Root reads any file whatever its permission bits, so the unreadable job file is read by a
  // cairn without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (still root, so it reaches the
  // binary and the scratch directories wherever they live; another user such as nobody cannot
  // enter a checkout under a 0700 directory and failed with exit 127).
  if (c.unreadable_job) {
    ASSERT_EQ(chmod(job.c_str(), 0), 0);
  }
  std::vector<std::string> args, env;
  for (const std::string& a : c.args) args.push_back(Expand(a, job));
  for (const std::string& e : c.env) env.push_back(Expand(e, job));

  const Tree ck_before = TreeSnapshot(Ck()), out_before = TreeSnapshot(Out());
  ASSERT_FALSE(ck_before.empty());
  RunResult r = c.unreadable_job ? RunCairnObeyingPermissions(args, env) : RunCairn(args, env);
  ASSERT_NE(r.exit_code, 125) << "could not drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH for the child";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.signal, 0);
  for (const std::string& e : c.expect) EXPECT_THAT(r.err, HasSubstr(Expand(e, job)));
  EXPECT_TRUE(SameTree(ck_before, TreeSnapshot(Ck()))) << "checkpoint directory";
  EXPECT_TRUE(SameTree(out_before, TreeSnapshot(Out()))) << "output directory";
}

INSTANTIATE_TEST_SUITE_P(Table, BadInputTest, ::testing::ValuesIn(kTable),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

// Malformed records in a csv or jsonl input are bad data found while the job runs, not bad
// input found before it starts: with on_error: fail (the default) the job fails, exit 1, naming
// file, line (the record's first line) and field. Output committed by checkpoints before the
// record stays committed, as after any failure, so these rows run on a directory of their own.
struct BadRecord {
  const char* name;
  const char* format;  // and schema, as YAML lines of the source
  std::string input;
  std::string expect;  // {in}: the input path
};

void PrintTo(const BadRecord& c, std::ostream* os) { *os << c.name; }

const BadRecord kBadRecords[] = {
    {"CsvNotAnInt", "    format: csv\n    schema: {n: int64, s: string}\n", "1,a\n2,b\nx,c\n",
     "malformed csv record at {in}:3: field 'n': expected an int64, got 'x'"},
    {"CsvTooFewFields", "    format: csv\n    schema: {n: int64, s: string}\n", "1,a\n2\n",
     "malformed csv record at {in}:2: expected 2 fields (n, s), got 1"},
    {"CsvUnterminatedQuote", "    format: csv\n    schema: {n: int64, s: string}\n", "1,\"a\n2,b\n",
     "malformed csv record at {in}:1: field 's': unterminated quoted field"},
    {"CsvQuoteInUnquotedField", "    format: csv\n    schema: {n: int64, s: string}\n", "1,a\"b\n",
     "malformed csv record at {in}:1: field 's': '\"' in an unquoted field"},
    {"CsvBadTimestamp", "    format: csv\n    schema: {n: int64, t: timestamp}\n", "1,2026-12-01T06:35:17Z\n2,2026-13-01\n",
     "malformed csv record at {in}:2: field 't': expected a timestamp"},
    {"JsonlInvalidJson", "    format: jsonl\n    schema: {n: int64}\n", "{\"n\":1}\n{\"n\":}\n",
     "malformed jsonl record at {in}:2: invalid JSON"},
    {"JsonlWrongType", "    format: jsonl\n    schema: {n: int64}\n", "{\"n\":true}\n",
     "malformed jsonl record at {in}:1: field 'n': expected an integer, got a bool true"},
    {"JsonlNotAnObject", "    format: jsonl\n    schema: {n: int64}\n", "[1]\n",
     "malformed jsonl record at {in}:1: expected a JSON object, got an array"},
    {"JsonlBadTimestamp", "    format: jsonl\n    schema: {t: timestamp}\n", "{\"t\":\"noon\"}\n",
     "malformed jsonl record at {in}:1: field 't': expected a timestamp"},
};

class BadRecordTest : public ::testing::TestWithParam<BadRecord> {};

TEST_P(BadRecordTest, FailsTheJobWithExitOneNamingFileLineAndField) {
  const BadRecord& c = GetParam();
  ScratchDir dir;
  WriteText(dir / "in", c.input);
  WriteText(dir / "job.yaml", "job: bad\nparallelism: 1\ncheckpoint:\n  dir: " + dir / "ck" +
                                  "\noperators:\n  - id: source\n    type: file_source\n    path: " + dir / "in" + "\n" +
                                  c.format + "  - id: sink\n    type: file_sink\n    path: " + dir / "out" +
                                  "\n    inputs: [source]\n");
  RunResult r = RunCairn({"run", dir / "job.yaml", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(Replace(c.expect, "{in}", dir / "in")));
}

INSTANTIATE_TEST_SUITE_P(Table, BadRecordTest, ::testing::ValuesIn(kBadRecords),
                         [](const ::testing::TestParamInfo<BadRecord>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace cairn::testing
