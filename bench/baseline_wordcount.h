// BaselineWordCount is the strongest single-threaded baseline we can write for the word count
// job: the program the engine must beat to have a COST (cores needed to beat one competent
// thread) of 2 or less.
//
// It does the engine job's work on the same input: read the file (mmap), split it into words
// at ASCII whitespace exactly as the `tokenize` operator does, count every word in an
// open-addressing hash table, and (unless count_only) write the same changelog as the job's
// file sink: one `word<TAB>running count<LF>` line per input word, through a large buffer,
// fsynced at the end as the sink's final checkpoint does. count_only skips the changelog.
//
// Contract: single-threaded; the keys point into the mapped input, so nothing is copied per
// word. Errors are values (Status), naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.h"

namespace cairn {

struct BaselineResult {
  uint64_t words = 0;           // words read
  uint64_t distinct = 0;        // distinct words
  uint64_t output_bytes = 0;    // bytes of changelog written (0 when count_only)
  double seconds = 0;           // from open() to the fsynced output (or the last count)
  std::vector<std::pair<std::string, int64_t>> top;  // the 10 largest counts, largest first
};

// `output` is the changelog file to create (ignored when count_only).
Status RunBaselineWordCount(const std::string& input, const std::string& output, bool count_only,
                            BaselineResult* result);

}  // namespace cairn
