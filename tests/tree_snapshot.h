// A byte-for-byte picture of a directory tree, to prove that a command changed nothing on disk.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace cairn::testing {

// Everything below `root` (which may be missing: an empty tree): relative path -> "dir", or
// "file <size> <FNV-1a 64 of the contents, hex>", or "link <target>". Symlinks are not followed.
using Tree = std::map<std::string, std::string>;
Tree TreeSnapshot(const std::string& root);

// Success when the trees are equal; otherwise names each added, removed and changed path.
::testing::AssertionResult SameTree(const Tree& before, const Tree& after);

}  // namespace cairn::testing
