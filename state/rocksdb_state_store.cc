// RocksDbStateStore: persists keyed-state deltas into a per-subtask RocksDB and takes RocksDB
// checkpoints of it; restores from one snapshot by hard links, or from several by rewriting.
#include <algorithm>
#include "state/rocksdb_state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace cairn {

namespace fs = std::filesystem;

namespace {

constexpr size_t kKeyGroupPrefixSize = 2;
constexpr size_t kValueSize = 8;
constexpr size_t kRestoreBatchEntries = 64 * 1024;

// An info logger that drops everything, given to read-only opens so that no LOG file can
// ever be written into a snapshot directory.
class DiscardingLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

Status FromRocks(const rocksdb::Status& s, std::string_view what, const std::string& dir) {
  std::string msg = std::string(what) + " " + dir + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  return Status::IOError(std::move(msg));
}

Status FromErrorCode(std::string_view what, const std::string& path, const std::error_code& ec) {
  return Status::IOError(std::string(what) + " " + path + ": " + ec.message());
}

rocksdb::Options WorkDbOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.compression = rocksdb::kNoCompression;
  o.max_background_jobs = 2;
  o.write_buffer_size = 16 << 20;
  o.max_manifest_file_size = 4 << 20;  // a checkpoint copies the MANIFEST: keep it small
  o.keep_log_file_num = 2;
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  return o;
}

rocksdb::Options ReadOnlyOptions() {
  rocksdb::Options o;
  o.create_if_missing = false;
  o.info_log = std::make_shared<DiscardingLogger>();
  return o;
}

std::string EncodeKey(uint32_t key_group, std::string_view key) {
  std::string k;
  k.reserve(kKeyGroupPrefixSize + key.size());
  k.push_back(static_cast<char>((key_group >> 8) & 0xff));
  k.push_back(static_cast<char>(key_group & 0xff));
  k.append(key);
  return k;
}

void EncodeValue(int64_t value, char out[kValueSize]) {
  uint64_t v = static_cast<uint64_t>(value);
  for (size_t i = 0; i < kValueSize; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Decodes one stored entry; Corruption naming `dir` when its shape is wrong.
Status DecodeEntry(const rocksdb::Slice& k, const rocksdb::Slice& v, const std::string& dir, uint32_t* key_group,
                   std::string_view* key, int64_t* value) {
  if (k.size() < kKeyGroupPrefixSize || v.size() != kValueSize) {
    return Status::Corruption("keyed state " + dir + ": malformed entry (key " + std::to_string(k.size()) +
                              " bytes, value " + std::to_string(v.size()) + " bytes)");
  }
  const auto* kp = reinterpret_cast<const unsigned char*>(k.data());
  *key_group = (static_cast<uint32_t>(kp[0]) << 8) | kp[1];
  *key = std::string_view(k.data() + kKeyGroupPrefixSize, k.size() - kKeyGroupPrefixSize);
  const auto* vp = reinterpret_cast<const unsigned char*>(v.data());
  uint64_t u = 0;
  for (size_t i = 0; i < kValueSize; ++i) u |= static_cast<uint64_t>(vp[i]) << (8 * i);
  *value = static_cast<int64_t>(u);
  return Status::OK();
}

Status CheckSnapshotExists(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("keyed state snapshot " + dir + " does not exist");
  return Status::OK();
}

Status CheckAbsent(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) return Status::InvalidArgument(path + " already exists");
  return Status::OK();
}

Status CreateParentDirs(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::OK();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return FromErrorCode("cannot create directory", parent.string(), ec);
  return Status::OK();
}

Status OpenReadOnly(const std::string& dir, std::unique_ptr<rocksdb::DB>* db) {
  CAIRN_RETURN_IF_ERROR(CheckSnapshotExists(dir));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(ReadOnlyOptions(), dir, &raw);
  if (!s.ok()) return FromRocks(s, "cannot open keyed state snapshot", dir);
  db->reset(raw);
  return Status::OK();
}

// Makes `work_dir` a copy of the database in `snapshot_dir` that shares its SST files: *.sst
// are hard-linked (copied if the link fails across file systems), the rest is copied.
Status LinkSnapshotFiles(const std::string& snapshot_dir, const std::string& work_dir) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) return FromErrorCode("cannot create directory", work_dir, ec);
  for (fs::directory_iterator it(snapshot_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    const std::string from = it->path().string();
    const std::string to = work_dir + "/" + name;
    const bool is_sst = name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0;
    if (is_sst) {
      if (::link(from.c_str(), to.c_str()) == 0) continue;
      if (errno != EXDEV && errno != EPERM) return Status::FromErrno("cannot hard-link " + from + " to", to, errno);
    }
    fs::copy_file(from, to, ec);
    if (ec) return FromErrorCode("cannot copy " + from + " to", to, ec);
  }
  if (ec) return FromErrorCode("cannot list", snapshot_dir, ec);
  return Status::OK();
}

// Loads every entry of `db` (a database restored from `snapshot_dir`) into `state`; all of
// them must lie in `range`.
Status LoadAll(rocksdb::DB* db, const std::string& snapshot_dir, const KeyGroupRange& range,
               KeyedInt64State* state) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint32_t kg;
    std::string_view key;
    int64_t value;
    CAIRN_RETURN_IF_ERROR(DecodeEntry(it->key(), it->value(), snapshot_dir, &kg, &key, &value));
    if (!range.Contains(kg)) {
      return Status::Corruption("keyed state snapshot " + snapshot_dir + " holds key group " + std::to_string(kg) +
                                " outside its range " + range.ToString());
    }
    state->LoadEntry(key, value);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state restored from", snapshot_dir);
  return Status::OK();
}

uint64_t FilesSize(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_regular_file(ec2)) {
      uint64_t n = it->file_size(ec2);
      if (!ec2) total += n;
    }
  }
  return total;
}

}  // namespace

RocksDbStateStore::~RocksDbStateStore() { delete db_; }

Status RocksDbStateStore::Create(const std::string& work_dir, std::unique_ptr<RocksDbStateStore>* out) {
  CAIRN_RETURN_IF_ERROR(CheckAbsent(work_dir));
  CAIRN_RETURN_IF_ERROR(CreateParentDirs(work_dir));
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(WorkDbOptions(), work_dir, &db);
  if (!s.ok()) return FromRocks(s, "cannot create keyed state database", work_dir);
  out->reset(new RocksDbStateStore(work_dir, db));
  return Status::OK();
}

Status RocksDbStateStore::PersistAndCheckpoint(const StateDelta& delta, const std::string& checkpoint_dir,
                                               uint64_t* bytes) {
  CAIRN_RETURN_IF_ERROR(CheckAbsent(checkpoint_dir));
  // In key order: RocksDB inserts sorted keys into its memtable about 3x cheaper than random
  // ones (bench: BM_PersistDeltaSorted). Stable, so a later entry for a key still wins.
  std::vector<uint32_t> order(delta.entries.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const StateDelta::Entry& a = delta.entries[x];
    const StateDelta::Entry& b = delta.entries[y];
    if (a.key_group != b.key_group) return a.key_group < b.key_group;
    return delta.key(a) < delta.key(b);
  });
  rocksdb::WriteBatch batch;
  std::string key;
  char value[kValueSize];
  for (uint32_t i : order) {
    const StateDelta::Entry& e = delta.entries[i];
    key = EncodeKey(e.key_group, delta.key(e));
    EncodeValue(e.value, value);
    rocksdb::Status s = batch.Put(key, rocksdb::Slice(value, kValueSize));
    if (!s.ok()) return FromRocks(s, "cannot build write batch for", dir_);
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::Status s = db_->Write(wo, &batch);
  if (!s.ok()) return FromRocks(s, "cannot write keyed state to", dir_);
  rocksdb::FlushOptions fo;
  fo.wait = true;
  s = db_->Flush(fo);
  if (!s.ok()) return FromRocks(s, "cannot flush keyed state in", dir_);

  CAIRN_RETURN_IF_ERROR(CreateParentDirs(checkpoint_dir));
  rocksdb::Checkpoint* raw = nullptr;
  s = rocksdb::Checkpoint::Create(db_, &raw);
  if (!s.ok()) return FromRocks(s, "cannot start a checkpoint of", dir_);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  s = checkpoint->CreateCheckpoint(checkpoint_dir, /*log_size_for_flush=*/0);
  if (!s.ok()) return FromRocks(s, "cannot create keyed state checkpoint", checkpoint_dir);
  *bytes = FilesSize(checkpoint_dir);
  return Status::OK();
}

Status RocksDbStateStore::Restore(const std::vector<KeyedSnapshotHandle>& snapshots, const std::string& work_dir,
                                  KeyedInt64State* state, std::unique_ptr<RocksDbStateStore>* out) {
  for (const KeyedSnapshotHandle& h : snapshots) CAIRN_RETURN_IF_ERROR(CheckSnapshotExists(h.dir));
  CAIRN_RETURN_IF_ERROR(CheckAbsent(work_dir));
  const KeyGroupRange range = state->range();

  // Leaves no half-built database behind on failure.
  std::unique_ptr<RocksDbStateStore> store;
  auto fail = [&](Status st) {
    store.reset();
    std::error_code ec;
    fs::remove_all(work_dir, ec);
    return st;
  };

  if (snapshots.size() == 1 && snapshots[0].key_groups == range) {
    // Fast path: same key groups, so the snapshot's files become the working database.
    const std::string& snap = snapshots[0].dir;
    CAIRN_RETURN_IF_ERROR(CreateParentDirs(work_dir));
    Status st = LinkSnapshotFiles(snap, work_dir);
    if (!st.ok()) return fail(st);
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(WorkDbOptions(), work_dir, &db);
    if (!s.ok()) return fail(FromRocks(s, "cannot open restored keyed state database", work_dir));
    store.reset(new RocksDbStateStore(work_dir, db));
    st = LoadAll(db, snap, range, state);
    if (!st.ok()) return fail(st);
    *out = std::move(store);
    return Status::OK();
  }

  // Rescale path: copy the entries of our key groups out of every overlapping snapshot.
  Status st = Create(work_dir, &store);
  if (!st.ok()) return fail(st);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::WriteBatch batch;
  auto write_batch = [&]() -> Status {
    if (batch.Count() == 0) return Status::OK();
    rocksdb::Status s = store->db_->Write(wo, &batch);
    if (!s.ok()) return FromRocks(s, "cannot write restored keyed state to", work_dir);
    batch.Clear();
    return Status::OK();
  };
  const std::string seek_key = EncodeKey(range.first, {});
  for (const KeyedSnapshotHandle& h : snapshots) {
    if (!h.key_groups.Overlaps(range)) continue;
    std::unique_ptr<rocksdb::DB> snap_db;
    st = OpenReadOnly(h.dir, &snap_db);
    if (!st.ok()) return fail(st);
    std::unique_ptr<rocksdb::Iterator> it(snap_db->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(seek_key); it->Valid(); it->Next()) {
      uint32_t kg;
      std::string_view key;
      int64_t value;
      st = DecodeEntry(it->key(), it->value(), h.dir, &kg, &key, &value);
      if (!st.ok()) return fail(st);
      if (kg > range.last) break;
      state->LoadEntry(key, value);
      rocksdb::Status s = batch.Put(it->key(), it->value());
      if (!s.ok()) return fail(FromRocks(s, "cannot build write batch for", work_dir));
      if (batch.Count() >= kRestoreBatchEntries) {
        st = write_batch();
        if (!st.ok()) return fail(st);
      }
    }
    if (!it->status().ok()) return fail(FromRocks(it->status(), "cannot read keyed state snapshot", h.dir));
  }
  st = write_batch();
  if (!st.ok()) return fail(st);
  rocksdb::FlushOptions fo;
  fo.wait = true;
  rocksdb::Status s = store->db_->Flush(fo);
  if (!s.ok()) return fail(FromRocks(s, "cannot flush restored keyed state in", work_dir));
  *out = std::move(store);
  return Status::OK();
}

Status RocksDbStateStore::ReadSnapshot(
    const std::string& dir, const std::function<void(uint32_t key_group, std::string_view key, int64_t value)>& fn) {
  std::unique_ptr<rocksdb::DB> db;
  CAIRN_RETURN_IF_ERROR(OpenReadOnly(dir, &db));
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint32_t kg;
    std::string_view key;
    int64_t value;
    CAIRN_RETURN_IF_ERROR(DecodeEntry(it->key(), it->value(), dir, &kg, &key, &value));
    fn(kg, key, value);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read keyed state snapshot", dir);
  return Status::OK();
}

}  // namespace cairn
