#include "engine/format/values.h"

#include <charconv>
#include <cstring>

namespace cairn {

void CommitRow(const std::vector<FieldValue>& values, RecordBatch* b) {
  const size_t row = b->AddRow();
  const Schema& s = *b->schema();
  for (size_t f = 0; f < values.size(); ++f) {
    const FieldValue& v = values[f];
    if (v.null) continue;  // AddRow made every field null
    switch (s.field(f).type) {
      case FieldType::kString:
      case FieldType::kBytes: b->SetString(row, f, v.text); break;
      case FieldType::kInt64:
      case FieldType::kTimestamp: b->SetInt64(row, f, static_cast<int64_t>(v.cell)); break;
      case FieldType::kDouble: {
        double d;
        std::memcpy(&d, &v.cell, 8);
        b->SetDouble(row, f, d);
        break;
      }
      case FieldType::kBool: b->SetBool(row, f, v.cell != 0); break;
    }
  }
}

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Reads exactly `n` digits at text[*i].
bool Digits(std::string_view text, size_t* i, size_t n, int* out) {
  if (*i + n > text.size()) return false;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    char c = text[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

bool ParseIso(std::string_view text, int64_t* ms) {
  size_t i = 0;
  int y, mo, d, h = 0, mi = 0, s = 0;
  if (!Digits(text, &i, 4, &y) || i >= text.size() || text[i++] != '-' || !Digits(text, &i, 2, &mo) ||
      i >= text.size() || text[i++] != '-' || !Digits(text, &i, 2, &d))
    return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] + (mo == 2 && IsLeap(y) ? 1 : 0)) return false;
  int64_t frac_ms = 0;
  int64_t offset_min = 0;
  if (i < text.size()) {
    if (text[i] != 'T' && text[i] != 't' && text[i] != ' ') return false;
    ++i;
    if (!Digits(text, &i, 2, &h) || i >= text.size() || text[i++] != ':' || !Digits(text, &i, 2, &mi)) return false;
    if (i < text.size() && text[i] == ':') {
      ++i;
      if (!Digits(text, &i, 2, &s)) return false;
      if (i < text.size() && text[i] == '.') {
        ++i;
        size_t n = 0;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++n)
          if (n < 3) frac_ms = frac_ms * 10 + (text[i] - '0');
        if (n == 0 || n > 9) return false;
        for (; n < 3; ++n) frac_ms *= 10;
      }
    }
    if (h > 23 || mi > 59 || s > 59) return false;
    if (i < text.size()) {
      char z = text[i++];
      if (z == 'Z' || z == 'z') {
        // UTC
      } else if (z == '+' || z == '-') {
        int oh, om;
        if (!Digits(text, &i, 2, &oh)) return false;
        if (i < text.size() && text[i] == ':') ++i;
        if (!Digits(text, &i, 2, &om) || oh > 23 || om > 59) return false;
        offset_min = (oh * 60 + om) * (z == '+' ? 1 : -1);
      } else {
        return false;
      }
    }
  }
  if (i != text.size()) return false;
  int64_t secs = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s -
                 offset_min * 60;
  *ms = secs * 1000 + frac_ms;
  return true;
}

std::string Quoted(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string s = "'";
  s.append(text.substr(0, kMax));
  if (text.size() > kMax) s += "...";
  return s + "'";
}

}  // namespace

bool ParseTimestampText(std::string_view text, int64_t* ms, std::string* why) {
  if (!text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) {
    int64_t v;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && p == text.data() + text.size()) {
      *ms = v;
      return true;
    }
  }
  if (ParseIso(text, ms)) return true;
  *why = "expected a timestamp (integer ms since the epoch or ISO-8601 like 2026-12-01T06:35:17.123Z), got " +
         Quoted(text);
  return false;
}

bool ParseTextValue(FieldType t, std::string_view text, FieldValue* out, std::string* why) {
  out->null = false;
  switch (t) {
    case FieldType::kString:
    case FieldType::kBytes: out->text = text; return true;
    default: break;
  }
  if (text.empty()) {
    out->null = true;
    return true;
  }
  const char* b = text.data();
  const char* e = b + text.size();
  switch (t) {
    case FieldType::kInt64: {
      int64_t v;
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec != std::errc() || p != e) {
        *why = ec == std::errc::result_out_of_range ? "int64 out of range: " + Quoted(text)
                                                     : "expected an int64, got " + Quoted(text);
        return false;
      }
      out->cell = static_cast<uint64_t>(v);
      return true;
    }
    case FieldType::kDouble: {
      double v;
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec != std::errc() || p != e) {
        *why = "expected a double, got " + Quoted(text);
        return false;
      }
      std::memcpy(&out->cell, &v, 8);
      return true;
    }
    case FieldType::kBool: {
      auto eq = [&](const char* w) {
        size_t n = std::strlen(w);
        if (text.size() != n) return false;
        for (size_t k = 0; k < n; ++k)
          if ((text[k] | 0x20) != w[k]) return false;
        return true;
      };
      if (eq("true") || text == "1") {
        out->cell = 1;
      } else if (eq("false") || text == "0") {
        out->cell = 0;
      } else {
        *why = "expected a bool (true, false, 1, 0), got " + Quoted(text);
        return false;
      }
      return true;
    }
    case FieldType::kTimestamp: {
      int64_t ms;
      if (!ParseTimestampText(text, &ms, why)) return false;
      out->cell = static_cast<uint64_t>(ms);
      return true;
    }
    default: return false;
  }
}

}  // namespace cairn
