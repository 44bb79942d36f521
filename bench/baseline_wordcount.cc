// The single-threaded baseline, tuned: the input is mmapped; an SSE2 scan turns each 64 bytes
// into a whitespace bit mask whose edges are the words (the same bytes the `tokenize`
// operator treats as whitespace); words are counted in batches of 64, hashing and prefetching
// every table slot of a batch before touching any, so the cache misses of a batch overlap;
// the table's 16-byte slots hold a word's first 8 bytes, so a word of up to 8 bytes (most of
// them) compares with one load, and longer words keep their bytes in a compact arena; the changelog is formatted into a 1 MiB buffer.
#include "bench/baseline_wordcount.h"

#include <emmintrin.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <string_view>

namespace cairn {

namespace {

// Counts are 32-bit and word offsets too: both fit while the input is below 4 GiB.
constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;

inline uint64_t Mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// Bit i set when byte i of p[0..63] is ASCII whitespace: ' ' or 9..13 (\t \n \v \f \r).
inline uint64_t WhitespaceMask64(const char* p) {
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i nine = _mm_set1_epi8(9);
  const __m128i four = _mm_set1_epi8(4);
  uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    __m128i x = _mm_sub_epi8(v, nine);                             // 9..13 -> 0..4
    __m128i ctrl = _mm_cmpeq_epi8(_mm_min_epu8(x, four), x);       // x <= 4 (unsigned)
    __m128i ws = _mm_or_si128(ctrl, _mm_cmpeq_epi8(v, space));
    mask |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(ws))) << (16 * k);
  }
  return mask;
}

inline bool IsSpace(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13); }

struct Word {
  uint32_t offset;  // in the input
  uint32_t len;
  uint64_t prefix;  // first min(len, 8) bytes, zero-padded
  uint64_t hash;
};

// A flat open-addressing table (linear probing) of word -> count with 16-byte slots.
class WordTable {
 public:
  explicit WordTable(const char* data) : data_(data) { Resize(1 << 16); }

  static inline uint64_t Hash(const char* w, uint32_t len, uint64_t prefix) {
    uint64_t h = Mix(prefix ^ 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull ^ len);
    for (uint32_t off = 8; off < len; off += 8) {
      uint64_t chunk = 0;
      std::memcpy(&chunk, w + off, std::min<uint32_t>(8, len - off));
      h = Mix(h ^ chunk, 0x8ebc6af09c88c6e3ull);
    }
    return h;
  }

  void Prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }

  // Adds one to the word and returns its new count.
  __attribute__((always_inline)) inline uint32_t Increment(const Word& w) {
    size_t i = w.hash & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (s.tag == 0) break;
      if (s.prefix == w.prefix && Matches(s.tag, w)) return ++s.count;
      i = (i + 1) & mask_;
    }
    if (count_ + 1 > grow_at_) {
      Grow();
      i = w.hash & mask_;
      while (slots_[i].tag != 0) i = (i + 1) & mask_;
    }
    uint32_t tag = w.len;
    if (w.len > 8) {
      tag = kLongTag + static_cast<uint32_t>(long_.size());
      long_.push_back(LongKey{Second8(data_ + w.offset, w.len), w.hash, static_cast<uint32_t>(arena_.size()), w.len});
      arena_.append(data_ + w.offset, w.len);
    }
    slots_[i] = Slot{w.prefix, 1, tag};
    ++count_;
    return 1;
  }

  size_t size() const { return count_; }

  // Visits every (word, count).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.tag == 0) continue;
      if (s.tag < kLongTag) {
        char buf[8];
        std::memcpy(buf, &s.prefix, 8);
        fn(std::string_view(buf, s.tag), s.count);
      } else {
        const LongKey& k = long_[s.tag - kLongTag];
        fn(std::string_view(arena_.data() + k.offset, k.len), s.count);
      }
    }
  }

 private:
  // tag: 0 empty; 1..8 a word of that length (its bytes are the prefix); kLongTag + i the
  // longer word long_[i].
  struct Slot {
    uint64_t prefix;
    uint32_t count;
    uint32_t tag;
  };
  // A word longer than 8 bytes: bytes 8..15 inline (zero-padded), all of it in arena_.
  struct LongKey {
    uint64_t second8;
    uint64_t hash;
    uint32_t offset;  // in arena_
    uint32_t len;
  };
  static uint64_t Second8(const char* w, uint32_t len) {
    uint64_t v = 0;
    std::memcpy(&v, w + 8, std::min<uint32_t>(8, len - 8));
    return v;
  }
  static constexpr uint32_t kLongTag = 16;

  inline bool Matches(uint32_t tag, const Word& w) const {
    if (tag < kLongTag) return tag == w.len;
    const LongKey& k = long_[tag - kLongTag];
    const char* word = data_ + w.offset;
    return k.len == w.len && k.second8 == Second8(word, w.len) &&
           (w.len <= 16 || std::memcmp(arena_.data() + k.offset + 16, word + 16, w.len - 16) == 0);
  }
  uint64_t SlotHash(const Slot& s) const {
    if (s.tag >= kLongTag) return long_[s.tag - kLongTag].hash;
    return Mix(s.prefix ^ 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull ^ s.tag);
  }
  void Resize(size_t n) {
    slots_.assign(n, Slot{0, 0, 0});
    mask_ = n - 1;
    grow_at_ = n / 10 * 7;
  }
  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    Resize(old.size() * 2);
    for (const Slot& s : old) {
      if (s.tag == 0) continue;
      size_t i = SlotHash(s) & mask_;
      while (slots_[i].tag != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  const char* const data_;
  std::vector<Slot> slots_;
  std::vector<LongKey> long_;
  std::string arena_;  // the bytes of the long words
  size_t mask_ = 0;
  size_t count_ = 0;
  size_t grow_at_ = 0;
};

// The changelog writer: `word<TAB>count<LF>` lines into a big buffer, written when full.
class ChangelogWriter {
 public:
  explicit ChangelogWriter(int fd) : fd_(fd), buf_(new char[kBufferSize + kSlack]) {}

  // False on a write error (errno set).
  inline bool Append(const char* word, const Word& w, uint32_t count) {
    if (w.len > kSlack - 32) return Flush() && WriteAll(std::string(word, w.len) + "\t" + std::to_string(count) + "\n");
    char* p = buf_.get() + used_;
    if (w.len <= 8) {
      std::memcpy(p, &w.prefix, 8);  // the slack makes the over-wide store safe
    } else {
      std::memcpy(p, word, w.len);
    }
    p += w.len;
    *p++ = '\t';
    p = std::to_chars(p, p + 16, count).ptr;
    *p++ = '\n';
    used_ = static_cast<size_t>(p - buf_.get());
    return used_ < kBufferSize || Flush();
  }

  bool Flush() {
    bool ok = WriteAll(std::string_view(buf_.get(), used_));
    used_ = 0;
    return ok;
  }
  uint64_t total() const { return total_ + used_; }

 private:
  bool WriteAll(std::string_view s) {
    const char* p = s.data();
    size_t left = s.size();
    while (left > 0) {
      ssize_t w = write(fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    total_ += s.size();
    return true;
  }

  static constexpr size_t kBufferSize = 1 << 20;
  static constexpr size_t kSlack = 4096;  // a line of a word up to 4 KiB fits past the limit
  const int fd_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// Splits [data, data+size) into words and hands them to sink(words, n) in batches.
template <typename Sink>
void ScanWords(const char* data, size_t size, Sink&& sink) {
  constexpr size_t kBatch = 64;
  Word batch[kBatch + 64];  // a 64-byte block adds at most 32 words past the threshold
  size_t n = 0;
  auto emit = [&](size_t start, size_t end) {
    Word& w = batch[n++];
    w.offset = static_cast<uint32_t>(start);
    w.len = static_cast<uint32_t>(end - start);
    const char* p = data + start;
    if (w.len >= 8) {
      std::memcpy(&w.prefix, p, 8);
    } else if (start + 8 <= size) {
      std::memcpy(&w.prefix, p, 8);
      w.prefix &= (uint64_t{1} << (8 * w.len)) - 1;
    } else {
      w.prefix = 0;
      std::memcpy(&w.prefix, p, w.len);
    }
  };
  size_t word_start = 0;
  bool in_word = false;
  size_t base = 0;
  for (; base + 64 <= size; base += 64) {
    const uint64_t word_bits = ~WhitespaceMask64(data + base);
    const uint64_t prev = (word_bits << 1) | (in_word ? 1 : 0);
    uint64_t edges = (word_bits & ~prev) | (~word_bits & prev);  // starts and ends, alternating
    while (edges != 0) {
      const size_t pos = base + static_cast<size_t>(__builtin_ctzll(edges));
      edges &= edges - 1;
      if (!in_word) {
        word_start = pos;
      } else {
        emit(word_start, pos);
      }
      in_word = !in_word;
    }
    if (n >= kBatch) {
      sink(batch, n);
      n = 0;
    }
  }
  for (size_t j = base; j < size; ++j) {
    const bool space = IsSpace(static_cast<unsigned char>(data[j]));
    if (!in_word && !space) {
      word_start = j;
      in_word = true;
    } else if (in_word && space) {
      emit(word_start, j);
      in_word = false;
    }
  }
  if (in_word) emit(word_start, size);
  if (n > 0) sink(batch, n);
}

}  // namespace

Status RunBaselineWordCount(const std::string& input, const std::string& output, bool count_only,
                            BaselineResult* result) {
  const auto start = std::chrono::steady_clock::now();
  int fd = open(input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("baseline: cannot open input", input, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno("baseline: cannot stat input", input, err);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size >= kMaxInputBytes) {
    close(fd);
    return Status::InvalidArgument("baseline: " + input + " is 4 GiB or more; the baseline's 32-bit counts and offsets need less");
  }
  void* map = nullptr;
  if (size > 0) {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
      int err = errno;
      close(fd);
      return Status::FromErrno("baseline: cannot mmap input", input, err);
    }
  }
  close(fd);
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() {
      if (p != nullptr) munmap(p, n);
    }
  } unmap{map, size};
  const char* data = static_cast<const char*>(map);

  WordTable table(data);
  uint64_t words = 0;
  auto hash_and_prefetch = [&](Word* batch, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      batch[i].hash = WordTable::Hash(data + batch[i].offset, batch[i].len, batch[i].prefix);
      table.Prefetch(batch[i].hash);
    }
    words += n;
  };
  if (count_only) {
    ScanWords(data, size, [&](Word* batch, size_t n) {
      hash_and_prefetch(batch, n);
      for (size_t i = 0; i < n; ++i) table.Increment(batch[i]);
    });
  } else {
    int out = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return Status::FromErrno("baseline: cannot create", output, errno);
    ChangelogWriter writer(out);
    bool ok = true;
    ScanWords(data, size, [&](Word* batch, size_t n) {
      hash_and_prefetch(batch, n);
      for (size_t i = 0; i < n; ++i) ok &= writer.Append(data + batch[i].offset, batch[i], table.Increment(batch[i]));
    });
    if (!ok || !writer.Flush() || fdatasync(out) != 0) {
      int err = errno;
      close(out);
      return Status::FromErrno("baseline: cannot write", output, err);
    }
    if (close(out) != 0) return Status::FromErrno("baseline: cannot close", output, errno);
    result->output_bytes = writer.total();
  }
  result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result->words = words;
  result->distinct = table.size();

  std::vector<std::pair<int64_t, std::string>> all;
  all.reserve(table.size());
  table.ForEach([&](std::string_view w, uint32_t c) { all.emplace_back(c, std::string(w)); });
  size_t k = std::min<size_t>(10, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<long>(k), all.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  result->top.clear();
  for (size_t i = 0; i < k; ++i) result->top.emplace_back(std::move(all[i].second), all[i].first);
  return Status::OK();
}

}  // namespace cairn
