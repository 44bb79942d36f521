#include "state/checkpoint_metadata.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>

#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using testing::ReadText;
using testing::ScratchDir;
using testing::WriteText;

const std::string kPath = "/ckpt/chk-7/_metadata";

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

CheckpointMetadata Sample() {
  CheckpointMetadata m;
  m.id = 7;
  m.job_name = "word count = fun\nsecond line %41 — café";
  m.trigger_time_ms = 1700000000123;
  m.duration_ms = 456;
  m.mode = "aligned->unaligned";
  m.max_parallelism = 128;
  m.state_bytes = 1ull << 40;
  m.channel_state_bytes = 99;
  m.alignment_ms = 12;
  m.sync_ms = 3;
  m.async_ms = -1;
  m.sources_finished = true;
  SubtaskStateHandle a;
  a.operator_id = "count words";
  a.subtask = 0;
  a.parallelism = 2;
  a.key_groups = KeyGroupRange::ForSubtask(0, 128, 2);
  a.keyed_dir = "count%20words-0/keyed";
  a.operator_state_file = "";
  a.state_bytes = 1000;
  a.channel_state_bytes = 5;
  a.alignment_ms = 12;
  a.sync_ms = 3;
  a.async_ms = 40;
  SubtaskStateHandle b = a;
  b.subtask = 1;
  b.key_groups = KeyGroupRange::ForSubtask(1, 128, 2);
  b.keyed_dir = "-";
  for (int i = 0; i < 256; ++i) b.operator_state_inline += static_cast<char>(i);  // every byte, inline
  b.list_state_inline = std::string("\x01 = %\n", 6);
  b.channel_state_inline = "-";
  SubtaskStateHandle c;
  c.operator_id = "sink=ü\n";
  c.operator_type = "file_sink";
  c.operator_state_file = "sink-0/operator.state";
  c.channel_state_file = "sink-0/channel.state";
  c.list_state_file = "sink-0/list.state";
  m.subtasks = {a, b, c};
  return m;
}

void ExpectSame(const CheckpointMetadata& x, const CheckpointMetadata& y) {
  EXPECT_EQ(x.id, y.id);
  EXPECT_EQ(x.job_name, y.job_name);
  EXPECT_EQ(x.trigger_time_ms, y.trigger_time_ms);
  EXPECT_EQ(x.duration_ms, y.duration_ms);
  EXPECT_EQ(x.mode, y.mode);
  EXPECT_EQ(x.max_parallelism, y.max_parallelism);
  EXPECT_EQ(x.state_bytes, y.state_bytes);
  EXPECT_EQ(x.channel_state_bytes, y.channel_state_bytes);
  EXPECT_EQ(x.alignment_ms, y.alignment_ms);
  EXPECT_EQ(x.sync_ms, y.sync_ms);
  EXPECT_EQ(x.async_ms, y.async_ms);
  EXPECT_EQ(x.sources_finished, y.sources_finished);
  ASSERT_EQ(x.subtasks.size(), y.subtasks.size());
  for (size_t i = 0; i < x.subtasks.size(); i++) {
    const SubtaskStateHandle& a = x.subtasks[i];
    const SubtaskStateHandle& b = y.subtasks[i];
    EXPECT_EQ(a.operator_id, b.operator_id);
    EXPECT_EQ(a.operator_type, b.operator_type);
    EXPECT_EQ(a.subtask, b.subtask);
    EXPECT_EQ(a.parallelism, b.parallelism);
    EXPECT_EQ(a.key_groups, b.key_groups);
    EXPECT_EQ(a.keyed_dir, b.keyed_dir);
    EXPECT_EQ(a.operator_state_file, b.operator_state_file);
    EXPECT_EQ(a.channel_state_file, b.channel_state_file);
    EXPECT_EQ(a.list_state_file, b.list_state_file);
    EXPECT_EQ(a.operator_state_inline, b.operator_state_inline);
    EXPECT_EQ(a.list_state_inline, b.list_state_inline);
    EXPECT_EQ(a.channel_state_inline, b.channel_state_inline);
    EXPECT_EQ(a.state_bytes, b.state_bytes);
    EXPECT_EQ(a.channel_state_bytes, b.channel_state_bytes);
    EXPECT_EQ(a.alignment_ms, b.alignment_ms);
    EXPECT_EQ(a.sync_ms, b.sync_ms);
    EXPECT_EQ(a.async_ms, b.async_ms);
  }
}

// `body` (header and field lines) followed by a correct checksum line.
std::string Seal(const std::string& body) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08" PRIx32, Crc32c(body));
  return body + "crc32c " + crc + "\n";
}

// The encoded sample without its checksum line.
std::string SampleBody() {
  std::string e = EncodeMetadata(Sample());
  return e.substr(0, e.rfind("crc32c "));
}

Status Decode(const std::string& bytes) {
  CheckpointMetadata m;
  return DecodeMetadata(kPath, bytes, &m);
}

// Asserts Corruption "<kPath>: damaged (line ...: <part>...)".
void ExpectFieldError(const std::string& body, const std::string& part) {
  Status s = Decode(Seal(body));
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind(kPath + ": damaged (", 0), 0u) << s.message();
  EXPECT_TRUE(Contains(s.message(), part)) << s.message();
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(CheckpointMetadata, RoundTripsEveryFieldWithOddStrings) {
  CheckpointMetadata in = Sample();
  CheckpointMetadata out;
  Status s = DecodeMetadata(kPath, EncodeMetadata(in), &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSame(in, out);
}

TEST(CheckpointMetadata, RoundTripsDefaultsAndEmptyStrings) {
  CheckpointMetadata in;
  CheckpointMetadata out;
  out.job_name = "stale";
  Status s = DecodeMetadata(kPath, EncodeMetadata(in), &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSame(in, out);
}

TEST(CheckpointMetadata, EncodingIsOneLinePerFieldWithEscapedStrings) {
  const std::string e = EncodeMetadata(Sample());
  EXPECT_EQ(e.rfind("cairn-checkpoint 1\nid 7\njob word%20count%20%3D%20fun%0Asecond", 0), 0u) << e;
  EXPECT_TRUE(Contains(e, "\nmode aligned-%3Eunaligned\n")) << e;
  EXPECT_TRUE(Contains(e, "\nsubtask op=count%20words index=0 parallelism=2 key_groups=0-63 "
                          "keyed=count%2520words-0/keyed operator_state=- channel_state=- state_bytes=1000 "
                          "channel_state_bytes=5 alignment_ms=12 sync_ms=3 async_ms=40\n"))
      << e;
  EXPECT_TRUE(Contains(e, " keyed=%2D ")) << e;
  // The last line is the checksum of everything before it.
  size_t crc_at = e.rfind("crc32c ");
  ASSERT_NE(crc_at, std::string::npos);
  char expected[32];
  std::snprintf(expected, sizeof expected, "crc32c %08" PRIx32 "\n", Crc32c(e.substr(0, crc_at)));
  EXPECT_EQ(e.substr(crc_at), expected);
}

TEST(CheckpointMetadata, EveryTruncationIsCorruption) {
  const std::string full = EncodeMetadata(Sample());
  for (size_t len = 0; len < full.size(); len++) {
    Status s = Decode(full.substr(0, len));
    ASSERT_TRUE(s.IsCorruption()) << "length " << len << ": " << s.ToString();
  }
}

TEST(CheckpointMetadata, EmptyFileIsDamaged) {
  Status s = Decode("");
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.message(), kPath + ": damaged (empty file)");
}

TEST(CheckpointMetadata, MissingChecksumLineIsDamaged) {
  Status s = Decode(SampleBody());
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_TRUE(Contains(s.message(), kPath + ": damaged (truncated")) << s.message();
}

TEST(CheckpointMetadata, EverySingleBitFlipIsCorruption) {
  const std::string full = EncodeMetadata(Sample());
  for (size_t i = 0; i < full.size() * 8; i++) {
    std::string bad = full;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    Status s = Decode(bad);
    ASSERT_TRUE(s.IsCorruption()) << "bit " << i << ": " << s.ToString();
    ASSERT_EQ(s.message().rfind(kPath + ": ", 0), 0u) << s.message();
  }
}

TEST(CheckpointMetadata, BitFlipInBodyIsChecksumMismatch) {
  std::string bad = EncodeMetadata(Sample());
  bad[bad.find("\nid 7") + 4] = '8';
  Status s = Decode(bad);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.message(), kPath + ": damaged (checksum mismatch)");
}

TEST(CheckpointMetadata, Version2WithValidChecksumIsIncompatible) {
  std::string body = Replace(SampleBody(), "cairn-checkpoint 1\n", "cairn-checkpoint 2\n");
  body += "some_new_field 1\n";
  Status s = Decode(Seal(body));
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_TRUE(Contains(s.message(), "incompatible format version 2")) << s.message();
  EXPECT_EQ(s.message(), kPath + ": incompatible format version 2 (this build reads version 1)");
}

TEST(CheckpointMetadata, ForeignFileIsNotACheckpoint) {
  Status s = Decode("job:\n  name: wordcount\ncheckpoint:\n  interval: 10s\n");
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.message(), kPath + ": not a Cairn checkpoint metadata file");
}

TEST(CheckpointMetadata, UnknownFieldIsRejected) {
  ExpectFieldError(SampleBody() + "colour blue\n", "unknown field \"colour\"");
}

TEST(CheckpointMetadata, UnknownSubtaskAttributeIsRejected) {
  ExpectFieldError(Replace(SampleBody(), " async_ms=40\n", " async_ms=40 colour=blue\n"),
                   "unknown attribute \"colour\"");
}

TEST(CheckpointMetadata, MissingFieldIsRejected) {
  ExpectFieldError(Replace(SampleBody(), "sources_finished 1\n", ""), "missing field sources_finished");
}

TEST(CheckpointMetadata, MissingSubtaskAttributeIsRejected) {
  ExpectFieldError(Replace(SampleBody(), " sync_ms=3 async_ms=40\n", " sync_ms=3\n"), "missing attribute async_ms");
}

TEST(CheckpointMetadata, DuplicateFieldIsRejected) {
  ExpectFieldError(SampleBody() + "id 8\n", "duplicate field \"id\"");
}

TEST(CheckpointMetadata, NonNumericNumberIsRejected) {
  ExpectFieldError(Replace(SampleBody(), "\nduration_ms 456\n", "\nduration_ms 45x\n"), "line 5: duration_ms");
}

TEST(CheckpointMetadata, OutOfRangeNumbersAreRejected) {
  ExpectFieldError(Replace(SampleBody(), "\nid 7\n", "\nid 18446744073709551616\n"), "line 2: id");
  ExpectFieldError(Replace(SampleBody(), "\nid 7\n", "\nid -7\n"), "line 2: id");
  ExpectFieldError(Replace(SampleBody(), "\nmax_parallelism 128\n", "\nmax_parallelism 4294967296\n"),
                   "max_parallelism");
  ExpectFieldError(Replace(SampleBody(), "\nmax_parallelism 128\n", "\nmax_parallelism 0\n"),
                   "max_parallelism must be at least 1");
  ExpectFieldError(Replace(SampleBody(), "\nsources_finished 1\n", "\nsources_finished 2\n"), "sources_finished");
  ExpectFieldError(Replace(SampleBody(), "index=0 parallelism=2", "index=2 parallelism=2"),
                   "index 2 is not below parallelism 2");
  ExpectFieldError(Replace(SampleBody(), "key_groups=64-127", "key_groups=64-128"), "exceeds max_parallelism");
}

TEST(CheckpointMetadata, BadEscapeIsRejected) {
  ExpectFieldError(Replace(SampleBody(), "op=count%20words index=0", "op=count%2 index=0"), "op is not");
  ExpectFieldError(Replace(SampleBody(), "op=count%20words index=0", "op=count%zzwords index=0"), "op is not");
}

TEST(CheckpointMetadata, DuplicateSubtaskIsRejected) {
  std::string body = SampleBody();
  size_t start = body.find("subtask ");
  std::string first = body.substr(start, body.find('\n', start) + 1 - start);
  ExpectFieldError(body + first, "duplicate state for operator \"count words\" index 0");
}

TEST(CheckpointMetadata, StatePathOutsideCheckpointIsRejected) {
  ExpectFieldError(Replace(SampleBody(), "keyed=count%2520words-0/keyed", "keyed=../chk-1/x"),
                   "not inside the checkpoint directory");
  ExpectFieldError(Replace(SampleBody(), "keyed=count%2520words-0/keyed", "keyed=/etc"),
                   "not inside the checkpoint directory");
  ExpectFieldError(Replace(SampleBody(), "list_state=sink-0/list.state", "list_state=../x"),
                   "subtask: list_state path \"../x\" is not inside the checkpoint directory");
}

TEST(CheckpointMetadata, TheListStateAttributeIsOptional) {
  CheckpointMetadata m = Sample();
  m.subtasks[2].list_state_file.clear();
  const std::string bytes = EncodeMetadata(m);
  EXPECT_EQ(bytes.find("list_state="), std::string::npos) << "absent when there is none";
  CheckpointMetadata back;
  ASSERT_TRUE(DecodeMetadata("m", bytes, &back).ok());
  ExpectSame(m, back);
}

TEST(CheckpointMetadata, InlineStateIsOptionalAndExcludesItsFile) {
  const std::string body = SampleBody();
  EXPECT_TRUE(Contains(body, " channel_state_inline=%2D")) << body;
  // Absent when not inline: the first subtask's line has none.
  const std::string first = body.substr(body.find("\nsubtask "), body.find("\nsubtask ", body.find("\nsubtask ") + 1) -
                                                                      body.find("\nsubtask "));
  EXPECT_FALSE(Contains(first, "_inline=")) << first;
  // A kind's file and inline bytes together, or inline bytes that are empty, are damage.
  const std::string sink = "operator_state=sink-0/operator.state";
  ExpectFieldError(Replace(body, sink, sink + " operator_state_inline=x"),
                   "subtask: both operator_state and operator_state_inline are set");
  const std::string list = "list_state=sink-0/list.state";
  ExpectFieldError(Replace(body, list, list + " list_state_inline=x"),
                   "subtask: both list_state and list_state_inline are set");
  const std::string channel = "channel_state=sink-0/channel.state";
  ExpectFieldError(Replace(body, channel, channel + " channel_state_inline=x"),
                   "subtask: both channel_state and channel_state_inline are set");
  ExpectFieldError(Replace(body, " channel_state_inline=%2D", " channel_state_inline=-"),
                   "subtask: channel_state_inline is empty");
  ExpectFieldError(Replace(body, " channel_state_inline=%2D", " channel_state_inline=%2"),
                   "channel_state_inline is not a well-formed escaped string");
}

// The checksum shields the parser from random damage; this drives it with garbage that has a
// valid checksum instead. Deterministic seed: a failure reproduces.
TEST(CheckpointMetadata, RandomEditsWithValidChecksumNeverCrash) {
  const std::string body = SampleBody();
  const std::string header = "cairn-checkpoint 1\n";
  std::mt19937 rng(12345);
  const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz_=- %0123456789\n\xff";
  for (int round = 0; round < 20000; round++) {
    std::string b = body.substr(header.size());
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !b.empty(); e++) {
      size_t pos = rng() % b.size();
      switch (rng() % 3) {
        case 0: b[pos] = kAlphabet[rng() % (sizeof kAlphabet - 1)]; break;
        case 1: b.erase(pos, 1 + rng() % 8); break;
        case 2: b.insert(pos, 1, kAlphabet[rng() % (sizeof kAlphabet - 1)]); break;
      }
    }
    CheckpointMetadata m;
    Status s = DecodeMetadata(kPath, Seal(header + b), &m);
    ASSERT_TRUE(s.ok() || s.IsCorruption()) << s.ToString();
  }
}

TEST(CheckpointMetadata, WriteThenReadRoundTripsAndLeavesNoTmp) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir / "chk-7").ok());
  ASSERT_TRUE(WriteMetadata(dir / "chk-7", Sample()).ok());
  EXPECT_FALSE(PathExists(dir / "chk-7/_metadata.tmp"));
  EXPECT_EQ(ReadText(dir / "chk-7/_metadata"), EncodeMetadata(Sample()));
  CheckpointMetadata out;
  Status s = ReadMetadata(dir / "chk-7", &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSame(Sample(), out);
}

TEST(CheckpointMetadata, ReadMissingIsNotFoundNamingThePath) {
  ScratchDir dir;
  CheckpointMetadata out;
  Status s = ReadMetadata(dir / "chk-1", &out);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(s.message(), dir / "chk-1/_metadata: no such file");
}

TEST(CheckpointMetadata, ReadDamagedFileNamesThePath) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir / "chk-1").ok());
  WriteText(dir / "chk-1/_metadata", "cairn-checkpoint 1\nid 1\n");
  CheckpointMetadata out;
  Status s = ReadMetadata(dir / "chk-1", &out);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind(dir / "chk-1/_metadata: damaged (", 0), 0u) << s.message();
}

}  // namespace
}  // namespace cairn
