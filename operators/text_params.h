// What the file operators and the splitting operators share: the checks of the text-format
// parameters of file_source and file_sink (at load time, exit 2), and the ASCII whitespace that
// tokenize and flat_map split at.
#pragma once

#include <array>
#include <string>

#include "engine/format/record_parser.h"
#include "jobs/job_spec.h"

namespace cairn {

// Space, \t, \n, \r, \v, \f.
inline constexpr std::array<bool, 256> kIsAsciiSpace = [] {
  std::array<bool, 256> t{};
  t[' '] = t['\t'] = t['\n'] = t['\r'] = t['\v'] = t['\f'] = true;
  return t;
}();

// `format` of `c` parsed into *format, and `delimiter` and `header` checked against it: a
// delimiter is one character other than '"', CR and LF, and both are for csv only. `what`
// names the operator in messages ("operator 'x' (type file_sink)").
inline Status CheckTextFormatParams(const OperatorConfig& c, const std::string& what, TextFormat* format) {
  if (!ParseTextFormat(c.GetString("format"), format))
    return Status::InvalidArgument(c.Where("format") + ": " + what + ": format must be one of lines, csv, jsonl, got '" +
                                   c.GetString("format") + "'");
  const std::string& delim = c.GetString("delimiter");
  if (delim.size() != 1 || delim[0] == '"' || delim[0] == '\n' || delim[0] == '\r')
    return Status::InvalidArgument(c.Where("delimiter") + ": " + what +
                                   ": delimiter must be one character other than '\"', CR and LF, got '" + delim + "'");
  if (*format != TextFormat::kCsv) {
    for (const char* p : {"header", "delimiter"})
      if (c.places.count(p))
        return Status::InvalidArgument(c.Where(p) + ": " + what + ": " + p + " is for format csv only, and format is " +
                                       TextFormatName(*format));
  }
  return Status::OK();
}

}  // namespace cairn
