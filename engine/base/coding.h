// Little-endian fixed-width and length-prefixed encodings for small state blobs (operator
// state). Decoding is bounds-checked: a Decoder never reads past its input, it fails instead.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cairn {

// Stores `v` in the 8 bytes at `p`.
inline void EncodeFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

inline void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}

inline void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutFixed64(dst, s.size());
  dst->append(s.data(), s.size());
}

class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  bool GetFixed64(uint64_t* v) {
    if (in_.size() < 8) return false;
    uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    *v = r;
    return true;
  }
  bool GetLengthPrefixed(std::string* s) {
    uint64_t n;
    if (!GetFixed64(&n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  // The same without copying: *s points into the input.
  bool GetLengthPrefixedView(std::string_view* s) {
    uint64_t n;
    if (!GetFixed64(&n) || n > in_.size()) return false;
    *s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool GetByte(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace cairn
