// CSV (RFC 4180) records: finding where one ends, splitting it into fields, and writing fields
// back with the quoting they need.
//
// A record ends at a '\n' outside quotes ("\r\n" too: a '\r' before the '\n' is dropped). A
// field is either unquoted (no '"' in it) or wholly quoted, with '"' written as "" inside; a
// quoted field may hold the delimiter, '\r' and '\n'. So in a well-formed file a '\n' ends a
// record exactly when an even number of '"' precede it since the start of the file: a reader
// that starts mid-file finds the next record start by counting quotes from the file start
// (file_source does, for parallel byte ranges).
//
// Contract: CsvRecordEnd and CsvSplitter are allocation-free once warmed up (the splitter
// reuses its buffers); the views a CsvSplitter hands out live until its next Split. Not
// thread-safe; one splitter per reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

// The index of the '\n' ending the record that starts at data[from] (quotes counted from
// `from`), or npos when `data` ends first (the record is incomplete, or the file's last record
// has no newline).
size_t CsvRecordEnd(std::string_view data, size_t from);

// The number of '"' in `data`, for the quote parity of a file prefix.
uint64_t CountQuotes(std::string_view data);

class CsvSplitter {
 public:
  explicit CsvSplitter(char delimiter = ',') : delim_(delimiter) {}

  // Splits one record (without its '\n'; a trailing '\r' is dropped). False when malformed,
  // with *why set and *field the 0-based index of the field at fault.
  bool Split(std::string_view record, size_t* field, std::string* why);

  size_t size() const { return fields_.size(); }
  // Field i's text, quotes removed and "" unescaped.
  std::string_view field(size_t i) const {
    const Span& s = fields_[i];
    return s.in_scratch ? std::string_view(scratch_).substr(s.off, s.len) : record_.substr(s.off, s.len);
  }
  bool quoted(size_t i) const { return fields_[i].quoted; }

 private:
  struct Span {
    uint32_t off, len;
    bool in_scratch, quoted;
  };
  char delim_;
  std::string_view record_;
  std::string scratch_;
  std::vector<Span> fields_;
};

// Appends `v` as one CSV field: quoted (with "" for '"') when it holds the delimiter, '"',
// '\r' or '\n', or when `quote_empty` and it is empty; as it is otherwise.
void AppendCsvField(std::string_view v, char delimiter, bool quote_empty, std::string* out);

}  // namespace cairn
