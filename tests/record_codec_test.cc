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

TEST(RecordBatchTest, ARowWriterSetsItsFieldsAndLeavesTheOthersNull) {
  RecordBatch b(AllTypes());
  {
    RecordBatch::RowWriter w = b.AppendRow();
    w.SetString(0, "word");
    w.SetInt64(2, -3);
    EXPECT_EQ(w.row(), 0u);
  }
  b.AppendRow().SetString(1, std::string("\0x", 2));
  b.AppendRow();
  const RecordBatch& c = b;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(c.null_bits(0), 0b111010u);
  EXPECT_EQ(b.GetString(0, 0), "word");
  EXPECT_EQ(b.GetInt64(0, 2), -3);
  EXPECT_EQ(b.GetDouble(0, 3), 0.0);  // null fields read as 0
  EXPECT_EQ(c.null_bits(1), 0b111101u);
  EXPECT_EQ(b.GetString(1, 1), std::string("\0x", 2));
  EXPECT_EQ(b.GetString(1, 0), "");
  EXPECT_EQ(c.null_bits(2), 0b111111u);
  EXPECT_EQ(b.GetInt64(2, 2), 0);
}

TEST(RecordBatchTest, StringsSurviveTheArenaGrowingAndAnEmptyBatchReadsEmptyStrings) {
  RecordBatch empty(AllTypes());
  empty.AddRow();
  EXPECT_NE(empty.GetString(0, 0).data(), nullptr);
  EXPECT_EQ(empty.GetString(0, 0), "");
  RecordBatch b(MakeSchema({{"w", FieldType::kString}}));
  for (int i = 0; i < 10000; ++i) b.AppendRow().SetString(0, std::string(static_cast<size_t>(i % 37), 'a' + i % 26));
  RecordBatch copy = b;
  b.clear();
  for (int i = 0; i < 10000; ++i)
    ASSERT_EQ(copy.GetString(static_cast<size_t>(i), 0), std::string(static_cast<size_t>(i % 37), 'a' + i % 26)) << i;
}

// A batch of `keys` whose rows carry the KeyHash of field 0, as a hash edge appends them.
RecordBatch Hashed(const RecordBatch& from) {
  RecordBatch b(from.schema());
  b.set_key_hash_fields({0});
  for (size_t i = 0; i < from.size(); ++i) b.AddFromWithHash(from, i, KeyHash(from.key(i)));
  return b;
}

RecordBatch Keys(int n, int from = 0) {
  RecordBatch b;
  for (int i = from; i < from + n; ++i) b.Add("key-" + std::to_string(i), i);
  return b;
}

// Every row's carried hash is the KeyHash of its key.
::testing::AssertionResult HashesMatchKeys(const RecordBatch& b) {
  if (!b.HasKeyHashes({0})) return ::testing::AssertionFailure() << "the batch carries no hashes of field 0";
  for (size_t i = 0; i < b.size(); ++i)
    if (b.key_hash(i) != KeyHash(b.key(i)) || b.key_hashes()[i] != b.key_hash(i))
      return ::testing::AssertionFailure() << "row " << i << " (" << b.key(i) << ") carries another hash";
  return ::testing::AssertionSuccess();
}

TEST(RecordBatchTest, KeyHashesTravelWithTheirRowsThroughCopiesMovesAndSlices) {
  RecordBatch h = Hashed(Keys(300));
  EXPECT_TRUE(HashesMatchKeys(h));
  EXPECT_FALSE(h.HasKeyHashes({1}));  // hashes of another key
  EXPECT_FALSE(h.HasKeyHashes({0, 1}));

  RecordBatch copy;
  copy = h;
  EXPECT_TRUE(HashesMatchKeys(copy));
  RecordBatch moved = std::move(copy);
  EXPECT_TRUE(HashesMatchKeys(moved));
  RecordBatch swapped;
  swap(swapped, moved);
  EXPECT_TRUE(HashesMatchKeys(swapped));

  RecordBatch slice;  // the task's slice of a flow-controlled batch
  slice.AppendRange(h, 100, 250);
  ASSERT_EQ(slice.size(), 150u);
  EXPECT_EQ(slice.key(0), "key-100");
  EXPECT_TRUE(HashesMatchKeys(slice));
  slice.AppendRange(h, 0, 10);  // more of the same key fields
  EXPECT_TRUE(HashesMatchKeys(slice));
  EXPECT_EQ(slice.size(), 160u);

  // Recycled: cleared and refilled, by a hash edge or otherwise.
  slice.clear();
  EXPECT_TRUE(slice.HasKeyHashes({0}));  // vacuously: no rows
  slice.AppendRange(Hashed(Keys(5, 1000)), 0, 5);
  EXPECT_TRUE(HashesMatchKeys(slice));
  slice.clear();
  slice.AppendRange(Keys(5), 0, 5);
  EXPECT_FALSE(slice.HasKeyHashes({0}));
}

TEST(RecordBatchTest, ARowWithoutAHashInvalidatesTheBatchsHashesUntilItIsCleared) {
  RecordBatch keys = Keys(10);
  RecordBatch h = Hashed(keys);
  h.AddFrom(keys, 3);
  EXPECT_FALSE(h.HasKeyHashes({0}));
  h.AddFromWithHash(keys, 4, KeyHash(keys.key(4)));  // a hash after a row without: still invalid
  EXPECT_FALSE(h.HasKeyHashes({0}));
  RecordBatch copy = h;
  EXPECT_FALSE(copy.HasKeyHashes({0}));
  RecordBatch appended;
  appended.AppendRange(h, 0, h.size());  // no hashes to take
  EXPECT_FALSE(appended.HasKeyHashes({0}));
  EXPECT_EQ(appended.size(), 12u);

  for (auto add : {+[](RecordBatch* b) { b->AddRow(); }, +[](RecordBatch* b) { b->Add("x"); },
                   +[](RecordBatch* b) { b->AppendRow(); }}) {
    RecordBatch b = Hashed(keys);
    add(&b);
    EXPECT_FALSE(b.HasKeyHashes({0}));
    b.clear();
    b.AddFromWithHash(keys, 0, KeyHash(keys.key(0)));
    EXPECT_TRUE(HashesMatchKeys(b));
  }

  // Rows of another key's hashes do not mix with these.
  RecordBatch other(keys.schema());
  other.set_key_hash_fields({1});
  other.AddFromWithHash(keys, 0, 42);
  RecordBatch mixed = Hashed(keys);
  mixed.AppendRange(other, 0, 1);
  EXPECT_FALSE(mixed.HasKeyHashes({0}));
  EXPECT_FALSE(mixed.HasKeyHashes({1}));
  EXPECT_EQ(mixed.key(10), "key-0");
  // Changing the key fields of a batch with rows drops its hashes; of an empty one, keeps none.
  RecordBatch changed = Hashed(keys);
  changed.set_key_hash_fields({1});
  EXPECT_FALSE(changed.HasKeyHashes({1}));
  EXPECT_FALSE(changed.HasKeyHashes({0}));
  // Another schema: no key fields.
  changed.Reset(MakeSchema({{"w", FieldType::kString}}));
  EXPECT_TRUE(changed.key_hash_fields().empty());
}

TEST(RecordBatchTest, RowsDecodedFromChannelStateCarryNoHashes) {
  RecordBatch h = Hashed(Keys(3));
  std::string bytes;
  for (size_t i = 0; i < h.size(); ++i) EncodeRow(h, i, &bytes);
  RecordBatch back(h.schema());
  back.set_key_hash_fields({0});
  Decoder d(bytes);
  for (size_t i = 0; i < h.size(); ++i) ASSERT_TRUE(DecodeRow(&d, &back));
  EXPECT_FALSE(back.HasKeyHashes({0}));
  EXPECT_EQ(back.key(2), "key-2");
}

TEST(RecordCodecTest, EncodeRowsAppendsTheBytesOfEncodeRowForEachRow) {
  // Every field type, null and empty values (Sample), and a batch of one string field as the
  // hash edge makes them.
  RecordBatch words(MakeSchema({{"word", FieldType::kString}}));
  for (int i = 0; i < 1000; ++i)
    words.SetString(words.AddRow(), 0, std::string(static_cast<size_t>(i % 23), static_cast<char>('a' + i % 26)));
  words.SetNull(words.AddRow(), 0);
  for (const RecordBatch& b : {Sample(), words, RecordBatch(AllTypes())}) {
    std::string rows = "prefix", whole = "prefix";
    for (size_t r = 0; r < b.size(); ++r) EncodeRow(b, r, &rows);
    EncodeRows(b, &whole);
    EXPECT_EQ(whole, rows);
  }
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
