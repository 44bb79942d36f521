#include "tests/tree_snapshot.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "tests/test_util.h"

namespace cairn::testing {

namespace {
uint64_t Fnv1a64(const std::string& data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

Tree TreeSnapshot(const std::string& root) {
  namespace fs = std::filesystem;
  Tree tree;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(root, ec))) return tree;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& p = it->path();
    std::string rel = fs::relative(p, root).string();
    fs::file_status st = fs::symlink_status(p);
    if (fs::is_symlink(st)) {
      tree[rel] = "link " + fs::read_symlink(p).string();
    } else if (fs::is_directory(st)) {
      tree[rel] = "dir";
    } else {
      char hash[32];
      std::snprintf(hash, sizeof hash, "%016" PRIx64, Fnv1a64(ReadText(p.string())));
      tree[rel] = "file " + std::to_string(fs::file_size(p)) + " " + hash;
    }
  }
  return tree;
}

::testing::AssertionResult SameTree(const Tree& before, const Tree& after) {
  std::vector<std::string> diffs;
  for (const auto& [path, what] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      diffs.push_back("removed " + path);
    } else if (it->second != what) {
      diffs.push_back("changed " + path + " (" + what + " -> " + it->second + ")");
    }
  }
  for (const auto& [path, what] : after)
    if (!before.count(path)) diffs.push_back("added " + path);
  if (diffs.empty()) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure();
  for (const std::string& d : diffs) r << d << "; ";
  return r;
}

}  // namespace cairn::testing
