// The frames of the data plane (docs/scale-out.md "Data plane"): what travels on the TCP
// connection from one worker to another, multiplexing every channel between them.
//
// A frame is a 9-byte header (type: one byte; channel id: 4 bytes; payload length: 4 bytes;
// little endian) and its payload. From the sender to the receiver: a record batch (the row
// count, then the rows in the channel-state row encoding, engine/dataflow/record_codec.h), an
// aligned barrier, a watermark, the end of input, the end of stream (these five in the order of
// the channel's data lane), a priority event (an unaligned barrier or an announcement, with its
// channel position: it overtakes the data lane), and once, first, a hello naming the sending
// worker. From the receiver back to the sender: credit (how many more batches the sender may
// send on the channel). Only record batches take credit; everything else bypasses it.
//
// Decoding is bounds-checked: a malformed frame is an error, never a read past its bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/status.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/stream_element.h"

namespace cairn::net {

enum class FrameType : uint8_t {
  kHello = 1,        // channel: the sending worker's id; no payload
  kBatch = 2,
  kBarrier = 3,
  kWatermark = 4,
  kEndOfInput = 5,
  kEndOfStream = 6,
  kPriority = 7,
  kCredit = 8,       // payload: the number of batches (fixed64)
};

inline constexpr size_t kFrameHeaderBytes = 9;
// A frame's payload may not be larger (a corrupt length must not make the receiver allocate).
inline constexpr uint32_t kMaxFramePayload = 256u << 20;

struct FrameHeader {
  FrameType type = FrameType::kHello;
  uint32_t channel = 0;
  uint32_t length = 0;
};

// Appends a whole frame to *out.
void AppendElementFrame(uint32_t channel, const StreamElement& e, std::string* out);
void AppendPriorityFrame(uint32_t channel, const PriorityEvent& e, std::string* out);
void AppendCreditFrame(uint32_t channel, uint64_t batches, std::string* out);
void AppendHelloFrame(uint32_t worker, std::string* out);

// `bytes` holds kFrameHeaderBytes; Corruption for an unknown type or a length past the limit.
Status DecodeFrameHeader(std::string_view bytes, FrameHeader* h);
// The payload of a data-lane frame (kBatch .. kEndOfStream) into *e; a batch's rows are
// appended to `batch` (empty, of the channel's schema), which *e then owns.
Status DecodeElement(const FrameHeader& h, std::string_view payload, std::unique_ptr<RecordBatch> batch,
                     StreamElement* e);
Status DecodePriority(std::string_view payload, PriorityEvent* e);
Status DecodeCredit(std::string_view payload, uint64_t* batches);

}  // namespace cairn::net
