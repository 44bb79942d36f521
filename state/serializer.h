// Serializer<T> turns a state value of type T into bytes and back: the one encoding shared by
// keyed state (state/keyed_state_api.h) and operator list state (state/operator_list_state.h).
//
// Contract: Read never reads past `bytes` and returns false on malformed input; Write appends.
// kName is stored with the state in every checkpoint, so it must be unique per encoding and never
// change.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cairn {

// A specialisation provides:
//   static constexpr const char* kName;                        // stored with the state: "int64", ...
//   static void Write(const T& v, std::string* out);           // appends v's bytes
//   static bool Read(std::string_view bytes, T* v);            // false: bytes malformed
// kName must be unique per encoding and never change (it is part of the checkpoint); a user
// type should use its own prefix, e.g. "myjob.Position". `cairn state dump` prints the built-in
// types as values and any other as hex.
template <class T>
struct Serializer;

template <>
struct Serializer<int64_t> {
  static constexpr const char* kName = "int64";
  static void Write(int64_t v, std::string* out) {
    char b[8];
    uint64_t u = static_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((u >> (8 * i)) & 0xff);
    out->append(b, 8);
  }
  static bool Read(std::string_view s, int64_t* v) {
    if (s.size() != 8) return false;
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
    *v = static_cast<int64_t>(u);
    return true;
  }
};

template <>
struct Serializer<double> {
  static constexpr const char* kName = "double";
  static void Write(double v, std::string* out) {
    int64_t bits;
    std::memcpy(&bits, &v, 8);
    Serializer<int64_t>::Write(bits, out);
  }
  static bool Read(std::string_view s, double* v) {
    int64_t bits;
    if (!Serializer<int64_t>::Read(s, &bits)) return false;
    std::memcpy(v, &bits, 8);
    return true;
  }
};

template <>
struct Serializer<bool> {
  static constexpr const char* kName = "bool";
  static void Write(bool v, std::string* out) { out->push_back(v ? 1 : 0); }
  static bool Read(std::string_view s, bool* v) {
    if (s.size() != 1 || static_cast<unsigned char>(s[0]) > 1) return false;
    *v = s[0] == 1;
    return true;
  }
};

template <>
struct Serializer<std::string> {
  static constexpr const char* kName = "string";
  static void Write(const std::string& v, std::string* out) { out->append(v); }
  static bool Read(std::string_view s, std::string* v) {
    v->assign(s.data(), s.size());
    return true;
  }
};

}  // namespace cairn
