// Typed records (engine/dataflow): a RecordBatch's rows, nulls and copies; schemas and rows
// through their byte encoding; the key a KeySelector makes and its decoding; records as JSON
// and text (docs/records.md).
#include "engine/dataflow/record_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/dataflow/record_batch.h"

namespace cairn {
namespace {

SchemaRef AllTypes() {
  return MakeSchema({{"s", FieldType::kString}, {"b", FieldType::kBytes}, {"i", FieldType::kInt64},
                     {"d", FieldType::kDouble}, {"f", FieldType::kBool}, {"t", FieldType::kTimestamp}});
}

// Row 0: every field set; row 1: every field null; row 2: some set.
RecordBatch Sample() {
  RecordBatch b(AllTypes());
  size_t r = b.AddRow();
  b.SetString(r, 0, "héllo");
  b.SetString(r, 1, std::string("\0\xff", 2));
  b.SetInt64(r, 2, std::numeric_limits<int64_t>::min());
  b.SetDouble(r, 3, -0.5);
  b.SetBool(r, 4, true);
  b.SetInt64(r, 5, 1764570917123);
  b.AddRow();
  r = b.AddRow();
  b.SetString(r, 0, "");
  b.SetInt64(r, 2, 7);
  return b;
}

TEST(RecordBatchTest, ARowStartsNullAndEachSetterClearsOnlyItsField) {
  RecordBatch b = Sample();
  ASSERT_EQ(b.size(), 3u);
  for (size_t f = 0; f < 6; ++f) EXPECT_FALSE(b.IsNull(0, f)) << f;
  for (size_t f = 0; f < 6; ++f) EXPECT_TRUE(b.IsNull(1, f)) << f;
  EXPECT_FALSE(b.IsNull(2, 0));
  EXPECT_TRUE(b.IsNull(2, 1));
  EXPECT_EQ(b.GetString(2, 0), "");
  EXPECT_EQ(b.GetInt64(2, 2), 7);
  EXPECT_EQ(b.GetString(0, 0), "héllo");
  EXPECT_EQ(b.GetString(0, 1), std::string("\0\xff", 2));
  EXPECT_EQ(b.GetDouble(0, 3), -0.5);
  b.SetNull(0, 3);
  EXPECT_TRUE(b.IsNull(0, 3));
  EXPECT_FALSE(b.IsNull(0, 4));
}

TEST(RecordBatchTest, CopiesMovesAndAddFromKeepEveryValueAndOwnTheirStrings) {
  RecordBatch a = Sample();
  RecordBatch copy = a;
  RecordBatch other(AllTypes());
  other.AddFrom(a, 0);
  other.AppendRange(a, 1, 3);
  a.clear();
  a.SetString(a.AddRow(), 0, "overwritten arena");  // copies own their bytes
  RecordBatch moved = std::move(copy);
  for (const RecordBatch* b : {&moved, &other}) {
    ASSERT_EQ(b->size(), 3u);
    EXPECT_EQ(b->GetString(0, 0), "héllo");
    EXPECT_EQ(b->GetString(0, 1), std::string("\0\xff", 2));
    EXPECT_TRUE(b->IsNull(1, 0));
    EXPECT_EQ(b->GetInt64(2, 2), 7);
  }
  RecordBatch into(MakeSchema({{"x", FieldType::kInt64}, {"s", FieldType::kString}}));
  size_t r = into.AddRow();
  into.CopyFieldFrom(other, 0, 0, r, 1);
  into.CopyFieldFrom(other, 1, 2, r, 0);  // a null stays null
  EXPECT_EQ(into.GetString(r, 1), "héllo");
  EXPECT_TRUE(into.IsNull(r, 0));
}

TEST(RecordBatchTest, ResetToAnotherSchemaEmptiesTheBatch) {
  RecordBatch b = Sample();
  SchemaRef one = MakeSchema({{"w", FieldType::kString}});
  b.Reset(one);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.num_fields(), 1u);
  b.SetString(b.AddRow(), 0, "w");
  b.Reset(one);  // same schema: just cleared
  EXPECT_TRUE(b.empty());
}

TEST(RecordCodecTest, SchemasAndRowsRoundTripThroughTheirEncoding) {
  RecordBatch b = Sample();
  std::string bytes;
  EncodeSchema(*b.schema(), &bytes);
  for (size_t r = 0; r < b.size(); ++r) EncodeRow(b, r, &bytes);
  Decoder d(bytes);
  SchemaRef schema;
  ASSERT_TRUE(DecodeSchema(&d, &schema));
  EXPECT_EQ(*schema, *b.schema());
  RecordBatch back(schema);
  for (size_t r = 0; r < b.size(); ++r) ASSERT_TRUE(DecodeRow(&d, &back));
  EXPECT_TRUE(d.done());
  for (size_t r = 0; r < b.size(); ++r) {
    std::string x, y;
    AppendJsonObject(b, r, &x);
    AppendJsonObject(back, r, &y);
    EXPECT_EQ(x, y);
  }
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < bytes.size(); ++n) {
    Decoder t(std::string_view(bytes).substr(0, n));
    SchemaRef s;
    RecordBatch rows(b.schema());
    bool ok = DecodeSchema(&t, &s);
    for (size_t r = 0; ok && r < b.size(); ++r) ok = DecodeRow(&t, &rows);
    EXPECT_FALSE(ok && t.done()) << n;
  }
}

TEST(RecordCodecTest, AKeyOfOneStringFieldIsItsBytesAndOtherKeysDecodeBack) {
  RecordBatch b = Sample();
  KeySelector one;
  ASSERT_TRUE(KeySelector::Make(*b.schema(), {"s"}, &one).ok());
  std::string scratch;
  EXPECT_EQ(one.Key(b, 0, &scratch), "héllo");
  EXPECT_EQ(one.Hash(b, 0, &scratch), KeyHash("héllo"));
  KeySelector two;
  ASSERT_TRUE(KeySelector::Make(*b.schema(), {"i", "s", "d"}, &two).ok());
  for (size_t r = 0; r < b.size(); ++r) {
    std::string key(two.Key(b, r, &scratch));
    RecordBatch out(MakeSchema({{"i", FieldType::kInt64}, {"s", FieldType::kString}, {"d", FieldType::kDouble}}));
    size_t row = out.AddRow();
    ASSERT_TRUE(DecodeKeyInto(key, {FieldType::kInt64, FieldType::kString, FieldType::kDouble}, {0, 1, 2}, &out, row));
    EXPECT_EQ(out.IsNull(row, 0), b.IsNull(r, 2));
    EXPECT_EQ(out.GetInt64(row, 0), b.GetInt64(r, 2));
    EXPECT_EQ(out.GetString(row, 1), b.GetString(r, 0));
    EXPECT_EQ(out.IsNull(row, 2), b.IsNull(r, 3));
  }
  std::string k1(two.Key(b, 0, &scratch)), k2(two.Key(b, 2, &scratch));
  EXPECT_NE(k1, k2);
  KeySelector missing;
  Status s = KeySelector::Make(*b.schema(), {"nope"}, &missing);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("no field 'nope'"));
}

TEST(RecordCodecTest, JsonIsValidForAnyBytesAndTextIsTheLinesFormat) {
  RecordBatch b = Sample();
  std::string json;
  AppendJsonObject(b, 0, &json);
  EXPECT_EQ(json,
            "{\"s\":\"héllo\",\"b\":\"\\u0000\\u00ff\",\"i\":-9223372036854775808,\"d\":-0.5,\"f\":true,"
            "\"t\":\"2025-12-01T06:35:17.123Z\"}");
  json.clear();
  AppendJsonObject(b, 1, &json);
  EXPECT_EQ(json, "{\"s\":null,\"b\":null,\"i\":null,\"d\":null,\"f\":null,\"t\":null}");
  json.clear();
  // Overlong, surrogate and truncated sequences are escaped byte by byte; valid ones pass.
  AppendJsonString("\xc0\xaf \xed\xa0\x80 \xe2\x82 \xe2\x82\xac \xf0\x9f\x98\x80 \"\\\n", &json);
  EXPECT_EQ(json, "\"\\u00c0\\u00af \\u00ed\\u00a0\\u0080 \\u00e2\\u0082 \xe2\x82\xac \xf0\x9f\x98\x80 \\\"\\\\\\n\"");
  std::string text;
  for (size_t f = 0; f < 6; ++f) {
    if (f > 0) text += '|';
    AppendText(b, 0, f, &text);
  }
  EXPECT_EQ(text, "héllo|" + std::string("\0\xff", 2) + "|-9223372036854775808|-0.5|true|2025-12-01T06:35:17.123Z");
  text.clear();
  AppendTimestamp(-1, &text);
  EXPECT_EQ(text, "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace cairn
