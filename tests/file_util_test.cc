#include "engine/base/file_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/base/storage_faults.h"
#include "state/checkpoint_format.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using testing::ReadText;
using testing::ScratchDir;
using testing::WriteText;

// Bit-at-a-time CRC-32C, the definition the fast version must agree with.
uint32_t ReferenceCrc32c(std::string_view data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
  }
  return ~c;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(FileUtil, Crc32cMatchesStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(FileUtil, Crc32cContinuesFromAPreviousValue) {
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), 0xE3069283u);
}

TEST(FileUtil, Crc32cMatchesBitwiseDefinitionAtEveryLengthAndOffset) {
  std::string buf;
  for (int i = 0; i < 300; i++) buf += static_cast<char>((i * 131 + 7) & 0xff);
  for (size_t offset = 0; offset < 8; offset++) {
    for (size_t len = 0; offset + len <= 64; len++) {
      std::string_view piece(buf.data() + offset, len);
      ASSERT_EQ(Crc32c(piece), ReferenceCrc32c(piece)) << "offset " << offset << " len " << len;
      ASSERT_EQ(Crc32cPortable(piece), ReferenceCrc32c(piece)) << "offset " << offset << " len " << len;
      ASSERT_EQ(Crc32c(piece.substr(len / 2), Crc32c(piece.substr(0, len / 2))), ReferenceCrc32c(piece))
          << "in two pieces: offset " << offset << " len " << len;
    }
  }
  EXPECT_EQ(Crc32c(buf), ReferenceCrc32c(buf));
  EXPECT_EQ(Crc32cPortable(buf), ReferenceCrc32c(buf));
}

TEST(FileUtil, WriteFileAtomicallyReplacesContentAndLeavesNoTmp) {
  ScratchDir dir;
  const std::string path = dir / "f";
  ASSERT_TRUE(WriteFileAtomically(path, "first version, longer").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(ReadText(path), "second");
  EXPECT_FALSE(PathExists(path + ".tmp"));
  std::vector<std::string> names;
  ASSERT_TRUE(ListDir(dir.path(), &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"f"});
}

TEST(FileUtil, WriteFileAtomicallyFailureIsIOErrorNamingPathAndLeavesNoTmp) {
  ScratchDir dir;
  // The target is a non-empty directory: the tmp file is written, the rename fails.
  const std::string path = dir / "target";
  ASSERT_TRUE(CreateDirs(path + "/inside").ok());
  Status s = WriteFileAtomically(path, "data");
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), path)) << s.message();
  EXPECT_FALSE(PathExists(path + ".tmp"));
}

TEST(FileUtil, WriteFileAtomicallyIntoMissingDirectoryIsIOError) {
  ScratchDir dir;
  const std::string path = dir / "missing/f";
  Status s = WriteFileAtomically(path, "data");
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), path)) << s.message();
  EXPECT_TRUE(Contains(s.message(), "No such file or directory")) << s.message();
}

TEST(FileUtil, ReadFileReturnsContentAndMissingIsNotFound) {
  ScratchDir dir;
  std::string binary("a\0b\xff", 4);
  WriteText(dir / "f", binary);
  std::string out;
  ASSERT_TRUE(ReadFile(dir / "f", &out).ok());
  EXPECT_EQ(out, binary);
  Status s = ReadFile(dir / "nope", &out);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "nope")) << s.message();
}

TEST(FileUtil, FsyncFileAndDirSucceedOnExistingPathsAndNameMissingOnes) {
  ScratchDir dir;
  WriteText(dir / "f", "x");
  EXPECT_TRUE(FsyncFile(dir / "f").ok());
  EXPECT_TRUE(FsyncDir(dir.path()).ok());
  Status s = FsyncDir(dir / "nope");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), dir / "nope")) << s.message();
}

TEST(FileUtil, CreateDirsCreatesParentsAndIsIdempotent) {
  ScratchDir dir;
  const std::string deep = dir / "a/b/c";
  ASSERT_TRUE(CreateDirs(deep).ok());
  EXPECT_TRUE(IsDirectory(deep));
  EXPECT_TRUE(CreateDirs(deep).ok());
  EXPECT_TRUE(CreateDirs(deep + "/").ok());
}

TEST(FileUtil, CreateDirsOverAFileIsIOError) {
  ScratchDir dir;
  WriteText(dir / "f", "x");
  Status s = CreateDirs(dir / "f/sub");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "f")) << s.message();
}

TEST(FileUtil, RemoveAllRemovesATreeAndAcceptsAMissingPath) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir / "t/a/b").ok());
  WriteText(dir / "t/a/b/f", "x");
  WriteText(dir / "t/g", "y");
  ASSERT_TRUE(RemoveAll(dir / "t").ok());
  EXPECT_FALSE(PathExists(dir / "t"));
  EXPECT_TRUE(RemoveAll(dir / "t").ok());
}

TEST(FileUtil, RenameMovesAFile) {
  ScratchDir dir;
  WriteText(dir / "a", "x");
  ASSERT_TRUE(Rename(dir / "a", dir / "b").ok());
  EXPECT_FALSE(PathExists(dir / "a"));
  EXPECT_EQ(ReadText(dir / "b"), "x");
  EXPECT_FALSE(Rename(dir / "a", dir / "c").ok());
}

TEST(FileUtil, PathExistsAndIsDirectory) {
  ScratchDir dir;
  WriteText(dir / "f", "x");
  EXPECT_TRUE(PathExists(dir / "f"));
  EXPECT_FALSE(IsDirectory(dir / "f"));
  EXPECT_TRUE(IsDirectory(dir.path()));
  EXPECT_FALSE(PathExists(dir / "nope"));
  EXPECT_FALSE(IsDirectory(dir / "nope"));
}

TEST(FileUtil, ListDirReturnsSortedNamesWithoutDots) {
  ScratchDir dir;
  WriteText(dir / "b", "");
  WriteText(dir / "a", "");
  ASSERT_TRUE(CreateDirs(dir / "c").ok());
  std::vector<std::string> names;
  ASSERT_TRUE(ListDir(dir.path(), &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(ListDir(dir / "nope", &names).IsNotFound());
}

TEST(FileUtil, DiskUsageSumsRegularFilesBelowAPath) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir / "t/sub").ok());
  WriteText(dir / "t/a", std::string(100, 'a'));
  WriteText(dir / "t/sub/b", std::string(23, 'b'));
  EXPECT_EQ(DiskUsage(dir / "t"), 123u);
  EXPECT_EQ(DiskUsage(dir / "t/a"), 100u);
  EXPECT_EQ(DiskUsage(dir / "nope"), 0u);
}

// ---- Checksummed blob files ----

TEST(FileUtil, ChecksummedFileRoundTrips) {
  ScratchDir dir;
  std::string data("state\0with\nbinary\xff bytes", 24);
  ASSERT_TRUE(WriteChecksummedFile(dir / "blob", data).ok());
  EXPECT_EQ(ReadText(dir / "blob").size(), data.size() + kBlobFooterSize);
  EXPECT_FALSE(PathExists(dir / "blob.tmp"));
  std::string out;
  ASSERT_TRUE(ReadChecksummedFile(dir / "blob", &out).ok());
  EXPECT_EQ(out, data);
}

// Open descriptors of this process.
size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(FileUtil, ChecksummedFileWithDeferredSyncsIsInPlaceAndItsFsyncsQueued) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir / "sub").ok());
  setenv("CAIRN_DURABILITY_LOG", (dir / "durability.log").c_str(), 1);  // this test process only
  std::string error;
  ASSERT_TRUE(InitStorageFaults(&error)) << error;
  const size_t fds = OpenFds();
  DeferredSyncs syncs;
  ASSERT_TRUE(WriteChecksummedFile(dir / "sub/a", "one", &syncs).ok());
  ASSERT_TRUE(WriteChecksummedFile(dir / "sub/b", "two", &syncs).ok());
  // In place, and each still open for its fsync.
  std::string out;
  ASSERT_TRUE(ReadChecksummedFile(dir / "sub/b", &out).ok());
  EXPECT_EQ(out, "two");
  EXPECT_FALSE(PathExists(dir / "sub/a.tmp"));
  EXPECT_EQ(OpenFds(), fds + 2);
  EXPECT_EQ(ReadText(dir / "durability.log"),
            "write " + (dir / "sub/a") + "\nwrite " + (dir / "sub/b") + "\n");
  // SyncAll fsyncs the files, in order, then their directory once, and closes them.
  size_t files_synced = 0;
  ASSERT_TRUE(syncs.SyncAll(&files_synced).ok());
  EXPECT_EQ(files_synced, 2u);
  EXPECT_EQ(OpenFds(), fds);
  EXPECT_EQ(ReadText(dir / "durability.log"), "write " + (dir / "sub/a") + "\nwrite " + (dir / "sub/b") +
                                                  "\nfsync " + (dir / "sub/a") + "\nfsync " + (dir / "sub/b") +
                                                  "\nfsync-dir " + (dir / "sub") + "\n");
  // The directory's fsync is queued, not made: with the directory gone it fails, naming it;
  // the file before it was fsynced all the same.
  ASSERT_TRUE(WriteChecksummedFile(dir / "sub/c", "three", &syncs).ok());
  ASSERT_TRUE(RemoveAll(dir / "sub").ok());
  Status s = syncs.SyncAll(&files_synced);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "sub")) << s.message();
  EXPECT_EQ(files_synced, 1u);
  EXPECT_EQ(OpenFds(), fds);
  testing::StopDurabilityLog();
}

// Large files of a deferred-sync group are written past the page cache (O_DIRECT, through an
// aligned 4 MiB buffer, the last block padded and the file cut back), or through it where the
// file system refuses: either way the bytes read back are the bytes written, at every size
// around the 1 MiB threshold, the 4 KiB blocks and the 4 MiB chunks. /dev/shm, where there is
// one, is tmpfs: O_DIRECT or the fallback, depending on the kernel.
TEST(FileUtil, LargeChecksummedFilesWithDeferredSyncsReadBackExactlyOnAnyFileSystem) {
  ScratchDir dir;
  std::vector<std::string> dirs = {dir.path()};
  char shm[] = "/dev/shm/cairn-test-XXXXXX";
  if (IsDirectory("/dev/shm") && ::mkdtemp(shm) != nullptr) dirs.push_back(shm);
  const size_t MiB = size_t{1} << 20;
  const size_t footer = kBlobFooterSize;  // sizes are of the file
  const size_t fds = OpenFds();
  for (const std::string& d : dirs) {
    DeferredSyncs syncs;
    std::vector<std::pair<std::string, std::string>> written;
    for (size_t size : {MiB - footer - 1, MiB - footer, MiB, MiB + 1, 4 * MiB - footer, 4 * MiB - footer + 1,
                        4 * MiB + 4096 - footer, 9 * MiB + 77}) {
      std::string data(size, '\0');
      for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 7919 + size) & 0xff);
      const std::string path = d + "/f" + std::to_string(size);
      ASSERT_TRUE(WriteChecksummedFile(path, data, &syncs).ok()) << path;
      written.emplace_back(path, std::move(data));
    }
    ASSERT_TRUE(syncs.SyncAll().ok());
    for (const auto& [path, data] : written) {
      std::string bytes, out;
      ASSERT_TRUE(ReadFile(path, &bytes).ok());
      EXPECT_EQ(bytes.size(), data.size() + footer) << path;
      ASSERT_TRUE(ReadChecksummedFile(path, &out).ok()) << path;
      EXPECT_TRUE(out == data) << path;
      EXPECT_FALSE(PathExists(path + ".tmp"));
    }
  }
  EXPECT_EQ(OpenFds(), fds);
  if (dirs.size() > 1) EXPECT_TRUE(RemoveAll(dirs[1]).ok());
}

TEST(FileUtil, DeferredSyncsClosesTheFilesOfAGroupGivenUpBeforeSyncAll) {
  ScratchDir dir;
  const size_t fds = OpenFds();
  {
    DeferredSyncs syncs;
    ASSERT_TRUE(WriteChecksummedFile(dir / "a", "one", &syncs).ok());
    EXPECT_EQ(OpenFds(), fds + 1);
  }
  EXPECT_EQ(OpenFds(), fds);
  std::string out;
  ASSERT_TRUE(ReadChecksummedFile(dir / "a", &out).ok());
  EXPECT_EQ(out, "one");
}

TEST(FileUtil, DeferredSyncsFsyncsEachDirectoryAddedStopsAtTheFirstFailureAndEmpties) {
  ScratchDir dir;
  DeferredSyncs syncs;
  EXPECT_TRUE(syncs.SyncAll().ok());  // nothing added
  syncs.AddDir(dir.path());
  syncs.AddDir(dir / "missing");
  syncs.AddDir(dir.path());
  Status s = syncs.SyncAll();
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "missing")) << s.message();
  EXPECT_TRUE(syncs.SyncAll().ok());  // the set was emptied
  syncs.AddDir(dir.path());
  EXPECT_TRUE(syncs.SyncAll().ok());
}

TEST(FileUtil, ChecksummedFileWithEmptyDataRoundTrips) {
  ScratchDir dir;
  ASSERT_TRUE(WriteChecksummedFile(dir / "blob", "").ok());
  std::string out = "junk";
  ASSERT_TRUE(ReadChecksummedFile(dir / "blob", &out).ok());
  EXPECT_EQ(out, "");
}

// Asserts that reading `path` fails with Corruption "<path>: damaged (...)".
void ExpectDamaged(const std::string& path) {
  std::string out;
  Status s = ReadChecksummedFile(path, &out);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind(path + ": damaged (", 0), 0u) << s.message();
}

TEST(FileUtil, ChecksummedFileTruncatedAtAnyLengthIsCorruption) {
  ScratchDir dir;
  ASSERT_TRUE(WriteChecksummedFile(dir / "blob", "some operator state").ok());
  const std::string full = ReadText(dir / "blob");
  for (size_t len = 0; len < full.size(); len++) {
    WriteText(dir / "cut", full.substr(0, len));
    ExpectDamaged(dir / "cut");
  }
}

TEST(FileUtil, ChecksummedFileBitFlipInDataIsCorruption) {
  ScratchDir dir;
  const std::string data = "some operator state";
  ASSERT_TRUE(WriteChecksummedFile(dir / "blob", data).ok());
  const std::string full = ReadText(dir / "blob");
  for (size_t i = 0; i < data.size() * 8; i++) {
    std::string bad = full;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    WriteText(dir / "bad", bad);
    ExpectDamaged(dir / "bad");
  }
}

TEST(FileUtil, ChecksummedFileBitFlipInFooterIsCorruption) {
  ScratchDir dir;
  const std::string data = "some operator state";
  ASSERT_TRUE(WriteChecksummedFile(dir / "blob", data).ok());
  const std::string full = ReadText(dir / "blob");
  for (size_t i = data.size() * 8; i < full.size() * 8; i++) {
    std::string bad = full;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    WriteText(dir / "bad", bad);
    ExpectDamaged(dir / "bad");
  }
}

TEST(FileUtil, ChecksummedFileEmptyIsCorruption) {
  ScratchDir dir;
  WriteText(dir / "empty", "");
  ExpectDamaged(dir / "empty");
}

TEST(FileUtil, ChecksummedFileMissingIsNotFound) {
  ScratchDir dir;
  std::string out;
  Status s = ReadChecksummedFile(dir / "nope", &out);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "nope")) << s.message();
}


TEST(FileUtil, RenameNoReplaceRenamesButNeverReplacesAnExistingFile) {
  ScratchDir dir;
  WriteText(dir / "a", "new");
  ASSERT_TRUE(RenameNoReplace(dir / "a", dir / "b").ok());
  EXPECT_EQ(ReadText(dir / "b"), "new");
  EXPECT_FALSE(PathExists(dir / "a"));

  WriteText(dir / "c", "other");
  Status s = RenameNoReplace(dir / "c", dir / "b");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "b" + " already exists")) << s.message();
  EXPECT_EQ(ReadText(dir / "b"), "new");
  EXPECT_EQ(ReadText(dir / "c"), "other");
}

}  // namespace
}  // namespace cairn
