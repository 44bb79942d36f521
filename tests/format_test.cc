// The csv and jsonl formats (engine/format): RFC 4180 splitting and record ends, quoting on
// write, every field type from csv text and from JSON, the null rules, timestamps, and
// malformed records with the field at fault. Writing then reading gives the rows back.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/dataflow/record_codec.h"
#include "engine/format/csv.h"
#include "engine/format/record_parser.h"
#include "engine/format/record_writer.h"
#include "engine/format/values.h"

namespace cairn {
namespace {

std::vector<std::string> SplitCsv(std::string_view record, char delim = ',') {
  CsvSplitter s(delim);
  size_t field = 0;
  std::string why;
  EXPECT_TRUE(s.Split(record, &field, &why)) << record << ": " << why;
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) out.emplace_back(s.field(i));
  return out;
}

using Fields = std::vector<std::string>;

TEST(CsvTest, SplitsPlainQuotedEscapedAndEmptyFields) {
  EXPECT_EQ(SplitCsv("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(SplitCsv("\"a,b\",c"), (Fields{"a,b", "c"}));
  EXPECT_EQ(SplitCsv("\"say \"\"hi\"\"\",x"), (Fields{"say \"hi\"", "x"}));
  EXPECT_EQ(SplitCsv("\"\"\"\""), (Fields{"\""}));
  EXPECT_EQ(SplitCsv("\"line1\nline2\",2"), (Fields{"line1\nline2", "2"}));
  EXPECT_EQ(SplitCsv(",,"), (Fields{"", "", ""}));
  EXPECT_EQ(SplitCsv("a,\"\""), (Fields{"a", ""}));
  EXPECT_EQ(SplitCsv("\"x\","), (Fields{"x", ""}));
  EXPECT_EQ(SplitCsv("a;b,c", ';'), (Fields{"a", "b,c"}));
  EXPECT_EQ(SplitCsv("a\tb", '\t'), (Fields{"a", "b"}));
  // CRLF: the '\r' before the '\n' ends nothing but is dropped; inside quotes it stays.
  EXPECT_EQ(SplitCsv("a,b\r"), (Fields{"a", "b"}));
  EXPECT_EQ(SplitCsv("\"a\r\nb\",c\r"), (Fields{"a\r\nb", "c"}));
}

TEST(CsvTest, TwoEscapesInOneFieldAndViewsAcrossFields) {
  CsvSplitter s;
  size_t f;
  std::string why;
  ASSERT_TRUE(s.Split("\"a\"\"b\"\"c\",plain,\"d\"\"\"", &f, &why)) << why;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.field(0), "a\"b\"c");
  EXPECT_EQ(s.field(1), "plain");
  EXPECT_EQ(s.field(2), "d\"");
  EXPECT_TRUE(s.quoted(0));
  EXPECT_FALSE(s.quoted(1));
}

TEST(CsvTest, MalformedRecordsNameTheField) {
  struct Case {
    const char* record;
    size_t field;
    const char* why;
  };
  for (const Case& c : {Case{"a,\"open", 1, "unterminated quoted field"},
                        Case{"\"x\"y,b", 0, "unexpected character after a closing quote"},
                        Case{"a,b\"c", 1, "'\"' in an unquoted field"}}) {
    CsvSplitter s;
    size_t field = 99;
    std::string why;
    EXPECT_FALSE(s.Split(c.record, &field, &why)) << c.record;
    EXPECT_EQ(field, c.field) << c.record;
    EXPECT_NE(why.find(c.why), std::string::npos) << c.record << ": " << why;
  }
}

TEST(CsvTest, RecordEndSkipsNewlinesInsideQuotes) {
  const std::string data = "a,\"b\nc\"\nd,e\n\"f\"\"\n\"\nlast";
  size_t e1 = CsvRecordEnd(data, 0);
  EXPECT_EQ(data.substr(0, e1), "a,\"b\nc\"");
  size_t e2 = CsvRecordEnd(data, e1 + 1);
  EXPECT_EQ(data.substr(e1 + 1, e2 - e1 - 1), "d,e");
  size_t e3 = CsvRecordEnd(data, e2 + 1);
  EXPECT_EQ(data.substr(e2 + 1, e3 - e2 - 1), "\"f\"\"\n\"");
  EXPECT_EQ(CsvRecordEnd(data, e3 + 1), std::string::npos);  // no newline after the last record
  EXPECT_EQ(CsvRecordEnd("\"open\nstill open", 0), std::string::npos);
  EXPECT_EQ(CountQuotes(data), 6u);
}

TEST(CsvTest, WriterQuotesOnlyWhenNeeded) {
  std::string out;
  AppendCsvField("plain", ',', false, &out);
  out += '|';
  AppendCsvField("a,b", ',', false, &out);
  out += '|';
  AppendCsvField("say \"hi\"", ',', false, &out);
  out += '|';
  AppendCsvField("two\nlines", ',', false, &out);
  out += '|';
  AppendCsvField("", ',', true, &out);
  out += '|';
  AppendCsvField("a,b", ';', false, &out);
  EXPECT_EQ(out, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"\"|a,b");
}

TEST(TimestampTest, IntegerMillisAndIso8601Forms) {
  struct Case {
    const char* text;
    int64_t ms;
  };
  // 2026-12-01T06:35:17Z is 1796083200000 + (6*3600+35*60+17)*1000.
  const int64_t t = 1796083200000 + (6 * 3600 + 35 * 60 + 17) * 1000;
  for (const Case& c : {Case{"1796106917123", 1796106917123}, Case{"-5", -5}, Case{"0", 0},
                        Case{"2026-12-01T06:35:17Z", t}, Case{"2026-12-01T06:35:17.123Z", t + 123},
                        Case{"2026-12-01T06:35:17.1Z", t + 100}, Case{"2026-12-01T06:35:17.123456789Z", t + 123},
                        Case{"2026-12-01T06:35:17+01:00", t - 3600000}, Case{"2026-12-01T06:35:17-0530", t + 19800000},
                        Case{"2026-12-01 06:35:17", t}, Case{"2026-12-01T06:35", t - 17000},
                        Case{"2026-12-01", 1796083200000}, Case{"1970-01-01T00:00:00Z", 0},
                        Case{"1969-12-31T23:59:59.999Z", -1}, Case{"2024-02-29T00:00:00Z", 1709164800000}}) {
    int64_t ms = 0;
    std::string why;
    EXPECT_TRUE(ParseTimestampText(c.text, &ms, &why)) << c.text << ": " << why;
    EXPECT_EQ(ms, c.ms) << c.text;
  }
  // What AppendTimestamp writes reads back.
  for (int64_t ms : {int64_t{0}, t + 123, int64_t{-1}, int64_t{951782400000}}) {
    std::string s;
    AppendTimestamp(ms, &s);
    int64_t back = 0;
    std::string why;
    ASSERT_TRUE(ParseTimestampText(s, &back, &why)) << s;
    EXPECT_EQ(back, ms) << s;
  }
  for (const char* bad : {"", "yesterday", "2026-13-01", "2026-02-30", "2023-02-29", "2026-12-01T25:00:00Z",
                          "2026-12-01T06:35:17.Z", "2026-12-01T06:35:17Q", "12ab", "2026-12-01T06:35:17+1"}) {
    int64_t ms;
    std::string why;
    EXPECT_FALSE(ParseTimestampText(bad, &ms, &why)) << bad;
    EXPECT_NE(why.find("expected a timestamp"), std::string::npos) << why;
  }
}

// (s string, b bytes, i int64, d double, ok bool, t timestamp)
SchemaRef SixFields() {
  return MakeSchema({{"s", FieldType::kString}, {"b", FieldType::kBytes}, {"i", FieldType::kInt64},
                     {"d", FieldType::kDouble}, {"ok", FieldType::kBool}, {"t", FieldType::kTimestamp}});
}

std::string Json(const RecordBatch& b, size_t row) {
  std::string s;
  AppendJsonObject(b, row, &s);
  return s;
}

TEST(CsvParserTest, EveryTypeAndTheNullRules) {
  auto p = NewRecordParser(TextFormat::kCsv, SixFields());
  RecordBatch b(SixFields());
  RecordError err;
  ASSERT_TRUE(p->Parse("hello,\"by,tes\",-42,2.5,true,2026-12-01T06:35:17.123Z", &b, &err)) << err.why;
  ASSERT_TRUE(p->Parse(",,,,,", &b, &err)) << err.why;          // empty: "" strings, the rest null
  ASSERT_TRUE(p->Parse("\"\",x,7,1e3,FALSE,1000", &b, &err)) << err.why;
  ASSERT_TRUE(p->Parse("a,b,0,-0.125,1,2026-12-01", &b, &err)) << err.why;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(Json(b, 0), R"({"s":"hello","b":"by,tes","i":-42,"d":2.5,"ok":true,"t":"2026-12-01T06:35:17.123Z"})");
  EXPECT_EQ(Json(b, 1), R"({"s":"","b":"","i":null,"d":null,"ok":null,"t":null})");
  EXPECT_FALSE(b.IsNull(1, 0));
  EXPECT_EQ(Json(b, 2), R"({"s":"","b":"x","i":7,"d":1000,"ok":false,"t":"1970-01-01T00:00:01.000Z"})");
  EXPECT_EQ(Json(b, 3), R"({"s":"a","b":"b","i":0,"d":-0.125,"ok":true,"t":"2026-12-01T00:00:00.000Z"})");
}

TEST(CsvParserTest, MalformedRecordsLeaveTheBatchAsItWas) {
  auto p = NewRecordParser(TextFormat::kCsv, SixFields());
  RecordBatch b(SixFields());
  struct Case {
    const char* record;
    int field;
    const char* why;
  };
  for (const Case& c : {Case{"a,b,x,1,true,0", 2, "expected an int64, got 'x'"},
                        Case{"a,b,99999999999999999999,1,true,0", 2, "int64 out of range"},
                        Case{"a,b,1,1.2.3,true,0", 3, "expected a double, got '1.2.3'"},
                        Case{"a,b,1,1,yes,0", 4, "expected a bool"},
                        Case{"a,b,1,1,true,noon", 5, "expected a timestamp"},
                        Case{"a,b,1,1,true", -1, "expected 6 fields (s, b, i, d, ok, t), got 5"},
                        Case{"a,b,1,1,true,0,extra", -1, "expected 6 fields"},
                        Case{"a,\"b,1,1,true,0", 1, "unterminated quoted field"}}) {
    RecordError err;
    EXPECT_FALSE(p->Parse(c.record, &b, &err)) << c.record;
    EXPECT_EQ(err.field, c.field) << c.record;
    EXPECT_NE(err.why.find(c.why), std::string::npos) << c.record << ": " << err.why;
    EXPECT_EQ(b.size(), 0u) << c.record;
  }
}

TEST(JsonlParserTest, EveryJsonTypeNullsAbsentKeysAndUnknownKeys) {
  auto p = NewRecordParser(TextFormat::kJsonl, SixFields());
  RecordBatch b(SixFields());
  RecordError err;
  ASSERT_TRUE(p->Parse(R"({"s":"h\u00e9\"llo\n","b":"\u0001x","i":-9223372036854775808,"d":1.5e-3,"ok":false,"t":1796106917123})",
                       &b, &err))
      << err.why;
  ASSERT_TRUE(p->Parse(R"({"s":null,"i":null})", &b, &err)) << err.why;  // null and absent: null
  ASSERT_TRUE(p->Parse(R"(  {"t":"2026-12-01T07:35:17+01:00","extra":[1,{"a":2}],"d":3,"nested":{"x":null}}  )", &b, &err))
      << err.why;
  ASSERT_TRUE(p->Parse("{}\r", &b, &err)) << err.why;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.GetString(0, 0), "h\xc3\xa9\"llo\n");
  EXPECT_EQ(b.GetString(0, 1), std::string("\x01x"));
  EXPECT_EQ(b.GetInt64(0, 2), INT64_MIN);
  EXPECT_DOUBLE_EQ(b.GetDouble(0, 3), 0.0015);
  EXPECT_FALSE(b.GetBool(0, 4));
  EXPECT_FALSE(b.IsNull(0, 4));
  EXPECT_EQ(b.GetInt64(0, 5), 1796106917123);
  EXPECT_EQ(static_cast<const RecordBatch&>(b).null_bits(1), 0x3fu);
  EXPECT_EQ(Json(b, 2), R"({"s":null,"b":null,"i":null,"d":3,"ok":null,"t":"2026-12-01T06:35:17.000Z"})");
  EXPECT_EQ(static_cast<const RecordBatch&>(b).null_bits(3), 0x3fu);
}

TEST(JsonlParserTest, MalformedLinesNameTheFieldAndLeaveTheBatchAsItWas) {
  auto p = NewRecordParser(TextFormat::kJsonl, SixFields());
  RecordBatch b(SixFields());
  struct Case {
    const char* record;
    int field;
    const char* why;
  };
  for (const Case& c : {Case{R"({"i":"7"})", 2, "expected an integer, got a string \"7\""},
                        Case{R"({"i":1.5})", 2, "expected an int64, got 1.5"},
                        Case{R"({"i":18446744073709551615})", 2, "expected an int64, got 18446744073709551615"},
                        Case{R"({"i":99999999999999999999})", -1, "invalid JSON"},
                        Case{R"({"s":5})", 0, "expected a string, got a number 5"},
                        Case{R"({"d":"1"})", 3, "expected a number, got a string"},
                        Case{R"({"ok":1})", 4, "expected true or false, got a number 1"},
                        Case{R"({"t":"noon"})", 5, "expected a timestamp"},
                        Case{R"({"t":[1]})", 5, "expected a timestamp (integer ms or ISO-8601 string), got an array"},
                        Case{R"({"i":1,"i":2})", 2, "duplicate key"},
                        Case{R"([1,2])", -1, "expected a JSON object, got an array"},
                        Case{R"("x")", -1, "expected a JSON object, got a string"},
                        Case{R"({"s":"a"} {"s":"b"})", -1, "invalid JSON"},
                        Case{R"({"s":"a")", -1, "invalid JSON"},
                        Case{R"({"s" "a"})", -1, "invalid JSON"},
                        Case{"not json", -1, "invalid JSON"}}) {
    RecordError err;
    EXPECT_FALSE(p->Parse(c.record, &b, &err)) << c.record;
    EXPECT_EQ(err.field, c.field) << c.record << ": " << err.why;
    EXPECT_NE(err.why.find(c.why), std::string::npos) << c.record << ": " << err.why;
    EXPECT_EQ(b.size(), 0u) << c.record;
  }
}

// Rows with every type, nulls, and text that needs quoting or escaping.
void FillRows(RecordBatch* b) {
  const char* strings[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "", "tab\there", "caf\xc3\xa9", "cr\r\nlf"};
  for (int i = 0; i < 40; ++i) {
    size_t r = b->AddRow();
    if (i % 7 != 3) b->SetString(r, 0, strings[i % 8]);
    if (i % 5 != 1) b->SetString(r, 1, strings[(i + 3) % 8]);
    if (i % 6 != 2) b->SetInt64(r, 2, (i - 20) * 1234567891011LL);
    if (i % 4 != 0) b->SetDouble(r, 3, i * 0.1 - 1.7);
    if (i % 9 != 5) b->SetBool(r, 4, i % 2 == 0);
    if (i % 8 != 6) b->SetInt64(r, 5, 1796083200000 + i * 86400123LL - 500000000000);
  }
}

// csv (with and without another delimiter) and jsonl: what the writer writes, the parser reads
// back as the same rows, but for the null strings csv reads as "" (its null rule).
TEST(RecordFormatTest, WrittenRecordsReadBackAsTheSameRows) {
  for (TextFormat format : {TextFormat::kCsv, TextFormat::kJsonl}) {
    for (char delim : {',', ';', '\t'}) {
      if (format == TextFormat::kJsonl && delim != ',') continue;
      SCOPED_TRACE(std::string(TextFormatName(format)) + " delimiter " + delim);
      RecordBatch rows(SixFields());
      FillRows(&rows);
      std::string text, scratch;
      RecordWriterOptions o{format, delim};
      for (size_t i = 0; i < rows.size(); ++i) AppendRecord(o, rows, i, &scratch, &text);
      auto p = NewRecordParser(format, SixFields(), delim);
      RecordBatch back(SixFields());
      size_t at = 0;
      while (at < text.size()) {
        size_t end = format == TextFormat::kCsv ? CsvRecordEnd(text, at) : text.find('\n', at);
        ASSERT_NE(end, std::string::npos);
        RecordError err;
        ASSERT_TRUE(p->Parse(std::string_view(text).substr(at, end - at), &back, &err)) << err.why;
        at = end + 1;
      }
      ASSERT_EQ(back.size(), rows.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        for (size_t f = 0; f < 6; ++f) {
          if (format == TextFormat::kCsv && f < 2 && rows.IsNull(i, f)) {
            EXPECT_EQ(back.GetString(i, f), "") << i << "," << f;
            continue;
          }
          ASSERT_EQ(back.IsNull(i, f), rows.IsNull(i, f)) << i << "," << f;
          if (rows.IsNull(i, f)) continue;
          if (f < 2) {
            EXPECT_EQ(back.GetString(i, f), rows.GetString(i, f)) << i;
          } else {
            EXPECT_EQ(back.GetCell(i, f), rows.GetCell(i, f)) << i << "," << f;
          }
        }
      }
    }
  }
}

TEST(RecordFormatTest, LinesJoinTheFieldsByTabAsTheWordCountSinkDid) {
  RecordBatch b(MakeSchema({{"word", FieldType::kString}, {"count", FieldType::kInt64}}));
  size_t r = b.AddRow();
  b.SetString(r, 0, "hello");
  b.SetInt64(r, 1, 42);
  std::string out, scratch;
  AppendRecord(RecordWriterOptions{}, b, 0, &scratch, &out);
  EXPECT_EQ(out, "hello\t42\n");
  std::string header;
  AppendCsvHeader(*SixFields(), ',', &header);
  EXPECT_EQ(header, "s,b,i,d,ok,t\n");
}

TEST(RecordFormatTest, LinesOfABatchAreTheLinesOfItsRowsWhateverTheirLengthsAndNulls) {
  // String, bytes and int64 fields take the batch path (a buffer per run of rows); rows longer
  // than its buffer, nulls and the extreme int64s must come out as AppendRecord writes them.
  RecordBatch b(MakeSchema({{"w", FieldType::kString}, {"n", FieldType::kInt64}, {"x", FieldType::kBytes}}));
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    RecordBatch::RowWriter w = b.AppendRow();
    if (i % 11 != 3) w.SetString(0, std::string(i % 500 == 0 ? 20000 : rng() % 40, static_cast<char>('a' + i % 26)));
    if (i % 13 != 5)
      w.SetInt64(1, i % 3 == 0 ? std::numeric_limits<int64_t>::min() : i % 3 == 1 ? std::numeric_limits<int64_t>::max()
                                                                                  : static_cast<int64_t>(rng()) - (1 << 30));
    if (i % 2 == 0) w.SetString(2, std::string(i % 9, '\0'));
  }
  std::string expected, got, scratch;
  for (size_t i = 0; i < b.size(); ++i) AppendRecord(RecordWriterOptions{}, b, i, &scratch, &expected);
  got = "before\n";
  AppendRecords(RecordWriterOptions{}, b, &scratch, &got);
  EXPECT_EQ(got, "before\n" + expected);
  // Other types take the field-by-field path; the same lines.
  RecordBatch d(MakeSchema({{"w", FieldType::kString}, {"v", FieldType::kDouble}}));
  RecordBatch::RowWriter w = d.AppendRow();
  w.SetString(0, "pi");
  d.SetDouble(0, 1, 3.25);
  d.AppendRow();
  got.clear();
  AppendRecords(RecordWriterOptions{}, d, &scratch, &got);
  EXPECT_EQ(got, "pi\t3.25\n\t\n");
}

TEST(RecordFormatTest, LinesOfATextAndInt64BatchAreTheLinesOfItsRowsAfterANullOrALongRowToo) {
  // `text<TAB>int64` (the word count's output) has a path of its own, left for the general one
  // at the first null or over-long row: every case must come out as AppendRecord writes it.
  for (FieldType text : {FieldType::kString, FieldType::kBytes}) {
    for (int stop : {-1, 0, 700, 2999}) {  // the row with a null (or none: -1)
      for (bool long_row : {false, true}) {
        RecordBatch b(MakeSchema({{"w", text}, {"n", FieldType::kInt64}}));
        std::mt19937 rng(static_cast<unsigned>(stop + 11));
        for (int i = 0; i < 3000; ++i) {
          RecordBatch::RowWriter w = b.AppendRow();
          const size_t len = long_row && i == 1500 ? 9000 : rng() % 24;
          if (i != stop || i % 2 == 0) w.SetString(0, std::string(len, static_cast<char>(i % 2 ? 'a' + i % 26 : '\0')));
          if (i != stop || i % 2 == 1) w.SetInt64(1, static_cast<int64_t>(rng()) - (int64_t{1} << 31));
        }
        std::string expected, got = "x", scratch;
        for (size_t i = 0; i < b.size(); ++i) AppendRecord(RecordWriterOptions{}, b, i, &scratch, &expected);
        AppendRecords(RecordWriterOptions{}, b, &scratch, &got);
        EXPECT_EQ(got, "x" + expected) << FieldTypeName(text) << " null at " << stop << " long " << long_row;
      }
    }
  }
}

TEST(RecordFormatTest, LinesWriteEveryInt64AtEachPowerOfTenBoundaryAsToCharsDoes) {
  // The lines batch path formats int64s itself (digits from the bit length): each number of
  // digits, each side of every power of ten, and both signs.
  RecordBatch b(MakeSchema({{"n", FieldType::kInt64}}));
  std::vector<int64_t> values = {0, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  for (int64_t v = 1; v <= 1000; ++v) values.push_back(v);
  for (int64_t p = 10; p <= std::numeric_limits<int64_t>::max() / 10; p *= 10) {
    for (int64_t d : {-1, 0, 1}) values.push_back(p + d);
    values.push_back(p * 10 - 1);
  }
  for (size_t i = 0, n = values.size(); i < n; ++i)
    if (values[i] != std::numeric_limits<int64_t>::min()) values.push_back(-values[i]);
  std::string expected;
  for (int64_t v : values) {
    b.AppendRow().SetInt64(0, v);
    expected += std::to_string(v) + "\n";
  }
  std::string got, scratch;
  AppendRecords(RecordWriterOptions{}, b, &scratch, &got);
  EXPECT_EQ(got, expected);
}

TEST(RecordFormatTest, FormatNames) {
  TextFormat f;
  for (const char* name : {"lines", "csv", "jsonl"}) {
    ASSERT_TRUE(ParseTextFormat(name, &f));
    EXPECT_STREQ(TextFormatName(f), name);
  }
  EXPECT_FALSE(ParseTextFormat("json", &f));
  EXPECT_EQ(NewRecordParser(TextFormat::kLines, SixFields()), nullptr);
}

// Seeded random inputs (deterministic): arbitrary bytes never crash a parser, and a parser that
// rejects a record leaves the batch as it was; random rows of random ASCII strings written as
// csv or jsonl read back as the same rows.
TEST(RecordFormatTest, RandomBytesAreAcceptedOrRejectedAndRandomRowsRoundTrip) {
  std::mt19937_64 rng(20261201);
  const std::string alphabet = "ab,;\"\r\n\t {}[]:0123456789.-+eETZtruefalsn\\\x01\xc3\xa9\xff";
  auto random_text = [&](size_t max_len) {
    std::string s(rng() % (max_len + 1), ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (TextFormat format : {TextFormat::kCsv, TextFormat::kJsonl}) {
    auto p = NewRecordParser(format, SixFields());
    RecordBatch b(SixFields());
    for (int i = 0; i < 20000; ++i) {
      const std::string text = random_text(64);
      const size_t before = b.size();
      RecordError err;
      if (p->Parse(text, &b, &err)) {
        EXPECT_EQ(b.size(), before + 1);
      } else {
        EXPECT_EQ(b.size(), before) << text;
        EXPECT_FALSE(err.why.empty()) << text;
        EXPECT_LT(err.field, 6);
      }
      int64_t ms;
      std::string why;
      (void)ParseTimestampText(text, &ms, &why);
    }
  }
  // Round trip of random ASCII strings, control characters included.
  const SchemaRef two = MakeSchema({{"a", FieldType::kString}, {"b", FieldType::kBytes}});
  for (TextFormat format : {TextFormat::kCsv, TextFormat::kJsonl}) {
    for (char delim : {',', '\t', '|'}) {
      if (format == TextFormat::kJsonl && delim != ',') continue;
      RecordBatch rows(two);
      for (int i = 0; i < 2000; ++i) {
        size_t r = rows.AddRow();
        for (size_t f = 0; f < 2; ++f) {
          std::string v(rng() % 12, ' ');
          for (char& c : v) c = static_cast<char>(rng() % 128);
          rows.SetString(r, f, v);
        }
      }
      std::string text, scratch;
      for (size_t i = 0; i < rows.size(); ++i) AppendRecord(RecordWriterOptions{format, delim}, rows, i, &scratch, &text);
      auto p = NewRecordParser(format, two, delim);
      RecordBatch back(two);
      for (size_t at = 0; at < text.size();) {
        size_t end = format == TextFormat::kCsv ? CsvRecordEnd(text, at) : text.find('\n', at);
        ASSERT_NE(end, std::string::npos);
        std::string_view rec = std::string_view(text).substr(at, end - at);
        at = end + 1;
        RecordError err;
        ASSERT_TRUE(p->Parse(rec, &back, &err)) << err.why << " in " << rec;
      }
      ASSERT_EQ(back.size(), rows.size());
      for (size_t i = 0; i < rows.size(); ++i)
        for (size_t f = 0; f < 2; ++f) ASSERT_EQ(back.GetString(i, f), rows.GetString(i, f)) << i << "," << f;
    }
  }
}

}  // namespace
}  // namespace cairn
