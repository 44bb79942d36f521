#include "engine/format/csv.h"

#include <algorithm>
#include <cstring>

namespace cairn {

size_t CsvRecordEnd(std::string_view data, size_t from) {
  bool in_quotes = false;
  size_t p = from;
  while (p < data.size()) {
    const void* hit = std::memchr(data.data() + p, '\n', data.size() - p);
    if (hit == nullptr) return std::string_view::npos;
    size_t nl = static_cast<size_t>(static_cast<const char*>(hit) - data.data());
    if (std::count(data.data() + p, data.data() + nl, '"') & 1) in_quotes = !in_quotes;
    if (!in_quotes) return nl;
    p = nl + 1;
  }
  return std::string_view::npos;
}

uint64_t CountQuotes(std::string_view data) {
  return static_cast<uint64_t>(std::count(data.begin(), data.end(), '"'));
}

bool CsvSplitter::Split(std::string_view record, size_t* field, std::string* why) {
  if (!record.empty() && record.back() == '\r') record.remove_suffix(1);
  record_ = record;
  scratch_.clear();
  fields_.clear();
  size_t pos = 0;
  for (;;) {
    const size_t index = fields_.size();
    if (pos < record.size() && record[pos] == '"') {
      // Quoted: up to the closing quote; "" is one '"'.
      size_t i = pos + 1;
      size_t start = i;
      bool escaped = false;
      size_t scratch_off = scratch_.size();
      for (;;) {
        size_t q = record.find('"', i);
        if (q == std::string_view::npos) {
          *field = index;
          *why = "unterminated quoted field";
          return false;
        }
        if (q + 1 < record.size() && record[q + 1] == '"') {
          if (!escaped) scratch_.append(record.substr(start, q - start));
          else scratch_.append(record.substr(i, q - i));
          scratch_.push_back('"');
          escaped = true;
          i = q + 2;
          continue;
        }
        if (escaped) scratch_.append(record.substr(i, q - i));
        if (escaped) {
          fields_.push_back({static_cast<uint32_t>(scratch_off), static_cast<uint32_t>(scratch_.size() - scratch_off),
                             true, true});
        } else {
          fields_.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(q - start), false, true});
        }
        pos = q + 1;
        break;
      }
      if (pos == record.size()) return true;
      if (record[pos] != delim_) {
        *field = index;
        *why = "unexpected character after a closing quote";
        return false;
      }
      ++pos;
      if (pos == record.size()) {
        fields_.push_back({static_cast<uint32_t>(pos), 0, false, false});
        return true;
      }
      continue;
    }
    size_t d = record.find(delim_, pos);
    size_t end = d == std::string_view::npos ? record.size() : d;
    if (std::memchr(record.data() + pos, '"', end - pos) != nullptr) {
      *field = index;
      *why = "'\"' in an unquoted field (quote the whole field and write \"\" for a quote)";
      return false;
    }
    fields_.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(end - pos), false, false});
    if (d == std::string_view::npos) return true;
    pos = d + 1;
  }
}

void AppendCsvField(std::string_view v, char delimiter, bool quote_empty, std::string* out) {
  bool quote = quote_empty && v.empty();
  for (char c : v) {
    if (c == delimiter || c == '"' || c == '\n' || c == '\r') {
      quote = true;
      break;
    }
  }
  if (!quote) {
    out->append(v);
    return;
  }
  out->push_back('"');
  for (char c : v) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace cairn
