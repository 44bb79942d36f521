// Specification of the expression operators filter, map and flat_map (operators/filter.cc,
// map.cc, flat_map.cc): their output schemas and load-time errors, through the registry and the
// job loader, and their records, driven through the Operator API as a task would; then a whole
// job (file_source -> flat_map -> filter -> map -> file_sink) run by the cairn binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/operator.h"
#include "jobs/job_loader.h"
#include "jobs/registry.h"
#include "operators/generator_source.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// (user string, url string, bytes int64, ts timestamp)
const SchemaRef& Clicks() {
  static const SchemaRef s = MakeSchema({{"user", FieldType::kString},
                                         {"url", FieldType::kString},
                                         {"bytes", FieldType::kInt64},
                                         {"ts", FieldType::kTimestamp}});
  return s;
}

RecordBatch ClickBatch() {
  RecordBatch b(Clicks());
  auto add = [&](const char* user, const char* url, int64_t bytes, int64_t ts) {
    size_t r = b.AddRow();
    if (user) b.SetString(r, 0, user);
    if (url) b.SetString(r, 1, url);
    if (bytes >= 0) b.SetInt64(r, 2, bytes);
    b.SetInt64(r, 3, ts);
  };
  add("Alice", "/api/users", 1500, 1000);
  add("Bob", "/api/items", 900, 2000);
  add("Carol", "/index.html", 5000, 3000);
  add(nullptr, "/api/x", 2048, 4000);
  add("Dave", nullptr, 3000, 5000);
  add("Eve", "/api/big", -1, 6000);  // bytes NULL
  return b;
}

OperatorConfig Config(const std::string& type, const std::map<std::string, std::string>& params,
                      const std::vector<ParamEntry>& select = {}) {
  OperatorConfig c;
  c.id = "op";
  c.type = type;
  c.location = "job.yaml:5:5";
  c.inputs = {"in"};
  for (const ParamSpec& p : FindOperatorType(type)->params) c.params[p.name] = p.default_value;
  for (const auto& [k, v] : params) {
    c.params[k] = v;
    c.places[k] = "job.yaml:7:12";
  }
  if (!select.empty()) {
    c.entries["select"] = select;
    c.places["select"] = "job.yaml:8:13";
  }
  return c;
}

Status OutputSchema(const OperatorConfig& c, const SchemaRef& in, SchemaRef* out) {
  return FindOperatorType(c.type)->output_schema(c, {in}, out);
}

// Runs operator `c` over `in` and returns what it emits.
RecordBatch RunOperator(const OperatorConfig& c, const RecordBatch& in) {
  SchemaRef out_schema;
  Status s = OutputSchema(c, in.schema(), &out_schema);
  EXPECT_TRUE(s.ok()) << s.message();
  std::unique_ptr<Operator> op = FindOperatorType(c.type)->create(c);
  OperatorContext ctx;
  ctx.operator_id = c.id;
  ctx.input_schemas = {in.schema()};
  ctx.output_schema = out_schema;
  s = op->Open(ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  RecordBatch out(out_schema);
  s = op->Process(0, in, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

std::vector<std::string> Column(const RecordBatch& b, size_t f) {
  std::vector<std::string> v;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.IsNull(i, f)) {
      v.push_back("NULL");
      continue;
    }
    switch (b.schema()->field(f).type) {
      case FieldType::kInt64:
      case FieldType::kTimestamp: v.push_back(std::to_string(b.GetInt64(i, f))); break;
      case FieldType::kDouble: {
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, b.GetDouble(i, f));
        v.emplace_back(buf, r.ptr);
        break;
      }
      case FieldType::kBool: v.push_back(b.GetBool(i, f) ? "true" : "false"); break;
      default: v.emplace_back(b.GetString(i, f));
    }
  }
  return v;
}

// ---- filter --------------------------------------------------------------------------------------

TEST(FilterOperatorTest, PassesTheRecordsWhereTheConditionIsTrueWithAllTheirFields) {
  RecordBatch out = RunOperator(Config("filter", {{"where", "bytes > 1000 AND url LIKE '/api/%'"}}), ClickBatch());
  EXPECT_EQ(*out.schema(), *Clicks());
  EXPECT_THAT(Column(out, 0), ElementsAre("Alice", "NULL"));
  EXPECT_THAT(Column(out, 1), ElementsAre("/api/users", "/api/x"));
  EXPECT_THAT(Column(out, 2), ElementsAre("1500", "2048"));
  EXPECT_THAT(Column(out, 3), ElementsAre("1000", "4000"));
}

TEST(FilterOperatorTest, NullConditionsDropTheRecord) {
  EXPECT_THAT(Column(RunOperator(Config("filter", {{"where", "user IS NULL OR bytes IS NULL"}}), ClickBatch()), 3),
              ElementsAre("4000", "6000"));
  EXPECT_THAT(Column(RunOperator(Config("filter", {{"where", "NOT (bytes > 1000)"}}), ClickBatch()), 0), ElementsAre("Bob"));
  EXPECT_THAT(Column(RunOperator(Config("filter", {{"where", "NULL"}}), ClickBatch()), 0), IsEmpty());
}

TEST(FilterOperatorTest, ANonBooleanWhereIsALoadTimeTypeError) {
  SchemaRef out;
  Status s = OutputSchema(Config("filter", {{"where", "bytes + 1"}}), Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:7:12: operator 'op': where, column 1: where must be a bool expression (a condition), got int64");
  s = OutputSchema(Config("filter", {{"where", "bytes > 1 AND bytez < 2"}}), Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:7:12: operator 'op': where, column 15: unknown field 'bytez' (fields: user, url, bytes, ts)");
}

// ---- map -----------------------------------------------------------------------------------------

TEST(MapOperatorTest, EmitsTheSelectEntriesInOrderEachOfItsExpressionsType) {
  const OperatorConfig c = Config("map", {}, {{"user", "lower(user)", "job.yaml:8:14"},
                                              {"kb", "bytes / 1024.0", "job.yaml:8:35"},
                                              {"ts", "ts", "job.yaml:8:55"},
                                              {"api", "url LIKE '/api/%'", "job.yaml:8:60"}});
  RecordBatch out = RunOperator(c, ClickBatch());
  EXPECT_EQ(out.schema()->ToString(), "(user string, kb double, ts timestamp, api bool)");
  EXPECT_THAT(Column(out, 0), ElementsAre("alice", "bob", "carol", "NULL", "dave", "eve"));
  EXPECT_THAT(Column(out, 1), ElementsAre("1.46484375", "0.87890625", "4.8828125", "2", "2.9296875", "NULL"));
  EXPECT_THAT(Column(out, 2), ElementsAre("1000", "2000", "3000", "4000", "5000", "6000"));
  EXPECT_THAT(Column(out, 3), ElementsAre("true", "true", "false", "true", "NULL", "true"));
}

TEST(MapOperatorTest, AppendsToWhatTheOutputBatchAlreadyHolds) {
  const OperatorConfig c = Config("map", {}, {{"n", "bytes * 2", "job.yaml:8:14"}});
  SchemaRef schema;
  ASSERT_TRUE(OutputSchema(c, Clicks(), &schema).ok());
  std::unique_ptr<Operator> op = FindOperatorType("map")->create(c);
  OperatorContext ctx;
  ctx.input_schemas = {Clicks()};
  ctx.output_schema = schema;
  ASSERT_TRUE(op->Open(ctx).ok());
  RecordBatch out(schema);
  ASSERT_TRUE(op->Process(0, ClickBatch(), &out).ok());
  ASSERT_TRUE(op->Process(0, ClickBatch(), &out).ok());
  EXPECT_THAT(Column(out, 0), ElementsAre("3000", "1800", "10000", "4096", "6000", "NULL", "3000", "1800", "10000",
                                          "4096", "6000", "NULL"));
}

TEST(MapOperatorTest, ErrorsNameTheEntryAndTheColumn) {
  SchemaRef out;
  Status s = OutputSchema(Config("map", {}, {{"ok", "user", "job.yaml:8:14"}, {"n", "user + 1", "job.yaml:8:24"}}),
                          Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:8:24: operator 'op': select.n, column 6: cannot apply '+' to string 'user' and int64");
  s = OutputSchema(Config("map", {}, {{"x", "NULL", "job.yaml:8:14"}}), Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:8:14: operator 'op': select.x, column 1: the type of NULL is unknown here; write CAST(NULL AS type)");
}

// ---- flat_map --------------------------------------------------------------------------------------

const SchemaRef& Lines() {
  static const SchemaRef s = MakeSchema({{"line", FieldType::kString}});
  return s;
}

TEST(FlatMapOperatorTest, SplitsLinesIntoTheSameWordsAsTokenize) {
  std::vector<std::string> lines = {"a b\tc\nd\re\vf\fg", "  \t lead  and\r\n\r\ntrail \f\v", "", " \t ",
                                    "héllo wörld 日本語 ça\xc2\xa0va", std::string("x\x85y z\xa0w n\0l", 11)};
  GeneratorParams gp;
  gp.words = 5000;
  WordGenerator gen(gp);
  for (int64_t n = 0; n < gen.lines(); ++n) {
    std::string l;
    gen.Line(n, &l);
    lines.push_back(l);
  }
  RecordBatch in(Lines()), tokenize_in;
  for (const std::string& l : lines) {
    in.SetString(in.AddRow(), 0, l);
    tokenize_in.Add(l);
  }
  RecordBatch out = RunOperator(Config("flat_map", {{"split", "line"}, {"into", "word"}}), in);
  EXPECT_EQ(out.schema()->ToString(), "(word string)");

  std::unique_ptr<Operator> tok = FindOperatorType("tokenize")->create(OperatorConfig{});
  RecordBatch words;
  ASSERT_TRUE(tok->Process(0, tokenize_in, &words).ok());
  ASSERT_GT(words.size(), 5000u);
  ASSERT_EQ(out.size(), words.size());
  for (size_t i = 0; i < words.size(); ++i) ASSERT_EQ(out.GetString(i, 0), words.key(i)) << i;
}

TEST(FlatMapOperatorTest, CopiesTheOtherFieldsAndKeepsThePosition) {
  RecordBatch out = RunOperator(Config("flat_map", {{"split", "url"}, {"separator", "/"}}), ClickBatch());
  EXPECT_EQ(*out.schema(), *Clicks());
  // "/api/users" -> "", "api", "users"; a NULL url emits nothing; empty pieces are kept.
  EXPECT_THAT(Column(out, 1), ElementsAre("", "api", "users", "", "api", "items", "", "index.html", "", "api", "x", "",
                                          "api", "big"));
  EXPECT_THAT(Column(out, 0), ElementsAre("Alice", "Alice", "Alice", "Bob", "Bob", "Bob", "Carol", "Carol", "NULL",
                                          "NULL", "NULL", "Eve", "Eve", "Eve"));
  EXPECT_THAT(Column(out, 2), ElementsAre("1500", "1500", "1500", "900", "900", "900", "5000", "5000", "2048", "2048",
                                          "2048", "NULL", "NULL", "NULL"));
}

TEST(FlatMapOperatorTest, ALongerSeparatorAndRenamedField) {
  RecordBatch in(Lines());
  in.SetString(in.AddRow(), 0, "a, b,, c");
  in.SetString(in.AddRow(), 0, "");
  RecordBatch out = RunOperator(Config("flat_map", {{"split", "line"}, {"into", "part"}, {"separator", ", "}}), in);
  EXPECT_EQ(out.schema()->ToString(), "(part string)");
  EXPECT_THAT(Column(out, 0), ElementsAre("a", "b,", "c", ""));
}

TEST(FlatMapOperatorTest, SchemaErrorsNameTheParameter) {
  SchemaRef out;
  Status s = OutputSchema(Config("flat_map", {{"split", "bytes"}}), Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:7:12: operator 'op' (type flat_map) splits field 'bytes', which is int64; it must be a string");
  s = OutputSchema(Config("flat_map", {{"split", "body"}}), Clicks(), &out);
  EXPECT_EQ(s.message(), "job.yaml:7:12: operator 'op' (type flat_map) splits field 'body', which its input does not "
                         "have (fields: user, url, bytes, ts)");
  s = OutputSchema(Config("flat_map", {{"split", "url"}, {"into", "user"}}), Clicks(), &out);
  EXPECT_THAT(s.message(), HasSubstr("names its pieces 'user', but its input already has a field of that name"));
}

// ---- through the job loader ------------------------------------------------------------------------

TEST(ExprOperatorsLoadTest, SchemasFlowThroughTheJobAndErrorsNameTheYamlPlace) {
  const std::string job =
      "job: t\n"
      "operators:\n"
      "  - {id: lines, type: file_source, path: in.txt}\n"
      "  - {id: words, type: flat_map, inputs: [lines], split: line, into: word}\n"
      "  - {id: long, type: filter, inputs: [words], where: \"length(word) > 3\"}\n"
      "  - id: shaped\n"
      "    type: map\n"
      "    inputs: [long]\n"
      "    select: {w: \"upper(word)\", n: \"length(word)\", half: \"length(word) / 2.0\"}\n"
      "  - {id: sink, type: file_sink, inputs: [shaped], path: out}\n";
  JobSpec spec;
  Status s = LoadJobFromString(job, "job.yaml", {}, &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.schemas[1]->ToString(), "(word string)");
  EXPECT_EQ(spec.schemas[2]->ToString(), "(word string)");
  EXPECT_EQ(spec.schemas[3]->ToString(), "(w string, n int64, half double)");

  std::string bad = job;
  bad.replace(bad.find("length(word) > 3"), 16, "length(wrd) > 3");
  s = LoadJobFromString(bad, "job.yaml", {}, &spec);
  EXPECT_EQ(s.message(), "job.yaml:5:54: operator 'long': where, column 8: unknown field 'wrd' (fields: word)");
  bad = job;
  bad.replace(bad.find("\"length(word) / 2.0\""), 20, "\"word / 2.0\"");
  s = LoadJobFromString(bad, "job.yaml", {}, &spec);
  EXPECT_EQ(s.message(), "job.yaml:9:57: operator 'shaped': select.half, column 6: cannot apply '/' to string 'word' and double");
  s = LoadJobFromString(job, "job.yaml", {"operators.long.where=word"}, &spec);
  EXPECT_EQ(s.message(), "--set operators.long.where: operator 'long': where, column 1: where must be a bool expression "
                         "(a condition), got string");
}

// ---- a whole job, run by the cairn binary ----------------------------------------------------------

TEST(ExprOperatorsJobTest, FlatMapFilterMapJobWritesWhatTheExpressionsSay) {
  testing::ScratchDir dir;
  std::string text;
  std::vector<std::string> words;
  for (int n = 0; n < 3000; ++n) {
    std::string line;
    for (int k = 0; k < 1 + n % 5; ++k) {
      std::string w = std::string("the").substr(0, static_cast<size_t>(n % 4)) + "w" + std::to_string(n * 7 + k);
      words.push_back(w);
      line += (k ? (k % 2 ? "  " : "\t") : "") + w;
    }
    text += line + "\n";
  }
  testing::WriteText(dir / "in.txt", text);
  testing::WriteText(dir / "job.yaml",
                     "job: expr\n"
                     "parallelism: 2\n"
                     "checkpoint: {interval: 20ms, dir: " + (dir / "ck") + "}\n"
                     "operators:\n"
                     "  - {id: lines, type: file_source, path: " + (dir / "in.txt") + "}\n"
                     "  - {id: words, type: flat_map, inputs: [lines], split: line, into: word}\n"
                     "  - {id: keep, type: filter, inputs: [words], where: \"length(word) > 4 AND word NOT LIKE 'th%'\"}\n"
                     "  - id: shaped\n"
                     "    type: map\n"
                     "    inputs: [keep]\n"
                     "    select: {w: \"upper(word)\", n: \"length(word)\", half: \"length(word) / 2.0\"}\n"
                     "  - {id: sink, type: file_sink, inputs: [shaped], path: " + (dir / "out") + "}\n");
  testing::RunResult r = testing::RunCairn({"run", dir / "job.yaml", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::vector<std::string> expected;
  for (const std::string& w : words) {
    if (w.size() <= 4 || w.rfind("th", 0) == 0) continue;
    std::string up = w;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, static_cast<double>(w.size()) / 2.0);
    expected.push_back(up + "\t" + std::to_string(w.size()) + "\t" + std::string(buf, res.ptr));
  }
  ASSERT_GT(expected.size(), 1000u);
  std::vector<std::string> actual = testing::CommittedLines(dir / "out");
  std::sort(expected.begin(), expected.end());
  std::sort(actual.begin(), actual.end());
  EXPECT_EQ(actual, expected);
}

}  // namespace
}  // namespace cairn
