// The word generator behind the `generator` source and `cairn generate`: deterministic, seeded
// lines of Zipf-distributed words. Line n depends only on the parameters and n.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace cairn {

struct GeneratorParams {
  int64_t words = 10000000;  // total words
  int64_t words_per_line = 10;
  int64_t vocabulary = 100000;
  double zipf = 1.0;
  int64_t seed = 42;
};

class WordGenerator {
 public:
  explicit WordGenerator(const GeneratorParams& p);
  int64_t lines() const { return lines_; }
  // Appends line `n` (without newline) to `out`.
  void Line(int64_t n, std::string* out) const;
  // Writes every line, each followed by '\n', to `f` (the caller checks ferror/fclose).
  void WriteText(FILE* f) const;

 private:
  GeneratorParams p_;
  int64_t lines_;
  std::vector<double> cdf_;
  std::vector<std::string> words_;
};

// The pseudo-word of rank r (0 = most frequent): syllables spelling r in bijective base 16.
std::string WordForRank(int64_t r);

}  // namespace cairn
