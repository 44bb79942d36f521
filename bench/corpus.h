// The benchmark inputs: a seeded Zipf word corpus (the same text `cairn generate` writes) and a
// file of N distinct words (for building keyed state of exactly N keys), each generated once
// and reused while it exists.
//
// Contract: a file is written under a temporary name and renamed, so an interrupted
// generation never leaves a truncated file that a later run would reuse. The file name
// encodes every parameter, so different parameters never share a file.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/status.h"
#include "operators/generator_source.h"

namespace cairn {

// The corpus file for `p` in `dir` (created when missing); *path and *bytes are set.
Status EnsureCorpus(const std::string& dir, const GeneratorParams& p, std::string* path, uint64_t* bytes);

// A file of the `keys` distinct words WordForRank(0..keys-1), 10 to a line, in `dir`.
Status EnsureDistinctWords(const std::string& dir, int64_t keys, std::string* path);

}  // namespace cairn
